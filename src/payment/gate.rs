//! `payment_gate`: the x402 v2 door of a paid route.
//!
//! No PAYMENT-SIGNATURE → 402 with the challenge (header, same JSON in the body, no-store),
//! whatever the input (auditors probe with no parameters); the 402 path never touches the
//! ledger. With one: undecodable → 400; bad input → 400/413 without calling the facilitator;
//! no matching offer → 402; `resource` naming another route or a malformed payment-identifier →
//! 400; then the payment is claimed in the ledger (unavailable → 503): held by another request →
//! 409, bound to another call → 409, tried too often → 429, settled with its reply kept → the
//! kept reply, money in doubt → resumed (settle confirms it); then the verify rate limits (429)
//! and the facilitator's verify → continue or 402; facilitator unreachable / timing out → 502 /
//! 504 with no work done. docs/ledger.md has the rules. Parameters: none.

use arc_swap::ArcSwap;
use async_trait::async_trait;
use http::{Method, StatusCode};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::identifier;
use super::ledger::{
    now_ms, Binding, Claim, KeptReply, Ledger, LedgerError, NewPayment, Row, State, Store, Update,
};
use super::limits::VerifyLimiter;
use super::local_check::{self, work_window, Refusal, RefusalKind};
use super::paid::{Paid, Resume};
use crate::config::{AcceptOption, Config, ParamType, RouteSpec};
use crate::pipeline::reply_headers::common_headers;
use crate::pipeline::{
    params, Artefact, BuildCtx, Exchange, Flow, Phase, Reply, Stage, StageFactory,
};
use crate::x402::bazaar::{bazaar_extension, BazaarInput, BazaarParam, JsonType};
use crate::x402::challenge::payment_required;
use crate::x402::codec::{decode_header, encode_header};
use crate::x402::facilitator::FacilitatorError;
use crate::x402::facilitators::Facilitators;
use crate::x402::matching::{check_payload_shape, find_offer, payment_key};
use crate::x402::types::{Requirement, ResourceInfo};

pub const FACTORY: StageFactory = StageFactory {
    name: "payment_gate",
    phase: Phase::Gate,
    payment: true,
    needs: &[],
    gives: &[Artefact::of::<Paid>("payment")],
    doc: "x402 v2: 402 challenge, decode PAYMENT-SIGNATURE, match the offer, facilitator verify",
    errors: &[
        (
            402,
            "Payment required or refused (PAYMENT-REQUIRED header holds the challenge)",
        ),
        (
            400,
            "PAYMENT-SIGNATURE is not decodable base64 JSON of an x402 v2 payload, names another resource, or carries a malformed payment-identifier",
        ),
        (
            409,
            "The same payment is being served (retry after Retry-After), was made for another call, or its payment-identifier was used with another payment",
        ),
        (
            429,
            "This payment was tried too often without a charged answer, or too many payments were verified for this payer or client",
        ),
        (
            503,
            "The payment ledger is unavailable; nothing was charged, retry after Retry-After",
        ),
        (
            502,
            "The payment facilitator is unreachable or answered garbage; nothing was charged",
        ),
        (
            504,
            "The payment facilitator did not answer in time; nothing was charged",
        ),
    ],
    build,
};

pub const HEADER_SIGNATURE: &str = "payment-signature";
pub const HEADER_REQUIRED: &str = "PAYMENT-REQUIRED";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {}

struct Gate {
    resource: ResourceInfo,
    /// Offers without the runtime-dependent Solana feePayer, one per accepted option.
    options: Vec<(AcceptOption, Requirement)>,
    /// bazaar extension per method the route serves.
    extensions: Vec<(Method, Value)>,
    facilitator: Arc<Facilitators>,
    ledger: Arc<Ledger>,
    limiter: Arc<VerifyLimiter>,
    trusted_proxies: Vec<ipnet::IpNet>,
    /// Offers startup left out (payment.unsupported_network: leave_out).
    readiness: Option<Arc<super::readiness::Readiness>>,
    /// Unix ms of the last background /supported refresh we started.
    last_refresh: AtomicU64,
    /// The unpaid 402s, ready-made (see `Unpaid`).
    unpaid: ArcSwap<Unpaid>,
    /// The plain challenge as a page, for a person in a browser.
    page: super::challenge_page::ChallengePage,
}

/// The route's complete unpaid 402s — status, headers (the common ones the server adds
/// included) and body bytes — per method, for one state of the offers: the facilitator's
/// `/supported` (Solana's feePayer) and the networks startup left out, by their generations.
/// Rendered when the gate is built (startup, reload) and again only when one of those changes,
/// so an unpaid request (the path every agent and auditor hits first) does no JSON or base64
/// work: two atomic loads and a clone of shared bytes.
struct Unpaid {
    /// (facilitator /supported generation, readiness generation) rendered from.
    stamp: (u64, u64),
    /// The Solana offer is out because the facilitator named no feePayer yet.
    missing_fee_payer: bool,
    /// Per method: the plain 402, and the one for a request that sent a v1 X-PAYMENT.
    by_method: Vec<(Method, Reply, Reply)>,
}

