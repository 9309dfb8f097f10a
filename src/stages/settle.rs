//! `settle`: takes the money, only when the bill says so, before any paid content leaves.
//!
//! Charged → facilitator /settle: success → the reply with PAYMENT-RESPONSE; a definite
//! failure → the reply is withheld and the caller gets 402 with the failure; pending or no
//! answer in time → 503 with Retry-After (and the transaction hash when known), the finished
//! reply kept under the payment's key for its validity window, and served when the same
//! PAYMENT-SIGNATURE comes back and the settlement is confirmed (never a fresh 402 that
//! invites paying twice, DESIGN §9). Not charged → settlement skipped, the reply passes
//! unchanged. Parameters: `retry_after_s` (default 5).

use async_trait::async_trait;
use http::{HeaderValue, StatusCode};
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Arc;

use super::payment_gate::Resumed;
use crate::pipeline::{
    params, BuildCtx, Exchange, Flow, PaymentState, Phase, Reply, Stage, StageFactory,
};
use crate::x402::codec::encode_header;
use crate::x402::facilitator::{FacilitatorClient, FacilitatorError, SettleOutcome};
use crate::x402::ledger::{Ledger, Pending};
use crate::x402::types::Requirement;

pub const FACTORY: StageFactory = StageFactory {
    name: "settle",
    phase: Phase::Finish,
    payment: true,
    needs: &["payment", "bill"],
    gives: &[],
    doc: "x402 v2: settle charged calls; PAYMENT-RESPONSE on success, 402 on failure, 503 when pending",
    errors: &[
        (402, "Settlement failed: the answer is withheld and nothing was charged"),
        (503, "Settlement pending: repeat the same request with the same PAYMENT-SIGNATURE after Retry-After"),
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
    facilitator: Arc<FacilitatorClient>,
    ledger: Arc<Ledger>,
    retry_after_s: u64,
}

fn build(ctx: &BuildCtx<'_>, p: Value) -> Result<Arc<dyn Stage>, String> {
    let p: Params = params(p)?;
    Ok(Arc::new(Settle {
        facilitator: ctx.services.need::<FacilitatorClient>()?,
        ledger: ctx.services.need::<Ledger>()?,
        retry_after_s: p.retry_after_s.max(1),
    }))
}

/// The facilitator said the authorization was already used: for a payment we kept as pending
/// that means our earlier settlement landed (the signed transfer names our payTo and amount).
fn already_settled(reason: &str, message: Option<&str>) -> bool {
    let text = format!("{reason} {}", message.unwrap_or("")).to_ascii_lowercase();
    text.contains("nonce_already_used") || text.contains("authorization is used")
}

#[async_trait]
impl Stage for Settle {
    async fn run(&self, ex: &mut Exchange) -> Flow {
        let PaymentState::Verified(payment) = &ex.payment else {
            return Flow::Continue;
        };
        let payment = payment.clone();
        if ex.charged != Some(true) {
            // Not charged: never settles; the reply passes unchanged.
            return Flow::Continue;
        }
        let resumed = ex.slots.take::<Resumed>();
        let requirement: Requirement = match serde_json::from_value(payment.requirement.clone()) {
            Ok(r) => r,
            Err(_) => {
                ex.reply = Some(Reply::error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "internal_error",
                    "payment state lost; nothing was charged",
                ));
                return Flow::Reply;
            }
        };
        let outcome = self
            .facilitator
            .settle(&payment.payload, &requirement)
            .await;
        let reply = ex.reply.take().unwrap_or_else(|| {
            Reply::error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal_error",
                "no reply",
            )
        });
        let keep = |transaction: Option<String>| Pending {
            header: payment.header.clone(),
            reply: reply.clone(),
            transaction,
            requirement: payment.requirement.clone(),
            payload: payment.payload.clone(),
        };
        let network = requirement.network.clone();
        match outcome {
            Ok(SettleOutcome::Settled { response }) => {
                self.ledger.forget_pending(&payment.key);
                tracing::info!(request_id = %ex.id, tx = %response.get("transaction").and_then(serde_json::Value::as_str).unwrap_or(""), "settled");
                ex.reply = Some(paid(reply, &response));
            }
            Ok(SettleOutcome::Failed {
                reason,
                message,
                response,
            }) => {
                if resumed.is_some() && already_settled(&reason, message.as_deref()) {
                    self.ledger.forget_pending(&payment.key);
                    let receipt = json!({
                        "success": true,
                        "transaction": resumed.as_ref().and_then(|r| r.0.transaction.clone()).unwrap_or_default(),
                        "network": network,
                        "payer": payment.payer,
                    });
                    ex.reply = Some(paid(reply, &receipt));
                } else {
                    self.ledger.forget_pending(&payment.key);
                    tracing::warn!(request_id = %ex.id, reason = %reason, "settlement failed; reply withheld");
                    ex.reply = Some(settle_failed(&reason, &response, &network));
                }
            }
            Ok(SettleOutcome::Pending { transaction, .. }) => {
                self.ledger
                    .keep_pending(&payment.key, keep(Some(transaction.clone())));
                ex.reply = Some(self.pending_reply(Some(&transaction)));
            }
            Err(e) if e.outcome_unknown() || matches!(e, FacilitatorError::BadResponse(_)) => {
                // Unknown outcome: the transfer may have been broadcast.
                let tx = resumed.as_ref().and_then(|r| r.0.transaction.clone());
                self.ledger.keep_pending(&payment.key, keep(tx.clone()));
                ex.reply = Some(self.pending_reply(tx.as_deref()));
            }
            Err(e) => {
                // The facilitator could not be reached: nothing was submitted.
                tracing::warn!(request_id = %ex.id, error = %e, "settlement could not be requested");
                if resumed.is_some() {
                    self.ledger.keep_pending(
                        &payment.key,
                        keep(resumed.as_ref().and_then(|r| r.0.transaction.clone())),
                    );
                    ex.reply = Some(self.pending_reply(None));
                } else {
                    ex.reply = Some(Reply::error(
                        StatusCode::from_u16(e.status()).unwrap_or(StatusCode::BAD_GATEWAY),
                        e.code(),
                        "the payment facilitator could not be reached to settle; nothing was charged, retry later",
                    ));
                }
            }
        }
        Flow::Continue
    }
}

impl Settle {
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

/// The reply released with its receipt.
fn paid(mut reply: Reply, response: &Value) -> Reply {
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
    use super::already_settled;

    #[test]
    fn recognises_spent_authorizations() {
        assert!(already_settled(
            "invalid_exact_evm_nonce_already_used",
            None
        ));
        assert!(already_settled(
            "unexpected_error",
            Some("FiatTokenV2: authorization is used or canceled")
        ));
        assert!(!already_settled(
            "invalid_exact_evm_insufficient_balance",
            None
        ));
    }
}
