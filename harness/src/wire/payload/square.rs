//! Square's bodies: a webhook event `{merchant_id, type, event_id, created_at, data: {type, id,
//! object: {<type>: ...}}}`, the delivery's id in `event_id`, the object a Payment
//! (`payment.created`, `payment.updated`) or a Customer (`customer.created`,
//! `customer.updated`) with the fields of Square's Payments and Customers APIs. The account is
//! the object's `reference_id` (the seller's own id of what the object is for, which Square
//! keeps for just that); a payment's amount is `amount_money.amount` (in cents), and a customer's
//! `version` is Square's own optimistic-concurrency version of the customer.

use serde_json::{Value, json};

use super::spec::{EventSpec, Owner, Subject, joined, rfc3339_fraction};

const MERCHANT: &str = "MLHOOKBENCH00";
const LOCATION: &str = "LHOOKBENCH000";
const APPLICATION: &str = "sq0idp-hookbench";

/// Square's event types hookbench writes.
pub(super) const EVENTS: &[EventSpec] = &[
    payment_event("payment.created"),
    payment_event("payment.updated"),
    customer_event("customer.created"),
    customer_event("customer.updated"),
];

const fn payment_event(name: &'static str) -> EventSpec {
    EventSpec {
        name,
        header: "",
        owner: Owner::Event,
        build: payment,
        account: "/data/object/payment/reference_id",
        amount: Some("/data/object/payment/amount_money/amount"),
        // A payment's `version_token` is an opaque string; `--field version=` names a place.
        version: None,
    }
}

const fn customer_event(name: &'static str) -> EventSpec {
    EventSpec {
        name,
        header: "",
        owner: Owner::Account,
        build: customer,
        account: "/data/object/customer/reference_id",
        amount: None,
        version: Some("/data/object/customer/version"),
    }
}

/// The event around `object`, of Square's type `kind` (`payment`, `customer`), whose id is `id`.
fn event(s: &Subject<'_>, kind: &str, id: &str, object: Value) -> Value {
    json!({
        "merchant_id": MERCHANT,
        "type": s.event_type,
        "event_id": s.f.id,
        "created_at": s.created_fraction(3),
        "data": { "type": kind, "id": id, "object": { kind: object } },
    })
}

/// An id of Square's form: upper-case letters and digits.
fn square_id(hex: String) -> String {
    hex.to_uppercase()
}

fn customer_id(s: &Subject<'_>) -> String {
    square_id(s.account_hex("customer", 26))
}

fn money(amount: i64) -> Value {
    json!({ "amount": amount, "currency": "USD" })
}

fn payment(s: &Subject<'_>) -> Value {
    let id = square_id(s.hex("payment", 29));
    let at = s.created_fraction(3);
    let amount = s.f.amount;
    let body = joined([
        json!({
            "id": id, "created_at": at, "updated_at": at,
            "amount_money": money(amount), "total_money": money(amount), "approved_money": money(amount),
            "status": "COMPLETED", "delay_duration": "PT168H", "delay_action": "CANCEL",
            "delayed_until": rfc3339_fraction(s.f.created + 7 * 86_400, 3), "source_type": "CARD",
        }),
        json!({
            "card_details": {
                "status": "CAPTURED",
                "card": {
                    "card_brand": "VISA", "last_4": "1111", "exp_month": 12, "exp_year": 2030,
                    "fingerprint": format!("sq-1-{}", s.hex("fingerprint", 32)), "card_type": "CREDIT",
                    "prepaid_type": "NOT_PREPAID", "bin": "411111",
                },
                "entry_method": "KEYED", "cvv_status": "CVV_ACCEPTED", "avs_status": "AVS_ACCEPTED",
                "statement_description": "SQ *HOOKBENCH",
                "card_payment_timeline": { "authorized_at": at, "captured_at": at },
            },
            "location_id": LOCATION, "order_id": square_id(s.hex("order", 29)),
            "reference_id": s.f.account.to_string(), "customer_id": customer_id(s),
            "risk_evaluation": { "created_at": at, "risk_level": "NORMAL" },
            "receipt_number": id[..4].to_string(),
            "receipt_url": format!("https://squareup.com/receipt/preview/{id}"),
            "application_details": { "square_product": "ECOMMERCE_API", "application_id": APPLICATION },
            "version_token": s.event_hex("version", 43),
        }),
    ]);
    event(s, "payment", &id, body)
}

fn customer(s: &Subject<'_>) -> Value {
    let id = square_id(s.hex("customer", 26));
    let at = s.created_fraction(3);
    let account = s.f.account;
    let body = json!({
        "id": id, "created_at": at, "updated_at": at,
        "given_name": "Account", "family_name": account.to_string(),
        "email_address": format!("customer-{account}@hookbench.invalid"),
        "reference_id": account.to_string(),
        "preferences": { "email_unsubscribed": false },
        "creation_source": "THIRD_PARTY",
        "version": s.f.version,
    });
    event(s, "customer", &id, body)
}
