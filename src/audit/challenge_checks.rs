//! Reading a third party's answer to one unpaid request: is it an x402 challenge, which version,
//! where was it carried, what does it offer, and what is wrong with it (x402 v2 PaymentRequired and the Bazaar extension).
//!
//! Pure: the probe is made elsewhere; this turns (status, headers, body, URLs) into a structured
//! [`Analysis`] with a list of [`Check`]s, each with a stable id, a level, what was seen and how
//! to fix it. The checks were chosen from the mistakes real sellers make (decimal dollar amounts,
//! the Base Sepolia EIP-712 name on Base, v2 objects in the body only, a resource.url built from
//! an internal http:// address, descriptions over CDP's 500-character cap, testnets in production).

use http::HeaderMap;
use serde::Serialize;
use serde_json::{json, Map, Value};
use url::Url;

use super::known_networks;
use super::offer::check_entry;
use crate::net::Guard;
use crate::x402::codec::{decode_lenient_uncapped, CodecError};

/// Severity of a check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Pass,
    Warn,
    Fail,
}

/// One finding: `id` is stable (documented in docs/audit.md), `entry` is the accepts index it
/// is about, when it is about one.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub id: &'static str,
    pub level: Level,
    pub message: String,
    pub fix: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entry: Option<usize>,
}

/// Where the challenge was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChallengeSource {
    /// v2 in the PAYMENT-REQUIRED header (conformant).
    V2Header,
    /// v2 in the header and a v1 object in the body (legal, for old clients).
    Dual,
    /// v1 in the JSON body (legacy).
    V1Body,
    /// A v2 object in the body with no header: clients following the v2 spec cannot pay.
    V2BodyOnly,
    /// The header holds something that is not a v2 object (v1 in the header, …).
    OtherHeader,
    /// Nothing recognisable.
    None,
}

/// What the probe saw, as the analysis needs it.
pub struct ProbeView<'a> {
    /// The URL as asked (the caller's input).
    pub url: &'a Url,
    /// The URL that answered (after redirects).
    pub final_url: &'a Url,
    pub method: &'a str,
    pub status: u16,
    pub headers: &'a HeaderMap,
    pub body: &'a [u8],
    pub truncated: bool,
}

/// The bazaar (v2) or outputSchema (v1) discovery hints.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoveryHints {
    /// v2 `extensions.bazaar` present.
    pub bazaar: bool,
    /// `info.input.type` (http, mcp).
    pub input_type: Option<String>,
    /// `info.input.method`.
    pub method: Option<String>,
    /// The methods the schema allows for `input.method` (its `enum` or `const`).
    pub method_enum: Vec<String>,
    pub route_template: Option<String>,
    /// `info` valid against `schema`; None when there was nothing to validate.
    pub schema_valid: Option<bool>,
    pub schema_errors: Vec<String>,
    /// v1: some entry carries `outputSchema`.
    pub v1_output_schema: bool,
    /// v1: `outputSchema.input.discoverable` is true.
    pub v1_discoverable: bool,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Analysis {
    pub http_status: u16,
    /// A challenge a v2 (or, for v1, a v1) client can pay: decoded, with at least one offer.
    pub valid_challenge: bool,
    pub x402_version: Option<u64>,
    pub challenge_source: ChallengeSource,
    /// The challenge's `error` text.
    pub error_text: Option<String>,
    pub resource: Value,
    pub accepts: Vec<Value>,
    pub discovery: DiscoveryHints,
    pub checks: Vec<Check>,
    /// (network id, payTo) of every offer, in order, without duplicates.
    #[serde(skip)]
    pub pay_tos: Vec<(String, String)>,
    /// Networks offered, as written.
    #[serde(skip)]
    pub networks: Vec<String>,
}

impl Analysis {
    pub fn worst(&self) -> Level {
        self.checks
            .iter()
            .map(|c| c.level)
            .max()
            .unwrap_or(Level::Pass)
    }
    pub fn count(&self, level: Level) -> usize {
        self.checks.iter().filter(|c| c.level == level).count()
    }
}

/// How much of a challenge is audited: a 402 listing 100,000 offers made a 101 MB report and
/// 1.2 GB of RSS (issue 21). The first `max_offers` offers are audited one by one and the rest
/// counted in one `accepts_bounded` finding; past `max_findings` findings, one
/// `findings_bounded` finding (at the worst level of those it stands for) replaces the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_offers: usize,
    pub max_findings: usize,
}

pub const DEFAULT_MAX_OFFERS: usize = 20;
pub const DEFAULT_MAX_FINDINGS: usize = 200;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_offers: DEFAULT_MAX_OFFERS,
            max_findings: DEFAULT_MAX_FINDINGS,
        }
    }
}

/// Keeps at most `max` findings (≥ 1): the first `max - 1` and one that counts the rest, at
/// the worst level among them, so a cut never hides a failure's level.
pub fn bound_findings(checks: &mut Vec<Check>, max: usize) {
    let max = max.max(1);
    if checks.len() <= max {
        return;
    }
    let rest = checks.split_off(max - 1);
    let level = rest.iter().map(|c| c.level).max().unwrap_or(Level::Pass);
    let fails = rest.iter().filter(|c| c.level == Level::Fail).count();
    let warns = rest.iter().filter(|c| c.level == Level::Warn).count();
    checks.push(Check {
        id: "findings_bounded",
        level,
        message: format!(
            "{} more findings not listed ({fails} fail, {warns} warn); the report keeps the first {}",
            rest.len(),
            max - 1
        ),
        fix: "fix the findings listed, then audit again".into(),
        entry: None,
    });
}

/// Schemes the x402 specs and SDKs define.
pub(super) const KNOWN_SCHEMES: &[&str] = &["exact", "upto", "batch-settlement", "deferred"];
/// CDP's cap on resource.description (UTF-16 units, it is JavaScript).
pub const MAX_DESCRIPTION: usize = 500;
/// 6-decimals tokens: atomic units per dollar.
pub(super) const USDC_UNIT: u128 = 1_000_000;

pub(super) struct Out {
    pub(super) checks: Vec<Check>,
}

impl Out {
    fn add(
        &mut self,
        id: &'static str,
        level: Level,
        message: impl Into<String>,
        fix: impl Into<String>,
    ) {
        self.push(id, level, message.into(), fix.into(), None);
    }
    /// A finding about `accepts[i]`: its message says which offer.
    pub(super) fn entry(
        &mut self,
        i: usize,
        id: &'static str,
        level: Level,
        message: impl Into<String>,
        fix: impl Into<String>,
    ) {
        let message = format!("accepts[{i}]: {}", message.into());
        self.push(id, level, message, fix.into(), Some(i));
    }
    fn push(
        &mut self,
        id: &'static str,
        level: Level,
        message: String,
        fix: String,
        entry: Option<usize>,
    ) {
        self.checks.push(Check {
            id,
            level,
            message,
            fix,
            entry,
        });
    }
    fn pass(&mut self, id: &'static str, message: impl Into<String>) {
        self.add(id, Level::Pass, message, "");
    }
}

