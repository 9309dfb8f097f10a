use super::*;
use std::collections::HashMap;

const EVM: &str = "0xdF1D7b5C056D78F5aA14138a5695f7FF6F7aCFf3";
const SOL: &str = "FYA23SLFVpETuY13UnwTDJA9W6ipiL1sKXd6XJUhViA1";

fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |k: &str| map.get(k).cloned()
}

fn shipped() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("routes.yaml")
}

/// A copy of the shipped config in a temp dir, with `edit` applied to routes.yaml.
fn variant(edit: impl Fn(String) -> String) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::create_dir(dir.path().join("pipelines")).unwrap();
    for e in std::fs::read_dir(root.join("pipelines")).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(
            &p,
            dir.path().join("pipelines").join(p.file_name().unwrap()),
        )
        .unwrap();
    }
    let text = std::fs::read_to_string(root.join("routes.yaml")).unwrap();
    let path = dir.path().join("routes.yaml");
    std::fs::write(&path, edit(text)).unwrap();
    (dir, path)
}

#[test]
fn shipped_config_loads_with_pay_to_from_env() {
    let env = env_of(&[("PAYCALL_EVM_PAY_TO", EVM), ("PAYCALL_SOLANA_PAY_TO", SOL)]);
    let cfg = load_with_env(&shipped(), &env).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(cfg.payment.accepts.len(), 2);
    assert_eq!(cfg.payment.accepts[0].pay_to, EVM);
    assert_eq!(cfg.payment.accepts[1].pay_to, SOL);
    let http = cfg.routes.iter().find(|r| r.path == "/api/http").unwrap();
    assert_eq!(http.name, "http");
    let price = http.price.as_ref().unwrap();
    assert_eq!(price.usd, "0.01");
    assert_eq!(price.atomic, vec!["10000".to_string(), "10000".to_string()]);
    assert_eq!(cfg.guard.allow_cidrs, vec![]);
}

#[test]
fn missing_pay_to_is_a_located_startup_error() {
    let env = env_of(&[("PAYCALL_SOLANA_PAY_TO", SOL)]);
    let err = load_with_env(&shipped(), &env).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("PAYCALL_EVM_PAY_TO"), "{text}");
    let e = &err.0[0];
    assert!(e.file.ends_with("routes.yaml"));
    let src = std::fs::read_to_string(shipped()).unwrap();
    let line = src.lines().nth(e.line as usize - 1).unwrap();
    assert!(line.contains("eip155:8453"), "points at the option: {line}");
}

#[test]
fn invalid_pay_to_is_refused() {
    let env = env_of(&[
        ("PAYCALL_EVM_PAY_TO", "0x1234"),
        ("PAYCALL_SOLANA_PAY_TO", SOL),
    ]);
    let err = load_with_env(&shipped(), &env).unwrap_err();
    assert!(err.to_string().contains("not a valid address"), "{err}");
}

#[test]
fn env_overrides_deployment_settings() {
    let env = env_of(&[
        ("PAYCALL_EVM_PAY_TO", EVM),
        ("PAYCALL_SOLANA_PAY_TO", SOL),
        ("PAYCALL_LISTEN", "127.0.0.1:9999"),
        ("PAYCALL_BASE_URL", "https://api.example.org"),
        ("PAYCALL_FACILITATOR_URL", "http://127.0.0.1:4021/"),
        ("PAYCALL_ALLOW_CIDRS", "127.0.0.1/32, 10.0.0.0/8"),
    ]);
    let cfg = load_with_env(&shipped(), &env).unwrap();
    assert_eq!(cfg.service.listen.port(), 9999);
    assert_eq!(cfg.service.base_url.as_str(), "https://api.example.org/");
    assert_eq!(
        cfg.payment.facilitator.url.as_str(),
        "http://127.0.0.1:4021/"
    );
    assert_eq!(cfg.guard.allow_cidrs.len(), 2);
}

