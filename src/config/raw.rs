//! The YAML files exactly as an operator writes them: routes.yaml and pipelines/*.yaml.
//!
//! Every struct denies unknown keys so a typo is a startup error with its line and column, and
//! fields whose *meaning* is checked later (paths, prices, stage names) are `Spanned` so those
//! later errors can point at the right place too. Doc comments here are the config reference.

use serde::Deserialize;
use serde_json::Value;
use serde_saphyr::Spanned;
use std::collections::BTreeMap;

/// routes.yaml
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoutesFile {
    pub service: Service,
    pub payment: Payment,
    #[serde(default)]
    pub guard: Guard,
    #[serde(default)]
    pub demo: Demo,
    #[serde(default)]
    pub ledger: Ledger,
    /// Named upstream base URLs (market APIs, RPCs, search provider, discovery index). Each
    /// defaults to the real public service; tests point them at local servers.
    #[serde(default)]
    pub upstreams: BTreeMap<String, Spanned<String>>,
    pub routes: Vec<Route>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Service {
    /// Name shown in discovery documents.
    pub name: String,
    /// Version of the interface description (1.0.0: docs/decisions.md#answer-shape).
    #[serde(default = "default_version")]
    pub version: String,
    /// One paragraph for /llms.txt and /openapi.json.
    #[serde(default)]
    pub description: String,
    /// Canonical public base address; resource URLs in challenges are built from it.
    pub base_url: Spanned<String>,
    /// A second base address serving the same routes (advertised in discovery).
    #[serde(default)]
    pub backup_url: Option<Spanned<String>>,
    /// host:port to listen on (PAYCALL_LISTEN overrides).
    #[serde(default = "default_listen")]
    pub listen: Spanned<String>,
    /// host:port of the admin listener (/metrics, /config, /reload), `off` for none
    /// (PAYCALL_ADMIN_LISTEN overrides). Never the public port: revenue is not public.
    #[serde(default = "default_admin_listen")]
    pub admin_listen: Spanned<String>,
    /// Proxies (CIDRs) whose X-Forwarded-For is believed for per-client demo limits.
    #[serde(default)]
    pub trusted_proxies: Vec<Spanned<String>>,
    /// Seconds to let in-flight requests finish on shutdown.
    #[serde(default = "default_shutdown_grace")]
    pub shutdown_grace_s: u64,
    /// Seconds a connection may take to send a whole request head, counted from when the
    /// server starts waiting for it (so an idle kept-alive connection is closed after it too).
    #[serde(default = "default_header_read_timeout")]
    pub header_read_timeout_s: Spanned<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Payment {
    /// One facilitator. Exactly one of `facilitator` and `facilitators` is given.
    #[serde(default)]
    pub facilitator: Option<Facilitator>,
    /// Several facilitators, in order of preference (failover, src/x402/facilitators.rs):
    /// each entry is a `facilitator` block with a `name`.
    #[serde(default)]
    pub facilitators: Option<Vec<NamedFacilitator>>,
    /// Health rules of the facilitators when there are several (circuit breaker, checks).
    #[serde(default)]
    pub failover: Option<Failover>,
    /// maxTimeoutSeconds in every offer: how long a signed payment stays valid.
    #[serde(default = "default_max_timeout")]
    pub max_timeout_seconds: u64,
    /// The accepted payment options, in order of preference.
    pub accepts: Vec<Spanned<Accept>>,
    /// How many facilitator /verify calls one payer, and one client address, may cause per
    /// minute (0 = no limit); over it → 429 before any facilitator call.
    #[serde(default)]
    pub verify_per_minute: VerifyPerMinute,
    /// An offered network the facilitator's /supported does not list (or, for Solana, a payTo
    /// without a token account for the asset): `refuse` to start, or `leave_out` the offer with
    /// a warning. One rule for every network.
    #[serde(default = "default_unsupported_network")]
    pub unsupported_network: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VerifyPerMinute {
    #[serde(default = "default_verify_payer")]
    pub payer: u32,
    #[serde(default = "default_verify_client")]
    pub client: u32,
}

impl Default for VerifyPerMinute {
    fn default() -> Self {
        VerifyPerMinute {
            payer: default_verify_payer(),
            client: default_verify_client(),
        }
    }
}

fn default_verify_payer() -> u32 {
    1_200
}
fn default_verify_client() -> u32 {
    2_400
}

fn default_unsupported_network() -> String {
    "refuse".to_string()
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Facilitator {
    /// Base URL; /verify, /settle and /supported are joined to it (PAYCALL_FACILITATOR_URL).
    pub url: Spanned<String>,
    #[serde(default = "default_verify_timeout")]
    pub verify_timeout_ms: u64,
    #[serde(default = "default_settle_timeout")]
    pub settle_timeout_ms: u64,
    /// How long GET /supported is cached.
    #[serde(default = "default_supported_ttl")]
    pub supported_ttl_s: u64,
    /// How long an idle connection to the facilitator is kept for reuse; below the
    /// facilitator's keep-alive (Node closes idle connections after 5 s). 0: never reuse.
    #[serde(default = "default_pool_idle_timeout")]
    pub pool_idle_timeout_ms: u64,
    /// `auto` (CDP JWT when the key's two variables are set, else none), `cdp` (required:
    /// startup error without the key) or `none`.
    #[serde(default = "default_auth")]
    pub auth: Spanned<String>,
    /// The environment variable holding this facilitator's CDP API key id (default
    /// CDP_API_KEY_ID): each facilitator may have its own key pair.
    #[serde(default)]
    pub api_key_id_env: Option<Spanned<String>>,
    /// The environment variable holding its CDP API key secret (default CDP_API_KEY_SECRET).
    #[serde(default)]
    pub api_key_secret_env: Option<Spanned<String>>,
}

/// One entry of `payment.facilitators`: a name (log lines, metrics labels, /status) and the
/// same settings as `payment.facilitator`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NamedFacilitator {
    /// 1-32 characters of a-z, 0-9, `_` or `-`; unique.
    pub name: Spanned<String>,
    pub url: Spanned<String>,
    #[serde(default = "default_verify_timeout")]
    pub verify_timeout_ms: u64,
    #[serde(default = "default_settle_timeout")]
    pub settle_timeout_ms: u64,
    #[serde(default = "default_supported_ttl")]
    pub supported_ttl_s: u64,
    #[serde(default = "default_pool_idle_timeout")]
    pub pool_idle_timeout_ms: u64,
    /// `auto`, `cdp` or `none`, as for `payment.facilitator`.
    #[serde(default = "default_auth")]
    pub auth: Spanned<String>,
    /// Where its CDP key pair is read from, as for `payment.facilitator`.
    #[serde(default)]
    pub api_key_id_env: Option<Spanned<String>>,
    #[serde(default)]
    pub api_key_secret_env: Option<Spanned<String>>,
}

impl NamedFacilitator {
    /// The settings without the name.
    pub fn split(self) -> (Spanned<String>, Facilitator) {
        (
            self.name,
            Facilitator {
                url: self.url,
                verify_timeout_ms: self.verify_timeout_ms,
                settle_timeout_ms: self.settle_timeout_ms,
                supported_ttl_s: self.supported_ttl_s,
                pool_idle_timeout_ms: self.pool_idle_timeout_ms,
                auth: self.auth,
                api_key_id_env: self.api_key_id_env,
                api_key_secret_env: self.api_key_secret_env,
            },
        )
    }
}

/// `payment.failover`: when a facilitator is skipped, and how it is watched.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Failover {
    /// Consecutive failures (no answer, 5xx, garbage) that open a facilitator's breaker.
    #[serde(default = "default_breaker_failures")]
    pub failures: u32,
    /// How long an open breaker keeps the facilitator out before one trial call.
    #[serde(default = "default_breaker_cooldown")]
    pub cooldown_s: u64,
    /// Seconds between background GET /supported health checks of each facilitator.
    #[serde(default = "default_check_interval")]
    pub check_interval_s: u64,
    /// A facilitator whose /verify latency average is above this is tried after faster ones.
    #[serde(default = "default_slow_ms")]
    pub slow_ms: u64,
}

fn default_breaker_failures() -> u32 {
    3
}
fn default_breaker_cooldown() -> u64 {
    30
}
fn default_check_interval() -> u64 {
    10
}
fn default_slow_ms() -> u64 {
    3_000
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Accept {
    /// CAIP-2 network id, e.g. eip155:8453.
    pub network: String,
    /// Short name for the `priced` block, e.g. base.
    pub name: String,
    /// Token contract (EVM) or mint (Solana).
    pub asset: String,
    /// Decimals of the asset; prices are converted exactly.
    pub decimals: u32,
    /// EVM only: the token's EIP-712 domain (name, version).
    #[serde(default)]
    pub eip712: Option<Eip712>,
    /// Receiving address. Empty means "must come from the environment" (PAYCALL_EVM_PAY_TO /
    /// PAYCALL_SOLANA_PAY_TO); missing in both places is a startup error.
    #[serde(default)]
    pub pay_to: String,
    /// EVM only: the upstream (name in `upstreams`) whose JSON-RPC confirms a settlement on
    /// chain when the facilitator could not (default: `base_rpc` for eip155:8453).
    #[serde(default)]
    pub rpc: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Eip712 {
    pub name: String,
    pub version: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Guard {
    /// CIDRs the outbound guard lets through even though they are private (self-hosting,
    /// tests). Empty by default (PAYCALL_ALLOW_CIDRS).
    #[serde(default)]
    pub allow_cidrs: Vec<Spanned<String>>,
    /// The network's own NAT64 prefixes (RFC 6052 lengths), unwrapped and judged by the IPv4
    /// address they carry, like 64:ff9b::/96. Empty by default.
    #[serde(default)]
    pub nat64_prefixes: Vec<Spanned<String>>,
    /// User-Agent sent on outbound requests.
    #[serde(default)]
    pub user_agent: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Demo {
    /// Requests per minute per client on /api/demo/*.
    #[serde(default = "default_demo_rpm")]
    pub per_minute: u32,
    /// Burst allowance.
    #[serde(default = "default_demo_burst")]
    pub burst: u32,
}

impl Default for Demo {
    fn default() -> Self {
        Demo {
            per_minute: default_demo_rpm(),
            burst: default_demo_burst(),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Route {
    /// URL path, e.g. /api/http. The route's name is the last segment.
    pub path: Spanned<String>,
    /// Allowed methods (GET, POST, …). OPTIONS is always answered.
    pub methods: Vec<Spanned<String>>,
    /// Price per call in USD as a decimal string, e.g. "0.01". Free routes omit it.
    #[serde(default)]
    pub price_usd: Option<Spanned<String>>,
    /// One line for catalogues.
    pub summary: String,
    /// Longer text for the challenge's resource.description (≤ 500 characters).
    #[serde(default)]
    pub description: Option<String>,
    /// Name of the chain in pipelines/*.yaml.
    pub pipeline: Spanned<String>,
    /// Bill rule name (default `status_below_400`).
    #[serde(default)]
    pub billing: Option<Spanned<String>>,
    /// Largest request body accepted, bytes (413 above).
    #[serde(default = "default_max_request")]
    pub max_request_bytes: usize,
    /// Input parameters, in order.
    #[serde(default)]
    pub input: Vec<Spanned<Param>>,
    /// Per-route overrides of stage parameters: stage name → { parameter: value }.
    #[serde(default)]
    pub caps: BTreeMap<String, Spanned<Value>>,
    /// The free twin at /api/demo/<name>.
    #[serde(default)]
    pub demo: Option<RouteDemo>,
    /// An example of the 200 body, for discovery documents.
    #[serde(default)]
    pub output_example: Option<Value>,
    /// Words for Bazaar tags.
    #[serde(default)]
    pub tags: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteDemo {
    /// The fixed input the demo runs on (validated against `input` at startup).
    #[serde(default)]
    pub input: Option<Spanned<serde_json::Map<String, Value>>>,
    /// How long a sample is reused.
    pub ttl_s: u64,
    /// Words describing the fixed input (the envelope's fixed_input).
    pub describe: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Param {
    pub name: String,
    /// string | integer | number | boolean | object | any
    #[serde(rename = "type")]
    pub ty: String,
    #[serde(default)]
    pub required: bool,
    #[serde(default)]
    pub default: Option<Value>,
    #[serde(default)]
    pub description: String,
    #[serde(default, rename = "enum")]
    pub enumeration: Option<Vec<Value>>,
    #[serde(default)]
    pub minimum: Option<f64>,
    #[serde(default)]
    pub maximum: Option<f64>,
    #[serde(default)]
    pub min_length: Option<usize>,
    /// Characters; for an object given as a JSON string in the query, the string's length.
    #[serde(default)]
    pub max_length: Option<usize>,
    #[serde(default)]
    pub pattern: Option<String>,
    /// `uri` for absolute http(s) URLs.
    #[serde(default)]
    pub format: Option<String>,
    #[serde(default)]
    pub example: Option<Value>,
    /// Error code for a bad value (default invalid_parameter), e.g. bad_fields.
    #[serde(default)]
    pub error_code: Option<String>,
    /// Enum values compared case-insensitively and normalised to the listed spelling.
    #[serde(default)]
    pub case_insensitive: bool,
}

/// pipelines/<name>.yaml
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PipelineFile {
    pub name: Spanned<String>,
    #[serde(default)]
    pub description: String,
    pub stages: Vec<StageEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StageEntry {
    /// Registered stage name.
    pub stage: Spanned<String>,
    /// The stage's parameters (its own reference lists them).
    #[serde(default, rename = "with")]
    pub params: Option<Spanned<Value>>,
}

fn default_version() -> String {
    "1.0.0".into()
}
fn default_listen() -> Spanned<String> {
    Spanned::new(
        "127.0.0.1:8402".into(),
        serde_saphyr::Location::UNKNOWN,
        serde_saphyr::Location::UNKNOWN,
    )
}
fn default_admin_listen() -> Spanned<String> {
    Spanned::new(
        "127.0.0.1:9402".into(),
        serde_saphyr::Location::UNKNOWN,
        serde_saphyr::Location::UNKNOWN,
    )
}
fn default_auth() -> Spanned<String> {
    Spanned::new(
        "auto".into(),
        serde_saphyr::Location::UNKNOWN,
        serde_saphyr::Location::UNKNOWN,
    )
}
fn default_shutdown_grace() -> u64 {
    10
}
/// hyper's own default once it has a timer.
fn default_header_read_timeout() -> Spanned<u64> {
    Spanned::new(
        30,
        serde_saphyr::Location::UNKNOWN,
        serde_saphyr::Location::UNKNOWN,
    )
}
fn default_max_timeout() -> u64 {
    120
}
fn default_verify_timeout() -> u64 {
    10_000
}
fn default_settle_timeout() -> u64 {
    30_000
}
fn default_supported_ttl() -> u64 {
    600
}
fn default_pool_idle_timeout() -> u64 {
    4_000
}
fn default_demo_rpm() -> u32 {
    30
}
fn default_demo_burst() -> u32 {
    10
}
fn default_max_request() -> usize {
    64_000
}

/// The payment ledger (docs/ledger.md).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ledger {
    /// `sqlite://PATH` (relative to this file's folder) or `postgres://USER:PASS@HOST/DB`
    /// (PAYCALL_LEDGER_URL overrides).
    #[serde(default = "default_ledger_url")]
    pub url: Spanned<String>,
    /// This instance's name in payment claims (PAYCALL_INSTANCE overrides). Give each instance
    /// sharing a database its own; default: the host name and the listen port.
    #[serde(default)]
    pub instance: Option<String>,
    /// Seconds a claim holds a payment; a crashed instance's claims end after this.
    #[serde(default = "default_lease")]
    pub lease_s: u64,
    /// Seconds a reply is kept for a payment-identifier retry.
    #[serde(default = "default_identifier_window")]
    pub identifier_window_s: u64,
    /// Replies larger than this are not kept (the accounting row is).
    #[serde(default = "default_max_reply_bytes")]
    pub max_reply_bytes: u64,
    /// Days accounting rows are kept.
    #[serde(default = "default_keep_rows_days")]
    pub keep_rows_days: u64,
    /// Work attempts per payment whose outcome was not charged (then 429).
    #[serde(default = "default_max_attempts")]
    pub max_attempts: u32,
}

impl Default for Ledger {
    fn default() -> Self {
        Ledger {
            url: default_ledger_url(),
            instance: None,
            lease_s: default_lease(),
            identifier_window_s: default_identifier_window(),
            max_reply_bytes: default_max_reply_bytes(),
            keep_rows_days: default_keep_rows_days(),
            max_attempts: default_max_attempts(),
        }
    }
}

fn default_ledger_url() -> Spanned<String> {
    Spanned::new(
        "sqlite://paycall.db".into(),
        serde_saphyr::Location::UNKNOWN,
        serde_saphyr::Location::UNKNOWN,
    )
}
fn default_lease() -> u64 {
    180
}
fn default_identifier_window() -> u64 {
    86_400
}
fn default_max_reply_bytes() -> u64 {
    16_000_000
}
fn default_keep_rows_days() -> u64 {
    400
}
fn default_max_attempts() -> u32 {
    3
}