/// Decodes a PAYMENT-REQUIRED value with the codec's lenient decoder (at any length): URL-safe or unpadded
/// alphabets are accepted but reported (`lenient` = true), since strict clients reject them.
/// The errors keep the report's wording (an auditor's sentence, not the codec's).
pub fn decode_header(value: &str) -> Result<(Value, bool), String> {
    match decode_lenient_uncapped(value) {
        Ok((j @ Value::Object(_), variant)) => Ok((j, !variant.is_conformant())),
        Ok(_) | Err(CodecError::NotObject) => {
            Err("the decoded header is JSON but not an object".into())
        }
        Err(CodecError::Json(e)) => Err(format!("the decoded header is not JSON: {e}")),
        // An empty value is empty base64: no bytes, which are not JSON.
        Err(CodecError::Empty) => Err(format!(
            "the decoded header is not JSON: {}",
            serde_json::from_slice::<Value>(&[]).unwrap_err()
        )),
        // Some sellers put raw JSON in the header.
        Err(_) => match serde_json::from_str::<Value>(value.trim()) {
            Ok(j) => Err(format!(
                "the header holds raw JSON, not base64 (x402Version {})",
                j.get("x402Version").cloned().unwrap_or(Value::Null)
            )),
            Err(_) => Err("the header is not base64".into()),
        },
    }
}

fn version_of(v: &Value) -> Option<u64> {
    v.get("x402Version").and_then(Value::as_u64)
}

pub(super) fn str_of<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    v.get(k).and_then(Value::as_str)
}

/// Whether a host looks like a production deployment (not local, not a staging/dev name).
pub fn production_looking(host: &str) -> bool {
    let h = host.trim_end_matches('.').to_ascii_lowercase();
    if h.parse::<std::net::IpAddr>().is_ok() || h.starts_with('[') {
        return false;
    }
    if h == "localhost" || h.ends_with(".localhost") {
        return false;
    }
    for tld in [
        ".local",
        ".test",
        ".example",
        ".invalid",
        ".internal",
        ".lan",
    ] {
        if h.ends_with(tld) {
            return false;
        }
    }
    // The last label is the TLD (`.dev` is a real one).
    let labels: Vec<&str> = h.split('.').collect();
    let labels = &labels[..labels.len().saturating_sub(1)];
    let words = [
        "staging", "stage", "dev", "test", "testnet", "sandbox", "sepolia", "devnet", "preview",
        "qa", "local",
    ];
    !labels.iter().any(|l| {
        words
            .iter()
            .any(|w| l == w || l.starts_with(&format!("{w}-")) || l.ends_with(&format!("-{w}")))
    })
}

/// Formats an atomic integer amount as dollars (6 decimals), trimming zeros: 10000 → "0.01".
pub fn atomic_to_usd(atomic: u128) -> String {
    let whole = atomic / USDC_UNIT;
    let frac = atomic % USDC_UNIT;
    if frac == 0 {
        whole.to_string()
    } else {
        let f = format!("{frac:06}");
        format!("{whole}.{}", f.trim_end_matches('0'))
    }
}

/// Analyses one probe answer under the default [`Limits`]. `guard` judges whether resource.url
/// is reachable from the outside the way the probe itself was (operator allowlist included).
pub fn analyse(p: &ProbeView<'_>, guard: &Guard) -> Analysis {
    analyse_with(p, guard, &Limits::default())
}

/// [`analyse`] auditing at most `limits.max_offers` offers and keeping at most
/// `limits.max_findings` findings.
pub fn analyse_with(p: &ProbeView<'_>, guard: &Guard, limits: &Limits) -> Analysis {
    let mut out = Out { checks: Vec::new() };

    status_402(p.status, &mut out);

    let Located {
        header,
        header_obj,
        header_version,
        source,
        obj,
    } = locate_challenge(p, &mut out);

    let version = obj.as_ref().and_then(version_of);
    if obj.is_some() {
        x402_version(version, &mut out);
    }
    v2_in_header(source, &header_obj, header_version, &mut out);

    let audited = match &obj {
        Some(o) => audit_challenge(o, version == Some(2), p, guard, limits, &mut out),
        None => Audited::default(),
    };

    if p.status == 402 {
        cache_control(p.headers, &mut out);
        if header.is_some() {
            cors_expose(p.headers, &mut out);
        }
    }

    bound_findings(&mut out.checks, limits.max_findings);
    let valid_challenge = audited.valid
        && matches!(
            source,
            ChallengeSource::V2Header | ChallengeSource::Dual | ChallengeSource::V1Body
        )
        && p.status == 402;
    Analysis {
        http_status: p.status,
        valid_challenge,
        x402_version: version,
        challenge_source: source,
        error_text: obj
            .as_ref()
            .and_then(|o| str_of(o, "error"))
            .map(str::to_string),
        resource: audited.resource,
        accepts: audited.offers,
        discovery: audited.discovery,
        checks: out.checks,
        pay_tos: audited.pay_tos,
        networks: audited.networks,
    }
}

/// What auditing a challenge object gave besides its findings (all empty without one).
#[derive(Default)]
struct Audited {
    /// The resource info as the seller wrote it (v1: gathered from the first offer).
    resource: Value,
    /// Each audited offer's report.
    offers: Vec<Value>,
    /// Some offer is payable as written.
    valid: bool,
    /// (network id, payTo) of every audited offer, in order, without duplicates.
    pay_tos: Vec<(String, String)>,
    /// Networks offered, as written, first seen first.
    networks: Vec<String>,
    discovery: DiscoveryHints,
}

impl Audited {
    /// Notes an offer's network and payTo.
    fn note_offer(&mut self, e: &Value) {
        let (Some(n), Some(pt)) = (str_of(e, "network"), str_of(e, "payTo")) else {
            return;
        };
        let pair = (n.to_string(), pt.to_string());
        if !self.pay_tos.contains(&pair) {
            self.pay_tos.push(pair);
        }
        if !self.networks.iter().any(|x| x == n) {
            self.networks.push(n.to_string());
        }
    }
}

