//! Fault injection for the failure experiments: crashes at the article's injected point.
//!
//! A receiver started with injection enabled (`hookbench serve --inject-faults`) honours the
//! `hookbench-fault` request header; every other receiver ignores it, so no request can make a
//! production receiver die. `hookbench-fault: crash-after-key` makes the process abort
//! (`std::process::abort`, a real death with SIGABRT) at the point the article's crash test
//! names: after the dedupe key is written and before the side effect. Where that is depends on the
//! design: after the key's own commit in `split`, inside the open transaction in the atomic
//! designs, and in the inbox worker that claims the stored row, before it applies it.

use std::collections::HashSet;
use std::sync::Mutex;

use axum::http::HeaderMap;

/// The request header naming a fault to inject.
pub const HEADER_FAULT: &str = "hookbench-fault";

/// A fault a request can ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Abort after the dedupe key is written, before the side effect.
    CrashAfterKey,
}

impl Fault {
    /// The header value.
    pub fn as_str(self) -> &'static str {
        match self {
            Fault::CrashAfterKey => "crash-after-key",
        }
    }
}

/// Whether this process honours faults, and the inbox rows whose claim must crash.
#[derive(Debug, Default)]
pub struct Faults {
    enabled: bool,
    inbox_crashes: Mutex<HashSet<String>>,
}

impl Faults {
    /// A receiver that honours `hookbench-fault`.
    pub fn enabled() -> Self {
        Self { enabled: true, inbox_crashes: Mutex::default() }
    }

    /// Whether requests may inject faults.
    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// The fault a request asks for, if this process honours faults (unknown values are ignored).
    pub fn requested(&self, headers: &HeaderMap) -> Option<Fault> {
        if !self.enabled {
            return None;
        }
        match headers.get(HEADER_FAULT)?.to_str().ok()? {
            "crash-after-key" => Some(Fault::CrashAfterKey),
            _ => None,
        }
    }

    /// Makes the claim of the inbox row for `webhook_id` crash (in this process's workers).
    pub fn crash_on_claim(&self, webhook_id: &str) {
        self.inbox_crashes.lock().unwrap_or_else(|e| e.into_inner()).insert(webhook_id.to_string());
    }

    /// Called by inbox workers when they claim a row: aborts if the row was marked.
    pub fn claimed(&self, webhook_id: &str) {
        let marked =
            self.enabled && self.inbox_crashes.lock().unwrap_or_else(|e| e.into_inner()).remove(webhook_id);
        if marked {
            crash("inbox worker claimed the row, before the side effect");
        }
    }
}

/// Aborts the process now, saying where.
pub fn crash(at: &str) -> ! {
    tracing::error!(at, "injected crash: aborting");
    std::process::abort()
}
