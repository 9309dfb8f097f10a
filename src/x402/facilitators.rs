//! Several facilitators behind one door: merged `/supported`, health, failover (issue 17,
//! item 6). The paid path asks [`Facilitators`] what it used to ask one `FacilitatorClient`.
//!
//! - `/supported` is the union of what each one lists; each one's own list decides where a
//!   payment may go (its (version, scheme, network), and for Solana the offer's feePayer, which
//!   only the facilitator that named it can sign for).
//! - Each verify and settle goes to the best facilitator [`failover::choose`] names.
//! - `/verify` moves no money: on no answer, a timeout, a 5xx, garbage or refused credentials it
//!   is asked of the next one.
//! - `/settle` goes to another facilitator **only when the first provably never received it**
//!   (connect refused, DNS, TLS: `FacilitatorError::Unreachable`, after the client's own one
//!   resend on a fresh connection). A timeout after sending, a dropped connection or a 5xx
//!   leaves its outcome unknown: it is never re-sent elsewhere; the settle stage records it as
//!   pending and the ledger's confirmation rule (the chain, `payment::confirm`) decides. The
//!   name of each facilitator is announced before the settlement is sent to it
//!   ([`Facilitators::settle_announced`]: the ledger records it), and a settlement in doubt is
//!   asked again only of that one ([`Facilitators::settle_again`]).
//! - With two or more facilitators a background task asks each one's `/supported` every
//!   `check_interval` (health and latency, and how an open breaker closes again without risking
//!   a paid call). With one, nothing changes: no checks, and it is always asked.
//!
//! The facilitator used is returned with each answer ([`Routed`]) for the request log line; every
//! exchange, failover and breaker change is told to the observer (the metrics).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tracing::{debug, info, warn};

use super::facilitator::{
    FacilitatorClient, FacilitatorError, SettleOutcome, Supported, VerifyOutcome,
};
use super::failover::{choose, same_facilitator, Candidate, Health, Rules, State, Support};
use super::types::Requirement;

/// What the pool tells its observer (the metrics).
#[derive(Debug, Clone, Copy)]
pub enum Event<'a> {
    /// One exchange with one facilitator; `error` is its code when there was no usable answer.
    Exchange {
        facilitator: &'a str,
        endpoint: &'static str,
        elapsed: Duration,
        error: Option<&'static str>,
    },
    /// A call left `from` for the next facilitator.
    Failover {
        endpoint: &'static str,
        from: &'a str,
    },
    /// A facilitator's breaker changed.
    Breaker { facilitator: &'a str, state: State },
}

