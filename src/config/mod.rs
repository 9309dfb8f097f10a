//! routes.yaml + pipelines/*.yaml → a typed, validated `Config`.
//!
//! Loading never panics and never stops at the first problem: every error found is returned,
//! each naming file:line:column and what to do about it. The environment may override the
//! deployment settings (see `ENV_OVERRIDES`); the operator's file holds everything else.

pub mod facilitators;
pub mod hints;
pub mod raw;

use ipnet::IpNet;
use serde_json::Value;
use serde_saphyr::Location;
use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;
use url::Url;

/// Environment variables that override routes.yaml, documented in the README.
pub const ENV_OVERRIDES: &[(&str, &str)] = &[
    ("PAYCALL_LISTEN", "host:port to listen on"),
    (
        "PAYCALL_ADMIN_LISTEN",
        "host:port of the admin listener (/metrics, /config, /reload), or `off`",
    ),
    (
        "PAYCALL_BASE_URL",
        "canonical public base URL (service.base_url)",
    ),
    ("PAYCALL_BACKUP_URL", "second base URL (service.backup_url)"),
    (
        "PAYCALL_FACILITATOR_URL",
        "facilitator base URL (payment.facilitator.url, or the first of payment.facilitators)",
    ),
    ("PAYCALL_EVM_PAY_TO", "receiving address for eip155 offers"),
    (
        "PAYCALL_SOLANA_PAY_TO",
        "receiving address for solana offers",
    ),
    (
        "PAYCALL_UNSUPPORTED_NETWORK",
        "refuse or leave_out an offer no buyer could pay (payment.unsupported_network)",
    ),
    (
        "PAYCALL_ALLOW_CIDRS",
        "comma-separated CIDRs the outbound guard lets through (empty by default)",
    ),
    (
        "PAYCALL_UPSTREAM_<NAME>",
        "base URL of the named upstream (upstreams.<name>)",
    ),
];

/// One problem in the configuration, located.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigError {
    pub file: PathBuf,
    pub line: u64,
    pub column: u64,
    pub message: String,
    pub hint: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.file.display(),
            self.line,
            self.column,
            self.message
        )?;
        if !self.hint.is_empty() {
            write!(f, "\n    fix: {}", self.hint)?;
        }
        Ok(())
    }
}

/// All the problems found, in file order.
#[derive(Debug, Clone, Default)]
pub struct ConfigErrors(pub Vec<ConfigError>);

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigErrors {}

/// Collects located errors for one file.
pub struct Reporter<'a> {
    file: &'a Path,
    errors: &'a mut Vec<ConfigError>,
}

impl<'a> Reporter<'a> {
    pub fn new(file: &'a Path, errors: &'a mut Vec<ConfigError>) -> Self {
        Reporter { file, errors }
    }
    pub fn at(&mut self, loc: Location, message: impl Into<String>, hint: impl Into<String>) {
        self.errors.push(ConfigError {
            file: self.file.to_path_buf(),
            line: loc.line().max(1),
            column: loc.column().max(1),
            message: message.into(),
            hint: hint.into(),
        });
    }
}

#[derive(Debug, Clone)]
pub struct Config {
    /// Folder holding routes.yaml (pipelines/ and fixtures/ are looked up beside it).
    pub root: PathBuf,
    pub service: ServiceSettings,
    pub payment: PaymentSettings,
    pub guard: GuardSettings,
    pub demo: DemoSettings,
    pub upstreams: BTreeMap<String, Url>,
    pub ledger: crate::payment::ledger::LedgerSettings,
    pub routes: Vec<RouteSpec>,
    pub pipelines: BTreeMap<String, PipelineSpec>,
}

#[derive(Debug, Clone)]
pub struct ServiceSettings {
    pub name: String,
    pub version: String,
    pub description: String,
    pub base_url: Url,
    pub backup_url: Option<Url>,
    pub listen: SocketAddr,
    /// The admin listener (/metrics, /config, /reload); None when `off`.
    pub admin_listen: Option<SocketAddr>,
    pub trusted_proxies: Vec<IpNet>,
    pub shutdown_grace: Duration,
}

#[derive(Debug, Clone)]
pub struct PaymentSettings {
    /// The single facilitator, or the first (preferred) of `facilitators`.
    pub facilitator: FacilitatorSettings,
    /// Every facilitator, in order of preference (one for the single form, named `default`).
    pub facilitators: Vec<FacilitatorSettings>,
    /// Their circuit breaker and health checks (`payment.failover`).
    pub failover: facilitators::FailoverSettings,
    pub max_timeout_seconds: u64,
    pub accepts: Vec<AcceptOption>,
    /// /verify calls per minute per payer and per client address (0 = no limit).
    pub verify_per_minute: (u32, u32),
    /// What startup and `paycall check` do with an offer that cannot be paid (payment::readiness).
    pub unsupported_network: UnsupportedNetwork,
}

