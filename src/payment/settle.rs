//! `settle`: takes the money, only when the bill says so, before any paid content leaves.
//!
//! Charged → the finished reply is kept in the ledger (state `settling`), then the facilitator
//! settles: success → the reply with PAYMENT-RESPONSE (kept for a retry until the payment's
//! validity ends, or the payment-identifier window); a definite failure → the reply is dropped
//! and the caller gets 402 with the failure; pending or no answer in time → 503 with
//! Retry-After (and the transaction hash when known), never a fresh 402 that invites paying
//! twice. Not charged → never settles; the reply passes unchanged and the ledger says
//! `not_charged`.
//!
//! A payment met again while its money is in doubt (the gate's `Resume`) is released only on
//! proof: the facilitator's success with a transaction hash, or the transfer found on chain
//! (`confirm`). A facilitator saying the authorization "is used" is not proof: it may have
//! been cancelled. The ledger row names the facilitator a settlement is sent to before it is
//! sent; a settlement in doubt is asked again of that facilitator only. Parameters:
//! `retry_after_s` (default 5).

use async_trait::async_trait;
use http::{HeaderValue, StatusCode};
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Arc;

use super::confirm::{Authorization, Confirmer, Onchain, Payment, SolanaPayment};
use super::gate::{reply_to_kept, Replayed};
use super::ledger::{now_ms, Ledger, State, Store, Update};
use super::paid::{Billed, Outcome, Paid, Resume, Settled};
use crate::pipeline::{
    params, Artefact, BuildCtx, Exchange, Flow, Phase, Reply, Stage, StageFactory,
};
use crate::x402::codec::encode_header;
use crate::x402::facilitator::{FacilitatorError, SettleOutcome};
use crate::x402::facilitators::{Facilitators, Routed};

pub const FACTORY: StageFactory = StageFactory {
    name: "settle",
    phase: Phase::Finish,
    payment: true,
    needs: &[Artefact::of::<Paid>("payment"), Artefact::of::<Billed>("bill")],
    gives: &[Artefact::of::<Settled>("settlement")],
    doc: "x402 v2: settle charged calls; PAYMENT-RESPONSE on success, 402 on failure, 503 when pending",
    errors: &[
        (402, "Settlement failed: the answer is withheld and nothing was charged"),
        (503, "Settlement pending (repeat the same request with the same PAYMENT-SIGNATURE after Retry-After), or the payment ledger is unavailable"),
    ],
    build,
};

pub const HEADER_RESPONSE: &str = "PAYMENT-RESPONSE";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    #[serde(default = "default_retry_after")]
    retry_after_s: u64,
}

fn default_retry_after() -> u64 {
    5
}

struct Settle {
    facilitator: Arc<Facilitators>,
    ledger: Arc<Ledger>,
    confirmer: Arc<Confirmer>,
    retry_after_s: u64,
}

fn build(ctx: &BuildCtx<'_>, p: Value) -> Result<Arc<dyn Stage>, String> {
    let p: Params = params(p)?;
    Ok(Arc::new(Settle {
        facilitator: ctx.services.need::<Facilitators>()?,
        ledger: ctx.services.need::<Ledger>()?,
        confirmer: ctx.services.need::<Confirmer>()?,
        retry_after_s: p.retry_after_s.max(1),
    }))
}

/// What to look for on chain for this payment, and the payer its receipt names.
fn on_chain_facts(paid: &Paid) -> Option<(Payment, String)> {
    let network = &paid.offer.network;
    if network.starts_with("solana:") {
        // It cannot have landed before it first reached us.
        let arrived_s = match &paid.resume {
            Some(r) => r.row.created_ms / 1000,
            None => paid.valid_before - paid.offer.max_timeout_seconds as i64,
        };
        let p = SolanaPayment::from_payload(
            &paid.payload,
            &paid.offer.pay_to,
            &paid.offer.asset,
            arrived_s,
        )?;
        let payer = p.authority.clone();
        return Some((Payment::Solana(p), payer));
    }
    let a = Authorization::from_payload(&paid.payload, &paid.offer.asset)?;
    let payer = a.from.clone();
    Some((Payment::Evm(a), payer))
}

