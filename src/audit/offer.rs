//! The checks of one offer (`accepts[i]` of a challenge), one function each, run in the order
//! of `OFFER_CHECKS`; the report lists their findings in that order.

use serde_json::{json, Value};

use super::address::{classify_evm, is_valid_solana, EvmAddress};
use super::challenge_checks::{atomic_to_usd, str_of, Level, Out, KNOWN_SCHEMES, USDC_UNIT};
use super::known_networks::{self, Family, Network};

/// One offer as its checks read it. The asset check fills `usdc_domain` and `asset_label`, the
/// amount check `amount_atomic`: the checks after them read those.
struct Offer<'a> {
    i: usize,
    e: &'a Value,
    v2: bool,
    scheme: &'a str,
    network: &'a str,
    asset: &'a str,
    pay_to: &'a str,
    amount_field: &'static str,
    amount_v: Option<&'a Value>,
    extra: Value,
    known: Option<&'static Network>,
    family: Option<Family>,
    usdc_domain: Option<(&'static str, &'static str)>,
    asset_label: Value,
    amount_atomic: Option<u128>,
}

impl<'a> Offer<'a> {
    fn new(i: usize, e: &'a Value, v2: bool) -> Offer<'a> {
        let network = str_of(e, "network").unwrap_or("");
        let amount_field = if v2 { "amount" } else { "maxAmountRequired" };
        Offer {
            i,
            e,
            v2,
            scheme: str_of(e, "scheme").unwrap_or(""),
            network,
            asset: str_of(e, "asset").unwrap_or(""),
            pay_to: str_of(e, "payTo").unwrap_or(""),
            amount_field,
            amount_v: e.get(amount_field),
            extra: e.get("extra").cloned().unwrap_or(Value::Null),
            known: known_networks::lookup(network),
            family: known_networks::family_of(network),
            usdc_domain: None,
            asset_label: Value::Null,
            amount_atomic: None,
        }
    }

    /// The offer as the report shows it.
    fn report(&self) -> Value {
        let Offer {
            scheme,
            network,
            asset,
            pay_to,
            amount_v,
            known,
            amount_atomic,
            ..
        } = *self;
        let (e, extra, asset_label) = (self.e, &self.extra, &self.asset_label);
        let usd = amount_atomic
            .filter(|_| !asset_label.is_null())
            .map(atomic_to_usd);
        json!({
        "scheme": scheme,
        "network": network,
        "networkName": known.map(|n| n.label),
        "testnet": known_networks::is_testnet(network),
        "amountAtomic": amount_v.cloned().unwrap_or(Value::Null),
        "amountUsd": usd,
        "asset": asset,
        "assetSymbol": asset_label,
        "payTo": pay_to,
        "maxTimeoutSeconds": e.get("maxTimeoutSeconds").cloned().unwrap_or(Value::Null),
        "extra": extra,
        })
    }
}

/// One check: its findings go to `out`; false when the offer cannot be paid as written.
type OfferCheck = fn(&mut Offer<'_>, &mut Out) -> bool;

/// The checks of an offer, in the order the report lists them.
const OFFER_CHECKS: &[OfferCheck] = &[
    scheme,
    network,
    pay_to,
    asset,
    eip712_domain,
    fee_payer,
    amount,
    amount_plausible,
    max_timeout,
];

/// Checks one accepts entry; returns its report JSON and whether it is payable as written.
pub(super) fn check_entry(out: &mut Out, i: usize, e: &Value, v2: bool) -> (Value, bool) {
    let mut offer = Offer::new(i, e, v2);
    let mut ok = true;
    for check in OFFER_CHECKS {
        ok &= check(&mut offer, out);
    }
    (offer.report(), ok)
}

/// `exact` is what clients and facilitators support; other known schemes few do.
fn scheme(o: &mut Offer<'_>, out: &mut Out) -> bool {
    let Offer { i, scheme, .. } = *o;
    let mut ok = true;
    if scheme == "exact" {
        out.entry(i, "scheme", Level::Pass, "scheme exact", "");
    } else if KNOWN_SCHEMES.contains(&scheme) {
        out.entry(
            i,
            "scheme",
            Level::Warn,
            format!("scheme `{scheme}`: few clients and facilitators support it"),
            "offer `exact` as well, first",
        );
    } else {
        ok = false;
        out.entry(
            i,
            "scheme",
            Level::Fail,
            format!("unknown scheme `{scheme}`"),
            "use scheme `exact`",
        );
    }
    ok
}

/// v2 needs a CAIP-2 id, v1 a known network name.
fn network(o: &mut Offer<'_>, out: &mut Out) -> bool {
    let Offer {
        i,
        network,
        known,
        v2,
        ..
    } = *o;
    let mut ok = true;
    if v2 {
        if known_networks::is_caip2(network) {
            if known.is_some() {
                out.entry(i, "network", Level::Pass, format!("network {network}"), "");
            } else {
                out.entry(i, "network", Level::Warn, format!("network {network} is CAIP-2 but not one the main facilitators settle (Base, Solana)"), "offer eip155:8453 (Base) with USDC");
            }
        } else {
            ok = false;
            let fix = match known_networks::by_v1(network) {
                Some(n) => format!("write the CAIP-2 id `{}` instead of `{network}`", n.caip2),
                None => "use a CAIP-2 id such as eip155:8453".into(),
            };
            out.entry(
                i,
                "network",
                Level::Fail,
                format!("network `{network}` is not a CAIP-2 id (v2 requires one)"),
                fix,
            );
        }
    } else if known.and_then(|n| n.v1).is_some()
        || known_networks::OTHER_V1_NAMES
            .iter()
            .any(|(n, _)| *n == network)
    {
        out.entry(
            i,
            "network",
            Level::Pass,
            format!("v1 network name {network}"),
            "",
        );
    } else {
        ok = false;
        out.entry(
            i,
            "network",
            Level::Fail,
            format!("`{network}` is not a known v1 network name"),
            "use `base` (v1) or move to v2 with eip155:8453",
        );
    }
    ok
}

/// payTo is an address of the offer's network, and not the token contract.
fn pay_to(o: &mut Offer<'_>, out: &mut Out) -> bool {
    let Offer {
        i,
        pay_to,
        asset,
        family,
        ..
    } = *o;
    let mut ok = match family {
        Some(Family::Evm) => evm_pay_to(i, pay_to, out),
        Some(Family::Solana) => solana_pay_to(i, pay_to, out),
        None => {
            out.entry(
                i,
                "pay_to",
                Level::Warn,
                format!("payTo `{pay_to}` on an unknown network could not be checked"),
                "",
            );
            true
        }
    };
    if !pay_to.is_empty() && pay_to.eq_ignore_ascii_case(asset) {
        ok = false;
        out.entry(
            i,
            "pay_to",
            Level::Fail,
            "payTo is the token contract itself: payments would be sent to the USDC contract",
            "set payTo to your wallet address",
        );
    }
    ok
}

/// `pay_to` of an EVM offer: 0x + 40 hex digits, with a valid EIP-55 checksum when mixed case.
fn evm_pay_to(i: usize, pay_to: &str, out: &mut Out) -> bool {
    match classify_evm(pay_to) {
        EvmAddress::Checksummed => out.entry(
            i,
            "pay_to",
            Level::Pass,
            format!("payTo {pay_to} is a checksummed EVM address"),
            "",
        ),
        EvmAddress::NoChecksum => out.entry(
            i,
            "pay_to",
            Level::Pass,
            format!("payTo {pay_to} is a valid EVM address (single case, so without a checksum)"),
            "",
        ),
        EvmAddress::BadChecksum => {
            out.entry(
                i,
                "pay_to",
                Level::Fail,
                format!(
                    "payTo {pay_to} fails its EIP-55 checksum: likely a typo, funds could be lost"
                ),
                format!(
                    "check the address; its checksummed form would be {}",
                    super::address::to_checksum(pay_to).unwrap_or_default()
                ),
            );
            return false;
        }
        EvmAddress::Malformed => {
            out.entry(
                i,
                "pay_to",
                Level::Fail,
                format!("payTo `{pay_to}` is not an EVM address (0x + 40 hex digits)"),
                "set payTo to your receiving wallet address",
            );
            return false;
        }
    }
    true
}

/// `pay_to` of a Solana offer: base58 of 32 bytes.
fn solana_pay_to(i: usize, pay_to: &str, out: &mut Out) -> bool {
    if is_valid_solana(pay_to) {
        out.entry(
            i,
            "pay_to",
            Level::Pass,
            format!("payTo {pay_to} is a Solana address (32 bytes)"),
            "",
        );
        return true;
    }
    out.entry(
        i,
        "pay_to",
        Level::Fail,
        format!("payTo `{pay_to}` is not a Solana address (base58 of 32 bytes)"),
        "set payTo to your Solana wallet's public key (not its token account)",
    );
    false
}

/// The asset is USDC of the offer's network (not of another network).
fn asset(o: &mut Offer<'_>, out: &mut Out) -> bool {
    let Offer {
        i,
        asset,
        known,
        family,
        ..
    } = *o;
    let mut ok = true;
    let same_asset = |a: &str| match family {
        Some(Family::Evm) => a.eq_ignore_ascii_case(asset),
        _ => a == asset,
    };
    let mut usdc_domain: Option<(&str, &str)> = None;
    let mut asset_label = Value::Null;
    match known.and_then(|n| n.usdc.map(|u| (n, u))) {
        Some((n, (addr, name, version))) if same_asset(addr) => {
            usdc_domain = Some((name, version));
            asset_label = json!("USDC");
            out.entry(
                i,
                "asset",
                Level::Pass,
                format!("asset is USDC on {}", n.label),
                "",
            );
        }
        Some((n, (addr, _, _))) => {
            if let Some(other) = known_networks::NETWORKS
                .iter()
                .find(|o| o.usdc.is_some_and(|u| same_asset(u.0)))
            {
                ok = false;
                out.entry(
                    i,
                    "asset",
                    Level::Fail,
                    format!(
                        "asset {asset} is USDC on {}, but the network is {}",
                        other.label, n.label
                    ),
                    format!("on {} use USDC at {addr}", n.label),
                );
            } else {
                out.entry(
                    i,
                    "asset",
                    Level::Warn,
                    format!("asset {asset} is not USDC on {} ({addr})", n.label),
                    "price in USDC: it is what buyers' wallets and the facilitators expect",
                );
            }
        }
        None => out.entry(
            i,
            "asset",
            Level::Warn,
            format!("asset `{asset}` on an unknown network could not be checked"),
            "",
        ),
    }
    o.usdc_domain = usdc_domain;
    o.asset_label = asset_label;
    ok
}

/// On EVM, extra.name/version must be the token's EIP-712 domain or signatures fail.
fn eip712_domain(o: &mut Offer<'_>, out: &mut Out) -> bool {
    let Offer {
        i,
        scheme,
        family,
        usdc_domain,
        ..
    } = *o;
    let extra = &o.extra;
    let mut ok = true;
    if family == Some(Family::Evm) && scheme == "exact" {
        if let Some((name, version)) = usdc_domain {
            let en = str_of(extra, "name");
            let ev = str_of(extra, "version");
            if en == Some(name) && ev == Some(version) {
                out.entry(i, "eip712_domain", Level::Pass, format!("extra.name/version \"{name}\"/\"{version}\" match the token's EIP-712 domain"), "");
            } else {
                ok = false;
                let seen = format!(
                    "{}/{}",
                    en.unwrap_or("(missing)"),
                    ev.unwrap_or("(missing)")
                );
                let hint = if en == Some("USDC") && name == "USD Coin" {
                    " (\"USDC\" is Base Sepolia's name, not Base mainnet's)"
                } else if en == Some("USD Coin") && name == "USDC" {
                    " (\"USD Coin\" is Base mainnet's name, not Base Sepolia's)"
                } else {
                    ""
                };
                out.entry(i, "eip712_domain", Level::Fail, format!("extra name/version {seen} do not match the token's EIP-712 domain \"{name}\"/\"{version}\"{hint}: signatures will not verify"), format!("set extra to {{\"name\": \"{name}\", \"version\": \"{version}\"}}"));
            }
        }
    }
    ok
}

/// A Solana offer names the facilitator's fee payer.
fn fee_payer(o: &mut Offer<'_>, out: &mut Out) -> bool {
    let Offer { i, family, .. } = *o;
    let extra = &o.extra;
    let mut ok = true;
    if family == Some(Family::Solana) {
        match str_of(extra, "feePayer") {
            Some(f) if is_valid_solana(f) => out.entry(
                i,
                "fee_payer",
                Level::Pass,
                "extra.feePayer is a Solana address",
                "",
            ),
            _ => {
                ok = false;
                out.entry(
                    i,
                    "fee_payer",
                    Level::Fail,
                    "Solana offers need extra.feePayer (the facilitator's fee payer)",
                    "read feePayer from the facilitator's /supported and put it in extra",
                )
            }
        }
    }
    ok
}

/// The amount is a string of atomic units, not a dollar amount nor a JSON number.
fn amount(o: &mut Offer<'_>, out: &mut Out) -> bool {
    let Offer {
        i,
        amount_field,
        amount_v,
        ..
    } = *o;
    match amount_v {
        Some(Value::String(s)) if !s.is_empty() && s.chars().all(|c| c.is_ascii_digit()) => {
            o.amount_atomic = atomic_amount(i, amount_field, s, out);
            return o.amount_atomic.is_some();
        }
        Some(Value::String(s)) => dollar_amount(i, amount_field, s, out),
        Some(Value::Number(n)) => out.entry(
            i,
            "amount",
            Level::Fail,
            format!("{amount_field} is the JSON number {n}, not a string"),
            format!(
                "write it as a string of atomic units, e.g. \"{}\"",
                if n.is_u64() {
                    n.to_string()
                } else {
                    ((n.as_f64().unwrap_or(0.0)) * 1e6).round().to_string()
                }
            ),
        ),
        _ => out.entry(
            i,
            "amount",
            Level::Fail,
            format!("{amount_field} is missing"),
            format!("add {amount_field} in atomic units"),
        ),
    }
    o.amount_atomic = None;
    false
}

/// An amount written as digits: positive and within u128, or a failure.
fn atomic_amount(i: usize, amount_field: &str, s: &str, out: &mut Out) -> Option<u128> {
    match s.parse::<u128>() {
        Ok(0) => out.entry(
            i,
            "amount",
            Level::Fail,
            format!("{amount_field} is 0"),
            "set the price in atomic units (10000 = $0.01 for USDC)",
        ),
        Ok(a) => {
            out.entry(
                i,
                "amount",
                Level::Pass,
                format!("{amount_field} {a} atomic units"),
                "",
            );
            return Some(a);
        }
        Err(_) => out.entry(
            i,
            "amount",
            Level::Fail,
            format!("{amount_field} {s} is too large"),
            "write the price in atomic units",
        ),
    }
    None
}

/// An amount string that is not digits, most often dollars: the fix gives its atomic form.
fn dollar_amount(i: usize, amount_field: &str, s: &str, out: &mut Out) {
    let t = s.trim().trim_start_matches('$');
    let fix = match t.parse::<f64>() {
        Ok(f) if f.is_finite() && f > 0.0 => format!(
            "write atomic units as an integer string: ${t} in USDC (6 decimals) is \"{}\"",
            (f * 1e6).round() as u128
        ),
        _ => {
            "write the amount as an integer string of atomic units (10000 = $0.01 for USDC)".into()
        }
    };
    out.entry(
        i,
        "amount",
        Level::Fail,
        format!("{amount_field} \"{s}\" is not an integer of atomic units (a dollar amount?)"),
        fix,
    );
}

/// A USDC amount far below a cent or above $1,000 per call is likely a decimals mistake.
fn amount_plausible(o: &mut Offer<'_>, out: &mut Out) -> bool {
    let Offer {
        i,
        amount_atomic,
        usdc_domain,
        ..
    } = *o;
    let asset_label = &o.asset_label;
    if let (Some(a), Some(_)) = (
        amount_atomic,
        usdc_domain.or(if asset_label.is_null() {
            None
        } else {
            Some(("", ""))
        }),
    ) {
        if a < 100 {
            out.entry(
                i,
                "amount_plausible",
                Level::Warn,
                format!(
                    "{a} atomic units is ${} — did you mean ${a}? USDC has 6 decimals",
                    atomic_to_usd(a)
                ),
                format!("for ${a} write \"{}\"", a * USDC_UNIT),
            );
        } else if a > 1_000 * USDC_UNIT {
            out.entry(
                i,
                "amount_plausible",
                Level::Warn,
                format!(
                    "{a} atomic units is ${} per call — 18 decimals used by mistake?",
                    atomic_to_usd(a)
                ),
                "USDC has 6 decimals: $0.01 is \"10000\"",
            );
        }
    }
    true
}

/// maxTimeoutSeconds leaves room for a settlement without keeping a payment valid for hours.
fn max_timeout(o: &mut Offer<'_>, out: &mut Out) -> bool {
    let Offer { i, e, .. } = *o;
    let mut ok = true;
    match e.get("maxTimeoutSeconds").and_then(Value::as_u64) {
        Some(0) | None => {
            ok = false;
            out.entry(
                i,
                "max_timeout",
                Level::Fail,
                "maxTimeoutSeconds is missing or 0",
                "set maxTimeoutSeconds (60–300 is typical)",
            );
        }
        Some(t) if t < 10 => out.entry(
            i,
            "max_timeout",
            Level::Warn,
            format!("maxTimeoutSeconds {t} is shorter than a settlement can take"),
            "use at least 60",
        ),
        Some(t) if t > 3600 => out.entry(
            i,
            "max_timeout",
            Level::Warn,
            format!("maxTimeoutSeconds {t}: a signed payment stays valid for over an hour"),
            "use 60–300",
        ),
        Some(t) => out.entry(
            i,
            "max_timeout",
            Level::Pass,
            format!("maxTimeoutSeconds {t}"),
            "",
        ),
    }
    ok
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE_USDC: &str = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
    const PAY_TO: &str = "0xdF1D7b5C056D78F5aA14138a5695f7FF6F7aCFf3";

    fn run(e: Value) -> (Vec<(&'static str, Level)>, bool) {
        let mut out = Out { checks: Vec::new() };
        let (_, ok) = check_entry(&mut out, 0, &e, true);
        (out.checks.iter().map(|c| (c.id, c.level)).collect(), ok)
    }

    fn good() -> Value {
        json!({
            "scheme": "exact", "network": "eip155:8453", "amount": "10000", "asset": BASE_USDC,
            "payTo": PAY_TO, "maxTimeoutSeconds": 120,
            "extra": { "name": "USD Coin", "version": "2" },
        })
    }

    #[test]
    fn a_good_base_offer_passes_every_check_in_table_order() {
        let (checks, ok) = run(good());
        assert!(ok);
        let ids: Vec<_> = checks.iter().map(|(id, _)| *id).collect();
        assert_eq!(
            ids,
            [
                "scheme",
                "network",
                "pay_to",
                "asset",
                "eip712_domain",
                "amount",
                "max_timeout"
            ]
        );
        assert!(checks.iter().all(|(_, l)| *l == Level::Pass));
    }

    #[test]
    fn a_dollar_amount_and_the_sepolia_domain_name_make_it_unpayable() {
        let mut e = good();
        e["amount"] = json!("0.01");
        e["extra"]["name"] = json!("USDC");
        let (checks, ok) = run(e);
        assert!(!ok);
        assert!(checks.contains(&("amount", Level::Fail)));
        assert!(checks.contains(&("eip712_domain", Level::Fail)));
    }

    #[test]
    fn an_implausibly_small_usdc_amount_is_a_warning_only() {
        let mut e = good();
        e["amount"] = json!("5");
        let (checks, ok) = run(e);
        assert!(ok);
        assert!(checks.contains(&("amount_plausible", Level::Warn)));
    }

    #[test]
    fn the_report_names_the_asset_and_its_dollar_amount() {
        let mut out = Out { checks: Vec::new() };
        let (report, _) = check_entry(&mut out, 0, &good(), true);
        assert_eq!(report["assetSymbol"], "USDC");
        assert_eq!(report["amountUsd"], "0.01");
        assert_eq!(
            report["networkName"],
            json!(known_networks::lookup("eip155:8453").map(|n| n.label))
        );
    }
}
