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
pub(super) fn variant(edit: impl Fn(String) -> String) -> (tempfile::TempDir, PathBuf) {
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

// ---- Errors a newcomer can act on: one per mistake, the rule stated, the likely cause named ----

fn pay_to_env() -> impl Fn(&str) -> Option<String> {
    env_of(&[("PAYCALL_EVM_PAY_TO", EVM), ("PAYCALL_SOLANA_PAY_TO", SOL)])
}

/// The errors of a shipped copy with `edit` applied to routes.yaml.
fn errors_of(edit: impl Fn(String) -> String) -> (tempfile::TempDir, Vec<ConfigError>) {
    let (dir, path) = variant(edit);
    let err = load_with_env(&path, &pay_to_env()).expect_err("the edit is a mistake");
    (dir, err.0)
}

fn line_of(e: &ConfigError) -> String {
    let text = std::fs::read_to_string(&e.file).unwrap();
    text.lines()
        .nth(e.line as usize - 1)
        .unwrap_or("")
        .to_string()
}

#[test]
fn a_negative_price_is_one_error_saying_it_must_be_positive() {
    let (_d, errors) = errors_of(|t| t.replacen("price_usd: \"0.01\"", "price_usd: \"-0.01\"", 1));
    assert_eq!(
        errors.len(),
        1,
        "one error, not one per network: {errors:?}"
    );
    assert!(
        errors[0].message.contains("must be positive"),
        "{}",
        errors[0]
    );
    assert!(line_of(&errors[0]).contains("-0.01"));
}

#[test]
fn a_price_finer_than_the_asset_is_one_error_naming_every_network() {
    let (_d, errors) =
        errors_of(|t| t.replacen("price_usd: \"0.01\"", "price_usd: \"0.0000001\"", 1));
    assert_eq!(errors.len(), 1, "{errors:?}");
    let m = &errors[0].message;
    assert!(m.contains("base") && m.contains("solana"), "{m}");
}

#[test]
fn a_key_indented_into_the_block_above_is_named_as_an_indentation_mistake() {
    // `summary` moved under the route's output_example: the parser says "missing field".
    let (_d, errors) = errors_of(|t| {
        t.replacen("    summary: SSRF-safe HTTP proxy\n", "", 1)
            .replacen(
            "      bytesRead: 1256\n\n  - path: /api/fetch",
            "      bytesRead: 1256\n      summary: SSRF-safe HTTP proxy\n\n  - path: /api/fetch",
            1,
        )
    });
    assert_eq!(errors.len(), 1, "{errors:?}");
    let e = &errors[0];
    let text = std::fs::read_to_string(&e.file).unwrap();
    let at = text
        .lines()
        .position(|l| l == "      summary: SSRF-safe HTTP proxy")
        .unwrap()
        + 1;
    assert!(
        e.message.contains(&format!("`summary:` on line {at}")),
        "{e}"
    );
    assert!(e.hint.contains("indentation"), "{e}");
    assert!(!e.message.contains("missing field"), "our words: {e}");
}

#[test]
fn a_parameter_key_swallowed_by_a_folded_description_is_named() {
    // `type` indented as if it continued the description above it: "missing field type".
    let (_d, errors) = errors_of(|t| {
        t.replacen(
            "      - name: body\n        type: any\n",
            "      - name: body\n",
            1,
        )
        .replacen(
            "          application/json\n",
            "          application/json\n          type: any\n",
            1,
        )
    });
    assert_eq!(errors.len(), 1, "{errors:?}");
    let e = &errors[0];
    assert!(e.message.contains("missing key `type`"), "{e}");
    assert!(e.hint.contains("indentation"), "{e}");
}

#[test]
fn a_syntax_error_from_an_odd_indentation_names_the_line() {
    let (_d, errors) = errors_of(|t| {
        t.replacen(
            "    summary: SSRF-safe HTTP proxy",
            "   summary: SSRF-safe HTTP proxy",
            1,
        )
    });
    assert_eq!(errors.len(), 1, "{errors:?}");
    let e = &errors[0];
    let text = std::fs::read_to_string(&e.file).unwrap();
    let at = text
        .lines()
        .position(|l| l == "   summary: SSRF-safe HTTP proxy")
        .unwrap()
        + 1;
    assert!(
        e.hint.contains(&format!("line {at} is indented 3 spaces")),
        "{e}"
    );
    assert!(!e.hint.contains("fix the YAML at this position"), "{e}");
}

#[test]
fn an_unknown_key_gets_a_did_you_mean() {
    let (_d, errors) = errors_of(|t| {
        t.replacen(
            "    summary: SSRF-safe HTTP proxy",
            "    sumary: SSRF-safe HTTP proxy",
            1,
        )
    });
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].message.contains("did you mean `summary`?"),
        "{}",
        errors[0]
    );
}

#[test]
fn an_unknown_pipeline_gets_a_did_you_mean() {
    let (_d, errors) = errors_of(|t| t.replacen("pipeline: http\n", "pipeline: htp\n", 1));
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].message.contains("did you mean `http`?"),
        "{}",
        errors[0]
    );
}

#[test]
fn a_broken_pipeline_file_is_one_error_not_also_an_unknown_pipeline() {
    let (dir, path) = variant(|t| t);
    let file = dir.path().join("pipelines/http.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(
        &file,
        text.replacen("  - stage: http_record", "   - stage: http_record", 1),
    )
    .unwrap();
    let errors = load_with_env(&path, &pay_to_env()).unwrap_err().0;
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].file.ends_with("pipelines/http.yaml"),
        "{}",
        errors[0]
    );
    assert!(errors[0].hint.contains("indent"), "{}", errors[0]);
}

#[test]
fn the_catalogue_loads_without_pay_to() {
    // load_catalogue reads the process environment; the shipped file has empty pay_to values.
    let cfg =
        load_with_env(&shipped(), &|k| placeholder_pay_to(k)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(cfg.routes.len(), 16);
}