/// Audits a decoded challenge object: its list of offers, its resource info, each offer (the
/// first `max_offers`), the networks offered and the discovery metadata.
fn audit_challenge(
    o: &Value,
    v2: bool,
    p: &ProbeView<'_>,
    guard: &Guard,
    limits: &Limits,
    out: &mut Out,
) -> Audited {
    let accepts = o
        .get("accepts")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    accepts_count(accepts.len(), limits.max_offers, out);

    let info = ResourceFields::of(o, &accepts, v2);
    check_resource(out, p, guard, info.url.as_deref(), v2);
    description_length(info.description.as_deref(), out);
    mime_type(info.mime.as_deref(), out);
    if v2 {
        check_service_metadata(out, &info.resource);
    }

    let mut a = Audited {
        resource: info.resource,
        ..Audited::default()
    };
    for (i, e) in accepts.iter().take(limits.max_offers).enumerate() {
        let (entry_json, ok) = check_entry(out, i, e, v2);
        a.valid |= ok;
        a.note_offer(e);
        if !v2 {
            v1_output_schema(e, &mut a.discovery);
        }
        a.offers.push(entry_json);
    }

    testnet(p.url.host_str().unwrap_or(""), &a.networks, out);
    discovery_metadata(o, v2, p.method, &mut a.discovery, out);
    a
}

/// `accepts_nonempty`, and `accepts_bounded` when more offers are listed than audited.
fn accepts_count(n: usize, max_offers: usize, out: &mut Out) {
    if n == 0 {
        out.add(
            "accepts_nonempty",
            Level::Fail,
            "`accepts` is missing or empty: there is nothing to pay",
            "list at least one payment option (scheme exact, network, amount, asset, payTo)",
        );
    } else {
        out.pass("accepts_nonempty", format!("{n} payment option(s) offered"));
    }
    if n > max_offers {
        out.add(
            "accepts_bounded",
            Level::Warn,
            format!("the 402 lists {n} offers; the first {max_offers} were audited"),
            "offer a few payment options (one per network and asset): clients and facilitators read every entry",
        );
    }
}

/// The resource info of a challenge: v2 has it at the top level, v1 in each offer (the first
/// one speaks for all).
struct ResourceFields {
    /// As the report echoes it.
    resource: Value,
    url: Option<String>,
    description: Option<String>,
    mime: Option<String>,
}

impl ResourceFields {
    fn of(o: &Value, accepts: &[Value], v2: bool) -> ResourceFields {
        let field = |v: &Value, k: &str| str_of(v, k).map(str::to_string);
        if v2 {
            let resource = o.get("resource").cloned().unwrap_or(Value::Null);
            return ResourceFields {
                url: field(&resource, "url"),
                description: field(&resource, "description"),
                mime: field(&resource, "mimeType"),
                resource,
            };
        }
        let first = accepts.first().cloned().unwrap_or(Value::Null);
        let (url, description, mime) = (
            field(&first, "resource"),
            field(&first, "description"),
            field(&first, "mimeType"),
        );
        ResourceFields {
            resource: json!({"url": url, "description": description, "mimeType": mime}),
            url,
            description,
            mime,
        }
    }
}

/// v1 discovery hints of one offer: its `outputSchema`, when it has one (the first offer
/// with an input method names the method and input type).
fn v1_output_schema(e: &Value, d: &mut DiscoveryHints) {
    let Some(os) = e.get("outputSchema").filter(|v| v.is_object()) else {
        return;
    };
    d.v1_output_schema = true;
    if os.pointer("/input/discoverable") == Some(&Value::Bool(true)) {
        d.v1_discoverable = true;
    }
    if d.method.is_none() {
        d.method = os
            .pointer("/input/method")
            .and_then(Value::as_str)
            .map(str::to_string);
        d.input_type = os
            .pointer("/input/type")
            .and_then(Value::as_str)
            .map(str::to_string);
    }
}

/// `bazaar_present` and, for v2, the bazaar extension's checks: v1 discovery metadata is no
/// longer catalogued.
fn discovery_metadata(
    o: &Value,
    v2: bool,
    probe_method: &str,
    d: &mut DiscoveryHints,
    out: &mut Out,
) {
    if v2 {
        check_bazaar(out, o, probe_method, d);
    } else if d.v1_discoverable {
        out.add("bazaar_present", Level::Warn, "v1 outputSchema with discoverable: true — the CDP Bazaar now catalogues v2 payments with extensions.bazaar", "upgrade to v2 and declare the bazaar extension (declareDiscoveryExtension)");
    } else {
        out.add(
            "bazaar_present",
            Level::Warn,
            "no discovery metadata (v1, no outputSchema.input.discoverable)",
            "upgrade to v2 and declare the bazaar extension",
        );
    }
}

/// `description_length`: CDP refuses a description over 500 UTF-16 units; an empty one shows
/// nothing in the Bazaar.
fn description_length(description: Option<&str>, out: &mut Out) {
    match description {
        Some(d) if d.encode_utf16().count() > MAX_DESCRIPTION => out.add("description_length", Level::Fail, format!("the description is {} characters; CDP rejects more than {MAX_DESCRIPTION} (surfacing as a confusing invalid_request)", d.encode_utf16().count()), format!("shorten the description to at most {MAX_DESCRIPTION} characters")),
        Some(d) if d.trim().is_empty() => out.add("description_length", Level::Warn, "the description is empty: the Bazaar shows nothing about the route", "describe what the route returns in one or two sentences"),
        Some(d) => out.pass("description_length", format!("description of {} characters", d.encode_utf16().count())),
        None => out.add("description_length", Level::Warn, "no description", "add resource.description (≤ 500 characters)"),
    }
}

/// `mime_type`: buyers need to know what the paid answer is.
fn mime_type(mime: Option<&str>, out: &mut Out) {
    match mime {
        Some(m) if !m.trim().is_empty() => out.pass("mime_type", format!("mimeType {m}")),
        _ => out.add(
            "mime_type",
            Level::Warn,
            "no mimeType: buyers cannot tell what the paid answer is",
            "set resource.mimeType, e.g. application/json",
        ),
    }
}

/// `testnet`: test tokens offered on a host that looks like production are worthless to the
/// seller.
fn testnet(host: &str, networks_seen: &[String], out: &mut Out) {
    let testnets: Vec<&String> = networks_seen
        .iter()
        .filter(|n| known_networks::is_testnet(n))
        .collect();
    if !testnets.is_empty() {
        if production_looking(host) {
            out.add("testnet", Level::Warn, format!("testnet network(s) {} offered on {host}, which looks like a production host: buyers pay with worthless test tokens", join(&testnets)), "offer mainnet (eip155:8453 with Base USDC) in production; keep testnets on staging hosts");
        } else {
            out.pass(
                "testnet",
                format!(
                    "testnet network(s) {} on a non-production host",
                    join(&testnets)
                ),
            );
        }
    } else if !networks_seen.is_empty() {
        out.pass("testnet", "only mainnet networks are offered");
    }
}

