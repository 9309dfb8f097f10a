//! HTTP client for an x402 facilitator (`POST verify`, `POST settle`, `GET supported`).
//!
//! Facilitators disagree on HTTP statuses (TS: 200 + `isValid:false`; x402-rs: 400/500 with
//! the same bodies; CDP: 400 `{errorType, errorMessage}` for schema errors), so every body is
//! read whatever the status and classified by its fields. The client's payment payload is
//! forwarded verbatim as JSON: no typed round trip that would drop fields we don't know.
//!
//! The facilitator is operator-configured (a public service or a local one in tests), so this
//! uses a plain reqwest client, not the outbound guard used for caller-supplied URLs.
//!
//! Connections (issue 19): idle pooled connections are dropped after
//! [`FacilitatorConfig::pool_idle_timeout`] (default 4 s, below Node's 5 s keep-alive), so a
//! connection the server has closed is not reused. `/verify` and `/supported` move no money: one
//! that fails before any response (reset, closed connection, refused connect) is sent once more
//! on a fresh connection. `/settle` always goes out on a fresh connection and is sent again only
//! when that connection could not be opened (the request never left); a `/settle` that may have
//! reached the facilitator is never resent: its outcome is unknown (`outcome_unknown`).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::header::{HeaderMap, AUTHORIZATION, CONTENT_TYPE};
use reqwest::{Method, StatusCode};
use serde_json::{json, Map, Value};
use tracing::{debug, info, warn};
use url::Url;

use super::auth::{AuthError, CdpSigner};
use super::codec::decode_lenient;
use super::types::Requirement;

/// Largest facilitator response body we read. Real ones are well under 10 KB.
pub const MAX_RESPONSE_BYTES: usize = 1024 * 1024;

/// Idle facilitator connections are dropped after this by default: below Node's 5 s
/// keep-alive, after which the server closes them.
pub const DEFAULT_POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(4);

/// After a failed `/supported` refresh with an older copy in hand, wait at least this long
/// (capped by the TTL) before asking again, so a down facilitator is not hit per request.
pub const SUPPORTED_RETRY_AFTER_ERROR: Duration = Duration::from_secs(5);

/// Installs rustls's `ring` crypto provider once per process. reqwest is built with
/// `rustls-no-provider`, so a client built before this would panic on first TLS use.
/// Safe to call from anywhere, any number of times.
pub fn ensure_crypto() {
    crate::net::install_crypto_provider();
}

/// How the client authenticates to the facilitator.
#[derive(Clone, Default)]
pub enum FacilitatorAuth {
    /// No `Authorization` header (x402.org, x402-rs, local facilitators).
    #[default]
    None,
    /// Coinbase CDP: a fresh JWT per request (`CDP_API_KEY_ID`, `CDP_API_KEY_SECRET`).
    Cdp { key_id: String, key_secret: String },
}

impl std::fmt::Debug for FacilitatorAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FacilitatorAuth::None => f.write_str("None"),
            FacilitatorAuth::Cdp { key_id, .. } => f
                .debug_struct("Cdp")
                .field("key_id", key_id)
                .field("key_secret", &"<redacted>")
                .finish(),
        }
    }
}

/// Where the facilitator is and how patient to be with it.
#[derive(Debug, Clone)]
pub struct FacilitatorConfig {
    /// Base URL; `verify`, `settle`, `supported` are joined under it, with or without a
    /// trailing slash (`https://api.cdp.coinbase.com/platform/v2/x402` works).
    pub url: Url,
    /// Whole-request timeout for `/verify` (also used for `/supported`).
    pub verify_timeout: Duration,
    /// Whole-request timeout for each `/settle` call (the facilitator waits for a receipt).
    pub settle_timeout: Duration,
    /// How long a `/supported` answer is reused.
    pub supported_ttl: Duration,
    /// How long an idle connection is kept for reuse: keep it below the facilitator's
    /// keep-alive (Node: 5 s). Zero: never reuse a connection.
    pub pool_idle_timeout: Duration,
    pub auth: FacilitatorAuth,
}

impl FacilitatorConfig {
    /// Defaults: verify 10 s, settle 45 s, `/supported` cached 10 min, idle connections kept
    /// 4 s, no auth.
    pub fn new(url: Url) -> Self {
        FacilitatorConfig {
            url,
            verify_timeout: Duration::from_secs(10),
            settle_timeout: Duration::from_secs(45),
            supported_ttl: Duration::from_secs(600),
            pool_idle_timeout: DEFAULT_POOL_IDLE_TIMEOUT,
            auth: FacilitatorAuth::None,
        }
    }
}

/// A configuration that cannot work; reported at startup.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("facilitator URL {0:?} must be an absolute http(s) URL")]
    BadUrl(String),
    #[error(transparent)]
    Auth(#[from] AuthError),
    #[error("cannot build the facilitator HTTP client: {0}")]
    Client(String),
}