fn build(ctx: &BuildCtx<'_>, p: Value) -> Result<Arc<dyn Stage>, String> {
    let _: Params = params(p)?;
    let route = ctx.route;
    let config = ctx.config;
    let price = route
        .price
        .as_ref()
        .ok_or("payment_gate on a route without price_usd")?;
    let options = config
        .payment
        .accepts
        .iter()
        .zip(price.atomic.iter())
        .map(|(a, amount)| (a.clone(), base_requirement(config, a, amount)))
        .collect();
    let extensions = route
        .methods
        .iter()
        .map(|m| {
            (
                m.clone(),
                json!({
                    "bazaar": bazaar_for(route, m),
                    identifier::EXTENSION: identifier::declaration(false),
                }),
            )
        })
        .collect();
    let mut gate = Gate {
        resource: resource_info(config, route),
        options,
        extensions,
        facilitator: ctx.services.need::<Facilitators>()?,
        ledger: ctx.services.need::<Ledger>()?,
        limiter: ctx.services.need::<VerifyLimiter>()?,
        trusted_proxies: config.service.trusted_proxies.clone(),
        readiness: ctx.services.get::<super::readiness::Readiness>(),
        last_refresh: AtomicU64::new(0),
        page: super::challenge_page::ChallengePage::for_route(config, route),
        unpaid: ArcSwap::from_pointee(Unpaid {
            stamp: (u64::MAX, u64::MAX),
            missing_fee_payer: false,
            by_method: Vec::new(),
        }),
    };
    gate.unpaid = ArcSwap::from_pointee(gate.render_unpaid(gate.offer_stamp()));
    Ok(Arc::new(gate))
}

const MSG_PAY: &str =
    "pay with x402 v2: sign one of `accepts` and repeat the request with PAYMENT-SIGNATURE";
const MSG_V1: &str =
    "this service speaks x402 v2: send the payment in PAYMENT-SIGNATURE, not X-PAYMENT";

/// `resource` of the route's challenges: canonical base_url + path, no query (docs/decisions.md#challenge).
pub fn resource_info(config: &Config, route: &RouteSpec) -> ResourceInfo {
    let mut url = config.service.base_url.clone();
    url.set_path(&route.path);
    let service_name: String = config
        .service
        .name
        .chars()
        .filter(|c| c.is_ascii_graphic() || *c == ' ')
        .take(32)
        .collect();
    let tags: Vec<String> = route
        .tags
        .iter()
        .filter(|t| t.len() <= 32 && t.chars().all(|c| c.is_ascii_graphic() || c == ' '))
        .take(5)
        .cloned()
        .collect();
    ResourceInfo {
        url: url.to_string(),
        description: route.description.clone(),
        mime_type: "application/json".into(),
        service_name: (!service_name.is_empty()).then_some(service_name),
        tags: (!tags.is_empty()).then_some(tags),
    }
}

fn base_requirement(config: &Config, a: &AcceptOption, amount: &str) -> Requirement {
    let mut extra = Map::new();
    if let Some((name, version)) = &a.eip712 {
        extra.insert("name".into(), Value::String(name.clone()));
        extra.insert("version".into(), Value::String(version.clone()));
    }
    Requirement {
        scheme: "exact".into(),
        network: a.network.clone(),
        amount: amount.to_string(),
        asset: a.asset.clone(),
        pay_to: a.pay_to.clone(),
        max_timeout_seconds: config.payment.max_timeout_seconds,
        extra,
    }
}

/// The bazaar declaration of one method, from the route's input schema.
pub fn bazaar_for(route: &RouteSpec, method: &Method) -> Value {
    let body = crate::pipeline::input::reads_body(method);
    // Every parameter the route accepts with this method: /api/http's `body` is accepted in a
    // GET's query string too (with method=PUT), so it is declared there as well.
    let params: Vec<BazaarParam> = route
        .input
        .iter()
        .map(|p| {
            let json_type = match (p.ty, body) {
                (ParamType::String, _) | (ParamType::Any, _) => JsonType::String,
                (ParamType::Integer, _) => JsonType::Integer,
                (ParamType::Number, _) => JsonType::Number,
                (ParamType::Boolean, _) => JsonType::Boolean,
                (ParamType::Object, true) => JsonType::Object,
                (ParamType::Object, false) => JsonType::String,
            };
            let mut b = BazaarParam::new(p.name.clone(), json_type);
            b.required = p.required;
            b.description = (!p.description.is_empty()).then(|| p.description.clone());
            b.enum_values = p.enumeration.clone();
            b.minimum = p
                .minimum
                .and_then(serde_json::Number::from_f64)
                .map(int_if_whole);
            b.maximum = p
                .maximum
                .and_then(serde_json::Number::from_f64)
                .map(int_if_whole);
            b.max_length = p.max_length.map(|m| m as u64);
            b.pattern = p.pattern.as_ref().map(|r| r.as_str().to_string());
            b.default = p.default.clone();
            b.example = p.example.clone().map(|e| match (json_type, e) {
                (JsonType::String, Value::Object(o)) => Value::String(Value::Object(o).to_string()),
                (_, e) => e,
            });
            b
        })
        .collect();
    let input = if body {
        BazaarInput::JsonBody(params)
    } else {
        BazaarInput::Query(params)
    };
    bazaar_extension(method.as_str(), &input, route.output_example.clone())
}

fn int_if_whole(n: serde_json::Number) -> serde_json::Number {
    match n.as_f64() {
        Some(f) if f.fract() == 0.0 && f.abs() < 9e15 => serde_json::Number::from(f as i64),
        _ => n,
    }
}

impl Gate {
    /// The offers of this moment (Solana only when the facilitator names its feePayer); a
    /// background /supported refresh is started when that is missing.
    fn offers(&self) -> Vec<Requirement> {
        let (offers, missing_fee_payer) = self.offers_now();
        if missing_fee_payer {
            self.refresh_supported_soon();
        }
        offers
    }