/// `payment.unsupported_network`: one rule for every offered network.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnsupportedNetwork {
    /// Refuse to start, naming the network and the fix (the default).
    Refuse,
    /// Leave the offer out of every challenge, with a warning.
    LeaveOut,
}

#[derive(Debug, Clone, PartialEq)]
pub enum FacilitatorAuthSetting {
    None,
    Cdp { key_id: String, key_secret: String },
}

#[derive(Debug, Clone)]
pub struct FacilitatorSettings {
    /// `default` for the single form; the entry's `name` in `payment.facilitators`.
    pub name: String,
    pub url: Url,
    pub verify_timeout: Duration,
    pub settle_timeout: Duration,
    pub supported_ttl: Duration,
    /// Idle facilitator connections are dropped after this (0: never reused).
    pub pool_idle_timeout: Duration,
    pub auth: FacilitatorAuthSetting,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AcceptOption {
    pub network: String,
    pub name: String,
    pub asset: String,
    pub decimals: u32,
    pub eip712: Option<(String, String)>,
    pub pay_to: String,
    /// The upstream name of this network's JSON-RPC: EVM, it confirms settlements on chain;
    /// Solana, startup checks payTo's token account through it (`solana_rpc` by default).
    pub rpc: Option<String>,
}

impl AcceptOption {
    pub fn is_evm(&self) -> bool {
        self.network.starts_with("eip155:")
    }
    pub fn is_solana(&self) -> bool {
        self.network.starts_with("solana:")
    }
}

#[derive(Debug, Clone)]
pub struct GuardSettings {
    pub allow_cidrs: Vec<IpNet>,
    /// The network's own NAT64 prefixes (`guard.nat64_prefixes`).
    pub nat64_prefixes: Vec<ipnet::Ipv6Net>,
    pub user_agent: String,
}

#[derive(Debug, Clone)]
pub struct DemoSettings {
    pub per_minute: u32,
    pub burst: u32,
}

/// A price, exact in every accepted asset.
#[derive(Debug, Clone, PartialEq)]
pub struct Price {
    /// As written, normalised (e.g. "0.01").
    pub usd: String,
    /// Atomic amount per entry of `payment.accepts`, same order.
    pub atomic: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamType {
    String,
    Integer,
    Number,
    Boolean,
    Object,
    /// A string or any JSON value (e.g. /api/http's body).
    Any,
}

impl ParamType {
    pub fn json_name(self) -> &'static str {
        match self {
            ParamType::String => "string",
            ParamType::Integer => "integer",
            ParamType::Number => "number",
            ParamType::Boolean => "boolean",
            ParamType::Object => "object",
            ParamType::Any => "any",
        }
    }
}

#[derive(Debug, Clone)]
pub struct ParamSpec {
    pub name: String,
    pub ty: ParamType,
    pub required: bool,
    pub default: Option<Value>,
    pub description: String,
    pub enumeration: Option<Vec<Value>>,
    pub minimum: Option<f64>,
    pub maximum: Option<f64>,
    pub min_length: Option<usize>,
    pub max_length: Option<usize>,
    pub pattern: Option<regex::Regex>,
    pub format: Option<String>,
    pub example: Option<Value>,
    pub error_code: String,
    pub case_insensitive: bool,
}

#[derive(Debug, Clone)]
pub struct RouteDemo {
    pub input: serde_json::Map<String, Value>,
    pub ttl: Duration,
    pub describe: String,
    /// Where the fixed input was written (the route's path when it has none), for the startup
    /// check that it passes the route's own input schema.
    pub origin: Origin,
}

/// Where something was written, for errors found after loading (chain building).
#[derive(Debug, Clone)]
pub struct Origin {
    pub file: PathBuf,
    pub loc: Location,
}

#[derive(Debug, Clone)]
pub struct RouteSpec {
    pub path: String,
    /// Last path segment: `http` for /api/http. Used for `source` and /api/demo/<name>.
    pub name: String,
    pub methods: Vec<http::Method>,
    pub price: Option<Price>,
    pub summary: String,
    pub description: String,
    pub pipeline: String,
    pub billing: String,
    pub max_request_bytes: usize,
    pub input: Vec<ParamSpec>,
    /// stage name → parameter overrides, with where they were written.
    pub caps: BTreeMap<String, (Value, Origin)>,
    pub demo: Option<RouteDemo>,
    pub output_example: Option<Value>,
    pub tags: Vec<String>,
    pub origin: Origin,
    pub pipeline_origin: Origin,
}

impl RouteSpec {
    pub fn is_paid(&self) -> bool {
        self.price.is_some()
    }
    pub fn param(&self, name: &str) -> Option<&ParamSpec> {
        self.input.iter().find(|p| p.name == name)
    }
}

#[derive(Debug, Clone)]
pub struct StageRef {
    pub name: String,
    pub params: Value,
    pub origin: Origin,
    pub params_origin: Origin,
}

#[derive(Debug, Clone)]
pub struct PipelineSpec {
    pub name: String,
    pub description: String,
    pub stages: Vec<StageRef>,
    pub origin: Origin,
}

/// Bill rules a route may name; the bill stage implements them.
pub const BILL_RULES: &[&str] = &["status_below_400", "never"];

/// Reads routes.yaml and every pipelines/*.yaml beside it, with the process environment.
pub fn load(routes_path: &Path) -> Result<Config, ConfigErrors> {
    load_with_env(routes_path, &|k| std::env::var(k).ok())
}

/// Stand-ins for unset payTo variables when only the catalogue is wanted (valid, owned by no one).
const CATALOGUE_PAY_TO: &[(&str, &str)] = &[
    (
        "PAYCALL_EVM_PAY_TO",
        "0x0000000000000000000000000000000000000000",
    ),
    ("PAYCALL_SOLANA_PAY_TO", "11111111111111111111111111111111"),
];

/// As `load`, for commands that list routes and take no payment (`paycall routes`): an unset
/// payTo variable is not an error there, a placeholder stands in for it (never shown).
pub fn load_catalogue(routes_path: &Path) -> Result<Config, ConfigErrors> {
    let env =
        |k: &str| env_nonempty(&|k| std::env::var(k).ok(), k).or_else(|| placeholder_pay_to(k));
    load_with_env(routes_path, &env)
}

/// The stand-in payTo for `PAYCALL_EVM_PAY_TO` / `PAYCALL_SOLANA_PAY_TO` (see `load_catalogue`);
/// `paycall docs` loads with these alone, so the pages do not depend on the environment.
pub fn placeholder_pay_to(key: &str) -> Option<String> {
    CATALOGUE_PAY_TO
        .iter()
        .find(|(name, _)| *name == key)
        .map(|(_, v)| v.to_string())
}

/// As `load`, with an injectable environment (tests).
pub fn load_with_env(
    routes_path: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Config, ConfigErrors> {
    let mut errors = Vec::new();
    let root = routes_path
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    let root = if root.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        root
    };
    let text = match std::fs::read_to_string(routes_path) {
        Ok(t) => t,
        Err(e) => {
            return Err(ConfigErrors(vec![ConfigError {
                file: routes_path.to_path_buf(),
                line: 1,
                column: 1,
                message: format!("cannot read the file: {e}"),
                hint: "pass the path of routes.yaml with --config PATH".into(),
            }]))
        }
    };
    let file: raw::RoutesFile = match parse_yaml(routes_path, &text) {
        Ok(f) => f,
        Err(e) => return Err(ConfigErrors(vec![e])),
    };
    let pipelines = load_pipelines(&root.join("pipelines"), &mut errors);
    let config = validate(routes_path, root, file, pipelines, env, &mut errors);
    if errors.is_empty() {
        Ok(config)
    } else {
        errors.sort_by(|a, b| (&a.file, a.line, a.column).cmp(&(&b.file, b.line, b.column)));
        Err(ConfigErrors(errors))
    }
}

fn parse_yaml<T: serde::de::DeserializeOwned>(path: &Path, text: &str) -> Result<T, ConfigError> {
    serde_saphyr::from_str::<T>(text).map_err(|e| {
        let loc = e.location().unwrap_or(Location::UNKNOWN);
        // The library's message carries a source snippet; keep only its first line, then say
        // what rule it broke and the likely cause (often the indentation) in our words.
        let full = e.to_string();
        let first = full
            .lines()
            .next()
            .unwrap_or("invalid YAML")
            .trim()
            .to_string();
        let (message, hint) = hints::yaml_problem(text, loc.line().max(1), &first);
        ConfigError {
            file: path.to_path_buf(),
            line: loc.line().max(1),
            column: loc.column().max(1),
            message,
            hint,
        }
    })
}

/// The pipelines that were read, and the names of the files that could not be (their stems),
/// so a route naming one of those gets no second error for the same mistake.
pub struct Pipelines {
    pub specs: BTreeMap<String, PipelineSpec>,
    pub unreadable: Vec<String>,
}

fn load_pipelines(dir: &Path, errors: &mut Vec<ConfigError>) -> Pipelines {
    let mut out = BTreeMap::new();
    let mut unreadable = Vec::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => {
            errors.push(ConfigError {
                file: dir.to_path_buf(),
                line: 1,
                column: 1,
                message: format!("cannot read the pipelines folder {}: {e}", dir.display()),
                hint: "pipelines/ is looked for beside routes.yaml (the folder of --config)".into(),
            });
            return Pipelines {
                specs: out,
                unreadable,
            };
        }
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml")))
        .collect();
    paths.sort();
    for path in paths {
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) => {
                errors.push(ConfigError {
                    file: path.clone(),
                    line: 1,
                    column: 1,
                    message: format!("cannot read: {e}"),
                    hint: String::new(),
                });
                unreadable.push(stem(&path));
                continue;
            }
        };
        let file: raw::PipelineFile = match parse_yaml(&path, &text) {
            Ok(f) => f,
            Err(e) => {
                errors.push(e);
                unreadable.push(stem(&path));
                continue;
            }
        };
        let name = file.name.value.clone();
        if let Some(prev) = out.get(&name) {
            let prev: &PipelineSpec = prev;
            Reporter::new(&path, errors).at(
                file.name.referenced,
                format!(
                    "pipeline `{name}` is already defined in {}",
                    prev.origin.file.display()
                ),
                "give each pipeline a unique name",
            );
            continue;
        }
        let stages = file
            .stages
            .into_iter()
            .map(|s| {
                let (params, ploc) = match s.params {
                    Some(p) => (p.value, p.referenced),
                    None => (Value::Object(Default::default()), s.stage.referenced),
                };
                StageRef {
                    name: s.stage.value,
                    params,
                    origin: Origin {
                        file: path.clone(),
                        loc: s.stage.referenced,
                    },
                    params_origin: Origin {
                        file: path.clone(),
                        loc: ploc,
                    },
                }
            })
            .collect();
        out.insert(
            name.clone(),
            PipelineSpec {
                name,
                description: file.description,
                stages,
                origin: Origin {
                    file: path.clone(),
                    loc: file.name.referenced,
                },
            },
        );
    }
    Pipelines {
        specs: out,
        unreadable,
    }
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn env_nonempty(env: &dyn Fn(&str) -> Option<String>, key: &str) -> Option<String> {
    env(key)
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

fn parse_http_url(s: &str) -> Result<Url, String> {
    let u = Url::parse(s).map_err(|e| format!("`{s}` is not a URL: {e}"))?;
    if !matches!(u.scheme(), "http" | "https") || u.host_str().is_none() {
        return Err(format!("`{s}` is not an absolute http(s) URL"));
    }
    Ok(u)
}

fn validate(
    path: &Path,
    root: PathBuf,
    file: raw::RoutesFile,
    pipelines: Pipelines,
    env: &dyn Fn(&str) -> Option<String>,
    errors: &mut Vec<ConfigError>,
) -> Config {
    let mut r = Reporter::new(path, errors);
    let placeholder = Url::parse("http://invalid.invalid/").expect("static URL");

    // service
    let s = file.service;
    let base_url = match env_nonempty(env, "PAYCALL_BASE_URL") {
        Some(v) => parse_http_url(&v).unwrap_or_else(|e| {
            r.at(
                s.base_url.referenced,
                format!("PAYCALL_BASE_URL: {e}"),
                "set it to e.g. https://paycall.example.com",
            );
            placeholder.clone()
        }),
        None => parse_http_url(&s.base_url.value).unwrap_or_else(|e| {
            r.at(
                s.base_url.referenced,
                format!("service.base_url: {e}"),
                "use the public https origin, e.g. https://paycall.example.com",
            );
            placeholder.clone()
        }),
    };
    if base_url.path() != "/" || base_url.query().is_some() {
        r.at(
            s.base_url.referenced,
            "service.base_url must be an origin without a path",
            "drop the path: routes add their own",
        );
    }
    let backup_url = match env_nonempty(env, "PAYCALL_BACKUP_URL") {
        Some(v) => parse_http_url(&v).ok(),
        None => s.backup_url.as_ref().and_then(|b| {
            parse_http_url(&b.value)
                .map_err(|e| {
                    r.at(
                        b.referenced,
                        format!("service.backup_url: {e}"),
                        "use an absolute https URL or remove the key",
                    )
                })
                .ok()
        }),
    };
    let listen_raw = env_nonempty(env, "PAYCALL_LISTEN").unwrap_or_else(|| s.listen.value.clone());
    let listen = listen_raw.parse::<SocketAddr>().unwrap_or_else(|_| {
        r.at(
            s.listen.referenced,
            format!("listen address `{listen_raw}` is not host:port"),
            "write an IP and port, e.g. 127.0.0.1:8402 (PAYCALL_LISTEN overrides)",
        );
        "127.0.0.1:8402".parse().expect("static addr")
    });
    let admin_raw =
        env_nonempty(env, "PAYCALL_ADMIN_LISTEN").unwrap_or_else(|| s.admin_listen.value.clone());
    let admin_listen = if admin_raw.trim() == "off" {
        None
    } else {
        match admin_raw.parse::<SocketAddr>() {
            Ok(a) if a == listen && a.port() != 0 => {
                r.at(
                    s.admin_listen.referenced,
                    format!("admin_listen `{admin_raw}` is the public listen address"),
                    "give the admin listener its own port (default 127.0.0.1:9402): /metrics shows revenue",
                );
                None
            }
            Ok(a) => Some(a),
            Err(_) => {
                r.at(
                    s.admin_listen.referenced,
                    format!("admin listen address `{admin_raw}` is not host:port"),
                    "write an IP and port, e.g. 127.0.0.1:9402, or `off` (PAYCALL_ADMIN_LISTEN overrides)",
                );
                None
            }
        }
    };
    let mut trusted_proxies = Vec::new();
    for p in &s.trusted_proxies {
        match parse_cidr(&p.value) {
            Ok(n) => trusted_proxies.push(n),
            Err(e) => r.at(p.referenced, e, "write a CIDR such as 10.0.0.0/8 or an IP"),
        }
    }
    let service = ServiceSettings {
        name: s.name,
        version: s.version,
        description: s.description,
        base_url,
        backup_url,
        listen,
        admin_listen,
        trusted_proxies,
        shutdown_grace: Duration::from_secs(s.shutdown_grace_s),
    };

    // payment
    let p = file.payment;
    let (facilitators, failover) = facilitators::validate(
        &mut r,
        env,
        p.facilitator,
        p.facilitators,
        p.failover,
        &placeholder,
    );
    let facilitator = facilitators[0].clone();
    if p.max_timeout_seconds < 10 || p.max_timeout_seconds > 3600 {
        errors_push_simple(
            &mut r,
            "payment.max_timeout_seconds must be between 10 and 3600",
            "the default 120 leaves room for the work and the settlement",
        );
    }
    let mut accepts = Vec::new();
    if p.accepts.is_empty() {
        errors_push_simple(
            &mut r,
            "payment.accepts is empty",
            "list at least one payment option (Base USDC)",
        );
    }
    for a in &p.accepts {
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
            continue;
        };
        let pay_to = env_nonempty(env, env_key).unwrap_or_else(|| a.pay_to.trim().to_string());
        if pay_to.is_empty() {
            r.at(loc, format!("no payTo for {}: the receiving address is missing", a.network), format!("set {env_key} (or pay_to in routes.yaml) to your wallet address; there is no default"));
            continue;
        }
        if !valid(&pay_to) {
            r.at(
                loc,
                format!("payTo `{pay_to}` is not a valid address for {}", a.network),
                format!("check {env_key} / pay_to"),
            );
            continue;
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
        accepts.push(AcceptOption {
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
        });
    }
    let unsupported_setting = env_nonempty(env, "PAYCALL_UNSUPPORTED_NETWORK")
        .unwrap_or_else(|| p.unsupported_network.clone());
    let unsupported_network = match unsupported_setting.as_str() {
        "refuse" => UnsupportedNetwork::Refuse,
        "leave_out" => UnsupportedNetwork::LeaveOut,
        other => {
            errors_push_simple(
                &mut r,
                format!("payment.unsupported_network `{other}` is not known"),
                "use refuse (do not start when an offer cannot be paid) or leave_out (drop that offer with a warning)",
            );
            UnsupportedNetwork::Refuse
        }
    };
    let mut payment = PaymentSettings {
        facilitator,
        facilitators,
        failover,
        max_timeout_seconds: p.max_timeout_seconds,
        accepts,
        verify_per_minute: (p.verify_per_minute.payer, p.verify_per_minute.client),
        unsupported_network,
    };

    // guard
    let mut allow_cidrs = Vec::new();
    if let Some(v) = env("PAYCALL_ALLOW_CIDRS") {
        for part in v.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            match parse_cidr(part) {
                Ok(n) => allow_cidrs.push(n),
                Err(e) => errors_push_simple(
                    &mut r,
                    format!("PAYCALL_ALLOW_CIDRS: {e}"),
                    "use comma-separated CIDRs, e.g. 127.0.0.1/32",
                ),
            }
        }
    } else {
        for c in &file.guard.allow_cidrs {
            match parse_cidr(&c.value) {
                Ok(n) => allow_cidrs.push(n),
                Err(e) => r.at(c.referenced, e, "write a CIDR such as 10.1.0.0/16"),
            }
        }
    }
    let mut nat64_prefixes = Vec::new();
    for c in &file.guard.nat64_prefixes {
        match c.value.trim().parse::<ipnet::Ipv6Net>() {
            Ok(n) => match crate::net::guard::nat64_prefix_error(&n) {
                None => nat64_prefixes.push(n.trunc()),
                Some(e) => r.at(
                    c.referenced,
                    e,
                    "list the NAT64 prefix your network's translator uses, e.g. 2001:db8:64::/96",
                ),
            },
            Err(_) => r.at(
                c.referenced,
                format!("`{}` is not an IPv6 prefix", c.value),
                "write an IPv6 prefix such as 2001:db8:64::/96",
            ),
        }
    }
    let guard = GuardSettings {
        allow_cidrs,
        nat64_prefixes,
        user_agent: file.guard.user_agent.unwrap_or_else(|| {
            format!(
                "paycall/{} (+{})",
                env!("CARGO_PKG_VERSION"),
                service.base_url
            )
        }),
    };

    // upstreams
    let mut upstreams = BTreeMap::new();
    for (name, u) in &file.upstreams {
        let key = format!(
            "PAYCALL_UPSTREAM_{}",
            name.to_ascii_uppercase().replace(['-', '.'], "_")
        );
        let value = env_nonempty(env, &key).unwrap_or_else(|| u.value.clone());
        match parse_http_url(&value) {
            Ok(url) => {
                upstreams.insert(name.clone(), url);
            }
            Err(e) => r.at(
                u.referenced,
                format!("upstreams.{name}: {e}"),
                format!("use an absolute URL ({key} overrides)"),
            ),
        }
    }

    // ledger: also check that each EVM offer's confirmation RPC names an upstream
    let ledger = ledger_settings(&file.ledger, &root, &service.listen, env, &mut r);
    for a in &mut payment.accepts {
        if a.rpc.is_none() && a.network == "eip155:8453" && upstreams.contains_key("base_rpc") {
            a.rpc = Some("base_rpc".into());
        }
        if a.rpc.is_none() && a.is_solana() && upstreams.contains_key("solana_rpc") {
            a.rpc = Some("solana_rpc".into());
        }
        if let Some(name) = &a.rpc {
            if !upstreams.contains_key(name) {
                r.at(
                    Location::UNKNOWN,
                    format!(
                        "payment.accepts {}: rpc `{name}` is not an upstream",
                        a.network
                    ),
                    "name an entry of `upstreams:` (its JSON-RPC confirms settlements on chain)",
                );
            }
        }
    }

    // routes
    let mut routes: Vec<RouteSpec> = Vec::new();
    for route in file.routes {
        if let Some(spec) = validate_route(path, route, &payment, &pipelines, &mut r) {
            if let Some(prev) = routes
                .iter()
                .find(|x| x.path == spec.path || x.name == spec.name)
            {
                let msg = format!(
                    "route `{}` clashes with `{}` (same path or same name)",
                    spec.path, prev.path
                );
                r.at(spec.origin.loc, msg, "paths and their last segments must be unique (the last segment names the demo twin)");
                continue;
            }
            routes.push(spec);
        }
    }
    // Demo inputs may name the service itself: `{base_url}` in a string value is replaced by the
    // canonical base URL (after PAYCALL_BASE_URL), without its trailing slash.
    let base = service.base_url.as_str().trim_end_matches('/').to_string();
    for route in &mut routes {
        if let Some(demo) = &mut route.demo {
            for v in demo.input.values_mut() {
                if let Value::String(s) = v {
                    if s.contains("{base_url}") {
                        *s = s.replace("{base_url}", &base);
                    }
                }
            }
        }
    }

    Config {
        root,
        service,
        payment,
        guard,
        demo: DemoSettings {
            per_minute: file.demo.per_minute.max(1),
            burst: file.demo.burst.max(1),
        },
        upstreams,
        ledger,
        routes,
        pipelines: pipelines.specs,
    }
}

