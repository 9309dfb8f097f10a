//! Where a paid call's time went, for the `Server-Timing` header of its answer.
//!
//! A paid call waits on the facilitator twice: its verify before the work and its settlement
//! after it. On small documents those two exchanges are most of the call (docs/pdf.md, "Paid,
//! end to end"), and a buyer timing us cannot tell them from our own work. The gate records how
//! long the verify took and when the work began; the settle stage records when it began and how
//! long it took; the answer carries the three phases and the total, in milliseconds:
//!
//! `Server-Timing: verify;dur=13.9, work;dur=31.2, settle;dur=24.8, total;dur=70.4`
//!
//! Only answers to a payment the facilitator verified carry it (not 402s, refusals before
//! verify, demos or replays of a kept answer). `settle` is absent when nothing was settled
//! (a not-charged outcome: only the ledger was written).

use std::time::{Duration, Instant};

/// The gate's part: the facilitator's verify, and when the work could begin (after the ledger
/// row says "verified").
#[derive(Debug, Clone, Copy)]
pub struct VerifyTimes {
    pub took: Duration,
    pub done: Instant,
}

/// The settle stage's part: when it began (the work is over) and how long it took (ledger rows
/// and the facilitator's settlement); `charged` is false when it settled nothing.
#[derive(Debug, Clone, Copy)]
pub struct SettleTimes {
    pub started: Instant,
    pub took: Duration,
    pub charged: bool,
}

/// The header's value for an exchange that arrived at `arrived` and is answered at `now`, or
/// None when the payment was never verified here.
pub fn server_timing(
    arrived: Instant,
    now: Instant,
    verify: Option<&VerifyTimes>,
    settle: Option<&SettleTimes>,
) -> Option<String> {
    let verify = verify?;
    let ms = |d: Duration| format!("{:.1}", d.as_secs_f64() * 1000.0);
    let work_end = settle.map_or(now, |s| s.started);
    let mut out = format!(
        "verify;dur={}, work;dur={}",
        ms(verify.took),
        ms(work_end.saturating_duration_since(verify.done))
    );
    if let Some(s) = settle.filter(|s| s.charged) {
        out.push_str(&format!(", settle;dur={}", ms(s.took)));
    }
    out.push_str(&format!(
        ", total;dur={}",
        ms(now.saturating_duration_since(arrived))
    ));
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_settled_call_names_its_three_phases_and_the_total() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let v = VerifyTimes {
            took: Duration::from_micros(13_940),
            done: at(15),
        };
        let s = SettleTimes {
            started: at(46),
            took: Duration::from_millis(25),
            charged: true,
        };
        assert_eq!(
            server_timing(t0, at(71), Some(&v), Some(&s)).as_deref(),
            Some("verify;dur=13.9, work;dur=31.0, settle;dur=25.0, total;dur=71.0")
        );
    }

    #[test]
    fn nothing_settled_means_no_settle_phase_and_no_verify_means_no_header() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let v = VerifyTimes {
            took: Duration::from_millis(10),
            done: at(12),
        };
        let s = SettleTimes {
            started: at(20),
            took: Duration::from_millis(1),
            charged: false,
        };
        assert_eq!(
            server_timing(t0, at(22), Some(&v), Some(&s)).as_deref(),
            Some("verify;dur=10.0, work;dur=8.0, total;dur=22.0")
        );
        assert_eq!(server_timing(t0, at(22), None, Some(&s)), None);
    }
}