    /// The offers of this moment, and whether a Solana offer is out for want of a feePayer.
    fn offers_now(&self) -> (Vec<Requirement>, bool) {
        let mut out = Vec::with_capacity(self.options.len());
        let mut missing_fee_payer = false;
        for (opt, req) in &self.options {
            if self
                .readiness
                .as_ref()
                .is_some_and(|r| r.is_left_out(&opt.network))
            {
                continue;
            }
            if opt.is_solana() {
                match self.facilitator.fee_payer(&opt.network) {
                    Some(fp) => {
                        let mut r = req.clone();
                        r.extra.insert("feePayer".into(), Value::String(fp));
                        out.push(r);
                    }
                    None => missing_fee_payer = true,
                }
            } else {
                out.push(req.clone());
            }
        }
        (out, missing_fee_payer)
    }

    /// Starts a background /supported refresh at most every 5 s, so the 402 path never waits
    /// on the facilitator.
    fn refresh_supported_soon(&self) {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0);
        let last = self.last_refresh.load(Ordering::Relaxed);
        if now.saturating_sub(last) < 5_000 {
            return;
        }
        if self
            .last_refresh
            .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
        {
            let fac = self.facilitator.clone();
            let solana: Vec<String> = self
                .options
                .iter()
                .filter(|(o, _)| o.is_solana())
                .map(|(o, _)| o.network.clone())
                .collect();
            tokio::spawn(async move {
                let outcome = fac.refresh_supported().await;
                let still: Vec<&str> = solana
                    .iter()
                    .filter(|n| fac.fee_payer(n).is_none())
                    .map(String::as_str)
                    .collect();
                // Every paid route's gate asks; one line a minute for the whole process says it.
                if still.is_empty() || !warn_due(now) {
                    return;
                }
                match outcome {
                    Err(e) => {
                        tracing::warn!(error = %e, networks = ?still, "facilitator /supported failed; the Solana offer stays out of challenges")
                    }
                    Ok(_) => {
                        tracing::warn!(networks = ?still, "facilitator does not list a Solana feePayer; the Solana offer is left out")
                    }
                }
            });
        }
    }

    fn extension_for(&self, method: &Method) -> Option<Value> {
        self.extensions
            .iter()
            .find(|(m, _)| m == method)
            .or_else(|| self.extensions.first())
            .map(|(_, v)| v.clone())
    }

    /// The 402: PAYMENT-REQUIRED header and the same challenge as the JSON body.
    fn challenge(
        &self,
        sold: Option<&SoldAs>,
        method: &Method,
        error: &str,
        message: &str,
    ) -> Reply {
        let offers = self.offers();
        self.render_challenge(sold, method, error, message, &offers)
    }

    /// What the offers of this moment were rendered from.
    fn offer_stamp(&self) -> (u64, u64) {
        (
            self.facilitator.supported_generation(),
            self.readiness.as_ref().map_or(0, |r| r.generation()),
        )
    }

    /// Renders every method's unpaid 402 for the offers of this moment.
    fn render_unpaid(&self, stamp: (u64, u64)) -> Unpaid {
        let (offers, missing_fee_payer) = self.offers_now();
        let ready = |method: &Method, message: &str| {
            let mut r = self.render_challenge(None, method, "Payment required", message, &offers);
            common_headers(r.status, &mut r.headers);
            // The same URL answers JSON or, to a browser, the HTML page (challenge_page): a
            // cache between must key on Accept.
            r.headers
                .insert(http::header::VARY, http::HeaderValue::from_static("Accept"));
            r
        };
        let by_method = self
            .extensions
            .iter()
            .map(|(m, _)| (m.clone(), ready(m, MSG_PAY), ready(m, MSG_V1)))
            .collect();
        Unpaid {
            stamp,
            missing_fee_payer,
            by_method,
        }
    }

    /// The ready-made unpaid 402 for `method` (a HEAD or OPTIONS probe gets the first
    /// method's), rendered again first when the offers changed since.
    fn unpaid_reply(&self, method: &Method, v1_header: bool) -> Reply {
        let stamp = self.offer_stamp();
        let mut unpaid = self.unpaid.load_full();
        if unpaid.stamp != stamp {
            unpaid = Arc::new(self.render_unpaid(stamp));
            self.unpaid.store(unpaid.clone());
        }
        if unpaid.missing_fee_payer {
            self.refresh_supported_soon();
        }
        let found = unpaid
            .by_method
            .iter()
            .find(|(m, _, _)| m == method)
            .or_else(|| unpaid.by_method.first());
        match found {
            Some((_, plain, v1)) => {
                if v1_header {
                    v1.clone()
                } else {
                    plain.clone()
                }
            }
            None => {
                let msg = if v1_header { MSG_V1 } else { MSG_PAY };
                self.challenge(None, method, "Payment required", msg)
            }
        }
    }

    fn render_challenge(
        &self,
        sold: Option<&SoldAs>,
        method: &Method,
        error: &str,
        message: &str,
        offers: &[Requirement],
    ) -> Reply {
        let (resource, extensions) = match sold {
            None => (self.resource.clone(), self.extension_for(method)),
            Some(s) => {
                let mut ext = self.extension_for(method).unwrap_or_else(|| json!({}));
                ext["bazaar"] = s.bazaar.clone();
                let mut r = self.resource.clone();
                r.url = s.url.clone();
                (r, Some(ext))
            }
        };
        let pr = payment_required(error, &resource, offers, extensions);
        // The body is for people and for clients that read a challenge from the body: what to
        // pay and why, without `extensions` (the Bazaar schemas, 60 % of it), which stay in the
        // header where the protocol carries them (docs/decisions.md#challenge). Every 402 is
        // smaller by that much, on the path every agent hits first.
        let mut body = pr.clone();
        if let Value::Object(m) = &mut body {
            m.remove("extensions");
            m.insert("message".into(), Value::String(message.to_string()));
        }
        Reply::json(StatusCode::PAYMENT_REQUIRED, &body)
            .with_header(HEADER_REQUIRED, &encode_header(&pr))
    }
}

