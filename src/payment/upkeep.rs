//! The ledger's background work: reconcile payments whose money is in doubt (after a crash,
//! or a facilitator that answered "pending"), and prune what the retention rules let go.
//! Runs at startup and then every minute; each pass is bounded.

use std::sync::Arc;
use std::time::Duration;

use super::confirm::{Authorization, Confirmer, Onchain, Payment, SolanaPayment};
use super::ledger::{now_ms, Ledger, Row, State, Update};

/// Rows looked at per pass.
const BATCH: i64 = 200;

/// What one pass did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Pass {
    pub settled: u64,
    pub failed: u64,
    pub left_pending: u64,
    pub replies_pruned: u64,
    pub rows_pruned: u64,
}

/// Starts the periodic upkeep on the current runtime.
pub fn start(ledger: Arc<Ledger>, confirmer: Arc<Confirmer>) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(60));
        loop {
            tick.tick().await;
            match pass(&ledger, &confirmer).await {
                Ok(p) if p != Pass::default() => tracing::info!(?p, "ledger upkeep"),
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "ledger upkeep failed; next pass in a minute"),
            }
        }
    });
}

/// One reconciliation and pruning pass.
pub async fn pass(ledger: &Ledger, confirmer: &Confirmer) -> Result<Pass, String> {
    let store = ledger.store().await.map_err(|e| e.to_string())?;
    let mut out = Pass::default();
    let lease_ms = ledger.settings.lease.as_millis() as i64;
    for row in store.unsettled(BATCH).await.map_err(|e| e.to_string())? {
        // Take the row only when no lease holds it, so a live request keeps it; without
        // counting an attempt (the buyer's retries are theirs).
        let taken = store
            .take_over(&row.key, ledger.owner(), now_ms(), lease_ms)
            .await
            .map_err(|e| e.to_string())?;
        let Some(row) = taken else {
            continue;
        };
        let verdict = verdict(&row, confirmer).await;
        let u = match verdict {
            Some(Onchain::Transferred { transaction }) => {
                out.settled += 1;
                // The kept reply is released with its receipt, as a live settlement would be.
                let payer = split_evm_key(&row.key)
                    .map(|(_, f, _)| f)
                    .or_else(|| row.payer.clone())
                    .unwrap_or_default();
                let receipt = super::settle::chain_receipt(&transaction, &row.network, &payer);
                let reply = row.reply.clone().map(|k| {
                    let until = row.reply_expires_ms.unwrap_or_else(|| now_ms() + 3_600_000);
                    (super::settle::kept_with_receipt(k, &receipt), until)
                });
                Update {
                    state: Some(State::Settled),
                    transaction: Some(transaction),
                    reply,
                    release: true,
                    ..Default::default()
                }
            }
            Some(Onchain::Spent) => {
                out.failed += 1;
                Update {
                    state: Some(State::SettleFailed),
                    error: Some("authorization_spent_elsewhere".into()),
                    drop_reply: true,
                    release: true,
                    ..Default::default()
                }
            }
            // Nothing on chain and the authorization can no longer be used: it never paid.
            Some(Onchain::NotFound) if now_ms() / 1000 > row.valid_before + 600 => {
                out.failed += 1;
                Update {
                    state: Some(State::SettleFailed),
                    error: Some("not_settled_before_validity_ended".into()),
                    drop_reply: true,
                    release: true,
                    ..Default::default()
                }
            }
            _ => {
                out.left_pending += 1;
                Update {
                    state: (row.state == State::Settling).then_some(State::Pending),
                    release: true,
                    ..Default::default()
                }
            }
        };
        store
            .update(&row.key, ledger.owner(), &u, now_ms())
            .await
            .map_err(|e| e.to_string())?;
    }
    let horizon = now_ms() - ledger.settings.keep_rows.as_millis() as i64;
    let (replies, rows) = store
        .prune(now_ms(), horizon)
        .await
        .map_err(|e| e.to_string())?;
    out.replies_pruned = replies;
    out.rows_pruned = rows;
    Ok(out)
}

async fn verdict(row: &Row, confirmer: &Confirmer) -> Option<Onchain> {
    if !confirmer.covers(&row.network) {
        return None;
    }
    let payment = on_chain_facts(row)?;
    match confirmer
        .check(&row.network, &payment, row.transaction.as_deref())
        .await
    {
        Ok(v) => Some(v),
        Err(e) => {
            tracing::warn!(key = %row.key, error = %e, "on-chain reconciliation failed");
            None
        }
    }
}

/// What to look for on chain, from a ledger row alone.
fn on_chain_facts(row: &Row) -> Option<Payment> {
    if row.network.starts_with("solana:") {
        // A Solana row's payer is the facilitator's verified payer: every row in doubt has one.
        return SolanaPayment::from_row(
            &row.key,
            row.payer.as_deref()?,
            &row.pay_to,
            &row.asset,
            &row.amount,
            row.created_ms / 1000,
        )
        .map(Payment::Solana);
    }
    let (_, from, nonce) = split_evm_key(&row.key)?;
    Some(Payment::Evm(Authorization {
        asset: row.asset.to_ascii_lowercase(),
        from,
        to: row.pay_to.to_ascii_lowercase(),
        value: row.amount.parse().ok()?,
        nonce,
    }))
}

/// `network|from|nonce` of an EVM payment key.
fn split_evm_key(key: &str) -> Option<(String, String, String)> {
    let mut parts = key.split('|');
    let (n, f, nonce) = (parts.next()?, parts.next()?, parts.next()?);
    (n.starts_with("eip155:") && parts.next().is_none()).then(|| {
        (
            n.to_string(),
            f.to_ascii_lowercase(),
            nonce.to_ascii_lowercase(),
        )
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn evm_keys_split_into_their_parts() {
        assert_eq!(
            super::split_evm_key("eip155:8453|0xAb|0xCD"),
            Some(("eip155:8453".into(), "0xab".into(), "0xcd".into()))
        );
        assert_eq!(super::split_evm_key("solana:x|sig"), None);
    }
}