/// A facilitator exchange that produced no usable verdict.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FacilitatorError {
    /// Could not connect: the request was never delivered.
    #[error("facilitator unreachable: {0}")]
    Unreachable(String),
    /// No complete answer within the configured timeout. For `/settle` the outcome is
    /// unknown: the payment may have been settled.
    #[error("facilitator did not answer in time")]
    Timeout,
    /// The connection broke after the request was sent (reset, truncated answer). Like
    /// `Timeout`, the outcome of a `/settle` is unknown.
    #[error("facilitator connection interrupted: {0}")]
    Interrupted(String),
    /// An answer we cannot interpret (wrong status, not JSON, missing fields).
    #[error("facilitator gave an unusable answer: {0}")]
    BadResponse(String),
    /// 401/403: the credentials were refused.
    #[error("facilitator refused our credentials: {0}")]
    Unauthorized(String),
}

impl FacilitatorError {
    /// HTTP status to answer our caller with.
    pub fn status(&self) -> u16 {
        match self {
            FacilitatorError::Timeout => 504,
            _ => 502,
        }
    }

    /// Stable machine-readable code (never the facilitator's own text).
    pub fn code(&self) -> &'static str {
        match self {
            FacilitatorError::Unreachable(_) => "facilitator_unreachable",
            FacilitatorError::Timeout => "facilitator_timeout",
            FacilitatorError::Interrupted(_) => "facilitator_interrupted",
            FacilitatorError::BadResponse(_) => "facilitator_bad_response",
            FacilitatorError::Unauthorized(_) => "facilitator_unauthorized",
        }
    }

    /// True when a `/settle` that failed this way may nevertheless have moved the money:
    /// the caller must not answer with a fresh 402.
    pub fn outcome_unknown(&self) -> bool {
        matches!(
            self,
            FacilitatorError::Timeout | FacilitatorError::Interrupted(_)
        )
    }
}

/// The facilitator's verdict on a payment.
#[derive(Debug, Clone, PartialEq)]
pub struct VerifyOutcome {
    pub is_valid: bool,
    /// `invalidReason`, or CDP's `errorType` for a rejected request.
    pub invalid_reason: Option<String>,
    /// `invalidMessage` (TS, CDP), `invalidReasonDetails` (x402-rs) or CDP's `errorMessage`.
    /// Facilitator text: log it, don't hand it to callers verbatim.
    pub invalid_message: Option<String>,
    /// Recovered payer, when the facilitator says (empty strings become `None`).
    pub payer: Option<String>,
    /// Decoded `EXTENSION-RESPONSES` header (e.g. `{"bazaar":{"status":"processing"}}`).
    pub extension_responses: Option<Value>,
}

/// The result of settling a payment.
#[derive(Debug, Clone, PartialEq)]
pub enum SettleOutcome {
    /// `success: true`. `response` is the facilitator's body, for `PAYMENT-RESPONSE`.
    Settled { response: Value },
    /// Broadcast (or maybe broadcast) but not confirmed, even after one retry: outcome
    /// unknown; `transaction` when the facilitator named one.
    Pending {
        transaction: Option<String>,
        response: Value,
    },
    /// The facilitator says it did not settle.
    Failed {
        reason: String,
        message: Option<String>,
        response: Value,
    },
}

/// One `kinds[]` entry of `/supported`.
#[derive(Debug, Clone, PartialEq)]
pub struct Kind {
    pub x402_version: u64,
    pub scheme: String,
    pub network: String,
    pub extra: Option<Map<String, Value>>,
}

/// A parsed `/supported` answer. Malformed kinds are skipped, optional parts default empty.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Supported {
    pub kinds: Vec<Kind>,
    pub extensions: Vec<String>,
    /// CAIP-2 pattern (`eip155:*`, `solana:<ref>`) → facilitator addresses.
    pub signers: BTreeMap<String, Vec<String>>,
}

impl Supported {
    /// Lenient parse; `None` only when `kinds` is not an array.
    pub fn from_json(v: &Value) -> Option<Supported> {
        let kinds = v
            .get("kinds")?
            .as_array()?
            .iter()
            .filter_map(|k| {
                Some(Kind {
                    x402_version: k.get("x402Version")?.as_u64()?,
                    scheme: k.get("scheme")?.as_str()?.to_string(),
                    network: k.get("network")?.as_str()?.to_string(),
                    extra: match k.get("extra") {
                        None | Some(Value::Null) => None,
                        Some(Value::Object(m)) => Some(m.clone()),
                        Some(_) => return None,
                    },
                })
            })
            .collect();
        let extensions = v
            .get("extensions")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|e| e.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        let signers = v
            .get("signers")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(pattern, addrs)| {
                        let addrs: Vec<String> = addrs
                            .as_array()?
                            .iter()
                            .filter_map(|a| a.as_str().map(str::to_string))
                            .collect();
                        Some((pattern.clone(), addrs))
                    })
                    .collect()
            })
            .unwrap_or_default();
        Some(Supported {
            kinds,
            extensions,
            signers,
        })
    }

    /// Whether the facilitator lists this (version, scheme, network).
    pub fn supports(&self, x402_version: u64, scheme: &str, network: &str) -> bool {
        self.kinds
            .iter()
            .any(|k| k.x402_version == x402_version && k.scheme == scheme && k.network == network)
    }

    /// `extra.feePayer` of the v2 `exact` kinds for `network`, in listed order.
    pub fn fee_payers(&self, network: &str) -> Vec<String> {
        self.kinds
            .iter()
            .filter(|k| k.x402_version == 2 && k.scheme == "exact" && k.network == network)
            .filter_map(|k| {
                k.extra
                    .as_ref()?
                    .get("feePayer")?
                    .as_str()
                    .map(str::to_string)
            })
            .collect()
    }

    /// Signer addresses whose pattern covers `network` (`solana:*` covers `solana:<ref>`).
    pub fn signers_for(&self, network: &str) -> Vec<String> {
        self.signers
            .iter()
            .filter(|(pattern, _)| pattern_covers(pattern, network))
            .flat_map(|(_, addrs)| addrs.iter().cloned())
            .collect()
    }
}