/// `status_402`: an unpaid request must be answered 402; each other status says what stood in
/// front of the paywall.
fn status_402(status: u16, out: &mut Out) {
    match status {
        402 => out.pass("status_402", "the unpaid request was answered 402 Payment Required"),
        200..=299 => out.add("status_402", Level::Fail, format!("the unpaid request was answered {} — the route is not paywalled (or has a free tier)", status), "answer every request without a valid PAYMENT-SIGNATURE with 402 and the challenge"),
        400 | 422 => out.add("status_402", Level::Fail, format!("the unpaid request was answered {}: input validation runs before the paywall, so agents and Bazaar probes without parameters never see the challenge", status), "answer 402 before validating the input (validate after the payment header is present)"),
        412 => out.add("status_402", Level::Warn, "412: the Permit2 allowance flow answered instead of a plain 402", "answer a request without payment with 402"),
        401 | 403 => out.add("status_402", Level::Fail, format!("the unpaid request was answered {}: an API key or auth layer sits in front of the paywall", status), "let unauthenticated requests reach the x402 middleware"),
        404 | 405 => out.add("status_402", Level::Fail, format!("the unpaid request was answered {}: wrong path or method", status), "check the URL and the method (x402-check sends exactly the method you ask for)"),
        s if s >= 500 => out.add("status_402", Level::Fail, format!("the server failed with {s} before answering a challenge"), "a common cause is the middleware failing its start-up /supported call to the facilitator; check the server logs"),
        s => out.add("status_402", Level::Fail, format!("the unpaid request was answered {s}, not 402"), "answer 402 with a PAYMENT-REQUIRED header"),
    }
}

/// Where the challenge is, as the report's `challenge_source` says, with the
/// `challenge_decodable` and `challenge_present` findings.
struct Located {
    /// The PAYMENT-REQUIRED value, as text.
    header: Option<String>,
    header_obj: Option<Value>,
    header_version: Option<u64>,
    source: ChallengeSource,
    /// The challenge object audited (the header's, else the body's).
    obj: Option<Value>,
}

fn locate_challenge(p: &ProbeView<'_>, out: &mut Out) -> Located {
    let header = p
        .headers
        .get("payment-required")
        .map(|v| String::from_utf8_lossy(v.as_bytes()).to_string());
    let body_json: Option<Value> = serde_json::from_slice::<Value>(p.body)
        .ok()
        .filter(|v| v.is_object());
    let header_obj = header
        .as_deref()
        .and_then(|h| decode_payment_required(h, out));
    let header_version = header_obj.as_ref().and_then(version_of);
    let (source, obj) = choose_challenge(&header_obj, &body_json);
    challenge_present(source, header.is_some(), p.truncated, out);
    if header.is_none()
        && body_json.is_none()
        && !p.body.is_empty()
        && source == ChallengeSource::None
        && p.status == 402
    {
        out.add(
            "challenge_decodable",
            Level::Fail,
            "the 402 body is not JSON",
            "send the challenge in the PAYMENT-REQUIRED header",
        );
    }
    Located {
        header,
        header_obj,
        header_version,
        source,
        obj,
    }
}

/// Decodes the PAYMENT-REQUIRED value, with its `challenge_decodable` finding.
fn decode_payment_required(h: &str, out: &mut Out) -> Option<Value> {
    match decode_header(h) {
        Ok((v, lenient)) => {
            if lenient {
                out.add(
                    "challenge_decodable",
                    Level::Warn,
                    "PAYMENT-REQUIRED decodes only with a URL-safe or unpadded base64 alphabet",
                    "encode the header with standard base64 (RFC 4648 §4, with padding)",
                );
            } else {
                out.pass(
                    "challenge_decodable",
                    "PAYMENT-REQUIRED is standard base64 of a JSON object",
                );
            }
            Some(v)
        }
        Err(e) => {
            out.add(
                "challenge_decodable",
                Level::Fail,
                format!("PAYMENT-REQUIRED could not be decoded: {e}"),
                "set PAYMENT-REQUIRED to standard base64 of the PaymentRequired JSON",
            );
            None
        }
    }
}

/// Which object is the challenge, and where it was: the header's whenever there is one, else
/// the body's.
fn choose_challenge(
    header_obj: &Option<Value>,
    body_json: &Option<Value>,
) -> (ChallengeSource, Option<Value>) {
    let header_version = header_obj.as_ref().and_then(version_of);
    let body_version = body_json.as_ref().and_then(version_of);
    match (header_version, body_version) {
        (Some(2), Some(1)) => (ChallengeSource::Dual, header_obj.clone()),
        (Some(2), _) => (ChallengeSource::V2Header, header_obj.clone()),
        (Some(_), _) => (ChallengeSource::OtherHeader, header_obj.clone()),
        (None, _) if header_obj.is_some() => (ChallengeSource::OtherHeader, header_obj.clone()),
        (None, Some(2)) => (ChallengeSource::V2BodyOnly, body_json.clone()),
        (None, Some(1)) => (ChallengeSource::V1Body, body_json.clone()),
        (None, Some(_)) => (ChallengeSource::OtherHeader, body_json.clone()),
        (None, None) => (ChallengeSource::None, None),
    }
}

/// `challenge_present`: where the challenge was found; a failure when there is none at all
/// (a header that did not decode has its own `challenge_decodable` failure).
fn challenge_present(source: ChallengeSource, has_header: bool, truncated: bool, out: &mut Out) {
    match source {
        ChallengeSource::None => {
            if !has_header {
                let extra = if truncated {
                    " (the body was cut at the size cap)"
                } else {
                    ""
                };
                out.add("challenge_present", Level::Fail, format!("no PAYMENT-REQUIRED header and no x402 JSON in the body{extra}"), "send the challenge in the PAYMENT-REQUIRED header (base64 JSON, x402Version 2)");
            }
        }
        _ => out.pass(
            "challenge_present",
            match source {
                ChallengeSource::V2Header => "challenge found in the PAYMENT-REQUIRED header",
                ChallengeSource::Dual => "v2 challenge in the header and a v1 copy in the body",
                ChallengeSource::V1Body => "v1 challenge found in the body",
                ChallengeSource::V2BodyOnly => "a v2 challenge found in the body only",
                _ => "a challenge-like object was found",
            },
        ),
    }
}