/// The facilitator's failure text says the authorization was already consumed (or cancelled):
/// a reason to look on chain, never proof of payment.
pub fn says_spent(reason: &str, message: Option<&str>) -> bool {
    let text = format!("{reason} {}", message.unwrap_or("")).to_ascii_lowercase();
    text.contains("nonce_already_used")
        || text.contains("authorization is used")
        || text.contains("already")
        || text.contains("duplicate")
}

/// How a settlement attempt ended, before it becomes an answer and a ledger row.
enum Verdict {
    Paid {
        receipt: Value,
        transaction: String,
    },
    Failed {
        reason: String,
        receipt: Value,
    },
    Pending {
        transaction: Option<String>,
    },
    /// The facilitator could not be asked (nothing was submitted).
    NotAsked(FacilitatorError),
}

#[async_trait]
impl Stage for Settle {
    async fn run(&self, ex: &mut Exchange) -> Flow {
        if ex.slots.get::<Replayed>().is_some() {
            return Flow::Continue;
        }
        let Some(paid) = ex.slots.take::<Paid>() else {
            return Flow::Continue;
        };
        let started = std::time::Instant::now();
        let reply = ex.reply.take().unwrap_or_else(|| {
            Reply::error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal_error",
                "the route produced no answer; you were not charged",
            )
        });
        let store = match self.ledger.store().await {
            Ok(s) => s,
            Err(e) => {
                tracing::error!(request_id = %ex.id, error = %e, "ledger unavailable at settlement; answer withheld, nothing settled");
                ex.reply = Some(ledger_down());
                return Flow::Continue;
            }
        };
        let charged = ex.slots.get::<Billed>().is_some_and(|b| b.0);
        let mut used = None;
        let (answer, outcome) = if let Some(resume) = &paid.resume {
            self.resume(&*store, &paid, resume, reply, &ex.id, &mut used)
                .await
        } else if !charged {
            let u = Update {
                state: Some(State::NotCharged),
                error: Some(format!("answered {}", reply.status.as_u16())),
                release: true,
                ..Default::default()
            };
            if let Err(e) = store
                .update(&paid.key, self.ledger.owner(), &u, now_ms())
                .await
            {
                tracing::warn!(request_id = %ex.id, error = %e, "ledger: not-charged outcome not recorded");
            }
            (reply, Outcome::NotCharged)
        } else {
            self.charge(&*store, &paid, reply, &ex.id, &mut used).await
        };
        if let Some(by) = used {
            ex.slots.put(super::paid::FacilitatorUsed(by));
        }
        ex.slots.put(super::timing::SettleTimes {
            started,
            took: started.elapsed(),
            charged,
        });
        ex.slots.put(Settled {
            outcome,
            network: paid.offer.network.clone(),
            amount: paid.offer.amount.clone(),
        });
        ex.reply = Some(answer);
        Flow::Continue
    }
}

impl Settle {
    /// Until when a released reply is kept for a retry of the same payment.
    fn keep_until(&self, paid: &Paid, now: i64) -> i64 {
        let validity = paid.valid_before.saturating_mul(1000).max(now) + 60_000;
        if paid.pid.is_some() {
            validity.max(now + self.ledger.settings.identifier_window.as_millis() as i64)
        } else {
            validity
        }
    }

    fn keepable(&self, reply: &Reply) -> bool {
        reply.body.len() <= self.ledger.settings.max_reply_bytes
    }

