//! Facilitator health and the choice of a facilitator, as pure functions (issue 17, item 6).
//!
//! Each facilitator has a [`Health`]: a circuit breaker (closed → open after `failures`
//! consecutive failures — no answer, 5xx, garbage, refused credentials — for `cooldown`; then
//! half-open: one trial call, whose success closes it and whose failure opens it again) and a
//! latency average (EWMA of `/verify` and `/supported`; `/settle` waits for the chain, so it is
//! not a health signal for latency). [`choose`] orders the facilitators to try for one payment:
//!
//! 1. a facilitator whose `/supported` does not list the payment's (version, scheme, network) —
//!    or, for Solana, not the offer's feePayer — is never tried;
//! 2. closed before half-open before open: an open breaker is tried only as a last resort, when
//!    nothing better is left (with a single facilitator the breaker never refuses a call: there
//!    is no one else to ask, and a fail-fast 502 would only lose a sale);
//! 3. a facilitator whose `/supported` is still unknown after one that lists the payment;
//! 4. a slow one (latency average over `slow`) after a fast one;
//! 5. then the operator's order (the list in routes.yaml is an order of preference).
//!
//! What happens after a failure (try the next one or not) is the caller's rule
//! (`facilitators.rs`): a `/verify` moves no money and may go to the next; a `/settle` only
//! when the first provably never received it.

use std::time::{Duration, Instant};

/// A breaker as seen at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Healthy: calls go through.
    Closed,
    /// The cooldown is over and no trial is running: one call may try it.
    HalfOpen,
    /// Cooling down after failures (or its trial call is running).
    Open,
}

impl State {
    pub fn label(self) -> &'static str {
        match self {
            State::Closed => "closed",
            State::HalfOpen => "half_open",
            State::Open => "open",
        }
    }

    /// The `paycall_facilitator_breaker_state` gauge value.
    pub fn gauge(self) -> i64 {
        match self {
            State::Closed => 0,
            State::HalfOpen => 1,
            State::Open => 2,
        }
    }
}

/// Breaker thresholds (from `payment.failover`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rules {
    pub failures: u32,
    pub cooldown: Duration,
    pub slow: Duration,
}

/// Weight of a new latency sample in the average.
const EWMA_ALPHA: f64 = 0.3;

/// One facilitator's health record.
#[derive(Debug, Clone, Default)]
pub struct Health {
    /// Failures since the last success.
    pub failures_in_row: u32,
    /// Set while the breaker is open: it stays out until then.
    pub open_until: Option<Instant>,
    /// A half-open trial call started then (it expires after a cooldown, so a lost trial
    /// cannot keep the breaker open for ever).
    pub trial_since: Option<Instant>,
    /// Latency average of verify and supported, in ms.
    pub latency_ms: Option<f64>,
    pub successes: u64,
    pub failures: u64,
    /// Code of the last failure (`facilitator_timeout`, ...).
    pub last_error: Option<&'static str>,
}

impl Health {
    pub fn state(&self, now: Instant, rules: &Rules) -> State {
        match self.open_until {
            None => State::Closed,
            Some(until) if now < until => State::Open,
            Some(_) => match self.trial_since {
                Some(t) if now.saturating_duration_since(t) < rules.cooldown => State::Open,
                _ => State::HalfOpen,
            },
        }
    }

    /// A call is about to be sent: if the breaker is half-open, this call is its trial.
    pub fn start_call(&mut self, now: Instant, rules: &Rules) {
        if self.state(now, rules) == State::HalfOpen {
            self.trial_since = Some(now);
        }
    }

    /// The facilitator answered (any verdict). `latency` is a sample for the average.
    pub fn success(&mut self, latency: Option<Duration>) {
        self.failures_in_row = 0;
        self.open_until = None;
        self.trial_since = None;
        self.successes += 1;
        if let Some(l) = latency {
            let ms = l.as_secs_f64() * 1000.0;
            self.latency_ms = Some(match self.latency_ms {
                Some(avg) => avg + EWMA_ALPHA * (ms - avg),
                None => ms,
            });
        }
    }

