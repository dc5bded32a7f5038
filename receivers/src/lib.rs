//! The webhook receivers hookbench puts on trial.
//!
//! - [`signature`]: Standard Webhooks signing and verification (the harness signs with it).
//! - [`event`]: the JSON bodies on the wire.
//! - [`store`]: Postgres and SQLite; every dialect difference lives there.
//! - [`design`]: the seven receiver designs, one module per kind.
//! - [`app`]: the axum router (`POST /webhooks/{source}`, `GET /healthz`) and [`app::serve`].

pub mod app;
pub mod design;
pub mod event;
pub mod signature;
pub mod store;
