//! Server-side payment state shared by payment_gate and settle: which payments are in flight
//! (the same authorization twice at once is served at most once) and which settlements did
//! not finish (kept replies served when the same PAYMENT-SIGNATURE comes back, DESIGN §9).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::pipeline::Reply;

/// A finished reply whose settlement is pending or unknown.
#[derive(Clone, Debug)]
pub struct Pending {
    /// The exact PAYMENT-SIGNATURE header value that paid for it.
    pub header: String,
    pub reply: Reply,
    pub transaction: Option<String>,
    /// Our offer the payment matched.
    pub requirement: serde_json::Value,
    pub payload: serde_json::Value,
}

pub struct Ledger {
    in_flight: Mutex<HashSet<String>>,
    pending: moka::sync::Cache<String, Arc<Pending>>,
}

impl Ledger {
    /// `keep_for`: how long an unsettled reply is kept (the payment's validity window).
    pub fn new(keep_for: Duration) -> Ledger {
        Ledger {
            in_flight: Mutex::new(HashSet::new()),
            pending: moka::sync::Cache::builder()
                .max_capacity(10_000)
                .time_to_live(keep_for)
                .build(),
        }
    }

    /// Claims a payment key; None when the same payment is already being served.
    pub fn claim(self: &Arc<Self>, key: &str) -> Option<InFlight> {
        let mut set = self.in_flight.lock().unwrap_or_else(|p| p.into_inner());
        if set.insert(key.to_string()) {
            Some(InFlight {
                ledger: self.clone(),
                key: key.to_string(),
            })
        } else {
            None
        }
    }

    pub fn keep_pending(&self, key: &str, pending: Pending) {
        self.pending.insert(key.to_string(), Arc::new(pending));
    }

    pub fn pending(&self, key: &str) -> Option<Arc<Pending>> {
        self.pending.get(key)
    }

    pub fn forget_pending(&self, key: &str) {
        self.pending.invalidate(key);
    }
}

/// Held while a payment is being served; dropping it releases the key.
#[derive(Debug)]
pub struct InFlight {
    ledger: Arc<Ledger>,
    key: String,
}

impl std::fmt::Debug for Ledger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Ledger")
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut set = self
            .ledger
            .in_flight
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        set.remove(&self.key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_claimed_once_until_released() {
        let l = Arc::new(Ledger::new(Duration::from_secs(60)));
        let a = l.claim("k").expect("first claim");
        assert!(l.claim("k").is_none(), "second claim while in flight");
        assert!(l.claim("other").is_some());
        drop(a);
        assert!(l.claim("k").is_some(), "released on drop");
    }
}