#[async_trait]
impl Stage for Gate {
    /// The server's fast path for a request without PAYMENT-SIGNATURE: the ready-made 402.
    /// A browser (Accept: text/html) is left to `run`.
    fn unpaid_answer(&self, method: &Method, headers: &http::HeaderMap) -> Option<Reply> {
        if headers.contains_key(HEADER_SIGNATURE)
            && !matches!(*method, Method::OPTIONS | Method::HEAD)
        {
            return None;
        }
        if accepts_html(headers) {
            return None;
        }
        Some(self.unpaid_reply(method, headers.contains_key("x-payment")))
    }

    async fn run(&self, ex: &mut Exchange) -> Flow {
        let sold = ex.slots.get::<SoldAs>().cloned();
        let sold = sold.as_ref();
        // A HEAD or OPTIONS probe is answered the challenge, payment header or not.
        let probe = matches!(ex.method, Method::OPTIONS | Method::HEAD);
        let header = ex
            .headers
            .get(HEADER_SIGNATURE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
            .filter(|_| !probe);
        let Some(header) = header else {
            return self.answer_unpaid(ex, sold);
        };
        self.take_payment(ex, &header, sold)
            .await
            .unwrap_or_else(|answered| answered)
    }
}

/// The paid path, one step per method, in the order they run (docs/decisions.md#order-of-checks,
/// docs/ledger.md). Each step either hands on what the next one needs, or answers the exchange
/// (its reply set) and returns `Err` with the flow `run` returns.
impl Gate {
    /// A request with a payment: judge the header, claim the payment in the ledger, the verify
    /// rate limits, the facilitator's verify.
    async fn take_payment(
        &self,
        ex: &mut Exchange,
        header: &str,
        sold: Option<&SoldAs>,
    ) -> Result<Flow, Flow> {
        let judged = self.judge(ex, header, sold).await?;
        let store = match self.ledger.store().await {
            Ok(s) => s,
            Err(e) => return Err(self.ledger_down(ex, &e)),
        };
        let paid = self.claim(ex, store.as_ref(), header, judged).await?;
        self.within_verify_limits(ex, store.as_ref(), &paid).await?;
        Ok(self.verify(ex, store.as_ref(), paid, sold).await)
    }

    /// No payment (or a probe): the 402, ready-made when it can be.
    fn answer_unpaid(&self, ex: &mut Exchange, sold: Option<&SoldAs>) -> Flow {
        let v1_header = ex.headers.contains_key("x-payment");
        ex.reply = Some(match sold {
            // A browser (HTML preferred) gets the same 402 as a page; MCP tool calls never.
            None if super::challenge_page::wants_html(&ex.headers) => {
                self.page.reply(&self.unpaid_reply(&ex.method, v1_header))
            }
            None => self.unpaid_reply(&ex.method, v1_header),
            Some(_) => {
                let msg = if v1_header { MSG_V1 } else { MSG_PAY };
                self.challenge(sold, &ex.method, "Payment required", msg)
            }
        });
        Flow::Reply
    }

    /// Everything judged of the payment header before the ledger: decoded, the input valid,
    /// an offer of ours matched, the resource ours, a payment key, the local checks, the
    /// payment-identifier. The payment as settle will know it, minus the payer.
    async fn judge(
        &self,
        ex: &mut Exchange,
        header: &str,
        sold: Option<&SoldAs>,
    ) -> Result<Paid, Flow> {
        let payload = decode_payment(ex, header)?;
        // Bad input with a payment attached is a 400 before the facilitator (docs/payments.md).
        if let Some(r) = ex.input_error.take() {
            ex.reply = Some(r);
            return Err(Flow::Reply);
        }
        let offers = self.offers();
        let accepted = payload.get("accepted").cloned().unwrap_or(Value::Null);
        let Some(offer) = find_offer(&offers, &accepted).cloned() else {
            ex.reply = Some(self.challenge(
                sold,
                &ex.method,
                "No matching payment requirements",
                "the signed offer does not match any current offer of this route; pay one of `accepts` as it is",
            ));
            return Err(Flow::Reply);
        };
        if let Some(r) = self.check_resource(&payload, sold) {
            return Err(ex.fail(StatusCode::BAD_REQUEST, "invalid_payment", r));
        }
        let Some(key) = payment_key(&payload) else {
            return Err(ex.fail(
                StatusCode::BAD_REQUEST,
                "invalid_payment_header",
                "the payment carries no authorization nonce or transaction",
            ));
        };
        // Judge what can be judged locally before any facilitator call (docs/payment-checks.md).
        // A window that closed while the payment's settlement was in doubt does not stop its
        // resume: the money may have moved, and the kept reply is the buyer's.
        if let Err(r) = local_check::check(&payload, &offer, unix_now(), work_window(&offer)) {
            let resumes = r.is_window() && self.money_in_motion(&key, header).await;
            if !resumes {
                return Err(self.refuse_locally(ex, r));
            }
        }
        let pid = match identifier::parse(&payload) {
            Ok(p) => p,
            Err(e) => {
                return Err(ex.fail(StatusCode::BAD_REQUEST, "invalid_payment_identifier", e))
            }
        };
        let valid_before = valid_before(&payload)
            .unwrap_or_else(|| now_ms() / 1000 + offer.max_timeout_seconds as i64);
        Ok(Paid {
            payload,
            offer,
            key,
            payer: None,
            pid,
            valid_before,
            resume: None,
        })
    }

