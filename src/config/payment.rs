//! The `payment:` section: the offers (`accepts:`), the challenge's timeout, what to do with an
//! offer nobody could pay, and the facilitator (its own module).

use super::{
    env_nonempty, is_evm_address, is_solana_address, raw, AcceptOption, PaymentSettings, Reporter,
    UnsupportedNetwork,
};
use serde_saphyr::Spanned;
use std::collections::BTreeMap;
use url::Url;

/// `payment:` with PAYCALL_EVM_PAY_TO, PAYCALL_SOLANA_PAY_TO and PAYCALL_UNSUPPORTED_NETWORK
/// applied. An offer with an error is left out of the settings (and reported).
pub fn validate_payment(
    p: &raw::Payment,
    env: &dyn Fn(&str) -> Option<String>,
    r: &mut Reporter<'_>,
) -> PaymentSettings {
    let placeholder = Url::parse("http://invalid.invalid/").expect("static URL");
    let (facilitators, failover) = super::facilitators::validate(
        r,
        env,
        p.facilitator.clone(),
        p.facilitators.clone(),
        p.failover.clone(),
        &placeholder,
    );
    let facilitator = facilitators[0].clone();
    if p.max_timeout_seconds < 10 || p.max_timeout_seconds > 3600 {
        r.unplaced(
            "payment.max_timeout_seconds must be between 10 and 3600",
            "the default 120 leaves room for the work and the settlement",
        );
    }
    if p.accepts.is_empty() {
        r.unplaced(
            "payment.accepts is empty",
            "list at least one payment option (Base USDC)",
        );
    }
    let accepts = p
        .accepts
        .iter()
        .filter_map(|a| validate_accept(a, env, r))
        .collect();
    let unsupported_setting = env_nonempty(env, "PAYCALL_UNSUPPORTED_NETWORK")
        .unwrap_or_else(|| p.unsupported_network.clone());
    let unsupported_network = match unsupported_setting.as_str() {
        "refuse" => UnsupportedNetwork::Refuse,
        "leave_out" => UnsupportedNetwork::LeaveOut,
        other => {
            r.unplaced(
                format!("payment.unsupported_network `{other}` is not known"),
                "use refuse (do not start when an offer cannot be paid) or leave_out (drop that offer with a warning)",
            );
            UnsupportedNetwork::Refuse
        }
    };
    PaymentSettings {
        facilitator,
        facilitators,
        failover,
        max_timeout_seconds: p.max_timeout_seconds,
        accepts,
        verify_per_minute: (p.verify_per_minute.payer, p.verify_per_minute.client),
        unsupported_network,
    }
}

/// One entry of `accepts:`; None when it cannot be offered. The receiving address has no
/// default: a wrong one sends the operator's money elsewhere.
fn validate_accept(
    a: &Spanned<raw::Accept>,
    env: &dyn Fn(&str) -> Option<String>,
    r: &mut Reporter<'_>,
) -> Option<AcceptOption> {
    let loc = a.referenced;
    let a = &a.value;
    let (env_key, valid): (&str, fn(&str) -> bool) = if a.network.starts_with("eip155:") {
        ("PAYCALL_EVM_PAY_TO", is_evm_address)
    } else if a.network.starts_with("solana:") {
        ("PAYCALL_SOLANA_PAY_TO", is_solana_address)
    } else {
        r.at(
            loc,
            format!(
                "network `{}` is not a CAIP-2 eip155:* or solana:* id",
                a.network
            ),
            "use eip155:8453 for Base or solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp for Solana",
        );
        return None;
    };
    let pay_to = env_nonempty(env, env_key).unwrap_or_else(|| a.pay_to.trim().to_string());
    if pay_to.is_empty() {
        r.at(loc, format!("no payTo for {}: the receiving address is missing", a.network), format!("set {env_key} (or pay_to in routes.yaml) to your wallet address; there is no default"));
        return None;
    }
    if !valid(&pay_to) {
        r.at(
            loc,
            format!("payTo `{pay_to}` is not a valid address for {}", a.network),
            format!("check {env_key} / pay_to"),
        );
        return None;
    }
    if a.network.starts_with("eip155:") && a.eip712.is_none() {
        r.at(
            loc,
            format!("{}: an EVM option needs eip712 name and version", a.network),
            "for Base USDC: eip712: { name: \"USD Coin\", version: \"2\" }",
        );
    }
    if a.decimals > 30 {
        r.at(loc, "decimals above 30 are not supported", "USDC has 6");
    }
    Some(AcceptOption {
        network: a.network.clone(),
        name: a.name.clone(),
        asset: a.asset.clone(),
        decimals: a.decimals,
        eip712: a
            .eip712
            .as_ref()
            .map(|e| (e.name.clone(), e.version.clone())),
        pay_to,
        rpc: a.rpc.clone(),
    })
}

