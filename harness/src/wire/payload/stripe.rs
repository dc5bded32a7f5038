//! Stripe's bodies: an Event (`object: "event"`) whose `data.object` is the named type's object
//! with the keys the `stripe` npm package's types (17.7.0, API version 2025-02-24.acacia)
//! declare required, ids in Stripe's form (`pi_`, `ch_`, `in_`, `cs_`, `sub_`, `cus_`). The
//! account is the customer (`cus_<account>`); the tests compare each object's keys with those
//! types (scripts/provider-schemas/).

use serde_json::{Value, json};

use super::spec::{EventSpec, Owner, Subject, joined};

/// The API version the events are written in (the one `stripe` 17.7.0's types describe: the last
/// before `current_period_end` left the Subscription, which handlers in the wild still read).
pub const API_VERSION: &str = "2025-02-24.acacia";

const CUSTOMER: &str = "/data/object/customer";

/// Stripe's event types hookbench writes.
pub(super) const EVENTS: &[EventSpec] = &[
    payment("payment_intent.succeeded", payment_intent),
    payment("charge.succeeded", charge),
    EventSpec { amount: Some("/data/object/amount_paid"), ..payment("invoice.paid", invoice) },
    EventSpec { amount: Some("/data/object/amount_paid"), ..payment("invoice.payment_succeeded", invoice) },
    EventSpec {
        amount: Some("/data/object/amount_total"),
        ..payment("checkout.session.completed", checkout_session)
    },
    subscription_event("customer.subscription.created"),
    subscription_event("customer.subscription.updated"),
    subscription_event("customer.subscription.deleted"),
];

const fn payment(name: &'static str, object: fn(&Subject<'_>) -> Value) -> EventSpec {
    EventSpec {
        name,
        header: "",
        owner: Owner::Event,
        build: object,
        account: CUSTOMER,
        amount: Some("/data/object/amount"),
        version: None,
    }
}

const fn subscription_event(name: &'static str) -> EventSpec {
    EventSpec {
        name,
        header: "",
        owner: Owner::Account,
        build: subscription,
        account: CUSTOMER,
        // The plan's amount is inside `items.data`, an array a mapping cannot reach into.
        amount: None,
        version: Some("/data/object/current_period_end"),
    }
}

/// The Event around `object`.
fn event(s: &Subject<'_>, object: Value) -> Value {
    json!({
        "id": s.f.id,
        "object": "event",
        "api_version": API_VERSION,
        "created": s.f.created,
        "data": { "object": object },
        "livemode": false,
        "pending_webhooks": 1,
        "request": { "id": format!("req_{}", s.event_hex("request", 14)), "idempotency_key": idempotency_key(s) },
        "type": s.event_type,
    })
}

/// A UUID-shaped key, as the Dashboard and Stripe's libraries send: each event's own.
fn idempotency_key(s: &Subject<'_>) -> String {
    let h = s.event_hex("idempotency", 32);
    format!("{}-{}-4{}-a{}-{}", &h[..8], &h[8..12], &h[13..16], &h[17..20], &h[20..32])
}

fn customer(s: &Subject<'_>) -> String {
    format!("cus_{}", s.f.account)
}

fn payment_intent(s: &Subject<'_>) -> Value {
    let (t, amount) = (&s.token, s.f.amount);
    event(
        s,
        joined([
            json!({
                "id": format!("pi_{t}"), "object": "payment_intent",
                "amount": amount, "amount_capturable": 0, "amount_received": amount,
                "application": null, "application_fee_amount": null, "automatic_payment_methods": null,
                "canceled_at": null, "cancellation_reason": null, "capture_method": "automatic_async",
                "client_secret": format!("pi_{t}_secret_{}", s.hex("secret", 24)),
                "confirmation_method": "automatic", "created": s.f.created, "currency": "usd",
                "customer": customer(s), "description": null, "invoice": null, "last_payment_error": null,
            }),
            json!({
                "latest_charge": format!("ch_{t}"), "livemode": false, "metadata": {}, "next_action": null,
                "on_behalf_of": null, "payment_method": format!("pm_{t}"),
                "payment_method_configuration_details": null, "payment_method_options": null,
                "payment_method_types": ["card"], "processing": null, "receipt_email": null, "review": null,
                "setup_future_usage": null, "shipping": null, "source": null, "statement_descriptor": null,
                "statement_descriptor_suffix": null, "status": "succeeded", "transfer_data": null,
                "transfer_group": null,
            }),
        ]),
    )
}

