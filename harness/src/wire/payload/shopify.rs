//! Shopify's bodies: the topic's resource (an order for `orders/*`, a customer for
//! `customers/*`) with the keys the Admin REST resources of `@shopify/shopify-api` (11.14.1,
//! API version 2025-07) declare, and the `X-Shopify-*` headers beside it. The account is the
//! customer (`customer.id` in an order, `id` in a customer); amounts are money strings, as
//! Shopify writes them (`total_price: "1500"`); the tests compare the keys with those resources
//! (scripts/provider-schemas/).

use serde_json::{Value, json};

use super::Fields;
use super::spec::{EventSpec, Owner, Subject, joined, rfc3339};
use crate::wire::signing::{SHOPIFY_API_VERSION, SHOPIFY_SHOP_DOMAIN};

/// Shopify's topics hookbench writes.
pub(super) const EVENTS: &[EventSpec] = &[
    order_topic("orders/create", Owner::Event),
    order_topic("orders/paid", Owner::Event),
    order_topic("orders/updated", Owner::Account),
    customer_topic("customers/create"),
    customer_topic("customers/update"),
];

const fn order_topic(name: &'static str, owner: Owner) -> EventSpec {
    EventSpec {
        name,
        header: "",
        owner,
        build: order,
        account: "/customer/id",
        amount: Some("/total_price"),
        // An order holds no version of the account's; `--field version=` names a place.
        version: None,
    }
}

const fn customer_topic(name: &'static str) -> EventSpec {
    EventSpec {
        name,
        header: "",
        owner: Owner::Account,
        build: customer_body,
        account: "/id",
        amount: Some("/total_spent"),
        version: Some("/orders_count"),
    }
}

/// The headers Shopify sends beside the body (the HMAC is the signer's): the topic, the
/// delivery's and the event's ids, when it was triggered, the shop and the API version.
pub(super) fn headers(topic: &str, f: &Fields) -> Vec<(&'static str, String)> {
    vec![
        ("x-shopify-topic", topic.to_string()),
        ("x-shopify-webhook-id", f.id.clone()),
        ("x-shopify-event-id", f.id.clone()),
        ("x-shopify-triggered-at", rfc3339(f.created)),
        ("x-shopify-shop-domain", SHOPIFY_SHOP_DOMAIN.to_string()),
        ("x-shopify-api-version", SHOPIFY_API_VERSION.to_string()),
    ]
}

/// The account as a Shopify customer.
fn customer(s: &Subject<'_>) -> Value {
    let at = s.created_rfc3339();
    let account = s.f.account;
    json!({
        "addresses": [], "created_at": at, "currency": "USD", "default_address": null,
        "email": format!("customer-{account}@hookbench.invalid"),
        "email_marketing_consent": null, "first_name": "Account", "id": account,
        "last_name": account.to_string(), "last_order_id": null, "last_order_name": null,
        "marketing_opt_in_level": null, "multipass_identifier": null, "note": null,
        "orders_count": 0, "phone": null, "sms_marketing_consent": null, "state": "enabled",
        "tags": "", "tax_exempt": false, "tax_exemptions": [], "total_spent": "0",
        "updated_at": at, "verified_email": true,
    })
}

fn customer_body(s: &Subject<'_>) -> Value {
    let mut c = customer(s);
    c["total_spent"] = Value::from(s.f.amount.to_string());
    c
}

fn money_set(amount: &str) -> Value {
    let money = json!({ "amount": amount, "currency_code": "USD" });
    json!({ "shop_money": money, "presentment_money": money })
}

/// An order of the account's: its id made from the object's token.
fn order(s: &Subject<'_>) -> Value {
    let id = s.numeric_id("order");
    let number = s.numeric_id("order-number") % 1_000_000 + 1000;
    let at = s.created_rfc3339();
    let total = s.f.amount.to_string();
    let zero = "0";
    let head = json!({
        "line_items": [], "app_id": null, "billing_address": null, "browser_ip": null,
        "buyer_accepts_marketing": false, "cancel_reason": null, "cancelled_at": null,
        "cart_token": null, "checkout_token": null, "client_details": null, "closed_at": null,
        "company": null, "confirmation_number": s.hex("confirmation", 9).to_uppercase(),
        "confirmed": true, "created_at": at, "currency": "USD",
        "current_subtotal_price": total, "current_subtotal_price_set": money_set(&total),
        "current_total_additional_fees_set": null, "current_total_discounts": zero,
        "current_total_discounts_set": money_set(zero), "current_total_duties_set": null,
        "current_total_price": total, "current_total_price_set": money_set(&total),
        "current_total_tax": zero, "current_total_tax_set": money_set(zero),
    });
    let middle = json!({
        "customer": customer(s), "customer_locale": "en", "discount_applications": [],
        "discount_codes": [], "duties_included": false,
        "email": format!("customer-{}@hookbench.invalid", s.f.account), "estimated_taxes": false,
        "financial_status": "paid", "fulfillment_status": null, "fulfillments": [], "id": id,
        "landing_site": null, "location_id": null, "merchant_business_entity_id": null,
        "merchant_of_record_app_id": null, "name": format!("#{number}"), "note": null,
        "note_attributes": [], "number": number - 1000 + 1, "order_number": number,
        "order_status_url": format!("https://{SHOPIFY_SHOP_DOMAIN}/orders/{}/authenticate", s.hex("token", 32)),
        "original_total_additional_fees_set": null, "original_total_duties_set": null,
    });
    let tail = json!({
        "payment_gateway_names": ["manual"], "payment_terms": null, "phone": null, "po_number": null,
        "presentment_currency": "USD", "processed_at": at, "referring_site": null, "refunds": [],
        "shipping_address": null, "shipping_lines": [], "source_identifier": null, "source_name": "web",
        "source_url": null, "subtotal_price": total, "subtotal_price_set": money_set(&total),
        "tags": "", "tax_lines": [], "taxes_included": false, "test": true, "token": s.hex("token", 32),
        "total_cash_rounding_payment_adjustment_set": null, "total_cash_rounding_refund_adjustment_set": null,
        "total_discounts": zero, "total_discounts_set": money_set(zero),
        "total_line_items_price": total, "total_line_items_price_set": money_set(&total),
        "total_outstanding": zero, "total_price": total, "total_price_set": money_set(&total),
        "total_shipping_price_set": money_set(zero), "total_tax": zero, "total_tax_set": money_set(zero),
        "total_tip_received": zero, "total_weight": 0, "updated_at": at, "user_id": null,
    });
    joined([head, middle, tail])
}
