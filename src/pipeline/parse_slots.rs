//! Parse slots: how many documents one route parses at once, and how many callers may wait for
//! a turn (issue 21, route budgets under concurrency).
//!
//! Each document's own budgets (nodes per byte of HTML, decoded PDF content, the deadlines)
//! bound what one parse may cost; the process's peak is then the sum over the documents parsed
//! at the same moment. A route that parses strangers' documents therefore holds a fixed number
//! of slots: `max_concurrent` parses run, at most `queue` more callers wait, each at most
//! `queue_wait_ms`. A caller who finds the queue full, or whose wait runs out, is answered
//! 503 `parser_busy` with `Retry-After` ([`busy_reply`]): an error, so never charged.
//!
//! The slots belong to the route's chain: `POST /reload` builds new ones (calls in flight
//! finish on the old), and a demo twin shares its route's chain and so its slots.
//!
//! Parameters (every parsing stage takes the same three, with its own defaults; the route's
//! caps override them): `max_concurrent` (1–64), `queue` (0–1024; 0: no waiting),
//! `queue_wait_ms` (1–60000).

use http::StatusCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::pipeline::Reply;

/// Upper bounds of the settings: beyond them the setting no longer bounds anything useful.
const MAX_CONCURRENT: usize = 64;
const MAX_QUEUE: usize = 1024;
const MAX_QUEUE_WAIT_MS: u64 = 60_000;

/// What a busy caller is told to wait before trying again, in seconds.
pub const RETRY_AFTER_S: u64 = 2;

/// A route's parse budget under concurrency.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotLimits {
    pub max_concurrent: usize,
    pub queue: usize,
    pub queue_wait: Duration,
}

impl SlotLimits {
    /// The checked settings (`names` are the parameter names as the stage spells them, for
    /// the error message).
    pub fn new(
        max_concurrent: usize,
        queue: usize,
        queue_wait_ms: u64,
        names: [&str; 3],
    ) -> Result<SlotLimits, String> {
        let [c, q, w] = names;
        if !(1..=MAX_CONCURRENT).contains(&max_concurrent) {
            return Err(format!(
                "{c} must be from 1 to {MAX_CONCURRENT} (parses at once; each may use its document's whole budget)"
            ));
        }
        if queue > MAX_QUEUE {
            return Err(format!("{q} must be at most {MAX_QUEUE} (0: no waiting)"));
        }
        if !(1..=MAX_QUEUE_WAIT_MS).contains(&queue_wait_ms) {
            return Err(format!("{w} must be from 1 to {MAX_QUEUE_WAIT_MS}"));
        }
        Ok(SlotLimits {
            max_concurrent,
            queue,
            queue_wait: Duration::from_millis(queue_wait_ms),
        })
    }
}

/// Why a caller got no slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Busy {
    /// Every slot taken and `queue` callers already waiting.
    QueueFull,
    /// Waited `queue_wait` without a slot.
    WaitedTooLong,
}

/// Whether a caller finding every slot taken may wait, with `waiting` callers already waiting.
pub fn may_wait(waiting: usize, limits: &SlotLimits) -> bool {
    waiting < limits.queue
}

/// Why there was no slot, in a sentence (`what`: "pages", "PDFs"…).
pub fn busy_message(busy: Busy, what: &str, limits: &SlotLimits) -> String {
    let why = match busy {
        Busy::QueueFull => format!(
            "{} {what} are being parsed and {} callers are waiting",
            limits.max_concurrent, limits.queue
        ),
        Busy::WaitedTooLong => format!(
            "no parse slot came free within {} ms ({} {what} at once)",
            limits.queue_wait.as_millis(),
            limits.max_concurrent
        ),
    };
    format!("the service is busy: {why}; retry in {RETRY_AFTER_S} s")
}

/// The answer to a caller who got no slot: 503 `parser_busy`, `Retry-After`, not charged.
pub fn busy_reply(busy: Busy, what: &str, limits: &SlotLimits) -> Reply {
    Reply::error(
        StatusCode::SERVICE_UNAVAILABLE,
        "parser_busy",
        format!("{}; you were not charged", busy_message(busy, what, limits)),
    )
    .with_header("retry-after", &RETRY_AFTER_S.to_string())
}

/// One route's slots.
pub struct ParseSlots {
    limits: SlotLimits,
    permits: Arc<Semaphore>,
    waiting: AtomicUsize,
}

impl ParseSlots {
    pub fn new(limits: SlotLimits) -> ParseSlots {
        ParseSlots {
            permits: Arc::new(Semaphore::new(limits.max_concurrent)),
            limits,
            waiting: AtomicUsize::new(0),
        }
    }