/// `x402_version`: 2 is current, 1 legacy, anything else unknown.
fn x402_version(version: Option<u64>, out: &mut Out) {
    match version {
        Some(2) => out.pass("x402_version", "x402Version is 2"),
        Some(1) => out.add("x402_version", Level::Warn, "x402Version 1 (legacy): v2 clients and the Bazaar's v2 extensions do not apply", "upgrade to x402 v2 (@x402/* 2.x or an equivalent): challenge in PAYMENT-REQUIRED, CAIP-2 networks, `amount`"),
        Some(v) => out.add("x402_version", Level::Fail, format!("x402Version {v} is not a known version"), "use x402Version 2"),
        None => out.add("x402_version", Level::Fail, "the challenge has no integer x402Version", "add \"x402Version\": 2"),
    }
}

/// `v2_in_header`: v2 clients read the challenge from PAYMENT-REQUIRED only.
fn v2_in_header(
    source: ChallengeSource,
    header_obj: &Option<Value>,
    header_version: Option<u64>,
    out: &mut Out,
) {
    match source {
        ChallengeSource::V2Header | ChallengeSource::Dual => out.pass("v2_in_header", "the v2 challenge is carried in the PAYMENT-REQUIRED header"),
        ChallengeSource::V2BodyOnly => out.add("v2_in_header", Level::Fail, "the v2 challenge is only in the body; v2 clients read the PAYMENT-REQUIRED header and cannot pay", "send the same object base64-encoded in the PAYMENT-REQUIRED header (a copy in the body is fine)"),
        ChallengeSource::OtherHeader if header_obj.is_some() => out.add("v2_in_header", Level::Fail, format!("PAYMENT-REQUIRED holds x402Version {}, not a v2 challenge", header_version.map(|v| v.to_string()).unwrap_or_else(|| "(none)".into())), "put the v2 PaymentRequired object in PAYMENT-REQUIRED; v1 challenges go in the body"),
        _ => {}
    }
}

/// `cache_control`: a cached 402 would be served to buyers who already paid.
fn cache_control(headers: &HeaderMap, out: &mut Out) {
    let cc = headers
        .get_all("cache-control")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect::<Vec<_>>()
        .join(", ")
        .to_ascii_lowercase();
    if cc.contains("no-store") {
        out.pass("cache_control", "the 402 carries Cache-Control: no-store");
    } else {
        out.add(
            "cache_control",
            Level::Warn,
            if cc.is_empty() {
                "the 402 has no Cache-Control header: a CDN may cache the challenge".to_string()
            } else {
                format!("the 402 has Cache-Control: {cc}, without no-store")
            },
            "add Cache-Control: no-store to 402 answers (recent @x402/core does)",
        );
    }
}

/// `cors_expose`: a browser client can read PAYMENT-REQUIRED only when it is exposed.
fn cors_expose(headers: &HeaderMap, out: &mut Out) {
    let expose = headers
        .get_all("access-control-expose-headers")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect::<Vec<_>>()
        .join(",")
        .to_ascii_lowercase();
    if expose
        .split(',')
        .any(|h| h.trim() == "payment-required" || h.trim() == "*")
    {
        out.pass(
            "cors_expose",
            "PAYMENT-REQUIRED is exposed to browser clients",
        );
    } else {
        out.add("cors_expose", Level::Warn, "Access-Control-Expose-Headers does not list PAYMENT-REQUIRED: buyers paying from a browser cannot read the challenge", "add Access-Control-Expose-Headers: PAYMENT-REQUIRED, PAYMENT-RESPONSE on the 402 itself");
    }
}

fn join(v: &[&String]) -> String {
    v.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
}

/// `resource_url`, `https` and `resource_url_public`: the resource URL the seller declares
/// (v2 `resource.url`, v1 `accepts[].resource`) is a public https URL naming the probed route.
fn check_resource(
    out: &mut Out,
    p: &ProbeView<'_>,
    guard: &Guard,
    res_url: Option<&str>,
    v2: bool,
) {
    let field = if v2 {
        "resource.url"
    } else {
        "accepts[].resource"
    };
    let Some(raw) = res_url.filter(|s| !s.is_empty()) else {
        missing_resource_url(field, p, out);
        return;
    };
    let Ok(u) = Url::parse(raw) else {
        out.add(
            "resource_url",
            Level::Fail,
            format!("{field} `{raw}` is not an absolute URL"),
            format!("set {field} to the absolute https URL of this route"),
        );
        out.add(
            "https",
            Level::Fail,
            format!("{field} is not a URL"),
            "use an https URL",
        );
        return;
    };
    resource_https(field, &u, p, out);
    if guard.parse_target(u.as_str()).is_err() {
        out.add(
            "resource_url_public",
            Level::Fail,
            format!(
                "{field} host `{}` is local or private: buyers and the Bazaar cannot reach it",
                u.host_str().unwrap_or("")
            ),
            "build resource.url from your public origin, not from the internal listen address",
        );
    }
    names_probed_route(field, &u, p, out);
}

/// No resource URL: `resource_url` fails and `https` is judged on the probed URL instead.
fn missing_resource_url(field: &str, p: &ProbeView<'_>, out: &mut Out) {
    out.add(
        "resource_url",
        Level::Fail,
        format!("{field} is missing"),
        format!("set {field} to the absolute https URL of this route"),
    );
    if p.url.scheme() == "https" {
        out.pass("https", "the endpoint was probed over https");
    } else {
        out.add(
            "https",
            Level::Fail,
            "the endpoint is plain http and declares no canonical URL",
            "serve the paid route over https (CDP's validator and the Bazaar require it)",
        );
    }
}

/// `https` is judged on the canonical URL buyers and the Bazaar will use, not on how this
/// probe reached the server (an operator may probe its own origin over plain http).
fn resource_https(field: &str, u: &Url, p: &ProbeView<'_>, out: &mut Out) {
    if u.scheme() == "https" {
        if p.url.scheme() == "https" {
            out.pass("https", format!("{field} and the probed URL are https"));
        } else {
            out.pass(
                "https",
                format!("{field} is https (this probe used plain http to reach the server)"),
            );
        }
    } else {
        out.add("https", Level::Fail, format!("{field} is {}://…: often built from the internal scheme behind a TLS-terminating proxy", u.scheme()), "build resource.url from your public https origin (trust X-Forwarded-Proto or configure it)");
    }
}