pub type Observer = Arc<dyn Fn(&Event<'_>) + Send + Sync>;

/// An answer and the facilitator that gave it (the last one asked; None when none was).
#[derive(Debug)]
pub struct Routed<T> {
    pub by: Option<Arc<str>>,
    pub result: T,
}

struct Member {
    name: Arc<str>,
    client: FacilitatorClient,
    health: Mutex<Health>,
}

/// The configured facilitators, in the operator's order of preference. Share behind an `Arc`.
pub struct Facilitators {
    members: Vec<Member>,
    rules: Rules,
    check_interval: Duration,
    /// network → the Solana feePayer handed out (stable, see [`Self::fee_payer`]).
    fee_payers: Mutex<HashMap<String, String>>,
    /// Bumped on breaker changes and feePayer switches: the gates render their 402s again.
    generation: AtomicU64,
    observer: OnceLock<Observer>,
}

impl std::fmt::Debug for Facilitators {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.members.iter().map(|m| (&m.name, &m.client)))
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Facilitators {
    /// `members`: (name, client) in order of preference; at least one.
    pub fn new(
        members: Vec<(String, FacilitatorClient)>,
        failures: u32,
        cooldown: Duration,
        slow: Duration,
        check_interval: Duration,
    ) -> Facilitators {
        Facilitators {
            members: members
                .into_iter()
                .map(|(name, client)| Member {
                    name: name.into(),
                    client,
                    health: Mutex::new(Health::default()),
                })
                .collect(),
            rules: Rules {
                failures: failures.max(1),
                cooldown,
                slow,
            },
            check_interval,
            fee_payers: Mutex::new(HashMap::new()),
            generation: AtomicU64::new(0),
            observer: OnceLock::new(),
        }
    }

    /// One facilitator named `default`, default rules.
    pub fn single(client: FacilitatorClient) -> Facilitators {
        Facilitators::new(
            vec![("default".into(), client)],
            3,
            Duration::from_secs(30),
            Duration::from_secs(3),
            Duration::from_secs(10),
        )
    }

    /// Set once (the metrics); later calls are ignored.
    pub fn observe(&self, f: Observer) {
        let _ = self.observer.set(f);
    }

    pub fn len(&self) -> usize {
        self.members.len()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    pub fn names(&self) -> Vec<Arc<str>> {
        self.members.iter().map(|m| m.name.clone()).collect()
    }

    /// The client of the facilitator named `name`.
    pub fn client(&self, name: &str) -> Option<&FacilitatorClient> {
        self.members
            .iter()
            .find(|m| &*m.name == name)
            .map(|m| &m.client)
    }

    /// The client of the `i`-th facilitator in the operator's order.
    pub fn client_at(&self, i: usize) -> Option<&FacilitatorClient> {
        self.members.get(i).map(|m| &m.client)
    }

    /// "a (https://…), b (https://…)" for messages.
    pub fn describe(&self) -> String {
        self.members
            .iter()
            .map(|m| format!("{} ({})", m.name, m.client.endpoint_url("")))
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn emit(&self, e: Event<'_>) {
        if let Some(o) = self.observer.get() {
            o(&e);
        }
    }

    fn state_of(&self, i: usize, now: Instant) -> State {
        lock(&self.members[i].health).state(now, &self.rules)
    }

    /// Whether member `i` lists what `req` needs.
    fn support(&self, i: usize, req: &Requirement) -> Support {
        let Some(s) = self.members[i].client.cached_supported() else {
            return Support::Unknown;
        };
        if !s.supports(2, &req.scheme, &req.network) {
            return Support::NotListed;
        }
        if req.network.starts_with("solana:") {
            if let Some(fp) = req.extra.get("feePayer").and_then(Value::as_str) {
                let named = s.fee_payers(&req.network).iter().any(|f| f == fp)
                    || s.signers_for(&req.network).iter().any(|f| f == fp);
                if !named {
                    return Support::NotListed;
                }
            }
        }
        Support::Listed
    }

    /// The members to try for `req`, best first.
    fn order(&self, req: &Requirement) -> Vec<usize> {
        let now = Instant::now();
        let candidates: Vec<Candidate> = (0..self.members.len())
            .map(|i| {
                let h = lock(&self.members[i].health);
                Candidate {
                    support: self.support(i, req),
                    state: h.state(now, &self.rules),
                    slow: h.slow(&self.rules),
                }
            })
            .collect();
        choose(&candidates)
    }

    fn start_call(&self, i: usize) {
        lock(&self.members[i].health).start_call(Instant::now(), &self.rules);
    }

    /// Records one exchange's result in member `i`'s health; tells the observer.
    fn record(
        &self,
        i: usize,
        endpoint: &'static str,
        elapsed: Duration,
        error: Option<&FacilitatorError>,
    ) {
        let m = &self.members[i];
        let now = Instant::now();
        let (before, after) = {
            let mut h = lock(&m.health);
            let before = h.state(now, &self.rules);
            match error {
                None => h.success((endpoint != "settle").then_some(elapsed)),
                Some(e) => h.failure(e.code(), now, &self.rules),
            }
            (before, h.state(now, &self.rules))
        };
        self.emit(Event::Exchange {
            facilitator: &m.name,
            endpoint,
            elapsed,
            error: error.map(FacilitatorError::code),
        });
        if before != after {
            self.generation.fetch_add(1, Ordering::Release);
            match after {
                State::Open => {
                    warn!(facilitator = %m.name, endpoint, error = error.map(FacilitatorError::code).unwrap_or(""), cooldown_s = self.rules.cooldown.as_secs(), "facilitator breaker open")
                }
                _ => {
                    info!(facilitator = %m.name, state = after.label(), "facilitator breaker {}", after.label())
                }
            }
            self.emit(Event::Breaker {
                facilitator: &m.name,
                state: after,
            });
        }
    }

    fn nobody(req: &Requirement) -> FacilitatorError {
        FacilitatorError::Unreachable(format!(
            "no configured facilitator lists `{}` on {}",
            req.scheme, req.network
        ))
    }

    /// Asks the facilitators in the order [`Self::order`] gives, best first, until `go_on`
    /// says stop: each call is counted, timed and recorded against its facilitator's health.
    /// `go_on` sees each answer with the next facilitator (if any), logs what it decides, and a
    /// move to the next facilitator is told to the observer as a failover.
    async fn in_order<'a, T, Fut>(
        &'a self,
        requirement: &Requirement,
        endpoint: &'static str,
        call: impl Fn(&'a FacilitatorClient) -> Fut,
        go_on: impl Fn(&Member, &Result<T, FacilitatorError>, Option<&Member>) -> bool,
    ) -> Routed<Result<T, FacilitatorError>>
    where
        Fut: std::future::Future<Output = Result<T, FacilitatorError>>,
    {
        let order = self.order(requirement);
        let mut last: Routed<Result<T, FacilitatorError>> = Routed {
            by: None,
            result: Err(Self::nobody(requirement)),
        };
        for (n, &i) in order.iter().enumerate() {
            let m = &self.members[i];
            self.start_call(i);
            let started = Instant::now();
            let result = call(&m.client).await;
            self.record(i, endpoint, started.elapsed(), result.as_ref().err());
            let next = order.get(n + 1).map(|&j| &self.members[j]);
            let moving_on = go_on(m, &result, next);
            last = Routed {
                by: Some(m.name.clone()),
                result,
            };
            if !moving_on {
                break;
            }
            if next.is_some() {
                self.emit(Event::Failover {
                    endpoint,
                    from: &m.name,
                });
            }
        }
        last
    }

    /// Verifies with the best facilitator, and with the next ones while a facilitator gives no
    /// verdict (a verify moves no money). A verdict, valid or not, is final.
    pub async fn verify(
        &self,
        payload: &Value,
        requirement: &Requirement,
    ) -> Routed<Result<VerifyOutcome, FacilitatorError>> {
        let call = |c| FacilitatorClient::verify(c, payload, requirement);
        self.in_order(requirement, "verify", call, |m, result, next| {
            debug!(facilitator = %m.name, ok = result.is_ok(), "verify routed");
            let Err(e) = result else { return false };
            if let Some(next) = next {
                warn!(facilitator = %m.name, next = %next.name, endpoint = "verify", error = %e, code = e.code(), "facilitator failed; verifying with the next one");
            }
            true
        })
        .await
    }

    /// Settles with the best facilitator. Another one is asked only when this one provably
    /// never received the request (`Unreachable`); any other failure is returned as is: its
    /// outcome may be unknown, and re-sending it elsewhere is not ours to decide.
    pub async fn settle(
        &self,
        payload: &Value,
        requirement: &Requirement,
    ) -> Routed<Result<SettleOutcome, FacilitatorError>> {
        let announced = self
            .settle_announced(payload, requirement, |_| async {
                Ok::<(), std::convert::Infallible>(())
            })
            .await;
        match announced {
            Ok(routed) => routed,
            Err(never) => match never {},
        }
    }

    /// [`settle`](Self::settle), awaiting `before_send(name)` before the settlement is sent to
    /// each facilitator: the ledger records that name first, so a settlement whose outcome
    /// turns out unknown is resolved with the facilitator that has it ([`Self::settle_again`]),
    /// even after a crash. An error from `before_send` stops everything: nothing more is sent,
    /// and the error is returned.
    pub async fn settle_announced<E, F, Fut>(
        &self,
        payload: &Value,
        requirement: &Requirement,
        mut before_send: F,
    ) -> Result<Routed<Result<SettleOutcome, FacilitatorError>>, E>
    where
        F: FnMut(Arc<str>) -> Fut,
        Fut: std::future::Future<Output = Result<(), E>>,
    {
        let order = self.order(requirement);
        let mut last: Routed<Result<SettleOutcome, FacilitatorError>> = Routed {
            by: None,
            result: Err(Self::nobody(requirement)),
        };
        for (n, &i) in order.iter().enumerate() {
            let m = &self.members[i];
            before_send(m.name.clone()).await?;
            self.start_call(i);
            let started = Instant::now();
            let result = m.client.settle(payload, requirement).await;
            self.record(i, "settle", started.elapsed(), result.as_ref().err());
            let never_sent = matches!(result, Err(FacilitatorError::Unreachable(_)));
            last = Routed {
                by: Some(m.name.clone()),
                result,
            };
            match (&last.result, order.get(n + 1)) {
                (Err(e), Some(&next)) if never_sent => {
                    warn!(facilitator = %m.name, next = %self.members[next].name, endpoint = "settle", error = %e, "facilitator unreachable (the settlement never left); settling with the next one");
                    self.emit(Event::Failover {
                        endpoint: "settle",
                        from: &m.name,
                    });
                }
                (Err(e), Some(_)) => {
                    warn!(facilitator = %m.name, endpoint = "settle", error = %e, code = e.code(), outcome_unknown = e.outcome_unknown(), "settlement failed after it may have been delivered; not sent to another facilitator");
                    break;
                }
                _ => break,
            }
        }
        Ok(last)
    }

    /// Settles again a payment whose settlement is in doubt, with the facilitator the ledger
    /// says it was sent to (`sent_to`) and no other, whatever its breaker says
    /// ([`failover::same_facilitator`] decides). When there is no one to ask, `by` is None and
    /// the result an `Unreachable` error: nothing was sent.
    pub async fn settle_again(
        &self,
        sent_to: Option<&str>,
        payload: &Value,
        requirement: &Requirement,
    ) -> Routed<Result<SettleOutcome, FacilitatorError>> {
        let names = self.names();
        let Some(i) = same_facilitator(sent_to, &names[..]) else {
            warn!(
                sent_to = sent_to.unwrap_or("unrecorded"),
                "a settlement in doubt is not sent to another facilitator than the one it went to; the chain decides"
            );
            return Routed {
                by: None,
                result: Err(FacilitatorError::Unreachable(format!(
                    "the facilitator this payment was sent to ({}) is not configured",
                    sent_to.unwrap_or("not recorded")
                ))),
            };
        };
        let m = &self.members[i];
        self.start_call(i);
        let started = Instant::now();
        let result = m.client.settle(payload, requirement).await;
        self.record(i, "settle", started.elapsed(), result.as_ref().err());
        Routed {
            by: Some(m.name.clone()),
            result,
        }
    }

    /// The union of every facilitator's `/supported` (each cached for its TTL); an error only
    /// when none answers.
    pub async fn supported(&self) -> Result<Arc<Supported>, FacilitatorError> {
        let results =
            futures_util::future::join_all(self.members.iter().map(|m| m.client.supported())).await;
        merge_results(results)
    }

    /// Asks every facilitator's `/supported` again (see `FacilitatorClient::refresh_supported`).
    pub async fn refresh_supported(&self) -> Result<Arc<Supported>, FacilitatorError> {
        let results = futures_util::future::join_all(
            self.members.iter().map(|m| m.client.refresh_supported()),
        )
        .await;
        merge_results(results)
    }

    /// The Solana feePayer to offer on `network`: the one handed out before while a facilitator
    /// that is not cooling down still names it, else the first such facilitator's (in the
    /// order `choose` gives). A facilitator can sign only for its own feePayer, so when its
    /// owner is out, the offer moves to another facilitator's.
    pub fn fee_payer(&self, network: &str) -> Option<String> {
        let now = Instant::now();
        let usable: Vec<usize> = {
            let candidates: Vec<Candidate> = (0..self.members.len())
                .map(|i| {
                    let h = lock(&self.members[i].health);
                    Candidate {
                        support: match self.members[i].client.cached_supported() {
                            Some(s) if !s.fee_payers(network).is_empty() => Support::Listed,
                            _ => Support::NotListed,
                        },
                        state: h.state(now, &self.rules),
                        slow: false,
                    }
                })
                .collect();
            choose(&candidates)
        };
        let mut chosen = lock(&self.fee_payers);
        if let Some(prev) = chosen.get(network) {
            let still = usable.iter().any(|&i| {
                self.state_of(i, now) != State::Open
                    && self.members[i].client.cached_supported().is_some_and(|s| {
                        s.fee_payers(network).contains(prev)
                            || s.signers_for(network).contains(prev)
                    })
            });
            if still {
                return Some(prev.clone());
            }
        }
        let pick = usable
            .iter()
            .find_map(|&i| self.members[i].client.fee_payer(network));
        let changed = chosen.get(network) != pick.as_ref();
        match &pick {
            Some(p) => {
                chosen.insert(network.to_string(), p.clone());
            }
            None => {
                chosen.remove(network);
            }
        }
        if changed {
            self.generation.fetch_add(1, Ordering::Release);
        }
        pick
    }

    /// Changes whenever what the offers are rendered from may have changed: a facilitator's
    /// `/supported`, a breaker, the feePayer handed out.
    pub fn supported_generation(&self) -> u64 {
        self.members
            .iter()
            .map(|m| m.client.supported_generation())
            .fold(self.generation.load(Ordering::Acquire), u64::wrapping_add)
    }

    /// One round of health checks: every facilitator's `/supported`, at once.
    pub async fn check_health(&self) {
        let checks = self.members.iter().enumerate().map(|(i, m)| async move {
            let started = Instant::now();
            let r = m.client.probe_supported().await;
            self.record(i, "supported", started.elapsed(), r.as_ref().err());
        });
        futures_util::future::join_all(checks).await;
    }

    /// With two or more facilitators, checks their health every `check_interval` until the
    /// pool is dropped. With one, does nothing.
    pub fn start_health_checks(self: &Arc<Self>) {
        if self.members.len() < 2 {
            return;
        }
        let weak: Weak<Facilitators> = Arc::downgrade(self);
        let interval = self.check_interval;
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(interval).await;
                let Some(pool) = weak.upgrade() else { return };
                pool.check_health().await;
            }
        });
    }

    /// Whether some facilitator is healthy and has answered `/supported`.
    pub fn any_available(&self) -> bool {
        let now = Instant::now();
        (0..self.members.len()).any(|i| {
            self.state_of(i, now) != State::Open
                && self.members[i].client.cached_supported().is_some()
        })
    }

    /// `/status`'s `facilitators`: each one's health and the v2 networks it lists.
    pub fn status(&self) -> Value {
        let now = Instant::now();
        Value::Array(
            self.members
                .iter()
                .map(|m| {
                    let h = lock(&m.health).clone();
                    let networks: Vec<String> = m
                        .client
                        .cached_supported()
                        .map(|s| {
                            let mut n: Vec<String> = s
                                .kinds
                                .iter()
                                .filter(|k| k.x402_version == 2)
                                .map(|k| format!("{}:{}", k.scheme, k.network))
                                .collect();
                            n.dedup();
                            n
                        })
                        .unwrap_or_default();
                    json!({
                        "name": &*m.name,
                        "url": m.client.endpoint_url("").as_str(),
                        "state": h.state(now, &self.rules).label(),
                        "consecutiveFailures": h.failures_in_row,
                        "latencyMs": h.latency_ms.map(|l| l.round() as u64),
                        "successes": h.successes,
                        "failures": h.failures,
                        "lastError": h.last_error,
                        "supported": networks,
                    })
                })
                .collect(),
        )
    }
}