    /// Claims the payment in the ledger for this call; a payment met before is worked again,
    /// served its kept reply, resumed or refused (`decide_takeover`).
    async fn claim(
        &self,
        ex: &mut Exchange,
        store: &dyn Store,
        header: &str,
        paid: Paid,
    ) -> Result<Paid, Flow> {
        let binding = Binding {
            route: ex.route.path.clone(),
            method: ex.method.as_str().to_string(),
            input_hash: input_hash(&ex.input),
        };
        let header_hash = sha256_hex(header.as_bytes());
        if let Some(pid) = &paid.pid {
            match store.by_pid(&binding.route, pid).await {
                Ok(Some(row)) if row.key != paid.key || row.header_hash != header_hash => {
                    return Err(ex.fail(
                        StatusCode::CONFLICT,
                        "payment_identifier_conflict",
                        MSG_PID_CONFLICT,
                    ))
                }
                Ok(_) => {}
                Err(e) => return Err(self.ledger_down(ex, &e)),
            }
        }
        let new = NewPayment {
            key: paid.key.clone(),
            binding,
            header_hash: header_hash.clone(),
            pid: paid.pid.clone(),
            amount: paid.offer.amount.clone(),
            asset: paid.offer.asset.clone(),
            network: paid.offer.network.clone(),
            pay_to: paid.offer.pay_to.clone(),
            payer: payer_named(&paid.payload),
            request_id: ex.id.clone(),
            valid_before: paid.valid_before,
        };
        let lease_ms = self.ledger.settings.lease.as_millis() as i64;
        let claim = match store
            .claim(&new, self.ledger.owner(), now_ms(), lease_ms)
            .await
        {
            Ok(c) => c,
            Err(e) => return Err(self.ledger_down(ex, &e)),
        };
        match claim {
            Claim::Fresh => Ok(paid),
            Claim::PidTaken => Err(ex.fail(
                StatusCode::CONFLICT,
                "payment_identifier_conflict",
                MSG_PID_CONFLICT,
            )),
            Claim::Mismatch(_) => Err(ex.fail(
                StatusCode::CONFLICT,
                "payment_bound_elsewhere",
                "this payment was first presented for another route, method or input; a payment pays for one call only",
            )),
            Claim::Busy(_) => Err(ex.fail_with(
                StatusCode::CONFLICT,
                "payment_in_flight",
                "this payment is being worked by another request; repeat the same request after Retry-After seconds for its answer",
                &[("retry-after", "2")],
            )),
            Claim::Taken(row) => self.take_over(ex, store, &header_hash, row, paid).await,
        }
    }

    /// A payment the ledger knew already (`decide_takeover`): worked again, served its kept
    /// reply, resumed (settle confirms the money) or refused.
    async fn take_over(
        &self,
        ex: &mut Exchange,
        store: &dyn Store,
        header_hash: &str,
        row: Row,
        mut paid: Paid,
    ) -> Result<Paid, Flow> {
        match decide_takeover(&row, header_hash, self.ledger.settings.max_attempts) {
            Takeover::Work => Ok(paid),
            Takeover::Serve => {
                self.release(store, &paid.key).await;
                ex.reply = row.reply.as_ref().map(kept_to_reply);
                ex.slots.put(Replayed);
                Err(Flow::Reply)
            }
            Takeover::Resume => {
                paid.payer = row.payer.clone();
                ex.reply = Some(
                    row.reply
                        .as_ref()
                        .map(kept_to_reply)
                        .unwrap_or_else(|| Reply::error(StatusCode::OK, "reply_not_kept", "")),
                );
                paid.resume = Some(Resume { row });
                ex.slots.put(paid);
                Err(Flow::Reply)
            }
            Takeover::Refuse(status, code, message) => {
                self.release(store, &paid.key).await;
                Err(ex.fail(status, code, message))
            }
        }
    }

    /// The /verify rate limits per payer and per client (429, the claim released).
    async fn within_verify_limits(
        &self,
        ex: &mut Exchange,
        store: &dyn Store,
        paid: &Paid,
    ) -> Result<(), Flow> {
        let client =
            crate::net::client_ip::client_key(ex.remote, &ex.headers, &self.trusted_proxies);
        let Err(limited) = self
            .limiter
            .check(payer_named(&paid.payload).as_deref(), client)
        else {
            return Ok(());
        };
        self.release(store, &paid.key).await;
        let retry = limited.retry_after_s.to_string();
        Err(ex.fail_with(
            StatusCode::TOO_MANY_REQUESTS,
            "verify_rate_limited",
            format!(
                "too many payments to verify from this {} in the last minute; nothing was charged, retry after Retry-After seconds",
                limited.by
            ),
            &[("retry-after", &retry)],
        ))
    }

