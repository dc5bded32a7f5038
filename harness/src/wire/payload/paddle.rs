//! Paddle Billing's bodies: a notification `{event_id, event_type, occurred_at,
//! notification_id, data}`, the delivery's id in `event_id`, `data` a Transaction
//! (`transaction.completed`, `transaction.paid`) or a Subscription (`subscription.created`,
//! `subscription.updated`, `subscription.canceled`) with the fields of Paddle's API (ids of
//! Paddle's form, `txn_`, `sub_`, `ctm_`, `pri_`, and amounts as strings in the lowest
//! denomination). The account is the customer (`customer_id`, `ctm_<account>`); a transaction's
//! amount is its `details.totals.total`; a subscription's version is in its `custom_data`, the
//! seller's own data that Paddle keeps on every entity and sends back.

use serde_json::{Value, json};

use super::spec::{EventSpec, Owner, Subject, joined, rfc3339_fraction};

/// Paddle's event types hookbench writes.
pub(super) const EVENTS: &[EventSpec] = &[
    transaction_event("transaction.completed"),
    transaction_event("transaction.paid"),
    subscription_event("subscription.created"),
    subscription_event("subscription.updated"),
    subscription_event("subscription.canceled"),
];

const fn transaction_event(name: &'static str) -> EventSpec {
    EventSpec {
        name,
        header: "",
        owner: Owner::Event,
        build: transaction,
        account: "/data/customer_id",
        amount: Some("/data/details/totals/total"),
        version: Some("/data/custom_data/version"),
    }
}

const fn subscription_event(name: &'static str) -> EventSpec {
    EventSpec {
        name,
        header: "",
        owner: Owner::Account,
        build: subscription,
        account: "/data/customer_id",
        amount: Some("/data/custom_data/amount"),
        version: Some("/data/custom_data/version"),
    }
}

/// Paddle's times: RFC 3339 with microseconds.
fn at(seconds: i64) -> String {
    rfc3339_fraction(seconds, 6)
}

/// The notification around `data`.
fn notification(s: &Subject<'_>, data: Value) -> Value {
    json!({
        "event_id": s.f.id,
        "event_type": s.event_type,
        "occurred_at": at(s.f.created),
        "notification_id": format!("ntf_{}", s.event_hex("notification", 26)),
        "data": data,
    })
}

fn customer(s: &Subject<'_>) -> String {
    format!("ctm_{}", s.f.account)
}

/// The seller's own data on the entity: what the event carries of hookbench's.
fn custom_data(s: &Subject<'_>) -> Value {
    match s.f.kind {
        super::Kind::Credit => json!({ "amount": s.f.amount }),
        super::Kind::Update => json!({ "plan": s.f.plan, "version": s.f.version }),
    }
}

/// The plan's price: `pri_<plan's suffix>` of `amount` a month.
fn price(s: &Subject<'_>, amount: i64) -> Value {
    let plan = if s.f.plan.is_empty() { "plan_v0" } else { s.f.plan.as_str() };
    let at = at(s.f.created);
    json!({
        "id": format!("pri_{}", plan.strip_prefix("plan_").unwrap_or(plan)),
        "product_id": format!("pro_{}", s.account_hex("product", 26)),
        "name": plan, "description": format!("hookbench {plan}"), "type": "standard",
        "billing_cycle": { "interval": "month", "frequency": 1 }, "trial_period": null,
        "tax_mode": "account_setting",
        "unit_price": { "amount": amount.to_string(), "currency_code": "USD" },
        "unit_price_overrides": [], "quantity": { "minimum": 1, "maximum": 1 }, "status": "active",
        "custom_data": null, "import_meta": null, "created_at": at, "updated_at": at,
    })
}

fn totals(amount: &str) -> Value {
    json!({
        "subtotal": amount, "discount": "0", "tax": "0", "total": amount, "credit": "0",
        "credit_to_balance": "0", "balance": "0", "grand_total": amount, "fee": null, "earnings": null,
        "currency_code": "USD",
    })
}

fn transaction(s: &Subject<'_>) -> Value {
    let t = &s.token;
    let (created, amount) = (at(s.f.created), s.f.amount.to_string());
    let completed = s.event_type == "transaction.completed";
    let data = joined([
        json!({
            "id": format!("txn_{t}"), "status": if completed { "completed" } else { "paid" },
            "customer_id": customer(s), "address_id": format!("add_{}", s.account_hex("address", 26)),
            "business_id": null, "custom_data": custom_data(s), "origin": "web",
            "collection_mode": "automatic", "subscription_id": null,
            "invoice_id": format!("inv_{}", s.hex("invoice", 26)),
            "invoice_number": format!("325-{}", s.numeric_id("invoice-number") % 100_000),
            "billing_details": null, "billing_period": null, "currency_code": "USD", "discount_id": null,
            "created_at": created, "updated_at": created, "billed_at": created, "revised_at": null,
        }),
        json!({
            "items": [{ "price_id": price(s, s.f.amount)["id"], "price": price(s, s.f.amount), "quantity": 1, "proration": null }],
            "details": {
                "tax_rates_used": [{ "tax_rate": "0", "totals": { "subtotal": amount, "discount": "0", "tax": "0", "total": amount } }],
                "totals": totals(&amount), "adjusted_totals": null, "payout_totals": null,
                "adjusted_payout_totals": null, "line_items": [],
            },
            "payments": [], "checkout": { "url": format!("https://hookbench.invalid/pay?_ptxn=txn_{t}") },
        }),
    ]);
    notification(s, data)
}

fn subscription(s: &Subject<'_>) -> Value {
    let t = &s.token;
    let created = s.f.created;
    let canceled = s.event_type == "subscription.canceled";
    let (now, next) = (at(created), at(created + 2_592_000));
    let item = json!({
        "status": if canceled { "inactive" } else { "active" }, "quantity": 1, "recurring": true,
        "created_at": now, "updated_at": now, "previously_billed_at": now,
        "next_billed_at": if canceled { Value::Null } else { Value::from(next.clone()) },
        "trial_dates": null, "price": price(s, s.f.amount),
    });
    let data = json!({
        "id": format!("sub_{t}"), "status": if canceled { "canceled" } else { "active" },
        "customer_id": customer(s), "address_id": format!("add_{}", s.account_hex("address", 26)),
        "business_id": null, "currency_code": "USD", "created_at": now, "updated_at": now,
        "started_at": now, "first_billed_at": now,
        "next_billed_at": if canceled { Value::Null } else { Value::from(next.clone()) },
        "paused_at": null, "canceled_at": if canceled { Value::from(now.clone()) } else { Value::Null },
        "discount": null, "collection_mode": "automatic", "billing_details": null,
        "current_billing_period": if canceled { Value::Null } else { json!({ "starts_at": now, "ends_at": next }) },
        "billing_cycle": { "interval": "month", "frequency": 1 }, "scheduled_change": null,
        "items": [item], "custom_data": custom_data(s), "import_meta": null,
    });
    notification(s, data)
}