fn charge(s: &Subject<'_>) -> Value {
    let (t, amount) = (&s.token, s.f.amount);
    event(
        s,
        joined([
            json!({
                "id": format!("ch_{t}"), "object": "charge",
                "amount": amount, "amount_captured": amount, "amount_refunded": 0,
                "application": null, "application_fee": null, "application_fee_amount": null,
                "balance_transaction": format!("txn_{t}"),
                "billing_details": { "address": null, "email": null, "name": null, "phone": null },
                "calculated_statement_descriptor": "HOOKBENCH", "captured": true, "created": s.f.created,
                "currency": "usd", "customer": customer(s), "description": null, "disputed": false,
                "failure_balance_transaction": null, "failure_code": null, "failure_message": null,
            }),
            json!({
                "fraud_details": {}, "invoice": null, "livemode": false, "metadata": {}, "on_behalf_of": null,
                "outcome": null, "paid": true, "payment_intent": format!("pi_{t}"),
                "payment_method": format!("pm_{t}"), "payment_method_details": null, "receipt_email": null,
                "receipt_number": null, "receipt_url": null, "refunded": false, "review": null,
                "shipping": null, "source": null, "source_transfer": null, "statement_descriptor": null,
                "statement_descriptor_suffix": null, "status": "succeeded", "transfer_data": null,
                "transfer_group": null,
            }),
        ]),
    )
}

fn invoice(s: &Subject<'_>) -> Value {
    let (t, amount, created) = (&s.token, s.f.amount, s.f.created);
    event(
        s,
        joined([
            json!({
                "id": format!("in_{t}"), "object": "invoice",
                "account_country": "US", "account_name": "hookbench", "account_tax_ids": null,
                "amount_due": amount, "amount_paid": amount, "amount_remaining": 0, "amount_shipping": 0,
                "application": null, "application_fee_amount": null, "attempt_count": 1, "attempted": true,
                "automatic_tax": { "enabled": false, "liability": null, "status": null },
                "automatically_finalizes_at": null, "billing_reason": "subscription_cycle",
                "charge": format!("ch_{t}"), "collection_method": "charge_automatically", "created": created,
                "currency": "usd", "custom_fields": null, "customer": customer(s), "customer_address": null,
                "customer_email": null, "customer_name": null, "customer_phone": null,
            }),
            json!({
                "customer_shipping": null, "customer_tax_exempt": "none", "default_payment_method": null,
                "default_source": null, "default_tax_rates": [], "description": null, "discount": null,
                "discounts": [], "due_date": null, "effective_at": created, "ending_balance": 0,
                "footer": null, "from_invoice": null, "issuer": { "type": "self" },
                "last_finalization_error": null, "latest_revision": null,
                "lines": { "object": "list", "data": [], "has_more": false, "url": format!("/v1/invoices/in_{t}/lines") },
                "livemode": false, "metadata": {}, "next_payment_attempt": null, "number": null,
            }),
            json!({
                "on_behalf_of": null, "paid": true, "paid_out_of_band": false,
                "payment_intent": format!("pi_{t}"),
                "payment_settings": { "default_mandate": null, "payment_method_options": null, "payment_method_types": null },
                "period_end": created, "period_start": created, "post_payment_credit_notes_amount": 0,
                "pre_payment_credit_notes_amount": 0, "quote": null, "receipt_number": null, "rendering": null,
                "shipping_cost": null, "shipping_details": null, "starting_balance": 0,
                "statement_descriptor": null, "status": "paid",
                "status_transitions": { "finalized_at": created, "marked_uncollectible_at": null, "paid_at": created, "voided_at": null },
                "subscription": format!("sub_{}", s.f.account), "subscription_details": { "metadata": {} },
                "subtotal": amount, "subtotal_excluding_tax": amount, "tax": null, "test_clock": null,
                "total": amount, "total_discount_amounts": [], "total_excluding_tax": amount,
                "total_pretax_credit_amounts": [], "total_tax_amounts": [], "transfer_data": null,
                "webhooks_delivered_at": created,
            }),
        ]),
    )
}