fn pattern_covers(pattern: &str, network: &str) -> bool {
    pattern == network
        || pattern == "*"
        || pattern
            .strip_suffix('*')
            .is_some_and(|prefix| prefix.ends_with(':') && network.starts_with(prefix))
}

#[derive(Default)]
struct SupportedCache {
    current: Option<Arc<Supported>>,
    fresh_until: Option<Instant>,
}

/// Client for one facilitator. Share it behind an `Arc`.
/// How old the cached `/supported` must be before `refresh_supported` asks again.
const FORCED_REFRESH_MIN_AGE: Duration = Duration::from_secs(5);

pub struct FacilitatorClient {
    /// Pooled connections, dropped after the idle timeout (verify, supported).
    http: reqwest::Client,
    /// A new connection per request: `/settle`, and the one resend of a request that failed
    /// before it was answered.
    fresh: reqwest::Client,
    base: Url,
    verify_timeout: Duration,
    settle_timeout: Duration,
    supported_ttl: Duration,
    signer: Option<CdpSigner>,
    cache: Mutex<SupportedCache>,
    /// Serialises `/supported` refreshes so concurrent callers share one request.
    refresh: tokio::sync::Mutex<()>,
    /// network → fee payer handed out so far (kept stable, see [`Self::fee_payer`]).
    fee_payers: Mutex<HashMap<String, String>>,
    /// Bumped each time a `/supported` answer replaces the cached one: what was rendered from
    /// it (the gate's ready-made 402s) is rendered again.
    supported_generation: std::sync::atomic::AtomicU64,
    /// Told of every exchange: endpoint, latency, error code when no answer (metrics).
    observer: std::sync::OnceLock<Observer>,
}

/// See [`FacilitatorClient::observe`].
pub type Observer = Arc<dyn Fn(&'static str, Duration, Option<&'static str>) + Send + Sync>;

impl std::fmt::Debug for FacilitatorClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FacilitatorClient")
            .field("base", &self.base.as_str())
            .field("cdp_auth", &self.signer.is_some())
            .finish_non_exhaustive()
    }
}

/// What came back from one HTTP exchange.
struct Reply {
    status: StatusCode,
    json: Option<Value>,
    snippet: String,
    extension_responses: Option<Value>,
}

impl FacilitatorClient {
    /// Validates the URL and credentials and builds the HTTP client.
    pub fn new(config: FacilitatorConfig) -> Result<Self, SetupError> {
        ensure_crypto();
        let mut base = config.url.clone();
        if !matches!(base.scheme(), "http" | "https") || base.cannot_be_a_base() {
            return Err(SetupError::BadUrl(config.url.to_string()));
        }
        if !base.path().ends_with('/') {
            let path = format!("{}/", base.path());
            base.set_path(&path);
        }
        base.set_query(None);
        base.set_fragment(None);
        let signer = match &config.auth {
            FacilitatorAuth::None => None,
            FacilitatorAuth::Cdp { key_id, key_secret } => {
                Some(CdpSigner::new(key_id, key_secret)?)
            }
        };
        let builder = || {
            reqwest::Client::builder()
                .no_proxy()
                .user_agent(concat!("paycall/", env!("CARGO_PKG_VERSION")))
                .redirect(reqwest::redirect::Policy::none())
        };
        let idle = config.pool_idle_timeout;
        let http = if idle.is_zero() {
            builder().pool_max_idle_per_host(0)
        } else {
            builder().pool_idle_timeout(idle)
        }
        .build()
        .map_err(|e| SetupError::Client(e.to_string()))?;
        let fresh = builder()
            .pool_max_idle_per_host(0)
            .build()
            .map_err(|e| SetupError::Client(e.to_string()))?;
        Ok(FacilitatorClient {
            http,
            fresh,
            base,
            verify_timeout: config.verify_timeout,
            settle_timeout: config.settle_timeout,
            supported_ttl: config.supported_ttl,
            signer,
            cache: Mutex::new(SupportedCache::default()),
            refresh: tokio::sync::Mutex::new(()),
            fee_payers: Mutex::new(HashMap::new()),
            supported_generation: std::sync::atomic::AtomicU64::new(0),
            observer: std::sync::OnceLock::new(),
        })
    }