fn merge_results(
    results: Vec<Result<Arc<Supported>, FacilitatorError>>,
) -> Result<Arc<Supported>, FacilitatorError> {
    let mut first_err = None;
    let mut ok = Vec::new();
    for r in results {
        match r {
            Ok(s) => ok.push(s),
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    if ok.is_empty() {
        return Err(first_err
            .unwrap_or_else(|| FacilitatorError::Unreachable("no facilitator configured".into())));
    }
    if ok.len() == 1 {
        return Ok(ok.remove(0));
    }
    Ok(Arc::new(merge(&ok)))
}

/// The union of several `/supported` answers: kinds (first occurrence of each (version,
/// scheme, network, extra)), extensions, signers.
pub fn merge(all: &[Arc<Supported>]) -> Supported {
    let mut out = Supported::default();
    for s in all {
        for k in &s.kinds {
            if !out.kinds.contains(k) {
                out.kinds.push(k.clone());
            }
        }
        for e in &s.extensions {
            if !out.extensions.contains(e) {
                out.extensions.push(e.clone());
            }
        }
        for (pattern, addrs) in &s.signers {
            let entry = out.signers.entry(pattern.clone()).or_default();
            for a in addrs {
                if !entry.contains(a) {
                    entry.push(a.clone());
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_is_a_union() {
        let a = Supported::from_json(&json!({
            "kinds": [{"x402Version": 2, "scheme": "exact", "network": "eip155:8453"}],
            "extensions": ["bazaar"],
            "signers": {"eip155:*": ["0xa"]}
        }))
        .unwrap();
        let b = Supported::from_json(&json!({
            "kinds": [
                {"x402Version": 2, "scheme": "exact", "network": "eip155:8453"},
                {"x402Version": 2, "scheme": "exact", "network": "solana:x", "extra": {"feePayer": "F"}}
            ],
            "signers": {"eip155:*": ["0xb"], "solana:*": ["F"]}
        }))
        .unwrap();
        let m = merge(&[Arc::new(a), Arc::new(b)]);
        assert_eq!(m.kinds.len(), 2);
        assert!(m.supports(2, "exact", "solana:x"));
        assert_eq!(m.extensions, ["bazaar"]);
        assert_eq!(m.signers["eip155:*"], ["0xa", "0xb"]);
        assert_eq!(m.fee_payers("solana:x"), ["F"]);
    }
}
