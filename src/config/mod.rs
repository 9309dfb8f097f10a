//! routes.yaml + pipelines/*.yaml → a typed, validated `Config`.
//!
//! Loading never panics and never stops at the first problem: every error found is returned,
//! each naming file:line:column and what to do about it. The environment may override the
//! deployment settings (see `ENV_OVERRIDES`); the operator's file holds everything else.

mod error;
pub mod facilitators;
mod guard;
pub mod hints;
mod ledger;
mod param;
mod payment;
mod pipelines;
pub mod raw;
mod route;
mod service;
mod upstreams;
mod validate;

pub use error::{ConfigError, ConfigErrors, Reporter};

use ipnet::IpNet;
use serde_json::Value;
use serde_saphyr::Location;
use std::collections::BTreeMap;
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
    /// How long a connection may take to send a request head (slow or silent clients).
    pub header_read_timeout: Duration,
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
    let pipelines = pipelines::load(&root.join("pipelines"), &mut errors);
    let config = validate::validate(routes_path, root, file, pipelines, env, &mut errors);
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