/// `resource_url`: the declared URL has the path of the probed (or final) URL, on its host.
fn names_probed_route(field: &str, u: &Url, p: &ProbeView<'_>, out: &mut Out) {
    let same_path = |a: &Url| a.path().trim_end_matches('/') == u.path().trim_end_matches('/');
    let same_host = |a: &Url| {
        a.host_str()
            .map(|h| h.eq_ignore_ascii_case(u.host_str().unwrap_or("")))
            .unwrap_or(false)
    };
    let matched = [p.url, p.final_url].into_iter().find(|a| same_path(a));
    match matched {
        Some(a) if same_host(a) => out.pass("resource_url", format!("{field} {u} names the probed route")),
        Some(_) => out.add("resource_url", Level::Warn, format!("{field} {u} has the probed path on another host (probed {})", p.url.host_str().unwrap_or("")), "fine if that is your canonical origin; otherwise build resource.url from the host buyers call"),
        None => out.add("resource_url", Level::Fail, format!("{field} {u} does not name the probed route (path {})", p.final_url.path()), "set resource.url to this route's own URL: the Bazaar lists and buyers pay for exactly that URL"),
    }
}

fn check_service_metadata(out: &mut Out, resource: &Value) {
    let mut bad = Vec::new();
    if let Some(s) = resource.get("serviceName") {
        match s.as_str() {
            Some(n) if n.len() <= 32 && n.chars().all(|c| (' '..='~').contains(&c)) => {}
            _ => bad.push("serviceName (printable ASCII, ≤ 32 characters)"),
        }
    }
    if let Some(t) = resource.get("tags") {
        let ok = t.as_array().is_some_and(|a| {
            a.len() <= 5
                && a.iter().all(|x| {
                    x.as_str().is_some_and(|s| {
                        s.len() <= 32 && s.chars().all(|c| (' '..='~').contains(&c))
                    })
                })
        });
        if !ok {
            bad.push("tags (≤ 5, printable ASCII, ≤ 32 characters each)");
        }
    }
    if let Some(i) = resource.get("iconUrl") {
        let ok = i
            .as_str()
            .and_then(|s| Url::parse(s).ok())
            .is_some_and(|u| {
                matches!(u.scheme(), "http" | "https")
                    && u.username().is_empty()
                    && matches!(u.host(), Some(url::Host::Domain(d)) if d != "localhost")
                    && u.as_str().len() <= 2048
            });
        if !ok {
            bad.push("iconUrl (absolute http(s), no IP, no localhost, ≤ 2048 characters)");
        }
    }
    if !bad.is_empty() {
        out.add(
            "service_metadata",
            Level::Warn,
            format!(
                "invalid {}: facilitators silently drop such values",
                bad.join(", ")
            ),
            "fix the values or leave them out",
        );
    }
}

/// The methods a bazaar schema allows for `input.method` (enum or const), upper-cased.
fn schema_methods(schema: &Value) -> Vec<String> {
    let m = schema.pointer("/properties/input/properties/method");
    let mut out = Vec::new();
    if let Some(m) = m {
        if let Some(a) = m.get("enum").and_then(Value::as_array) {
            out.extend(
                a.iter()
                    .filter_map(Value::as_str)
                    .map(|s| s.to_ascii_uppercase()),
            );
        }
        if let Some(c) = m.get("const").and_then(Value::as_str) {
            out.push(c.to_ascii_uppercase());
        }
    }
    out
}

/// Validates `instance` against `schema` (JSON Schema, draft from `$schema`, 2020-12 default).
/// Remote references are not fetched: a schema that needs them is reported as not compiling.
pub fn validate_schema(schema: &Value, instance: &Value) -> Result<(), Vec<String>> {
    let mut schemas = boon::Schemas::new();
    let mut compiler = boon::Compiler::new();
    compiler.set_default_draft(boon::Draft::V2020_12);
    if let Err(e) = compiler.add_resource("urn:x402-check:bazaar-schema", schema.clone()) {
        return Err(vec![format!("the schema could not be loaded: {e}")]);
    }
    let idx = match compiler.compile("urn:x402-check:bazaar-schema", &mut schemas) {
        Ok(i) => i,
        Err(e) => return Err(vec![format!("the schema does not compile: {e}")]),
    };
    match schemas.validate(instance, idx) {
        Ok(()) => Ok(()),
        Err(e) => {
            let mut msgs = Vec::new();
            collect_errors(&e, &mut msgs);
            if msgs.is_empty() {
                msgs.push(e.to_string());
            }
            msgs.truncate(10);
            Err(msgs)
        }
    }
}

fn collect_errors(e: &boon::ValidationError<'_, '_>, out: &mut Vec<String>) {
    if e.causes.is_empty() {
        out.push(format!("at `{}`: {}", e.instance_location, e.kind));
    }
    for c in &e.causes {
        collect_errors(c, out);
    }
}

/// The v2 bazaar extension as its checks read it.
struct Extension<'a> {
    info: Value,
    schema: Value,
    /// The method of the request that got the challenge.
    probe_method: &'a str,
}