    /// Calls `f` after every exchange with the endpoint, its latency and, when it produced no
    /// answer, the error code. Set once (the metrics); later calls are ignored.
    pub fn observe(&self, f: Observer) {
        let _ = self.observer.set(f);
    }

    /// Full URL of an endpoint (`verify`, `settle`, `supported`).
    pub fn endpoint_url(&self, endpoint: &str) -> Url {
        // Joining a plain relative segment onto an http(s) base cannot fail.
        self.base
            .join(endpoint)
            .unwrap_or_else(|_| self.base.clone())
    }

    /// Asks the facilitator whether `payload` (the decoded `PAYMENT-SIGNATURE`, forwarded
    /// verbatim) is a valid payment for `requirement` (our own matching offer).
    pub async fn verify(
        &self,
        payload: &Value,
        requirement: &Requirement,
    ) -> Result<VerifyOutcome, FacilitatorError> {
        let body = request_body(payload, requirement);
        let reply = self
            .exchange(Method::POST, "verify", Some(&body), self.verify_timeout)
            .await?;
        let outcome = classify_verify(&reply)?;
        debug!(
            endpoint = "verify",
            is_valid = outcome.is_valid,
            invalid_reason = outcome.invalid_reason.as_deref().unwrap_or(""),
            payer = outcome.payer.as_deref().unwrap_or(""),
            "facilitator verdict"
        );
        Ok(outcome)
    }

    /// Settles the payment. A `settlement_pending` answer is retried once with the same body
    /// (the facilitator reconciles the broadcast transaction instead of re-sending it); if
    /// that retry fails to produce a verdict the result is still `Pending`, never a failure.
    pub async fn settle(
        &self,
        payload: &Value,
        requirement: &Requirement,
    ) -> Result<SettleOutcome, FacilitatorError> {
        let body = request_body(payload, requirement);
        let first = self.settle_once(&body).await?;
        let SettleOutcome::Pending { transaction, .. } = &first else {
            return Ok(first);
        };
        info!(
            endpoint = "settle",
            transaction = transaction.as_deref().unwrap_or(""),
            "settlement pending; asking once more"
        );
        match self.settle_once(&body).await {
            Ok(second) => Ok(second),
            Err(e) => {
                warn!(endpoint = "settle", error = %e, "retry of a pending settlement failed; still pending");
                Ok(first)
            }
        }
    }

    async fn settle_once(&self, body: &Value) -> Result<SettleOutcome, FacilitatorError> {
        let reply = self
            .exchange(Method::POST, "settle", Some(body), self.settle_timeout)
            .await?;
        let outcome = classify_settle(&reply)?;
        match &outcome {
            SettleOutcome::Settled { response } => {
                let tx = response.get("transaction").and_then(Value::as_str);
                debug!(
                    endpoint = "settle",
                    transaction = tx.unwrap_or(""),
                    "settled"
                )
            }
            SettleOutcome::Pending { transaction, .. } => {
                debug!(
                    endpoint = "settle",
                    error_reason = "settlement_pending",
                    transaction = transaction.as_deref().unwrap_or(""),
                    "pending"
                )
            }
            SettleOutcome::Failed { reason, .. } => {
                debug!(
                    endpoint = "settle",
                    error_reason = reason.as_str(),
                    "settle failed"
                )
            }
        }
        Ok(outcome)
    }

    /// The facilitator's `/supported`, cached for the configured TTL. When a refresh fails
    /// and an older copy exists, the older copy is returned (and the error logged).
    pub async fn supported(&self) -> Result<Arc<Supported>, FacilitatorError> {
        if let Some(s) = self.fresh_supported() {
            return Ok(s);
        }
        let _one_at_a_time = self.refresh.lock().await;
        if let Some(s) = self.fresh_supported() {
            return Ok(s);
        }
        self.fetch_and_cache().await
    }

    /// Asks `/supported` again even when the cached answer is still fresh, unless it is less
    /// than 5 s old (the gates ask while an offer waits for something the facilitator has not
    /// named yet, such as Solana's feePayer; every paid route's gate may ask at once).
    pub async fn refresh_supported(&self) -> Result<Arc<Supported>, FacilitatorError> {
        let _one_at_a_time = self.refresh.lock().await;
        {
            let cache = lock(&self.cache);
            let recent = cache.fresh_until.is_some_and(|until| {
                until
                    .checked_duration_since(Instant::now())
                    .unwrap_or_default()
                    + FORCED_REFRESH_MIN_AGE
                    > self.supported_ttl
            });
            if let (true, Some(s)) = (recent, &cache.current) {
                return Ok(s.clone());
            }
        }
        self.fetch_and_cache().await
    }

