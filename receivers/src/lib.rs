//! The webhook receivers hookbench puts on trial.
//!
//! For now this crate holds [`signature`], the Standard Webhooks signing and verification that
//! the receivers check first and the harness signs with.

pub mod signature;