#[test]
fn nat64_prefixes_are_read_and_bad_ones_located() {
    let env = env_of(&[("PAYCALL_EVM_PAY_TO", EVM), ("PAYCALL_SOLANA_PAY_TO", SOL)]);
    let cfg = load_with_env(&shipped(), &env).unwrap();
    assert!(cfg.guard.nat64_prefixes.is_empty(), "none by default");
    let (_d, path) = variant(|t| {
        t.replace(
            "  nat64_prefixes: []",
            "  nat64_prefixes: [\"2001:db8:64::/96\", \"fd00:64:1::/48\"]",
        )
    });
    let cfg = load_with_env(&path, &env).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        cfg.guard.nat64_prefixes,
        vec![
            "2001:db8:64::/96".parse::<ipnet::Ipv6Net>().unwrap(),
            "fd00:64:1::/48".parse().unwrap()
        ]
    );
    for bad in ["10.0.0.0/8", "2001:db8::/33", "::ffff:0:0/96", "nonsense"] {
        let (_d, path) = variant(|t| {
            t.replace(
                "  nat64_prefixes: []",
                &format!("  nat64_prefixes: [\"{bad}\"]"),
            )
        });
        let err = load_with_env(&path, &env).unwrap_err();
        let text = std::fs::read_to_string(&path).unwrap();
        let line = text.lines().nth(err.0[0].line as usize - 1).unwrap();
        assert!(line.contains("nat64_prefixes"), "{bad}: {err}");
    }
}

#[test]
fn unknown_key_names_file_line_and_column() {
    let (_d, path) = variant(|t| {
        t.replace(
            "    summary: SSRF-safe HTTP proxy",
            "    summary: SSRF-safe HTTP proxy\n    sumary: typo",
        )
    });
    let env = env_of(&[("PAYCALL_EVM_PAY_TO", EVM), ("PAYCALL_SOLANA_PAY_TO", SOL)]);
    let err = load_with_env(&path, &env).unwrap_err();
    let e = &err.0[0];
    let text = std::fs::read_to_string(&path).unwrap();
    let line = text.lines().nth(e.line as usize - 1).unwrap();
    assert!(
        line.contains("sumary"),
        "line {} is `{line}`: {err}",
        e.line
    );
    assert!(e.column >= 5, "{e}");
    assert!(err.to_string().contains("routes.yaml:"), "{err}");
}

#[test]
fn unknown_pipeline_and_bad_price_are_located() {
    let (_d, path) = variant(|t| {
        t.replace("pipeline: fetch", "pipeline: fetchh")
            .replace("price_usd: \"0.01\"", "price_usd: \"0.0000001\"")
    });
    let env = env_of(&[("PAYCALL_EVM_PAY_TO", EVM), ("PAYCALL_SOLANA_PAY_TO", SOL)]);
    let err = load_with_env(&path, &env).unwrap_err();
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let by_msg = |needle: &str| {
        err.0
            .iter()
            .find(|e| e.message.contains(needle))
            .unwrap_or_else(|| panic!("no error with {needle}: {err}"))
    };
    let e = by_msg("unknown pipeline");
    assert!(lines[e.line as usize - 1].contains("fetchh"));
    let e = by_msg("price");
    assert!(lines[e.line as usize - 1].contains("0.0000001"));
}

#[test]
fn yaml_syntax_error_is_located() {
    let (_d, path) = variant(|t| t.replace("  name: paycall", "  name: [paycall"));
    let env = env_of(&[("PAYCALL_EVM_PAY_TO", EVM), ("PAYCALL_SOLANA_PAY_TO", SOL)]);
    let err = load_with_env(&path, &env).unwrap_err();
    assert!(err.0[0].line >= 1);
    assert!(
        err.to_string().starts_with(&format!("{}:", path.display())),
        "{err}"
    );
}

#[test]
fn cidr_and_address_helpers() {
    assert!(parse_cidr("127.0.0.1").is_ok());
    assert!(parse_cidr("10.0.0.0/8").is_ok());
    assert!(parse_cidr("::1/128").is_ok());
    assert!(parse_cidr("nope").is_err());
    assert!(is_evm_address(EVM));
    assert!(!is_evm_address(
        "0xZZ1D7b5C056D78F5aA14138a5695f7FF6F7aCFf3"
    ));
    assert!(is_solana_address(SOL));
    assert!(!is_solana_address("0OIl0OIl0OIl0OIl0OIl0OIl0OIl0OIl"));
    // Right alphabet and length, but 33 bytes once decoded: not a key.
    assert!(!is_solana_address(
        "nD48BViZsbav2eBRjGoU1tRJWoFeToZtXUpBqdtCBGCc"
    ));
    assert!(is_solana_address("11111111111111111111111111111111"));
}