    /// No usable answer. Opens the breaker at the threshold, or again after a failed trial.
    pub fn failure(&mut self, code: &'static str, now: Instant, rules: &Rules) {
        let was = self.state(now, rules);
        self.failures_in_row = self.failures_in_row.saturating_add(1);
        self.failures += 1;
        self.last_error = Some(code);
        let trial_failed = self.open_until.is_some() && was != State::Closed;
        if trial_failed || self.failures_in_row >= rules.failures {
            self.open_until = Some(now + rules.cooldown);
            self.trial_since = None;
        }
    }

    pub fn slow(&self, rules: &Rules) -> bool {
        self.latency_ms
            .is_some_and(|ms| ms > rules.slow.as_secs_f64() * 1000.0)
    }
}

/// Whether a facilitator's `/supported` lists what the payment needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Support {
    Listed,
    /// No `/supported` answer from it yet.
    Unknown,
    NotListed,
}

/// One facilitator as [`choose`] sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidate {
    pub support: Support,
    pub state: State,
    pub slow: bool,
}

/// The facilitators to try, best first (indices into `candidates`, which is in the operator's
/// order of preference). Empty when none lists the payment.
pub fn choose(candidates: &[Candidate]) -> Vec<usize> {
    let mut order: Vec<(u8, u8, u8, usize)> = candidates
        .iter()
        .enumerate()
        .filter(|(_, c)| c.support != Support::NotListed)
        .map(|(i, c)| {
            let state = match c.state {
                State::Closed => 0,
                State::HalfOpen => 1,
                State::Open => 2,
            };
            (
                state,
                u8::from(c.support == Support::Unknown),
                u8::from(c.slow),
                i,
            )
        })
        .collect();
    order.sort_unstable();
    order.into_iter().map(|(.., i)| i).collect()
}