/// Each offer's confirmation RPC must name an upstream; Base and Solana offers take
/// `base_rpc` / `solana_rpc` when those exist and the offer names none.
pub fn link_rpcs(
    accepts: &mut [AcceptOption],
    upstreams: &BTreeMap<String, Url>,
    r: &mut Reporter<'_>,
) {
    for a in accepts {
        if a.rpc.is_none() && a.network == "eip155:8453" && upstreams.contains_key("base_rpc") {
            a.rpc = Some("base_rpc".into());
        }
        if a.rpc.is_none() && a.is_solana() && upstreams.contains_key("solana_rpc") {
            a.rpc = Some("solana_rpc".into());
        }
        if let Some(name) = &a.rpc {
            if !upstreams.contains_key(name) {
                r.unplaced(
                    format!(
                        "payment.accepts {}: rpc `{name}` is not an upstream",
                        a.network
                    ),
                    "name an entry of `upstreams:` (its JSON-RPC confirms settlements on chain)",
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::error::reported;

    const EVM: &str = "0xdF1D7b5C056D78F5aA14138a5695f7FF6F7aCFf3";

    fn payment(accepts: &str) -> raw::Payment {
        serde_saphyr::from_str(&format!(
            "facilitator: {{ url: https://f.example/ }}\naccepts:\n{accepts}"
        ))
        .unwrap()
    }
    fn no_env(_: &str) -> Option<String> {
        None
    }
    const BASE: &str = "  - { network: eip155:8453, name: base, asset: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913', decimals: 6, eip712: { name: USD Coin, version: '2' }, pay_to: '' }";

    #[test]
    fn an_offer_without_a_pay_to_is_left_out_and_named() {
        let (p, errors) = reported(|r| validate_payment(&payment(BASE), &no_env, r));
        assert!(p.accepts.is_empty());
        assert_eq!(
            errors,
            ["no payTo for eip155:8453: the receiving address is missing"]
        );
    }

    #[test]
    fn the_environment_supplies_the_pay_to() {
        let env = |k: &str| (k == "PAYCALL_EVM_PAY_TO").then(|| EVM.to_string());
        let (p, errors) = reported(|r| validate_payment(&payment(BASE), &env, r));
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(p.accepts[0].pay_to, EVM);
        assert_eq!(p.unsupported_network, UnsupportedNetwork::Refuse);
    }

    #[test]
    fn a_network_that_is_not_caip2_is_refused() {
        let accepts = "  - { network: base, name: base, asset: x, decimals: 6, pay_to: x }";
        let (_, errors) = reported(|r| validate_payment(&payment(accepts), &no_env, r));
        assert_eq!(
            errors,
            ["network `base` is not a CAIP-2 eip155:* or solana:* id"]
        );
    }

    #[test]
    fn an_rpc_must_name_an_upstream_and_base_takes_base_rpc() {
        let offer = |rpc: Option<&str>| AcceptOption {
            network: "eip155:8453".into(),
            name: "base".into(),
            asset: "x".into(),
            decimals: 6,
            eip712: None,
            pay_to: EVM.into(),
            rpc: rpc.map(str::to_string),
        };
        let upstreams: BTreeMap<String, Url> = [(
            "base_rpc".to_string(),
            Url::parse("http://127.0.0.1:1/").unwrap(),
        )]
        .into();
        let mut accepts = [offer(None), offer(Some("nowhere"))];
        let (_, errors) = reported(|r| link_rpcs(&mut accepts, &upstreams, r));
        assert_eq!(accepts[0].rpc.as_deref(), Some("base_rpc"));
        assert_eq!(
            errors,
            ["payment.accepts eip155:8453: rpc `nowhere` is not an upstream"]
        );
    }
}