    pub fn limits(&self) -> &SlotLimits {
        &self.limits
    }

    /// A slot, held until the permit is dropped (move it into the blocking job so the slot
    /// stays taken while the parse runs, even if the caller has gone).
    pub async fn acquire(&self) -> Result<OwnedSemaphorePermit, Busy> {
        if let Ok(p) = self.permits.clone().try_acquire_owned() {
            return Ok(p);
        }
        let waiting = self.waiting.fetch_add(1, Ordering::SeqCst);
        let _leave = Leave(&self.waiting);
        if !may_wait(waiting, &self.limits) {
            return Err(Busy::QueueFull);
        }
        match tokio::time::timeout(self.limits.queue_wait, self.permits.clone().acquire_owned())
            .await
        {
            Ok(Ok(p)) => Ok(p),
            // The semaphore is never closed; a closed one would mean no slot ever comes.
            Ok(Err(_)) | Err(_) => Err(Busy::WaitedTooLong),
        }
    }
}

/// Leaves the queue when the wait ends, however it ends (a caller who hangs up included).
struct Leave<'a>(&'a AtomicUsize);

impl Drop for Leave<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAMES: [&str; 3] = ["max_concurrent", "queue", "queue_wait_ms"];

    fn limits(c: usize, q: usize, w: u64) -> SlotLimits {
        SlotLimits::new(c, q, w, NAMES).unwrap()
    }

    #[test]
    fn settings_are_checked() {
        assert!(SlotLimits::new(0, 4, 100, NAMES)
            .unwrap_err()
            .starts_with("max_concurrent must be from 1"));
        assert!(SlotLimits::new(65, 4, 100, NAMES).is_err());
        assert!(SlotLimits::new(1, 1025, 100, NAMES)
            .unwrap_err()
            .starts_with("queue must be at most"));
        assert!(SlotLimits::new(1, 0, 0, NAMES)
            .unwrap_err()
            .starts_with("queue_wait_ms"));
        assert!(SlotLimits::new(1, 0, 60_001, NAMES).is_err());
        assert_eq!(
            limits(4, 0, 1).queue_wait,
            Duration::from_millis(1),
            "no queue is allowed"
        );
    }

    #[test]
    fn waiting_is_bounded_by_the_queue() {
        let l = limits(2, 3, 100);
        assert!(may_wait(0, &l));
        assert!(may_wait(2, &l));
        assert!(!may_wait(3, &l));
        assert!(!may_wait(0, &limits(2, 0, 100)));
    }

    #[test]
    fn the_busy_reply_is_a_503_with_retry_after() {
        let l = limits(4, 16, 4000);
        for busy in [Busy::QueueFull, Busy::WaitedTooLong] {
            let r = busy_reply(busy, "pages", &l);
            assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE);
            assert_eq!(r.headers["retry-after"], "2");
            let v = r.body_json().unwrap();
            assert_eq!(v["error"], "parser_busy");
            assert!(v["message"]
                .as_str()
                .unwrap()
                .ends_with("you were not charged"));
        }
    }

    #[tokio::test]
    async fn slots_queue_and_refuse() {
        let slots = Arc::new(ParseSlots::new(limits(1, 1, 200)));
        let held = slots.acquire().await.unwrap();
        // One caller may wait; the next finds the queue full at once.
        let waiter = {
            let s = slots.clone();
            tokio::spawn(async move { s.acquire().await.map(|_| ()) })
        };
        while slots.waiting.load(Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
        assert_eq!(slots.acquire().await.unwrap_err(), Busy::QueueFull);
        // The waiter gets the slot once it is freed.
        drop(held);
        assert_eq!(waiter.await.unwrap(), Ok(()));
        // A wait that runs out.
        let _held = slots.acquire().await.unwrap();
        let t = std::time::Instant::now();
        assert_eq!(slots.acquire().await.unwrap_err(), Busy::WaitedTooLong);
        assert!(t.elapsed() >= Duration::from_millis(200));
        assert_eq!(slots.waiting.load(Ordering::SeqCst), 0, "the queue emptied");
    }

    #[tokio::test]
    async fn a_caller_who_gives_up_leaves_the_queue() {
        let slots = ParseSlots::new(limits(1, 1, 10_000));
        let _held = slots.acquire().await.unwrap();
        let r = tokio::time::timeout(Duration::from_millis(20), slots.acquire()).await;
        assert!(r.is_err());
        assert_eq!(slots.waiting.load(Ordering::SeqCst), 0);
    }
}