    async fn fetch_and_cache(&self) -> Result<Arc<Supported>, FacilitatorError> {
        match self.fetch_supported().await {
            Ok(s) => {
                let s = Arc::new(s);
                let mut cache = lock(&self.cache);
                cache.current = Some(s.clone());
                cache.fresh_until = Some(Instant::now() + self.supported_ttl);
                self.supported_generation
                    .fetch_add(1, std::sync::atomic::Ordering::Release);
                Ok(s)
            }
            Err(e) => {
                let mut cache = lock(&self.cache);
                match cache.current.clone() {
                    Some(old) => {
                        warn!(endpoint = "supported", error = %e, "refresh failed; keeping the last good answer");
                        cache.fresh_until = Some(
                            Instant::now() + SUPPORTED_RETRY_AFTER_ERROR.min(self.supported_ttl),
                        );
                        Ok(old)
                    }
                    None => Err(e),
                }
            }
        }
    }

    /// The cached `/supported`, whatever its age, without asking (None before the first answer).
    pub fn cached_supported(&self) -> Option<Arc<Supported>> {
        lock(&self.cache).current.clone()
    }

    /// A health check: asks `/supported` now and caches a good answer (the generation moves
    /// only when the answer changed); an error is returned as is, the cached copy kept.
    pub async fn probe_supported(&self) -> Result<Arc<Supported>, FacilitatorError> {
        let _one_at_a_time = self.refresh.lock().await;
        let fresh = self.fetch_supported().await?;
        let mut cache = lock(&self.cache);
        let same = cache.current.as_deref() == Some(&fresh);
        let s = match (&cache.current, same) {
            (Some(old), true) => old.clone(),
            _ => Arc::new(fresh),
        };
        cache.current = Some(s.clone());
        cache.fresh_until = Some(Instant::now() + self.supported_ttl);
        if !same {
            self.supported_generation
                .fetch_add(1, std::sync::atomic::Ordering::Release);
        }
        Ok(s)
    }

    /// The Solana fee payer to put in `extra.feePayer` for `network`, from the cached
    /// `/supported` (call [`Self::supported`] first). Stable: once handed out, the same
    /// address is returned while the facilitator still lists it (as a kind's `feePayer` or
    /// among its signers for that network), because a facilitator with several signers may
    /// name a different one on each `/supported`, and a changed offer makes the client's
    /// paid retry fail to match.
    pub fn fee_payer(&self, network: &str) -> Option<String> {
        let supported = lock(&self.cache).current.clone()?;
        let offered = supported.fee_payers(network);
        let mut chosen = lock(&self.fee_payers);
        if let Some(prev) = chosen.get(network) {
            if offered.contains(prev) || supported.signers_for(network).contains(prev) {
                return Some(prev.clone());
            }
        }
        let pick = offered.into_iter().next();
        match &pick {
            Some(p) => {
                chosen.insert(network.to_string(), p.clone());
            }
            None => {
                chosen.remove(network);
            }
        }
        pick
    }

    /// Changes whenever a new `/supported` answer is cached (one atomic load).
    pub fn supported_generation(&self) -> u64 {
        self.supported_generation
            .load(std::sync::atomic::Ordering::Acquire)
    }

    fn fresh_supported(&self) -> Option<Arc<Supported>> {
        let cache = lock(&self.cache);
        match (cache.fresh_until, &cache.current) {
            (Some(until), Some(s)) if Instant::now() < until => Some(s.clone()),
            _ => None,
        }
    }

    async fn fetch_supported(&self) -> Result<Supported, FacilitatorError> {
        let reply = self
            .exchange(Method::GET, "supported", None, self.verify_timeout)
            .await?;
        if is_auth_status(reply.status) {
            return Err(FacilitatorError::Unauthorized(describe(&reply)));
        }
        if !reply.status.is_success() {
            return Err(FacilitatorError::BadResponse(describe(&reply)));
        }
        reply
            .json
            .as_ref()
            .and_then(Supported::from_json)
            .ok_or_else(|| {
                FacilitatorError::BadResponse(format!("no kinds array: {}", describe(&reply)))
            })
    }