/// Which facilitator settles again a payment whose settlement is in doubt (index into `names`,
/// the operator's order): the one it was sent to (`sent_to`, recorded in the ledger before it
/// was sent), never another, whatever its breaker says — only it may still hold the payment,
/// and another one could only race it. A name no longer configured: none. A row from before
/// the ledger recorded the name (None): the only facilitator when there is one (what was asked
/// before), else none; with none, the chain alone decides (docs/ledger.md).
pub fn same_facilitator<N: AsRef<str>>(sent_to: Option<&str>, names: &[N]) -> Option<usize> {
    match sent_to {
        Some(name) => names.iter().position(|n| n.as_ref() == name),
        None if names.len() == 1 => Some(0),
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_settlement_in_doubt_goes_back_to_the_facilitator_that_has_it() {
        let names = &["cdp", "self-hosted"][..];
        assert_eq!(same_facilitator(Some("self-hosted"), names), Some(1));
        assert_eq!(same_facilitator(Some("cdp"), names), Some(0));
        // Removed from the config since: nobody else is asked.
        assert_eq!(same_facilitator(Some("gone"), names), None);
        // Recorded before the ledger named facilitators: only an unambiguous one.
        assert_eq!(same_facilitator(None, names), None);
        assert_eq!(same_facilitator(None, &["default"][..]), Some(0));
        assert_eq!(same_facilitator(Some("default"), &["other"][..]), None);
    }

    fn rules() -> Rules {
        Rules {
            failures: 3,
            cooldown: Duration::from_secs(30),
            slow: Duration::from_secs(3),
        }
    }

    fn c(support: Support, state: State) -> Candidate {
        Candidate {
            support,
            state,
            slow: false,
        }
    }

    #[test]
    fn operator_order_among_healthy_ones() {
        let all = [
            c(Support::Listed, State::Closed),
            c(Support::Listed, State::Closed),
            c(Support::Listed, State::Closed),
        ];
        assert_eq!(choose(&all), [0, 1, 2]);
    }

    #[test]
    fn never_one_that_does_not_list_the_payment() {
        let all = [
            c(Support::NotListed, State::Closed),
            c(Support::Listed, State::Open),
        ];
        assert_eq!(
            choose(&all),
            [1],
            "an open breaker is a last resort, an unlisted network never"
        );
        assert!(choose(&[c(Support::NotListed, State::Closed)]).is_empty());
        assert!(choose(&[]).is_empty());
    }

    #[test]
    fn open_and_half_open_go_last() {
        let all = [
            c(Support::Listed, State::Open),
            c(Support::Listed, State::HalfOpen),
            c(Support::Listed, State::Closed),
        ];
        assert_eq!(choose(&all), [2, 1, 0]);
        // A single facilitator is always tried, whatever its breaker says.
        assert_eq!(choose(&[c(Support::Listed, State::Open)]), [0]);
    }

    #[test]
    fn unknown_support_and_slowness_rank_after() {
        let mut slow = c(Support::Listed, State::Closed);
        slow.slow = true;
        let all = [
            c(Support::Unknown, State::Closed),
            slow,
            c(Support::Listed, State::Closed),
            c(Support::Listed, State::HalfOpen),
        ];
        assert_eq!(choose(&all), [2, 1, 0, 3]);
    }

    #[test]
    fn breaker_opens_after_consecutive_failures_and_half_opens_after_cooldown() {
        let r = rules();
        let t0 = Instant::now();
        let mut h = Health::default();
        assert_eq!(h.state(t0, &r), State::Closed);
        h.failure("facilitator_timeout", t0, &r);
        h.failure("facilitator_timeout", t0, &r);
        assert_eq!(h.state(t0, &r), State::Closed);
        h.success(None);
        h.failure("facilitator_timeout", t0, &r);
        h.failure("facilitator_timeout", t0, &r);
        assert_eq!(h.state(t0, &r), State::Closed, "a success resets the count");
        h.failure("facilitator_unreachable", t0, &r);
        assert_eq!(h.state(t0, &r), State::Open);
        assert_eq!(h.last_error, Some("facilitator_unreachable"));
        let later = t0 + Duration::from_secs(31);
        assert_eq!(h.state(later, &r), State::HalfOpen);

        // One trial: while it runs the breaker is open for the others.
        h.start_call(later, &r);
        assert_eq!(h.state(later, &r), State::Open);
        // Its failure opens it for another cooldown.
        h.failure("facilitator_bad_response", later, &r);
        assert_eq!(h.state(later + Duration::from_secs(29), &r), State::Open);
        let after = later + Duration::from_secs(31);
        assert_eq!(h.state(after, &r), State::HalfOpen);
        h.start_call(after, &r);
        h.success(Some(Duration::from_millis(10)));
        assert_eq!(h.state(after, &r), State::Closed);
        assert_eq!(h.failures_in_row, 0);
    }

    #[test]
    fn a_lost_trial_expires() {
        let r = rules();
        let t0 = Instant::now();
        let mut h = Health {
            open_until: Some(t0),
            ..Default::default()
        };
        h.start_call(t0, &r);
        assert_eq!(h.state(t0 + Duration::from_secs(1), &r), State::Open);
        assert_eq!(h.state(t0 + Duration::from_secs(31), &r), State::HalfOpen);
    }

    #[test]
    fn latency_average_and_slowness() {
        let r = rules();
        let mut h = Health::default();
        assert!(!h.slow(&r));
        h.success(Some(Duration::from_millis(100)));
        assert_eq!(h.latency_ms, Some(100.0));
        h.success(Some(Duration::from_millis(200)));
        assert!((h.latency_ms.unwrap() - 130.0).abs() < 1e-9);
        for _ in 0..30 {
            h.success(Some(Duration::from_secs(5)));
        }
        assert!(h.slow(&r));
        h.success(None);
        assert!(h.slow(&r), "an answer without a sample leaves the average");
    }
}
