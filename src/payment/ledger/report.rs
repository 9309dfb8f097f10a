//! `paycall ledger`: what was sold, to whom, for how much, and what failed — computed from the
//! rows (pure, unit-tested) and printed as text or JSON.

use serde_json::{json, Value};
use std::collections::BTreeMap;

use super::model::{Row, State};

/// Totals of settled payments per (day, route, network).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Total {
    pub calls: u64,
    pub atomic: u128,
}

#[derive(Debug, Clone, Default)]
pub struct Summary {
    pub totals: BTreeMap<(String, String, String), Total>,
    /// States other than `settled`, by count.
    pub by_state: BTreeMap<&'static str, u64>,
    /// Rows whose money is in doubt or whose settlement failed, newest first.
    pub attention: Vec<Row>,
    pub recent: Vec<Row>,
}

/// `2026-11-25` of a Unix-ms timestamp (UTC).
pub fn day(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|d| d.format("%Y-%m-%d").to_string())
        .unwrap_or_else(|| "?".into())
}

fn time(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|d| d.format("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_else(|| "?".into())
}

/// Rows (newest first) → summary.
pub fn summarise(rows: &[Row], recent: usize) -> Summary {
    let mut s = Summary::default();
    for r in rows {
        *s.by_state.entry(r.state.as_str()).or_default() += 1;
        if r.state == State::Settled {
            let t = s
                .totals
                .entry((
                    day(r.created_ms),
                    r.binding.route.clone(),
                    r.network.clone(),
                ))
                .or_default();
            t.calls += 1;
            t.atomic += r.amount.parse::<u128>().unwrap_or(0);
        }
        if matches!(
            r.state,
            State::Pending | State::Settling | State::SettleFailed
        ) {
            s.attention.push(r.clone());
        }
    }
    s.recent = rows.iter().take(recent).cloned().collect();
    s
}

/// Atomic units as a decimal amount (6 decimals: "0.020000" → "0.02").
pub fn usd(atomic: u128, decimals: u32) -> String {
    let scale = 10u128.pow(decimals);
    let frac = format!("{:0>width$}", atomic % scale, width = decimals as usize);
    let frac = frac.trim_end_matches('0');
    if frac.is_empty() {
        format!("{}", atomic / scale)
    } else {
        format!("{}.{frac}", atomic / scale)
    }
}

fn row_json(r: &Row) -> Value {
    json!({
        "time": time(r.created_ms),
        "state": r.state.as_str(),
        "route": r.binding.route,
        "method": r.binding.method,
        "amount": r.amount,
        "asset": r.asset,
        "network": r.network,
        "payer": r.payer,
        "payTo": r.pay_to,
        "transaction": r.transaction,
        "error": r.error,
        "requestId": r.request_id,
        "attempts": r.attempts,
        "verifiedBy": r.verified_by,
        "settledBy": r.settled_by,
    })
}

/// The report as JSON.
pub fn to_json(s: &Summary, decimals: &dyn Fn(&str) -> u32) -> Value {
    json!({
        "totals": s.totals.iter().map(|((d, route, net), t)| json!({
            "day": d, "route": route, "network": net, "calls": t.calls,
            "atomic": t.atomic.to_string(), "usd": usd(t.atomic, decimals(net)),
        })).collect::<Vec<_>>(),
        "states": s.by_state,
        "attention": s.attention.iter().map(row_json).collect::<Vec<_>>(),
        "recent": s.recent.iter().map(row_json).collect::<Vec<_>>(),
    })
}

/// The report as text.
pub fn to_text(s: &Summary, decimals: &dyn Fn(&str) -> u32) -> String {
    let mut out = String::new();
    out.push_str("SETTLED                                                 CALLS          ATOMIC        USD\n");
    let (mut calls, mut usd_total) = (0u64, 0u128);
    for ((d, route, net), t) in &s.totals {
        out.push_str(&format!(
            "{d}  {route:<22} {net:<24} {:>6} {:>15} {:>10}\n",
            t.calls,
            t.atomic,
            usd(t.atomic, decimals(net))
        ));
        calls += t.calls;
        if decimals(net) == 6 {
            usd_total += t.atomic;
        }
    }
    out.push_str(&format!("total{:>53} {:>26}\n", calls, usd(usd_total, 6)));
    let states: Vec<String> = s.by_state.iter().map(|(k, v)| format!("{k} {v}")).collect();
    out.push_str(&format!("\nBY STATE: {}\n", states.join(", ")));
    if !s.attention.is_empty() {
        out.push_str("\nPENDING OR FAILED SETTLEMENTS\n");
        for r in &s.attention {
            out.push_str(&line(r));
        }
    }
    out.push_str(&format!("\nRECENT ({})\n", s.recent.len()));
    for r in &s.recent {
        out.push_str(&line(r));
    }
    out
}

fn line(r: &Row) -> String {
    format!(
        "{}  {:<13} {:<6} {:<22} {:>8} {:<24} payer {} tx {} via {}{}\n",
        time(r.created_ms),
        r.state.as_str(),
        r.binding.method,
        r.binding.route,
        r.amount,
        r.network,
        r.payer.as_deref().unwrap_or("-"),
        r.transaction.as_deref().unwrap_or("-"),
        facilitators(r),
        r.error
            .as_deref()
            .map(|e| format!("  ({e})"))
            .unwrap_or_default()
    )
}

/// Which facilitator handled the payment: the one its settlement was sent to, and the one that
/// verified it when that was another (a failover between the two); `-` when none is recorded.
fn facilitators(r: &Row) -> String {
    match (r.verified_by.as_deref(), r.settled_by.as_deref()) {
        (Some(v), Some(s)) if v != s => format!("{s} (verified by {v})"),
        (_, Some(s)) => s.to_string(),
        (Some(v), None) => format!("- (verified by {v})"),
        (None, None) => "-".into(),
    }
}

/// `--since`: `7d`, `12h`, `30m` ago, or a date `2026-11-01` (UTC). Returns Unix ms.
pub fn parse_since(s: &str, now_ms: i64) -> Result<i64, String> {
    let s = s.trim();
    let unit = |c: char| match c {
        'd' => Some(86_400_000i64),
        'h' => Some(3_600_000),
        'm' => Some(60_000),
        _ => None,
    };
    if let Some(last) = s.chars().last() {
        if let (Some(mult), Ok(n)) = (unit(last), s[..s.len() - 1].parse::<i64>()) {
            return Ok(now_ms - n.saturating_mul(mult));
        }
    }
    chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|d| d.and_utc().timestamp_millis())
        .ok_or_else(|| format!("--since {s}: use 7d, 12h, 30m or a date like 2026-11-01"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::payment::ledger::model::Binding;

    fn row(state: State, route: &str, amount: &str, ms: i64) -> Row {
        Row {
            key: format!("{route}{ms}"),
            binding: Binding {
                route: route.into(),
                method: "GET".into(),
                input_hash: String::new(),
            },
            header_hash: String::new(),
            pid: None,
            amount: amount.into(),
            asset: String::new(),
            network: "eip155:8453".into(),
            pay_to: String::new(),
            payer: None,
            request_id: String::new(),
            state,
            attempts: 1,
            lease_owner: String::new(),
            lease_until_ms: 0,
            valid_before: 0,
            transaction: None,
            error: None,
            reply: None,
            reply_expires_ms: None,
            created_ms: ms,
            updated_ms: ms,
            verified_by: None,
            settled_by: None,
        }
    }

    #[test]
    fn totals_count_only_settled_payments_per_day_route_and_network() {
        let day1 = 1_764_000_000_000; // 2025-11-24
        let rows = vec![
            row(State::Settled, "/api/http", "10000", day1),
            row(State::Settled, "/api/http", "10000", day1 + 1000),
            row(State::NotCharged, "/api/http", "10000", day1 + 2000),
            row(State::Pending, "/api/fetch", "20000", day1 + 3000),
            row(State::Settled, "/api/fetch", "20000", day1 + 86_400_000),
        ];
        let s = summarise(&rows, 2);
        let http = &s.totals[&(day(day1), "/api/http".into(), "eip155:8453".into())];
        assert_eq!(
            *http,
            Total {
                calls: 2,
                atomic: 20_000
            }
        );
        assert_eq!(s.totals.len(), 2);
        assert_eq!(s.by_state["not_charged"], 1);
        assert_eq!(s.attention.len(), 1);
        assert_eq!(s.recent.len(), 2);
        let text = to_text(&s, &|_| 6);
        assert!(text.contains("0.02"), "{text}");
        let j = to_json(&s, &|_| 6);
        assert_eq!(j["totals"][0]["usd"], "0.02");
    }

    #[test]
    fn rows_name_the_facilitators_that_handled_them() {
        let mut r = row(State::Settled, "/api/http", "10000", 1_764_000_000_000);
        assert!(line(&r).contains(" via -"), "{}", line(&r));
        r.verified_by = Some("cdp".into());
        assert!(
            line(&r).contains(" via - (verified by cdp)"),
            "{}",
            line(&r)
        );
        r.settled_by = Some("cdp".into());
        assert!(line(&r).contains(" via cdp\n"), "{}", line(&r));
        r.settled_by = Some("self-hosted".into());
        assert!(
            line(&r).contains(" via self-hosted (verified by cdp)"),
            "{}",
            line(&r)
        );
        let s = summarise(std::slice::from_ref(&r), 1);
        let j = to_json(&s, &|_| 6);
        assert_eq!(j["recent"][0]["settledBy"], "self-hosted");
        assert_eq!(j["recent"][0]["verifiedBy"], "cdp");
    }

    #[test]
    fn usd_and_since_parse() {
        assert_eq!(usd(20_000, 6), "0.02");
        assert_eq!(usd(1_000_000, 6), "1");
        assert_eq!(usd(1_234_567, 6), "1.234567");
        assert_eq!(parse_since("2d", 10 * 86_400_000), Ok(8 * 86_400_000));
        assert_eq!(parse_since("1970-01-02", 0), Ok(86_400_000));
        assert!(parse_since("soon", 0).is_err());
    }
}