    /// One HTTP exchange: auth header, timeout, bounded body read, JSON parse, logging.
    async fn exchange(
        &self,
        method: Method,
        endpoint: &'static str,
        body: Option<&Value>,
        timeout: Duration,
    ) -> Result<Reply, FacilitatorError> {
        let url = self.endpoint_url(endpoint);
        let body = body.map(|b| serde_json::to_vec(b).unwrap_or_default());
        // /settle moves money: always a fresh connection, never a stale pooled one.
        let settle = endpoint == "settle";
        let started = Instant::now();
        let deadline = started + timeout;
        let result = async {
            let mut attempt = 0;
            let mut resp = loop {
                let client = if settle || attempt > 0 {
                    &self.fresh
                } else {
                    &self.http
                };
                let remaining = deadline.saturating_duration_since(Instant::now());
                let mut req = client
                    .request(method.clone(), url.clone())
                    .timeout(remaining.max(Duration::from_millis(1)));
                if let Some(signer) = &self.signer {
                    let token = signer
                        .token(method.as_str(), &jwt_uri(&url))
                        .map_err(|e| FacilitatorError::Unauthorized(e.to_string()))?;
                    req = req.header(AUTHORIZATION, format!("Bearer {token}"));
                }
                if let Some(body) = &body {
                    req = req
                        .header(CONTENT_TYPE, "application/json")
                        .body(body.clone());
                }
                match req.send().await {
                    Ok(resp) => break resp,
                    Err(e) if attempt == 0 && resend_allowed(settle, &e) => {
                        warn!(endpoint, error = %error_chain(&e), "facilitator request failed before any answer; sending it once more on a fresh connection");
                        attempt += 1;
                    }
                    Err(e) => return Err(transport_error(e)),
                }
            };
            let status = resp.status();
            let headers = resp.headers().clone();
            let mut bytes = Vec::new();
            while let Some(chunk) = resp.chunk().await.map_err(transport_error)? {
                if bytes.len() + chunk.len() > MAX_RESPONSE_BYTES {
                    return Err(FacilitatorError::BadResponse(format!(
                        "HTTP {status}: body larger than {MAX_RESPONSE_BYTES} bytes"
                    )));
                }
                bytes.extend_from_slice(&chunk);
            }
            Ok((status, headers, bytes))
        }
        .await;
        let elapsed_ms = started.elapsed().as_millis() as u64;
        if let Some(observe) = self.observer.get() {
            observe(
                endpoint,
                started.elapsed(),
                result.as_ref().err().map(FacilitatorError::code),
            );
        }
        let (status, headers, bytes) = match result {
            Ok(r) => r,
            Err(e) => {
                warn!(endpoint, elapsed_ms, error = %e, code = e.code(), "facilitator exchange failed");
                return Err(e);
            }
        };
        let json: Option<Value> = serde_json::from_slice(&bytes).ok();
        let reason = json.as_ref().and_then(|j| {
            ["invalidReason", "errorReason", "errorType"]
                .iter()
                .find_map(|k| j.get(*k).and_then(Value::as_str))
                .map(str::to_string)
        });
        let extension_responses = extension_responses(&headers);
        debug!(
            endpoint,
            status = status.as_u16(),
            elapsed_ms,
            reason = reason.as_deref().unwrap_or(""),
            "facilitator exchange"
        );
        if let Some(ext) = &extension_responses {
            info!(endpoint, extension_responses = %ext, "facilitator extension responses");
        }
        Ok(Reply {
            status,
            snippet: snippet(&bytes),
            json,
            extension_responses,
        })
    }