    async fn charge(
        &self,
        store: &dyn Store,
        paid: &Paid,
        reply: Reply,
        rid: &str,
        used: &mut Option<Arc<str>>,
    ) -> (Reply, Outcome) {
        let now = now_ms();
        let keep_until = self.keep_until(paid, now);
        if !self.keepable(&reply) {
            tracing::warn!(request_id = %rid, bytes = reply.body.len(), "reply over ledger.max_reply_bytes: not kept for a retry");
        }
        let settling = Update {
            state: Some(State::Settling),
            reply: self
                .keepable(&reply)
                .then(|| (reply_to_kept(&reply), keep_until)),
            ..Default::default()
        };
        // The row names each facilitator before the settlement is sent to it, in the same
        // statement that keeps the reply: a settlement whose outcome is unknown is resolved
        // with that facilitator and no other (docs/ledger.md), even after a crash.
        let mut first = Some(settling);
        let (key, owner) = (paid.key.as_str(), self.ledger.owner());
        let announced = self
            .facilitator
            .settle_announced(&paid.payload, &paid.offer, |name| {
                let mut u = first.take().unwrap_or_default();
                u.settled_by = Some(name.to_string());
                async move {
                    match store.update(key, owner, &u, now_ms()).await {
                        Ok(true) => Ok(()),
                        Ok(false) => Err(None),
                        Err(e) => Err(Some(e)),
                    }
                }
            })
            .await;
        let Routed { by, result } = match announced {
            Ok(routed) => routed,
            Err(None) => {
                tracing::error!(request_id = %rid, "ledger: our claim on the payment ended before settlement; nothing settled");
                return (ledger_down(), Outcome::NotSettled);
            }
            Err(Some(e)) => {
                tracing::error!(request_id = %rid, error = %e, "ledger unavailable before settlement; nothing settled");
                return (ledger_down(), Outcome::NotSettled);
            }
        };
        *used = by;
        let verdict = match result {
            Ok(SettleOutcome::Settled { response }) => paid_verdict(response),
            Ok(SettleOutcome::Failed {
                reason, response, ..
            }) => Verdict::Failed {
                reason,
                receipt: response,
            },
            Ok(SettleOutcome::Pending { transaction, .. }) => Verdict::Pending { transaction },
            Err(e) if e.outcome_unknown() || matches!(e, FacilitatorError::BadResponse(_)) => {
                Verdict::Pending { transaction: None }
            }
            Err(e) => Verdict::NotAsked(e),
        };
        self.record(store, paid, reply, verdict, rid).await
    }

    /// A payment whose money was in doubt, met again with the same PAYMENT-SIGNATURE.
    async fn resume(
        &self,
        store: &dyn Store,
        paid: &Paid,
        resume: &Resume,
        reply: Reply,
        rid: &str,
        used: &mut Option<Arc<str>>,
    ) -> (Reply, Outcome) {
        let known_tx = resume.row.transaction.clone();
        // 1. The chain, when we can read it.
        if let Some(v) = self.on_chain(paid, known_tx.as_deref(), rid).await {
            return self.record(store, paid, reply, v, rid).await;
        }
        // 2. Settling the same authorization again is safe: the token moves it at most once.
        //    Only with the facilitator it was sent to (recorded in the row): that one may still
        //    hold it, and for Solana only it can sign as the feePayer.
        let Routed { by, result } = self
            .facilitator
            .settle_again(resume.row.settled_by.as_deref(), &paid.payload, &paid.offer)
            .await;
        *used = by;
        let verdict = match result {
            Ok(SettleOutcome::Settled { response }) => paid_verdict(response),
            Ok(SettleOutcome::Failed {
                reason,
                message,
                response,
            }) => {
                let spent = says_spent(&reason, message.as_deref());
                match self.on_chain(paid, known_tx.as_deref(), rid).await {
                    Some(v) => v,
                    // The authorization can no longer be settled and nothing is on chain.
                    None if !spent && self.confirmer.covers(&paid.offer.network) => {
                        Verdict::Failed {
                            reason,
                            receipt: response,
                        }
                    }
                    None if now_ms() / 1000 > paid.valid_before + 600
                        && self.confirmer.covers(&paid.offer.network) =>
                    {
                        Verdict::Failed {
                            reason,
                            receipt: response,
                        }
                    }
                    // Not provable either way: stay pending, never release, never refuse.
                    None => Verdict::Pending {
                        transaction: known_tx.clone(),
                    },
                }
            }
            Ok(SettleOutcome::Pending { transaction, .. }) => Verdict::Pending {
                transaction: transaction.or_else(|| known_tx.clone()),
            },
            Err(_) => Verdict::Pending {
                transaction: known_tx.clone(),
            },
        };
        if resume.row.reply.is_none() {
            tracing::warn!(request_id = %rid, "a settled payment's reply was over ledger.max_reply_bytes and was not kept");
        }
        self.record(store, paid, reply, verdict, rid).await
    }