/// The `ledger:` section with PAYCALL_LEDGER_URL / PAYCALL_INSTANCE applied.
fn ledger_settings(
    l: &raw::Ledger,
    root: &Path,
    listen: &SocketAddr,
    env: &dyn Fn(&str) -> Option<String>,
    r: &mut Reporter<'_>,
) -> crate::payment::ledger::LedgerSettings {
    use crate::payment::ledger::{LedgerSettings, LedgerUrl};
    let (raw_url, from_env) = match env_nonempty(env, "PAYCALL_LEDGER_URL") {
        Some(v) => (v, true),
        None => (l.url.value.clone(), false),
    };
    let url = LedgerUrl::parse(&raw_url, root).unwrap_or_else(|e| {
        r.at(
            l.url.referenced,
            format!(
                "{}: {e}",
                if from_env { "PAYCALL_LEDGER_URL" } else { "ledger.url" }
            ),
            "the default sqlite://paycall.db needs no setup; several instances share postgres://USER:PASS@HOST/DB",
        );
        LedgerUrl::Sqlite(root.join("paycall.db"))
    });
    let instance = env_nonempty(env, "PAYCALL_INSTANCE")
        .or_else(|| l.instance.clone())
        .unwrap_or_else(|| {
            let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
                .map(|h| h.trim().to_string())
                .unwrap_or_default();
            format!(
                "{}:{}",
                if host.is_empty() { "paycall" } else { &host },
                listen.port()
            )
        });
    if l.lease_s < 30 {
        r.at(
            Location::UNKNOWN,
            format!(
                "ledger.lease_s is {}: a claim must outlive a route's work and its settlement",
                l.lease_s
            ),
            "use at least 30 (default 180)",
        );
    }
    LedgerSettings {
        url,
        instance,
        lease: Duration::from_secs(l.lease_s.max(30)),
        identifier_window: Duration::from_secs(l.identifier_window_s),
        max_reply_bytes: l.max_reply_bytes as usize,
        keep_rows: Duration::from_secs(l.keep_rows_days.saturating_mul(86_400)),
        max_attempts: l.max_attempts.max(1) as i64,
    }
}