    /// `/supported` asked now, with this client's credentials and limits, neither read from
    /// nor written to the cache: /status's check reports what the facilitator answers this
    /// moment, and must not move what the offers are rendered from.
    pub async fn supported_uncached(&self) -> Result<Supported, FacilitatorError> {
        self.fetch_supported().await
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic while holding these locks leaves plain data behind; keep serving.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn request_body(payload: &Value, requirement: &Requirement) -> Value {
    json!({
        "x402Version": 2,
        "paymentPayload": payload,
        "paymentRequirements": requirement.to_value(),
    })
}

/// `host[:port]/path` as CDP's `uris` claim wants it.
fn jwt_uri(url: &Url) -> String {
    let host = url.host_str().unwrap_or("");
    match url.port() {
        Some(port) => format!("{host}:{port}{}", url.path()),
        None => format!("{host}{}", url.path()),
    }
}

/// Whether a request that failed with `e` before any answer may be sent once more. A refused or
/// failed connect never delivered anything; for `/verify` and `/supported` (no money moves) any
/// failure before the response (a reset or closed reused connection) may be repeated too. A
/// `/settle` that may have been delivered is never resent.
fn resend_allowed(settle: bool, e: &reqwest::Error) -> bool {
    if e.is_timeout() {
        return false;
    }
    e.is_connect() || (!settle && (e.is_request() || e.is_body()))
}

fn transport_error(e: reqwest::Error) -> FacilitatorError {
    if e.is_timeout() {
        FacilitatorError::Timeout
    } else if e.is_connect() {
        FacilitatorError::Unreachable(error_chain(&e))
    } else {
        FacilitatorError::Interrupted(error_chain(&e))
    }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(inner) = source {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        source = inner.source();
    }
    s
}

fn extension_responses(headers: &HeaderMap) -> Option<Value> {
    let raw = headers.get("extension-responses")?.to_str().ok()?;
    match decode_lenient(raw) {
        Ok((v, _)) => Some(v),
        Err(e) => {
            warn!(error = %e, "undecodable EXTENSION-RESPONSES header");
            None
        }
    }
}

fn is_auth_status(status: StatusCode) -> bool {
    status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN
}

fn snippet(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut s: String = text.chars().take(300).collect();
    if text.chars().count() > 300 {
        s.push('…');
    }
    s
}

fn describe(reply: &Reply) -> String {
    format!("HTTP {}: {}", reply.status.as_u16(), reply.snippet)
}

fn str_field(v: &Value, key: &str) -> Option<String> {
    match v.get(key)? {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::String(_) | Value::Null => None,
        other => Some(other.to_string()),
    }
}

fn classify_verify(reply: &Reply) -> Result<VerifyOutcome, FacilitatorError> {
    if is_auth_status(reply.status) {
        return Err(FacilitatorError::Unauthorized(describe(reply)));
    }
    let Some(body) = reply.json.as_ref().filter(|j| j.is_object()) else {
        return Err(FacilitatorError::BadResponse(describe(reply)));
    };
    if let Some(is_valid) = body.get("isValid").and_then(Value::as_bool) {
        if is_valid && !reply.status.is_success() {
            // Contradictory answer: do not run paid work on it.
            return Err(FacilitatorError::BadResponse(format!(
                "isValid true with {}",
                describe(reply)
            )));
        }
        return Ok(VerifyOutcome {
            is_valid,
            invalid_reason: if is_valid {
                None
            } else {
                Some(str_field(body, "invalidReason").unwrap_or_else(|| "invalid_payload".into()))
            },
            invalid_message: str_field(body, "invalidMessage")
                .or_else(|| str_field(body, "invalidReasonDetails")),
            payer: str_field(body, "payer"),
            extension_responses: reply.extension_responses.clone(),
        });
    }
    if reply.status.is_client_error() {
        if let Some(error_type) = str_field(body, "errorType") {
            // CDP's schema rejection (e.g. a description over 500 characters).
            return Ok(VerifyOutcome {
                is_valid: false,
                invalid_reason: Some(error_type),
                invalid_message: str_field(body, "errorMessage"),
                payer: None,
                extension_responses: reply.extension_responses.clone(),
            });
        }
    }
    Err(FacilitatorError::BadResponse(format!(
        "no isValid in {}",
        describe(reply)
    )))
}

fn classify_settle(reply: &Reply) -> Result<SettleOutcome, FacilitatorError> {
    if is_auth_status(reply.status) {
        return Err(FacilitatorError::Unauthorized(describe(reply)));
    }
    let Some(body) = reply.json.as_ref().filter(|j| j.is_object()) else {
        return Err(FacilitatorError::BadResponse(describe(reply)));
    };
    if let Some(success) = body.get("success") {
        // Only the boolean true counts: "true" or 1 is a broken facilitator.
        if success == &Value::Bool(true) {
            return Ok(SettleOutcome::Settled {
                response: body.clone(),
            });
        }
        if !success.is_boolean() {
            warn!(success = %success, "settle answer has a non-boolean success; treating as failed");
        }
        let reason = str_field(body, "errorReason");
        let transaction = str_field(body, "transaction");
        // Pending is pending, with or without a hash: the facilitator may have broadcast.
        if reason.as_deref() == Some("settlement_pending") {
            return Ok(SettleOutcome::Pending {
                transaction,
                response: body.clone(),
            });
        }
        return Ok(SettleOutcome::Failed {
            reason: reason.unwrap_or_else(|| "unexpected_settle_error".into()),
            message: str_field(body, "errorMessage"),
            response: body.clone(),
        });
    }
    if reply.status.is_client_error() {
        if let Some(error_type) = str_field(body, "errorType") {
            return Ok(SettleOutcome::Failed {
                reason: error_type,
                message: str_field(body, "errorMessage"),
                response: body.clone(),
            });
        }
    }
    Err(FacilitatorError::BadResponse(format!(
        "no success field in {}",
        describe(reply)
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(status: u16, body: Value) -> Reply {
        Reply {
            status: StatusCode::from_u16(status).unwrap(),
            snippet: body.to_string(),
            json: Some(body),
            extension_responses: None,
        }
    }

    #[test]
    fn verify_classification() {
        let ok = classify_verify(&reply(200, json!({"isValid": true, "payer": "0xab"}))).unwrap();
        assert!(ok.is_valid);
        assert_eq!(ok.payer.as_deref(), Some("0xab"));
        assert_eq!(ok.invalid_reason, None);

        let rs = classify_verify(&reply(
            400,
            json!({"isValid": false, "invalidReason": "invalid_signature", "invalidReasonDetails": "bad v", "payer": ""}),
        ))
        .unwrap();
        assert_eq!(rs.invalid_reason.as_deref(), Some("invalid_signature"));
        assert_eq!(rs.invalid_message.as_deref(), Some("bad v"));
        assert_eq!(rs.payer, None);

        assert!(matches!(
            classify_verify(&reply(500, json!({"isValid": true}))),
            Err(FacilitatorError::BadResponse(_))
        ));
        assert!(matches!(
            classify_verify(&reply(500, json!({"errorType": "internal"}))),
            Err(FacilitatorError::BadResponse(_))
        ));
        assert!(matches!(
            classify_verify(&reply(401, json!({"isValid": false}))),
            Err(FacilitatorError::Unauthorized(_))
        ));
        assert!(matches!(
            classify_verify(&reply(200, json!([1]))),
            Err(FacilitatorError::BadResponse(_))
        ));
    }

    #[test]
    fn settle_classification() {
        assert!(matches!(
            classify_settle(&reply(
                200,
                json!({"success": "true", "transaction": "0x1"})
            ))
            .unwrap(),
            SettleOutcome::Failed { .. }
        ));
        assert!(matches!(
            classify_settle(&reply(200, json!({"success": false, "errorReason": "settlement_pending", "transaction": ""}))).unwrap(),
            SettleOutcome::Pending { transaction: None, .. }
        ), "pending is pending, even without a hash: the facilitator may have broadcast");
        assert!(matches!(
            classify_settle(&reply(200, json!({"success": false}))).unwrap(),
            SettleOutcome::Failed { ref reason, .. } if reason == "unexpected_settle_error"
        ));
        assert!(matches!(
            classify_settle(&reply(502, json!({"error": "bad gateway"}))),
            Err(FacilitatorError::BadResponse(_))
        ));
    }

    #[test]
    fn supported_helpers() {
        let s = Supported::from_json(&json!({
            "kinds": [
                {"x402Version": 2, "scheme": "exact", "network": "solana:abc", "extra": {"feePayer": "F1"}},
                {"x402Version": 2, "scheme": "exact", "network": "solana:abc", "extra": "nope"},
                {"x402Version": "2", "scheme": "exact", "network": "eip155:1"},
                {"x402Version": 1, "scheme": "exact", "network": "solana", "extra": {"feePayer": "OLD"}},
                7
            ],
            "extensions": ["bazaar", 3],
            "signers": {"solana:*": ["F1", "F2"], "eip155:*": ["0x1"], "bad": "x"}
        }))
        .unwrap();
        assert_eq!(s.kinds.len(), 2);
        assert_eq!(s.extensions, ["bazaar"]);
        assert!(s.supports(2, "exact", "solana:abc"));
        assert!(!s.supports(2, "exact", "eip155:1"));
        assert_eq!(s.fee_payers("solana:abc"), ["F1"]);
        assert_eq!(s.signers_for("solana:abc"), ["F1", "F2"]);
        assert_eq!(s.signers_for("eip155:8453"), ["0x1"]);
        assert!(s.signers_for("solanax:1").is_empty());
        assert!(Supported::from_json(&json!({"kinds": {}})).is_none());
        assert!(Supported::from_json(&json!({})).is_none());
    }

    #[test]
    fn urls_and_codes() {
        let c = FacilitatorClient::new(FacilitatorConfig::new(
            Url::parse("https://api.cdp.coinbase.com/platform/v2/x402").unwrap(),
        ))
        .unwrap();
        let v = c.endpoint_url("verify");
        assert_eq!(
            v.as_str(),
            "https://api.cdp.coinbase.com/platform/v2/x402/verify"
        );
        assert_eq!(jwt_uri(&v), "api.cdp.coinbase.com/platform/v2/x402/verify");
        let c2 = FacilitatorClient::new(FacilitatorConfig::new(
            Url::parse("http://127.0.0.1:8080/facilitator/?x=1").unwrap(),
        ))
        .unwrap();
        let s = c2.endpoint_url("settle");
        assert_eq!(s.as_str(), "http://127.0.0.1:8080/facilitator/settle");
        assert_eq!(jwt_uri(&s), "127.0.0.1:8080/facilitator/settle");
        assert!(matches!(
            FacilitatorClient::new(FacilitatorConfig::new(Url::parse("ftp://x/").unwrap())),
            Err(SetupError::BadUrl(_))
        ));
        let mut cfg = FacilitatorConfig::new(Url::parse("https://x/").unwrap());
        cfg.auth = FacilitatorAuth::Cdp {
            key_id: "k".into(),
            key_secret: "garbage".into(),
        };
        assert!(!format!("{:?}", cfg.auth).contains("garbage"));
        assert!(matches!(
            FacilitatorClient::new(cfg),
            Err(SetupError::Auth(_))
        ));

        let errs = [
            (
                FacilitatorError::Unreachable("x".into()),
                502,
                "facilitator_unreachable",
                false,
            ),
            (FacilitatorError::Timeout, 504, "facilitator_timeout", true),
            (
                FacilitatorError::Interrupted("x".into()),
                502,
                "facilitator_interrupted",
                true,
            ),
            (
                FacilitatorError::BadResponse("x".into()),
                502,
                "facilitator_bad_response",
                false,
            ),
            (
                FacilitatorError::Unauthorized("x".into()),
                502,
                "facilitator_unauthorized",
                false,
            ),
        ];
        for (e, status, code, unknown) in errs {
            assert_eq!(
                (e.status(), e.code(), e.outcome_unknown()),
                (status, code, unknown)
            );
        }
    }
}