    /// The chain's verdict, when this network has an RPC and the payload can be looked for
    /// (an EIP-3009 authorization, or a Solana transfer); None when the chain cannot tell.
    async fn on_chain(&self, paid: &Paid, tx: Option<&str>, rid: &str) -> Option<Verdict> {
        if !self.confirmer.covers(&paid.offer.network) {
            return None;
        }
        let (payment, payer) = on_chain_facts(paid)?;
        match self
            .confirmer
            .check(&paid.offer.network, &payment, tx)
            .await
        {
            Ok(Onchain::Transferred { transaction }) => Some(Verdict::Paid {
                receipt: chain_receipt(&transaction, &paid.offer.network, &payer),
                transaction,
            }),
            Ok(Onchain::Spent) => Some(Verdict::Failed {
                reason: "authorization_spent_elsewhere".into(),
                receipt: json!({}),
            }),
            Ok(Onchain::NotFound) => None,
            Err(e) => {
                tracing::warn!(request_id = %rid, error = %e, "on-chain confirmation failed");
                None
            }
        }
    }

    /// Writes the outcome to the ledger and builds the answer.
    async fn record(
        &self,
        store: &dyn Store,
        paid: &Paid,
        reply: Reply,
        verdict: Verdict,
        rid: &str,
    ) -> (Reply, Outcome) {
        let now = now_ms();
        let outcome = match &verdict {
            Verdict::Paid { .. } => Outcome::Charged,
            Verdict::Failed { .. } => Outcome::SettleFailed,
            Verdict::Pending { .. } => Outcome::Pending,
            Verdict::NotAsked(_) => Outcome::NotSettled,
        };
        let (update, answer) = self.update_and_answer(paid, reply, verdict, rid, now);
        match store
            .update(&paid.key, self.ledger.owner(), &update, now)
            .await
        {
            Ok(true) => {}
            Ok(false) => {
                tracing::error!(request_id = %rid, "ledger: the payment's claim was taken over before its outcome was recorded")
            }
            Err(e) => {
                tracing::error!(request_id = %rid, error = %e, "ledger: outcome not recorded")
            }
        }
        (answer, outcome)
    }

    /// A verdict's ledger update and answer: the reply with its receipt (kept when it may be
    /// asked for again), the settlement failure, the pending 503, or the facilitator's failure.
    fn update_and_answer(
        &self,
        paid: &Paid,
        reply: Reply,
        verdict: Verdict,
        rid: &str,
        now: i64,
    ) -> (Update, Reply) {
        match verdict {
            Verdict::Paid {
                receipt,
                transaction,
            } => {
                tracing::info!(request_id = %rid, tx = %transaction, "settled");
                let out = with_receipt(reply, &receipt);
                let u = Update {
                    state: Some(State::Settled),
                    transaction: Some(transaction),
                    reply: self
                        .keepable(&out)
                        .then(|| (reply_to_kept(&out), self.keep_until(paid, now))),
                    release: true,
                    ..Default::default()
                };
                (u, out)
            }
            Verdict::Failed { reason, receipt } => {
                tracing::warn!(request_id = %rid, reason = %reason, "settlement failed; reply withheld");
                let u = Update {
                    state: Some(State::SettleFailed),
                    error: Some(reason.clone()),
                    drop_reply: true,
                    release: true,
                    ..Default::default()
                };
                (u, settle_failed(&reason, &receipt, &paid.offer.network))
            }
            Verdict::Pending { transaction } => {
                let u = Update {
                    state: Some(State::Pending),
                    transaction: transaction.clone(),
                    release: true,
                    ..Default::default()
                };
                (u, self.pending_reply(transaction.as_deref()))
            }
            Verdict::NotAsked(e) => {
                tracing::warn!(request_id = %rid, error = %e, "settlement could not be requested");
                // Nothing was submitted: the payment is as it was after verify.
                let u = Update {
                    state: Some(State::Verified),
                    error: Some(format!("settle: {}", e.code())),
                    drop_reply: true,
                    release: true,
                    ..Default::default()
                };
                let r = Reply::error(
                    StatusCode::from_u16(e.status()).unwrap_or(StatusCode::BAD_GATEWAY),
                    e.code(),
                    "the payment facilitator could not be reached to settle; nothing was charged, retry later",
                );
                (u, r)
            }
        }
    }