/// One check of the bazaar extension: its findings go to `out`; it may fill in `d`.
type BazaarCheck = fn(&Extension<'_>, &mut DiscoveryHints, &mut Out);

/// The checks of a declared bazaar extension, in the order the report lists them.
const BAZAAR_CHECKS: &[BazaarCheck] = &[
    bazaar_info,
    bazaar_schema,
    bazaar_method,
    bazaar_output,
    bazaar_route_template,
];

/// `bazaar_present`, the discovery hints the extension declares, then [`BAZAAR_CHECKS`].
fn check_bazaar(out: &mut Out, o: &Value, probe_method: &str, d: &mut DiscoveryHints) {
    let Some(b) = o.pointer("/extensions/bazaar").filter(|v| !v.is_null()) else {
        out.add("bazaar_present", Level::Warn, "no extensions.bazaar: the CDP Bazaar will not catalogue this route even after paid calls", "declare the bazaar discovery extension (declareDiscoveryExtension in @x402/extensions) with the route's input and output");
        return;
    };
    d.bazaar = true;
    out.pass("bazaar_present", "extensions.bazaar is declared");
    let ext = Extension {
        info: b.get("info").cloned().unwrap_or(Value::Null),
        schema: b.get("schema").cloned().unwrap_or(Value::Null),
        probe_method,
    };
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
    d.input_type = text(ext.info.pointer("/input/type"));
    d.method = text(ext.info.pointer("/input/method"));
    d.method_enum = schema_methods(&ext.schema);
    d.route_template = text(b.get("routeTemplate"));
    for check in BAZAAR_CHECKS {
        check(&ext, d, out);
    }
}

/// `bazaar_info`: info.input says how to call the route.
fn bazaar_info(ext: &Extension<'_>, _: &mut DiscoveryHints, out: &mut Out) {
    if !ext.info.is_object() || ext.info.get("input").is_none() {
        out.add("bazaar_info", Level::Fail, "extensions.bazaar has no info.input", "info.input describes how to call the route: {type: \"http\", method, queryParams | bodyType + body}");
    }
}

/// `bazaar_schema`: facilitators validate info against the schema before cataloguing;
/// `bazaar_schema_strict`: a schema that does not require `input` validates nearly anything.
fn bazaar_schema(ext: &Extension<'_>, d: &mut DiscoveryHints, out: &mut Out) {
    if !ext.schema.is_object() {
        d.schema_valid = Some(false);
        out.add("bazaar_schema", Level::Fail, "extensions.bazaar has no schema object: facilitators validate info against it before cataloguing", "include the JSON Schema that validates info (declareDiscoveryExtension generates it)");
        return;
    }
    match validate_schema(&ext.schema, &ext.info) {
        Ok(()) => {
            d.schema_valid = Some(true);
            out.pass(
                "bazaar_schema",
                "info validates against the extension's own schema",
            );
        }
        Err(errs) => {
            d.schema_valid = Some(false);
            d.schema_errors = errs.clone();
            out.add("bazaar_schema", Level::Fail, format!("info does not validate against its own schema: {}", errs.join("; ")), "make info and schema agree (generate both from one declaration); facilitators drop listings whose info fails the schema");
        }
    }
    let requires_input = ext
        .schema
        .get("required")
        .and_then(Value::as_array)
        .is_some_and(|a| a.iter().any(|x| x == "input"));
    if !requires_input {
        out.add(
            "bazaar_schema_strict",
            Level::Warn,
            "the schema does not require `input`",
            "add \"required\": [\"input\"] and pin input.type and input.method",
        );
    }
}

/// `bazaar_method`: the declared input matches the route (http: the probe's method; mcp: a
/// tool name).
fn bazaar_method(ext: &Extension<'_>, d: &mut DiscoveryHints, out: &mut Out) {
    match d.input_type.as_deref() {
        Some("http") => http_method(ext, d, out),
        Some("mcp") => {
            let tool = ext.info.pointer("/input/toolName");
            if tool.or(ext.info.pointer("/input/tool")).is_some() {
                out.pass("bazaar_method", "MCP tool declaration");
            } else {
                out.add(
                    "bazaar_method",
                    Level::Fail,
                    "MCP input without toolName",
                    "set info.input.toolName",
                );
            }
        }
        Some(t) => out.add(
            "bazaar_method",
            Level::Fail,
            format!("info.input.type `{t}` is neither http nor mcp"),
            "set info.input.type to \"http\"",
        ),
        None => out.add(
            "bazaar_method",
            Level::Fail,
            "info.input.type is missing",
            "set info.input.type to \"http\"",
        ),
    }
}

/// `bazaar_method` of an http input: info, schema and probe agree on the method; and
/// `bazaar_input`: a method with a body declares its bodyType.
fn http_method(ext: &Extension<'_>, d: &DiscoveryHints, out: &mut Out) {
    let probe_method = ext.probe_method;
    let m = d.method.clone().unwrap_or_default().to_ascii_uppercase();
    if m.is_empty() {
        out.add(
            "bazaar_method",
            Level::Fail,
            "info.input.method is missing",
            format!("set info.input.method to {probe_method}"),
        );
    } else if m != probe_method.to_ascii_uppercase() {
        out.add("bazaar_method", Level::Fail, format!("info.input.method is {m} but this {probe_method} request got the challenge"), format!("declare the extension per method: {probe_method} requests should carry method {probe_method}"));
    } else if !d.method_enum.is_empty() && !d.method_enum.contains(&m) {
        out.add(
            "bazaar_method",
            Level::Fail,
            format!(
                "the schema allows method {} but info says {m}",
                d.method_enum.join("/")
            ),
            "restrict the schema's input.method to the real method",
        );
    } else {
        out.pass(
            "bazaar_method",
            format!("info.input.method {m} matches the probe"),
        );
    }
    let body_method = matches!(m.as_str(), "POST" | "PUT" | "PATCH");
    if body_method && ext.info.pointer("/input/bodyType").is_none() {
        out.add(
            "bazaar_input",
            Level::Fail,
            format!("{m} input without bodyType"),
            "set info.input.bodyType (json, form-data or text) and info.input.body",
        );
    }
}

/// `bazaar_output`: buyers see what they will get.
fn bazaar_output(ext: &Extension<'_>, _: &mut DiscoveryHints, out: &mut Out) {
    if ext.info.pointer("/output").is_some() {
        out.pass("bazaar_output", "info.output describes the answer");
    } else {
        out.add("bazaar_output", Level::Warn, "no info.output: buyers cannot see what they will get (CDP's validator calls this advisory)", "add info.output with type and an example");
    }
}

/// `bazaar_route_template`: a path template, nothing that could point elsewhere.
fn bazaar_route_template(_: &Extension<'_>, d: &mut DiscoveryHints, out: &mut Out) {
    let Some(t) = &d.route_template else { return };
    let ok = t.starts_with('/')
        && !t.contains("..")
        && !t.contains("://")
        && t.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_/:.-~%".contains(c));
    if !ok {
        out.add(
            "bazaar_route_template",
            Level::Fail,
            format!("routeTemplate `{t}` is not a valid path template"),
            "start with /, use :name segments, no .. or ://",
        );
    }
}

/// Turns an object of named fields into a Map (helper for report building).
pub fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;

    /// The (id, level) of each finding one check makes.
    fn findings(check: impl FnOnce(&mut Out)) -> Vec<(&'static str, Level)> {
        let mut out = Out { checks: Vec::new() };
        check(&mut out);
        out.checks.iter().map(|c| (c.id, c.level)).collect()
    }

    #[test]
    fn each_challenge_check_judges_its_one_thing() {
        assert_eq!(
            findings(|o| status_402(402, o)),
            [("status_402", Level::Pass)]
        );
        assert_eq!(
            findings(|o| status_402(412, o)),
            [("status_402", Level::Warn)]
        );
        assert_eq!(
            findings(|o| status_402(422, o)),
            [("status_402", Level::Fail)]
        );
        assert_eq!(
            findings(|o| x402_version(Some(1), o)),
            [("x402_version", Level::Warn)]
        );
        assert_eq!(
            findings(|o| x402_version(None, o)),
            [("x402_version", Level::Fail)]
        );
        let long = "é".repeat(MAX_DESCRIPTION + 1);
        assert_eq!(
            findings(|o| description_length(Some(&long), o)),
            [("description_length", Level::Fail)]
        );
        assert_eq!(
            findings(|o| mime_type(Some(" "), o)),
            [("mime_type", Level::Warn)]
        );
        let sepolia = ["eip155:84532".to_string()];
        assert_eq!(
            findings(|o| testnet("api.example.com", &sepolia, o)),
            [("testnet", Level::Warn)]
        );
        assert_eq!(
            findings(|o| testnet("localhost", &sepolia, o)),
            [("testnet", Level::Pass)]
        );
    }

    #[test]
    fn the_402s_headers_are_judged_for_caches_and_browsers() {
        let mut h = HeaderMap::new();
        h.insert("cache-control", "public, max-age=60".parse().unwrap());
        h.insert(
            "access-control-expose-headers",
            "PAYMENT-RESPONSE, PAYMENT-REQUIRED".parse().unwrap(),
        );
        assert_eq!(
            findings(|o| cache_control(&h, o)),
            [("cache_control", Level::Warn)]
        );
        assert_eq!(
            findings(|o| cors_expose(&h, o)),
            [("cors_expose", Level::Pass)]
        );
    }

    #[test]
    fn usd_and_hosts() {
        assert_eq!(atomic_to_usd(10_000), "0.01");
        assert_eq!(atomic_to_usd(5_000), "0.005");
        assert_eq!(atomic_to_usd(1_000_000), "1");
        assert_eq!(atomic_to_usd(1_500_000), "1.5");
        assert!(production_looking("api.example-audit.dev"));
        assert!(!production_looking("staging.example.com"));
        assert!(!production_looking("api-dev.example.com"));
        assert!(!production_looking("127.0.0.1"));
        assert!(!production_looking("localhost"));
    }

    #[test]
    fn header_decoding_is_strict_then_lenient() {
        let j = json!({"x402Version": 2});
        let std = base64::engine::general_purpose::STANDARD.encode(j.to_string());
        assert_eq!(decode_header(&std).unwrap(), (j.clone(), false));
        let nopad = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(j.to_string());
        if nopad != std {
            assert!(decode_header(&nopad).unwrap().1);
        }
        assert!(decode_header("%%%not base64").is_err());
        assert!(decode_header(&j.to_string())
            .unwrap_err()
            .contains("raw JSON"));
        let list = base64::engine::general_purpose::STANDARD.encode("[2]");
        assert_eq!(
            decode_header(&list).unwrap_err(),
            "the decoded header is JSON but not an object"
        );
        assert!(decode_header(" ")
            .unwrap_err()
            .starts_with("the decoded header is not JSON: EOF"));
    }

    #[test]
    fn schema_validation() {
        let schema = json!({"type": "object", "properties": {"input": {"type": "object", "properties": {"method": {"enum": ["GET"]}}}}, "required": ["input"]});
        assert!(validate_schema(&schema, &json!({"input": {"method": "GET"}})).is_ok());
        let e = validate_schema(&schema, &json!({"input": {"method": "POST"}})).unwrap_err();
        assert!(e[0].contains("/input/method"), "{e:?}");
        assert!(
            validate_schema(&json!({"$ref": "https://example.com/s.json"}), &json!({})).is_err()
        );
        assert_eq!(schema_methods(&schema), vec!["GET"]);
    }

    /// Hostile or malformed challenges never panic and always produce checks.
    #[test]
    fn hostile_challenges_are_reported_not_fatal() {
        let guard = Guard::new(vec![]);
        let url = Url::parse("https://seller.example.com/x").unwrap();
        let deep = (0..120).fold(json!(1), |v, _| json!([v]));
        let bodies = vec![
            json!({"x402Version": 2, "accepts": "nope"}),
            json!({"x402Version": 2, "accepts": [1, null, "x", {"amount": 5, "network": 7, "payTo": []}]}),
            json!({"x402Version": 2, "resource": "str", "accepts": [{"scheme": "exact", "network": "eip155:8453", "amount": "99999999999999999999999999999999999999999", "asset": "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", "payTo": "0x0", "maxTimeoutSeconds": -1}]}),
            json!({"x402Version": 2, "accepts": [], "extensions": {"bazaar": {"info": {"input": {"type": "http", "method": "GET"}}, "schema": {"$ref": "#"}}}}),
            json!({"x402Version": 2, "accepts": [], "extensions": {"bazaar": {"info": deep.clone(), "schema": {"items": {"$ref": "#"}}}}}),
            json!({"x402Version": 2, "accepts": [], "extensions": {"bazaar": {"info": {}, "schema": {"$ref": "#/definitions/missing"}}}}),
            json!({"x402Version": 2, "accepts": [], "extensions": {"bazaar": {"info": {}, "schema": {"$dynamicRef": "#x", "pattern": "(a+)+$"}}}}),
            json!({"x402Version": 2, "accepts": [], "extensions": {"bazaar": "string"}}),
            json!({"x402Version": 99, "accepts": [{}]}),
            json!({"x402Version": "2"}),
            deep,
        ];
        for body in bodies {
            let text = body.to_string();
            for in_header in [false, true] {
                let mut headers = HeaderMap::new();
                let b: &[u8] = if in_header {
                    let enc = base64::engine::general_purpose::STANDARD.encode(&text);
                    headers.insert("payment-required", enc.parse().unwrap());
                    b""
                } else {
                    text.as_bytes()
                };
                let a = analyse(
                    &ProbeView {
                        url: &url,
                        final_url: &url,
                        method: "GET",
                        status: 402,
                        headers: &headers,
                        body: b,
                        truncated: false,
                    },
                    &guard,
                );
                assert!(!a.checks.is_empty(), "{text}");
                assert!(
                    !a.valid_challenge || a.accepts.iter().any(|e| e["scheme"] == "exact"),
                    "{text}"
                );
            }
        }
        // Raw binary, empty, and a header that is not ASCII.
        let mut headers = HeaderMap::new();
        headers.insert(
            "payment-required",
            http::HeaderValue::from_bytes(&[0xff, 0xfe, b'a']).unwrap(),
        );
        let a = analyse(
            &ProbeView {
                url: &url,
                final_url: &url,
                method: "POST",
                status: 402,
                headers: &headers,
                body: &[0, 159, 146, 150],
                truncated: true,
            },
            &guard,
        );
        assert_eq!(a.worst(), Level::Fail);
    }

    #[test]
    fn findings_are_bounded_with_the_worst_level_kept() {
        let c = |level| Check {
            id: "scheme",
            level,
            message: String::new(),
            fix: String::new(),
            entry: None,
        };
        let mut checks: Vec<Check> = (0..10).map(|_| c(Level::Pass)).collect();
        checks.push(c(Level::Fail));
        bound_findings(&mut checks, 4);
        assert_eq!(checks.len(), 4);
        assert_eq!(checks[3].id, "findings_bounded");
        assert_eq!(checks[3].level, Level::Fail);
        assert!(checks[3]
            .message
            .starts_with("8 more findings not listed (1 fail, 0 warn)"));
        let mut few = vec![c(Level::Warn)];
        bound_findings(&mut few, 4);
        assert_eq!(few.len(), 1);
    }
}