fn errors_push_simple(r: &mut Reporter<'_>, msg: impl Into<String>, hint: impl Into<String>) {
    r.at(Location::UNKNOWN, msg, hint);
}

fn validate_route(
    path: &Path,
    route: raw::Route,
    payment: &PaymentSettings,
    pipelines: &Pipelines,
    r: &mut Reporter<'_>,
) -> Option<RouteSpec> {
    let mut ok = true;
    let p = route.path.value.clone();
    let path_ok = p.starts_with('/')
        && p.len() > 1
        && !p.ends_with('/')
        && p.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/-_.".contains(c))
        && !p.contains("//");
    if !path_ok {
        r.at(
            route.path.referenced,
            format!("route path `{p}` is not a plain absolute path"),
            "write it like /api/http (letters, digits, - _ . /)",
        );
        ok = false;
    }
    let name = p.rsplit('/').next().unwrap_or("").to_string();
    if p.starts_with("/api/demo/")
        || matches!(
            p.as_str(),
            "/status" | "/openapi.json" | "/llms.txt" | "/.well-known/x402"
        )
    {
        r.at(
            route.path.referenced,
            format!("route path `{p}` is reserved by the server"),
            "choose another path",
        );
        ok = false;
    }
    let mut methods = Vec::new();
    for m in &route.methods {
        match m.value.to_ascii_uppercase().as_str() {
            "GET" => methods.push(http::Method::GET),
            "POST" => methods.push(http::Method::POST),
            "PUT" => methods.push(http::Method::PUT),
            "PATCH" => methods.push(http::Method::PATCH),
            "DELETE" => methods.push(http::Method::DELETE),
            other => {
                r.at(
                    m.referenced,
                    format!("method `{other}` cannot be served"),
                    "use GET, POST, PUT, PATCH or DELETE (OPTIONS is always answered)",
                );
                ok = false;
            }
        }
    }
    if methods.is_empty() {
        r.at(
            route.path.referenced,
            "a route needs at least one method",
            "add methods: [GET]",
        );
        ok = false;
    }
    let price = match &route.price_usd {
        None => None,
        Some(pr) => {
            let mut atomic = Vec::new();
            if let Some(problem) = hints::price_problem(&pr.value) {
                r.at(
                    pr.referenced,
                    problem,
                    "write a positive USD decimal such as \"0.01\"; a free route has no price_usd",
                );
                ok = false;
            } else {
                // One error for the price, naming every network it cannot be paid in exactly.
                let mut inexact = Vec::new();
                for a in &payment.accepts {
                    match crate::x402::price::usd_to_atomic(&pr.value, a.decimals) {
                        Ok(v) => atomic.push(v),
                        Err(e) => inexact.push((a.name.clone(), e.to_string())),
                    }
                }
                if let Some((_, reason)) = inexact.first() {
                    let names: Vec<&str> = inexact.iter().map(|(n, _)| n.as_str()).collect();
                    r.at(
                        pr.referenced,
                        format!(
                            "price_usd `{}` cannot be paid in {}: {reason}",
                            pr.value,
                            names.join(", ")
                        ),
                        "use no more decimal places than the asset has (USDC: 6), e.g. \"0.015\"",
                    );
                    ok = false;
                }
            }
            Some(Price {
                usd: normalise_usd(&pr.value),
                atomic,
            })
        }
    };
    if !pipelines.specs.contains_key(&route.pipeline.value) {
        // A pipeline file that failed to load was reported already: one error per mistake.
        if !pipelines.unreadable.contains(&route.pipeline.value) {
            let known: Vec<&str> = pipelines.specs.keys().map(String::as_str).collect();
            let near = hints::did_you_mean(&route.pipeline.value, known.iter().copied());
            r.at(
                route.pipeline.referenced,
                format!(
                    "unknown pipeline `{}`{}",
                    route.pipeline.value,
                    near.map(|k| format!(" (did you mean `{k}`?)"))
                        .unwrap_or_default()
                ),
                format!(
                    "name a pipeline defined in pipelines/*.yaml beside routes.yaml: {}",
                    known.join(", ")
                ),
            );
        }
        ok = false;
    }
    let billing = match &route.billing {
        None => "status_below_400".to_string(),
        Some(b) if BILL_RULES.contains(&b.value.as_str()) => b.value.clone(),
        Some(b) => {
            r.at(
                b.referenced,
                format!("unknown billing rule `{}`", b.value),
                format!("use one of: {}", BILL_RULES.join(", ")),
            );
            ok = false;
            String::new()
        }
    };
    let description = route
        .description
        .clone()
        .unwrap_or_else(|| route.summary.clone());
    if description.chars().count() > 500 {
        r.at(route.path.referenced, "description is longer than 500 characters", "shorten it: the CDP facilitator rejects payments whose resource.description exceeds 500 characters");
        ok = false;
    }
    let mut input = Vec::new();
    for param in &route.input {
        match validate_param(&param.value) {
            Ok(spec) => {
                if input.iter().any(|x: &ParamSpec| x.name == spec.name) {
                    r.at(
                        param.referenced,
                        format!("parameter `{}` is declared twice", spec.name),
                        "remove the duplicate",
                    );
                    ok = false;
                }
                input.push(spec)
            }
            Err((msg, hint)) => {
                r.at(param.referenced, msg, hint);
                ok = false;
            }
        }
    }
    let demo = route.demo.as_ref().map(|d| RouteDemo {
        input: d
            .input
            .as_ref()
            .map(|i| i.value.clone())
            .unwrap_or_default(),
        ttl: Duration::from_secs(d.ttl_s),
        describe: d.describe.clone(),
        origin: Origin {
            file: path.to_path_buf(),
            loc: d
                .input
                .as_ref()
                .map(|i| i.referenced)
                .unwrap_or(route.path.referenced),
        },
    });
    if let Some(d) = &route.demo {
        if d.ttl_s == 0 {
            r.at(
                route.path.referenced,
                "demo.ttl_s must be positive",
                "samples are reused for ttl_s seconds",
            );
            ok = false;
        }
    }
    let caps = route
        .caps
        .iter()
        .map(|(k, v)| {
            (
                k.clone(),
                (
                    v.value.clone(),
                    Origin {
                        file: path.to_path_buf(),
                        loc: v.referenced,
                    },
                ),
            )
        })
        .collect();
    if !ok {
        return None;
    }
    Some(RouteSpec {
        path: p,
        name,
        methods,
        price,
        summary: route.summary,
        description,
        pipeline: route.pipeline.value.clone(),
        billing,
        max_request_bytes: route.max_request_bytes,
        input,
        caps,
        demo,
        output_example: route.output_example,
        tags: route.tags,
        origin: Origin {
            file: path.to_path_buf(),
            loc: route.path.referenced,
        },
        pipeline_origin: Origin {
            file: path.to_path_buf(),
            loc: route.pipeline.referenced,
        },
    })
}