    fn pending_reply(&self, transaction: Option<&str>) -> Reply {
        let mut extra = serde_json::Map::new();
        if let Some(tx) = transaction {
            extra.insert("transaction".into(), Value::String(tx.to_string()));
        }
        extra.insert("retryAfterSeconds".into(), Value::from(self.retry_after_s));
        Reply::error_with(
            StatusCode::SERVICE_UNAVAILABLE,
            "settlement_pending",
            "your payment is being settled; repeat the same request with the same PAYMENT-SIGNATURE after Retry-After seconds — do not pay again",
            extra,
        )
        .with_header("retry-after", &self.retry_after_s.to_string())
    }
}

/// A facilitator success: proof only with a transaction hash.
fn paid_verdict(response: Value) -> Verdict {
    match response
        .get("transaction")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
    {
        Some(tx) => Verdict::Paid {
            transaction: tx.to_string(),
            receipt: response.clone(),
        },
        None => Verdict::Pending { transaction: None },
    }
}

fn ledger_down() -> Reply {
    Reply::error(
        StatusCode::SERVICE_UNAVAILABLE,
        "ledger_unavailable",
        "the payment ledger is unavailable; the answer was withheld and nothing was charged — retry after Retry-After seconds",
    )
    .with_header("retry-after", "5")
}

/// The receipt of a transfer found on chain (the facilitator's shape).
pub fn chain_receipt(transaction: &str, network: &str, payer: &str) -> Value {
    json!({
        "success": true,
        "transaction": transaction,
        "network": network,
        "payer": payer,
    })
}

/// A kept reply as it is released: with its receipt, as `with_receipt` sends it.
pub fn kept_with_receipt(
    k: super::ledger::KeptReply,
    response: &Value,
) -> super::ledger::KeptReply {
    reply_to_kept(&with_receipt(super::gate::kept_to_reply(&k), response))
}

/// The reply released with its receipt.
fn with_receipt(mut reply: Reply, response: &Value) -> Reply {
    if let Ok(v) = HeaderValue::from_str(&encode_header(response)) {
        reply.headers.insert(HEADER_RESPONSE, v);
    }
    reply.headers.insert(
        http::header::CACHE_CONTROL,
        HeaderValue::from_static("private"),
    );
    reply
}

/// Settlement refused: the answer is withheld; 402 with the failure receipt.
fn settle_failed(reason: &str, response: &Value, network: &str) -> Reply {
    let mut receipt = response.clone();
    if !receipt.is_object() {
        receipt = json!({});
    }
    if let Value::Object(m) = &mut receipt {
        m.entry("success").or_insert(Value::Bool(false));
        m.entry("errorReason")
            .or_insert(Value::String(reason.to_string()));
        m.entry("transaction")
            .or_insert(Value::String(String::new()));
        m.entry("network")
            .or_insert(Value::String(network.to_string()));
    }
    let mut extra = serde_json::Map::new();
    extra.insert("reason".into(), Value::String(reason.to_string()));
    let mut r = Reply::error_with(
        StatusCode::PAYMENT_REQUIRED,
        "settlement_failed",
        format!("the payment could not be settled ({reason}); the answer was withheld and nothing was charged"),
        extra,
    );
    if let Ok(v) = HeaderValue::from_str(&encode_header(&receipt)) {
        r.headers.insert(HEADER_RESPONSE, v);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spent_wording_is_recognised_but_is_only_a_reason_to_look() {
        assert!(says_spent("invalid_exact_evm_nonce_already_used", None));
        assert!(says_spent(
            "unexpected_error",
            Some("FiatTokenV2: authorization is used or canceled")
        ));
        assert!(!says_spent("invalid_exact_evm_insufficient_balance", None));
    }

    #[test]
    fn a_success_without_a_transaction_is_pending_not_paid() {
        assert!(matches!(
            paid_verdict(json!({"success": true, "transaction": ""})),
            Verdict::Pending { transaction: None }
        ));
        assert!(matches!(
            paid_verdict(json!({"success": true, "transaction": "0xabc"})),
            Verdict::Paid { .. }
        ));
    }
}