    /// The facilitator's verify: valid → the payment goes on to the work, recorded verified;
    /// refused → the 402 with its reason; no verdict → 502/504. Neither of the last two charges.
    async fn verify(
        &self,
        ex: &mut Exchange,
        store: &dyn Store,
        mut paid: Paid,
        sold: Option<&SoldAs>,
    ) -> Flow {
        let asked = std::time::Instant::now();
        let routed = self.facilitator.verify(&paid.payload, &paid.offer).await;
        let verify_took = asked.elapsed();
        if let Some(by) = routed.by.clone() {
            ex.slots.put(super::paid::FacilitatorUsed(by));
        }
        match routed.result {
            Ok(v) if v.is_valid => {
                if let Some(ext) = &v.extension_responses {
                    tracing::info!(request_id = %ex.id, extensions = %ext, "facilitator extension responses");
                }
                paid.payer = v.payer.clone().or_else(|| payer_named(&paid.payload));
                let u = Update {
                    state: Some(State::Verified),
                    payer: paid.payer.clone(),
                    verified_by: routed.by.as_deref().map(str::to_string),
                    ..Default::default()
                };
                if let Err(e) = store
                    .update(&paid.key, self.ledger.owner(), &u, now_ms())
                    .await
                {
                    return self.ledger_down(ex, &e);
                }
                ex.slots.put(super::timing::VerifyTimes {
                    took: verify_took,
                    done: std::time::Instant::now(),
                });
                ex.slots.put(paid);
                Flow::Continue
            }
            Ok(v) => {
                let reason = v
                    .invalid_reason
                    .clone()
                    .unwrap_or_else(|| "payment_invalid".into());
                tracing::info!(request_id = %ex.id, reason = %reason, "payment refused by verify");
                let u = Update {
                    state: Some(State::NotCharged),
                    error: Some(format!("verify: {reason}")),
                    release: true,
                    ..Default::default()
                };
                let _ = store
                    .update(&paid.key, self.ledger.owner(), &u, now_ms())
                    .await;
                ex.reply = Some(self.challenge(
                    sold,
                    &ex.method,
                    &reason,
                    &format!("the facilitator refused the payment: {reason}"),
                ));
                Flow::Reply
            }
            Err(e) => {
                let status = StatusCode::from_u16(e.status()).unwrap_or(StatusCode::BAD_GATEWAY);
                tracing::warn!(request_id = %ex.id, error = %e, "facilitator verify failed");
                let u = Update {
                    error: Some(format!("verify: {}", e.code())),
                    release: true,
                    ..Default::default()
                };
                let _ = store
                    .update(&paid.key, self.ledger.owner(), &u, now_ms())
                    .await;
                ex.fail(status, e.code(), facilitator_message(&e))
            }
        }
    }