fn validate_param(p: &raw::Param) -> Result<ParamSpec, (String, String)> {
    let ty = match p.ty.as_str() {
        "string" => ParamType::String,
        "integer" => ParamType::Integer,
        "number" => ParamType::Number,
        "boolean" => ParamType::Boolean,
        "object" => ParamType::Object,
        "any" => ParamType::Any,
        other => {
            return Err((
                format!("parameter `{}` has unknown type `{other}`", p.name),
                "use string, integer, number, boolean, object or any".into(),
            ))
        }
    };
    if p.name.is_empty()
        || !p
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return Err((
            format!("parameter name `{}` is not a plain identifier", p.name),
            "use letters, digits and _".into(),
        ));
    }
    let pattern = match &p.pattern {
        None => None,
        Some(src) => Some(regex::Regex::new(src).map_err(|e| {
            (
                format!("parameter `{}`: pattern does not compile: {e}", p.name),
                "write a valid regular expression (Rust regex syntax)".into(),
            )
        })?),
    };
    if let Some(f) = &p.format {
        if f != "uri" {
            return Err((
                format!("parameter `{}`: unknown format `{f}`", p.name),
                "the only format is uri".into(),
            ));
        }
    }
    if p.required && p.default.is_some() {
        return Err((
            format!("parameter `{}` is required and has a default", p.name),
            "drop one of the two".into(),
        ));
    }
    if let (Some(lo), Some(hi)) = (p.minimum, p.maximum) {
        if lo > hi {
            return Err((
                format!("parameter `{}`: minimum is above maximum", p.name),
                "swap them".into(),
            ));
        }
    }
    Ok(ParamSpec {
        name: p.name.clone(),
        ty,
        required: p.required,
        default: p.default.clone(),
        description: p.description.clone(),
        enumeration: p.enumeration.clone(),
        minimum: p.minimum,
        maximum: p.maximum,
        min_length: p.min_length,
        max_length: p.max_length,
        pattern,
        format: p.format.clone(),
        example: p.example.clone(),
        error_code: p
            .error_code
            .clone()
            .unwrap_or_else(|| "invalid_parameter".into()),
        case_insensitive: p.case_insensitive,
    })
}

/// "0.010" → "0.01", "1" → "1"; the input has already been validated by the price parser.
fn normalise_usd(s: &str) -> String {
    let s = s.trim().trim_start_matches('$');
    if let Some((i, f)) = s.split_once('.') {
        let f = f.trim_end_matches('0');
        if f.is_empty() {
            i.to_string()
        } else {
            format!("{i}.{f}")
        }
    } else {
        s.to_string()
    }
}

pub fn parse_cidr(s: &str) -> Result<IpNet, String> {
    let s = s.trim();
    if let Ok(n) = s.parse::<IpNet>() {
        return Ok(n);
    }
    if let Ok(ip) = s.parse::<std::net::IpAddr>() {
        return Ok(IpNet::from(ip));
    }
    Err(format!("`{s}` is not a CIDR or IP address"))
}

pub fn is_evm_address(s: &str) -> bool {
    s.len() == 42 && s.starts_with("0x") && s[2..].chars().all(|c| c.is_ascii_hexdigit())
}

/// A Solana address: base58 that decodes to exactly 32 bytes (the alphabet and length alone
/// let through strings that are not keys).
pub fn is_solana_address(s: &str) -> bool {
    crate::audit::address::is_valid_solana(s)
}

#[cfg(test)]
mod tests;
