//! The webhook receivers hookbench puts on trial.
//!
//! - [`signature`]: Standard Webhooks signing and verification (the harness signs with it).
//! - [`event`]: the JSON bodies on the wire.
//! - [`store`]: Postgres and SQLite; every dialect difference lives there.
//! - [`design`]: the receiver designs, one module per kind.
//! - [`fault`]: crashes injected at the article's point, for the failure experiments.
//! - [`app`]: the axum router (`POST /webhooks/{source}`, `GET /healthz`) and [`app::serve`].
//! - [`timing`]: where a worker's time goes, per stage of a delivery (`GET /stats`).
//! - [`transport`]: HTTP/1 only, with every wait bounded (header and body timeouts, a cap on
//!   connections, a body limit).

pub mod app;
pub mod design;
pub mod event;
pub mod fault;
pub mod signature;
pub mod store;
pub mod timing;
pub mod transport;