fn checkout_session(s: &Subject<'_>) -> Value {
    let (t, amount, created) = (&s.token, s.f.amount, s.f.created);
    event(
        s,
        joined([
            json!({
                "id": format!("cs_{t}"), "object": "checkout.session",
                "adaptive_pricing": null, "after_expiration": null, "allow_promotion_codes": null,
                "amount_subtotal": amount, "amount_total": amount,
                "automatic_tax": { "enabled": false, "liability": null, "status": null },
                "billing_address_collection": null, "cancel_url": null, "client_reference_id": null,
                "client_secret": null, "consent": null, "consent_collection": null, "created": created,
                "currency": "usd", "currency_conversion": null, "custom_fields": [],
                "custom_text": { "after_submit": null, "shipping_address": null, "submit": null, "terms_of_service_acceptance": null },
            }),
            json!({
                "customer": customer(s), "customer_creation": null, "customer_details": null,
                "customer_email": null, "discounts": [], "expires_at": created + 86_400, "invoice": null,
                "invoice_creation": null, "livemode": false, "locale": null, "metadata": {}, "mode": "payment",
                "payment_intent": format!("pi_{t}"), "payment_link": null, "payment_method_collection": null,
                "payment_method_configuration_details": null, "payment_method_options": null,
            }),
            json!({
                "payment_method_types": ["card"], "payment_status": "paid", "recovered_from": null,
                "saved_payment_method_options": null, "setup_intent": null, "shipping_address_collection": null,
                "shipping_cost": null, "shipping_details": null, "shipping_options": [], "status": "complete",
                "submit_type": null, "subscription": null, "success_url": "https://example.com/success",
                "total_details": { "amount_discount": 0, "amount_shipping": 0, "amount_tax": 0 },
                "ui_mode": "hosted", "url": null,
            }),
        ]),
    )
}

/// The account's subscription: `sub_<token>` (the account, unless the event names an object),
/// on the plan `Fields::plan` names (`plan_v3`, priced `price_v3`).
fn subscription(s: &Subject<'_>) -> Value {
    let (t, created) = (&s.token, s.f.created);
    let deleted = s.event_type.ends_with(".deleted");
    let plan = if s.f.plan.is_empty() { "plan_v0" } else { s.f.plan.as_str() };
    let price = format!("price_{}", plan.strip_prefix("plan_").unwrap_or(plan));
    let product = format!("prod_{}", s.hex("product", 14));
    let item = json!({
        "id": format!("si_{t}"), "object": "subscription_item", "billing_thresholds": null,
        "created": created, "discounts": [], "metadata": {},
        "plan": {
            "id": plan, "object": "plan", "active": true, "aggregate_usage": null, "amount": s.f.amount,
            "amount_decimal": s.f.amount.to_string(), "billing_scheme": "per_unit", "created": created,
            "currency": "usd", "interval": "month", "interval_count": 1, "livemode": false, "metadata": {},
            "meter": null, "nickname": null, "product": product, "tiers_mode": null,
            "transform_usage": null, "trial_period_days": null, "usage_type": "licensed",
        },
        "price": {
            "id": price, "object": "price", "active": true, "billing_scheme": "per_unit", "created": created,
            "currency": "usd", "custom_unit_amount": null, "livemode": false, "lookup_key": null,
            "metadata": {}, "nickname": null, "product": product,
            "recurring": { "aggregate_usage": null, "interval": "month", "interval_count": 1, "meter": null, "trial_period_days": null, "usage_type": "licensed" },
            "tax_behavior": "unspecified", "tiers_mode": null, "transform_quantity": null, "type": "recurring",
            "unit_amount": s.f.amount, "unit_amount_decimal": s.f.amount.to_string(),
        },
        "quantity": 1, "subscription": format!("sub_{t}"), "tax_rates": [],
    });
    event(
        s,
        joined([
            json!({
                "id": format!("sub_{t}"), "object": "subscription",
                "application": null, "application_fee_percent": null,
                "automatic_tax": { "disabled_reason": null, "enabled": false, "liability": null },
                "billing_cycle_anchor": created, "billing_cycle_anchor_config": null, "billing_thresholds": null,
                "cancel_at": null, "cancel_at_period_end": false,
                "canceled_at": if deleted { Value::from(created) } else { Value::Null },
                "cancellation_details": { "comment": null, "feedback": null, "reason": if deleted { Value::from("cancellation_requested") } else { Value::Null } },
                "collection_method": "charge_automatically", "created": created, "currency": "usd",
                "current_period_end": created + 2_592_000, "current_period_start": created,
            }),
            json!({
                "customer": customer(s), "days_until_due": null, "default_payment_method": null,
                "default_source": null, "default_tax_rates": [], "description": null, "discount": null,
                "discounts": [], "ended_at": if deleted { Value::from(created) } else { Value::Null },
                "invoice_settings": { "account_tax_ids": null, "issuer": { "type": "self" } },
                "items": { "object": "list", "data": [item], "has_more": false, "total_count": 1, "url": format!("/v1/subscription_items?subscription=sub_{t}") },
                "latest_invoice": null, "livemode": false, "metadata": {},
                "next_pending_invoice_item_invoice": null, "on_behalf_of": null, "pause_collection": null,
                "payment_settings": null, "pending_invoice_item_interval": null, "pending_setup_intent": null,
                "pending_update": null, "schedule": null, "start_date": created,
                "status": if deleted { "canceled" } else { "active" }, "test_clock": null,
                "transfer_data": null, "trial_end": null, "trial_settings": null, "trial_start": null,
            }),
        ]),
    )
}