    /// Lets the next request take the payment (no state change): this one answers without
    /// working it.
    async fn release(&self, store: &dyn Store, key: &str) {
        let release = Update {
            release: true,
            ..Default::default()
        };
        let _ = store
            .update(key, self.ledger.owner(), &release, now_ms())
            .await;
    }
}

const MSG_PID_CONFLICT: &str = "this payment-identifier id was already used with another payment on this route; use a new id for a new payment";

/// The PAYMENT-SIGNATURE header decoded: base64 JSON (else 400) of an x402 v2 payload (else
/// 400).
fn decode_payment(ex: &mut Exchange, header: &str) -> Result<Value, Flow> {
    let payload = decode_header(header).map_err(|e| {
        ex.fail(
            StatusCode::BAD_REQUEST,
            "invalid_payment_header",
            format!("PAYMENT-SIGNATURE is not base64 JSON of an x402 payload: {e}"),
        )
    })?;
    if let Err(e) = check_payload_shape(&payload) {
        return Err(ex.fail(
            StatusCode::BAD_REQUEST,
            "invalid_payment_header",
            format!("PAYMENT-SIGNATURE is not an x402 v2 payment payload: {e}"),
        ));
    }
    Ok(payload)
}

/// Whether the missing-feePayer warning is due (at most one a minute for the process, whatever
/// the number of gates asking), taking the turn when it is.
fn warn_due(now_ms: u64) -> bool {
    static LAST: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let last = LAST.load(Ordering::Relaxed);
    (last == 0 || now_ms.saturating_sub(last) >= 60_000)
        && LAST
            .compare_exchange(last, now_ms, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
}

/// Whether the request names text/html in Accept (a browser): such a request is not answered
/// from the ready-made 402s.
fn accepts_html(headers: &http::HeaderMap) -> bool {
    headers.get_all(http::header::ACCEPT).iter().any(|v| {
        v.as_bytes()
            .windows(9)
            .any(|w| w.eq_ignore_ascii_case(b"text/html"))
    })
}

/// Put in an exchange's slots when the route is sold through another door than its URL (an MCP
/// tool, see `crate::mcp`): the challenge names this resource and bazaar declaration, and a
/// payment that echoes a resource must name this one. Everything else (offers, ledger binding,
/// verify) is the route's own.
#[derive(Debug, Clone)]
pub struct SoldAs {
    pub url: String,
    /// The `bazaar` extension of this door.
    pub bazaar: Value,
}

/// Marks an exchange answered from a kept reply (settle leaves it as it is).
#[derive(Debug, Clone, Copy)]
pub struct Replayed;

/// What to do with a known payment this request now holds.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Takeover {
    /// No money moved for it: verify and work (again).
    Work,
    /// Settled, and its reply is kept for this very header: serve it as it was.
    Serve,
    /// Money in doubt, reply kept: confirm the settlement, then release or withhold.
    Resume,
    Refuse(StatusCode, &'static str, String),
}

/// The rule for a payment met again (pure: unit-tested below).
fn decide_takeover(row: &Row, header_hash: &str, max_attempts: i64) -> Takeover {
    let same_header = row.header_hash == header_hash;
    match row.state {
        // An earlier holder stopped before any settlement: nothing moved.
        State::Claimed | State::Verified => Takeover::Work,
        State::NotCharged | State::SettleFailed => {
            if row.attempts > max_attempts {
                Takeover::Refuse(
                    StatusCode::TOO_MANY_REQUESTS,
                    "payment_attempts_exhausted",
                    format!(
                        "this payment was already tried {} times without a charged answer; sign a new payment to try again",
                        row.attempts - 1
                    ),
                )
            } else {
                Takeover::Work
            }
        }
        State::Settled if same_header && row.reply.is_some() => Takeover::Serve,
        State::Settled => Takeover::Refuse(
            StatusCode::CONFLICT,
            "payment_already_used",
            format!(
                "this payment was settled for an earlier call (transaction {}); its answer is no longer kept: sign a new payment",
                row.transaction.as_deref().unwrap_or("unknown")
            ),
        ),
        State::Settling | State::Pending if same_header => Takeover::Resume,
        State::Settling | State::Pending => Takeover::Refuse(
            StatusCode::CONFLICT,
            "payment_in_flight",
            "this payment's settlement is being confirmed; repeat the request with the exact same PAYMENT-SIGNATURE".into(),
        ),
    }
}

/// A kept reply as an answer, exactly as stored.
pub fn kept_to_reply(k: &KeptReply) -> Reply {
    let mut headers = http::HeaderMap::new();
    for (n, v) in &k.headers {
        if let (Ok(n), Ok(v)) = (
            http::header::HeaderName::from_bytes(n.as_bytes()),
            http::HeaderValue::from_str(v),
        ) {
            headers.append(n, v);
        }
    }
    Reply {
        status: StatusCode::from_u16(k.status).unwrap_or(StatusCode::OK),
        headers,
        body: bytes::Bytes::from(k.body.clone()),
    }
}

/// An answer as a kept reply.
pub fn reply_to_kept(r: &Reply) -> KeptReply {
    KeptReply {
        status: r.status.as_u16(),
        headers: r
            .headers
            .iter()
            .filter_map(|(n, v)| {
                v.to_str()
                    .ok()
                    .map(|v| (n.as_str().to_string(), v.to_string()))
            })
            .collect(),
        body: r.body.to_vec(),
    }
}

fn unix_now() -> u64 {
    (now_ms() / 1000).max(0) as u64
}

/// Hex SHA-256.
pub fn sha256_hex(data: &[u8]) -> String {
    ring::digest::digest(&ring::digest::SHA256, data)
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The validated input's fingerprint: keys sorted, so the order of query parameters does not
/// make two calls differ.
pub fn input_hash(input: &Map<String, Value>) -> String {
    let sorted: std::collections::BTreeMap<&String, &Value> = input.iter().collect();
    sha256_hex(&serde_json::to_vec(&sorted).unwrap_or_default())
}

/// EVM `validBefore` (unix seconds) of an EIP-3009 or Permit2 payload.
fn valid_before(payload: &Value) -> Option<i64> {
    let inner = payload.get("payload")?;
    let v = inner
        .get("authorization")
        .and_then(|a| a.get("validBefore"))
        .or_else(|| {
            inner
                .get("permit2Authorization")
                .and_then(|a| a.get("deadline"))
        })?;
    match v {
        Value::String(s) => s.parse::<i64>().ok(),
        Value::Number(n) => n.as_i64(),
        _ => None,
    }
}

/// The payer the payload names (EVM `from`), lower-cased.
fn payer_named(payload: &Value) -> Option<String> {
    let inner = payload.get("payload")?;
    inner
        .get("authorization")
        .or_else(|| inner.get("permit2Authorization"))?
        .get("from")?
        .as_str()
        .map(str::to_ascii_lowercase)
}

impl Gate {
    /// Whether this very header paid for a payment whose settlement is in doubt or done.
    async fn money_in_motion(&self, key: &str, header: &str) -> bool {
        let Ok(store) = self.ledger.store().await else {
            return false;
        };
        matches!(
            store.get(key).await,
            Ok(Some(row)) if row.state.money_in_motion() && row.header_hash == sha256_hex(header.as_bytes())
        )
    }

    /// A local refusal (docs/payment-checks.md): malformed → 400 `invalid_payment`; a payment
    /// that does not pay this offer now → the 402 with the facilitators' reason code. Both name
    /// the field.
    fn refuse_locally(&self, ex: &mut Exchange, r: Refusal) -> Flow {
        tracing::info!(request_id = %ex.id, code = r.code, field = r.field, "payment refused locally");
        let mut extra = Map::new();
        extra.insert("field".into(), Value::String(r.field.into()));
        let reply = match r.kind {
            RefusalKind::Malformed => {
                extra.insert("reason".into(), Value::String(r.code.into()));
                Reply::error_with(StatusCode::BAD_REQUEST, "invalid_payment", r.message, extra)
            }
            RefusalKind::Invalid => {
                let sold = ex.slots.get::<SoldAs>().cloned();
                let mut reply = self.challenge(sold.as_ref(), &ex.method, r.code, &r.message);
                if let Some(Value::Object(mut body)) = reply.body_json() {
                    body.append(&mut extra);
                    reply.body = serde_json::to_vec(&body).unwrap_or_default().into();
                }
                reply
            }
        };
        ex.reply = Some(reply);
        Flow::Reply
    }

    /// `payload.resource`, when the client echoes it, must name this route.
    fn check_resource(&self, payload: &Value, sold: Option<&SoldAs>) -> Option<String> {
        let url = payload.get("resource")?.get("url")?.as_str()?;
        let ours = sold
            .map(|s| s.url.as_str())
            .unwrap_or(&self.resource.url)
            .trim_end_matches('/');
        let theirs = url
            .split(['?', '#'])
            .next()
            .unwrap_or(url)
            .trim_end_matches('/');
        (theirs != ours).then(|| {
            format!("the payment's resource.url is {url}, but this route is {ours}: a payment pays for the resource it names")
        })
    }

    fn ledger_down(&self, ex: &mut Exchange, e: &LedgerError) -> Flow {
        tracing::error!(request_id = %ex.id, error = %e, "payment ledger unavailable; paid call refused before verify");
        ex.fail_with(
            StatusCode::SERVICE_UNAVAILABLE,
            "ledger_unavailable",
            "the payment ledger is unavailable, so no payment can be taken now; nothing was charged, retry after Retry-After seconds",
            &[("retry-after", "5")],
        )
    }
}

fn facilitator_message(e: &FacilitatorError) -> String {
    match e {
        FacilitatorError::Timeout => {
            "the payment facilitator did not answer in time; nothing was charged, retry later"
                .into()
        }
        _ => {
            "the payment facilitator could not be reached; nothing was charged, retry later".into()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_missing_fee_payer_warning_is_said_once_a_minute_for_the_process() {
        // Far past any real clock, so a warning elsewhere in this binary cannot interleave.
        let t = u64::MAX / 2;
        assert!(warn_due(t));
        assert!(
            !warn_due(t + 1),
            "a second gate in the same minute stays quiet"
        );
        assert!(!warn_due(t + 59_999));
        assert!(warn_due(t + 60_000));
    }

    fn row(state: State, attempts: i64, reply: bool) -> Row {
        Row {
            key: "k".into(),
            binding: Binding {
                route: "/api/http".into(),
                method: "GET".into(),
                input_hash: "i".into(),
            },
            header_hash: "h".into(),
            pid: None,
            amount: "1".into(),
            asset: "a".into(),
            network: "n".into(),
            pay_to: "p".into(),
            payer: None,
            request_id: "r".into(),
            state,
            attempts,
            lease_owner: "o".into(),
            lease_until_ms: 0,
            valid_before: 0,
            transaction: Some("0xt".into()),
            error: None,
            reply: reply.then(|| KeptReply {
                status: 200,
                headers: vec![],
                body: b"{}".to_vec(),
            }),
            reply_expires_ms: None,
            created_ms: 0,
            updated_ms: 0,
            verified_by: None,
            settled_by: None,
        }
    }

    #[test]
    fn a_payment_met_again_is_worked_served_resumed_or_refused() {
        use Takeover::*;
        assert_eq!(
            decide_takeover(&row(State::Claimed, 2, false), "h", 3),
            Work
        );
        assert_eq!(
            decide_takeover(&row(State::Verified, 9, false), "x", 3),
            Work
        );
        assert_eq!(
            decide_takeover(&row(State::NotCharged, 3, false), "h", 3),
            Work
        );
        assert!(matches!(
            decide_takeover(&row(State::NotCharged, 4, false), "h", 3),
            Refuse(
                StatusCode::TOO_MANY_REQUESTS,
                "payment_attempts_exhausted",
                _
            )
        ));
        assert_eq!(
            decide_takeover(&row(State::Settled, 2, true), "h", 3),
            Serve
        );
        assert!(matches!(
            decide_takeover(&row(State::Settled, 2, true), "other", 3),
            Refuse(StatusCode::CONFLICT, "payment_already_used", _)
        ));
        assert!(matches!(
            decide_takeover(&row(State::Settled, 2, false), "h", 3),
            Refuse(StatusCode::CONFLICT, "payment_already_used", _)
        ));
        assert_eq!(
            decide_takeover(&row(State::Pending, 2, true), "h", 3),
            Resume
        );
        assert_eq!(
            decide_takeover(&row(State::Settling, 2, true), "h", 3),
            Resume
        );
        assert!(matches!(
            decide_takeover(&row(State::Pending, 2, true), "other", 3),
            Refuse(StatusCode::CONFLICT, "payment_in_flight", _)
        ));
    }

    #[test]
    fn browsers_are_told_apart_by_accept() {
        let mut h = http::HeaderMap::new();
        assert!(!accepts_html(&h));
        h.append("accept", "application/json".parse().unwrap());
        assert!(!accepts_html(&h));
        h.append(
            "accept",
            "Text/HTML,application/xhtml+xml;q=0.9".parse().unwrap(),
        );
        assert!(accepts_html(&h));
        let mut h = http::HeaderMap::new();
        h.insert("accept", "*/*".parse().unwrap());
        assert!(!accepts_html(&h));
    }

    #[test]
    fn input_hashes_ignore_parameter_order() {
        let mut a = Map::new();
        a.insert("url".into(), json!("https://x"));
        a.insert("n".into(), json!(3));
        let mut b = Map::new();
        b.insert("n".into(), json!(3));
        b.insert("url".into(), json!("https://x"));
        assert_eq!(input_hash(&a), input_hash(&b));
        b.insert("n".into(), json!(4));
        assert_ne!(input_hash(&a), input_hash(&b));
    }
}
