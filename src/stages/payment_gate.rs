//! `payment_gate`: the x402 v2 door of a paid route.
//!
//! No PAYMENT-SIGNATURE → 402 with the challenge (header, same JSON in the body, no-store),
//! whatever the input (auditors probe with no parameters). With one: undecodable → 400; bad
//! input → 400/413 without calling the facilitator (DESIGN §9 order of checks); no matching
//! offer → 402; local checks (payment::local_check: malformed → 400 `invalid_payment`, not
//! paying this offer now → 402 with the reason) before any facilitator call; the same payment
//! already in flight → 409; facilitator verify → continue or 402; facilitator unreachable /
//! timing out → 502 / 504 with Retry-After and no work done. A payment whose
//! settlement did not finish earlier resumes here (see settle). Parameters: none.

use async_trait::async_trait;
use http::{Method, StatusCode};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use crate::config::{AcceptOption, Config, ParamType, RouteSpec};
use crate::payment::local_check::{self, work_window, Refusal, RefusalKind};
use crate::pipeline::{
    params, BuildCtx, Exchange, Flow, PaymentState, Phase, Reply, Stage, StageFactory,
    VerifiedPayment,
};
use crate::x402::bazaar::{bazaar_extension, BazaarInput, BazaarParam, JsonType};
use crate::x402::challenge::payment_required;
use crate::x402::codec::{decode_header, encode_header};
use crate::x402::facilitator::{FacilitatorClient, FacilitatorError};
use crate::x402::ledger::{InFlight, Ledger, Pending};
use crate::x402::matching::{check_payload_shape, find_offer, payment_key};
use crate::x402::types::{Requirement, ResourceInfo};

pub const FACTORY: StageFactory = StageFactory {
    name: "payment_gate",
    phase: Phase::Gate,
    payment: true,
    needs: &[],
    gives: &["payment"],
    doc: "x402 v2: 402 challenge, decode PAYMENT-SIGNATURE, match the offer, facilitator verify",
    errors: &[
        (
            402,
            "Payment required or refused (PAYMENT-REQUIRED header holds the challenge)",
        ),
        (
            400,
            "PAYMENT-SIGNATURE is not decodable base64 JSON of an x402 v2 payload, or its payment is malformed (invalid_payment, `field` names what)",
        ),
        (409, "The same payment is already being served"),
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

/// Marks an exchange that resumes an unfinished settlement (read by settle).
#[derive(Clone)]
pub struct Resumed(pub Arc<Pending>);

/// Keeps the in-flight claim alive for the whole exchange.
pub struct Claim(#[allow(dead_code)] pub InFlight);

struct Gate {
    resource: ResourceInfo,
    /// Offers without the runtime-dependent Solana feePayer, one per accepted option.
    options: Vec<(AcceptOption, Requirement)>,
    /// bazaar extension per method the route serves.
    extensions: Vec<(Method, Value)>,
    facilitator: Arc<FacilitatorClient>,
    ledger: Arc<Ledger>,
    /// Unix ms of the last background /supported refresh we started.
    last_refresh: AtomicU64,
    /// Rendered plain challenges by (method, message, Solana feePayer).
    rendered: RwLock<HashMap<String, Reply>>,
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
        .map(|m| (m.clone(), json!({ "bazaar": bazaar_for(route, m) })))
        .collect();
    Ok(Arc::new(Gate {
        resource: resource_info(config, route),
        options,
        extensions,
        facilitator: ctx.services.need::<FacilitatorClient>()?,
        ledger: ctx.services.need::<Ledger>()?,
        last_refresh: AtomicU64::new(0),
        rendered: RwLock::new(HashMap::new()),
    }))
}

/// `resource` of the route's challenges: canonical base_url + path, no query (DESIGN §9).
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
    let params: Vec<BazaarParam> = route
        .input
        .iter()
        .filter(|p| !(p.name == "body" && !body && p.ty == ParamType::Any))
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
    /// The offers of this moment: Solana only when the facilitator names its feePayer.
    fn offers(&self) -> Vec<Requirement> {
        let mut out = Vec::with_capacity(self.options.len());
        let mut missing_fee_payer = false;
        for (opt, req) in &self.options {
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
        if missing_fee_payer {
            self.refresh_supported_soon();
        }
        out
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
            tokio::spawn(async move {
                if let Err(e) = fac.supported().await {
                    tracing::warn!(error = %e, "facilitator /supported failed; the Solana offer stays out of challenges");
                } else {
                    tracing::warn!(
                        "facilitator does not list a Solana feePayer; the Solana offer is left out"
                    );
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
    fn challenge(&self, method: &Method, error: &str, message: &str) -> Reply {
        let offers = self.offers();
        // The plain challenge is the hot path (every unpaid probe): render it once per method
        // and set of offers, then serve clones (the body is shared `Bytes`).
        let key = format!(
            "{method}|{error}|{message}|{}",
            offers
                .iter()
                .filter_map(|o| o.extra.get("feePayer").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join(",")
        );
        let plain = error == "Payment required";
        if plain {
            if let Some(r) = self.rendered.read().ok().and_then(|m| m.get(&key).cloned()) {
                return r;
            }
        }
        let reply = self.render_challenge(method, error, message, &offers);
        if plain {
            if let Ok(mut m) = self.rendered.write() {
                if m.len() > 64 {
                    m.clear();
                }
                m.insert(key, reply.clone());
            }
        }
        reply
    }

    fn render_challenge(
        &self,
        method: &Method,
        error: &str,
        message: &str,
        offers: &[Requirement],
    ) -> Reply {
        let pr = payment_required(error, &self.resource, offers, self.extension_for(method));
        let mut body = pr.clone();
        if let Value::Object(m) = &mut body {
            m.insert("message".into(), Value::String(message.to_string()));
        }
        Reply::json(StatusCode::PAYMENT_REQUIRED, &body)
            .with_header(HEADER_REQUIRED, &encode_header(&pr))
    }
}

#[async_trait]
impl Stage for Gate {
    async fn run(&self, ex: &mut Exchange) -> Flow {
        let header = ex
            .headers
            .get(HEADER_SIGNATURE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let probe = matches!(ex.method, Method::OPTIONS | Method::HEAD);
        let Some(header) = header.filter(|_| !probe) else {
            let msg = if ex.headers.contains_key("x-payment") {
                "this service speaks x402 v2: send the payment in PAYMENT-SIGNATURE, not X-PAYMENT"
            } else {
                "pay with x402 v2: sign one of `accepts` and repeat the request with PAYMENT-SIGNATURE"
            };
            ex.reply = Some(self.challenge(&ex.method, "Payment required", msg));
            return Flow::Reply;
        };
        let payload = match decode_header(&header) {
            Ok(v) => v,
            Err(e) => {
                return ex.fail(
                    StatusCode::BAD_REQUEST,
                    "invalid_payment_header",
                    format!("PAYMENT-SIGNATURE is not base64 JSON of an x402 payload: {e}"),
                )
            }
        };
        if let Err(e) = check_payload_shape(&payload) {
            return ex.fail(
                StatusCode::BAD_REQUEST,
                "invalid_payment_header",
                format!("PAYMENT-SIGNATURE is not an x402 v2 payment payload: {e}"),
            );
        }
        // DESIGN §9: with a payment attached, bad input is a 400 before the facilitator.
        if let Some(r) = ex.input_error.take() {
            ex.reply = Some(r);
            return Flow::Reply;
        }
        let offers = self.offers();
        let accepted = payload.get("accepted").cloned().unwrap_or(Value::Null);
        let Some(offer) = find_offer(&offers, &accepted).cloned() else {
            ex.reply = Some(self.challenge(
                &ex.method,
                "No matching payment requirements",
                "the signed offer does not match any current offer of this route; pay one of `accepts` as it is",
            ));
            return Flow::Reply;
        };
        // Issue 19: judge what can be judged locally before any facilitator call. A window that
        // closed since a pending settlement began does not stop the resume below.
        if let Err(r) = local_check::check(&payload, &offer, unix_now(), work_window(&offer)) {
            let resumes = r.is_window()
                && payment_key(&payload)
                    .and_then(|k| self.ledger.pending(&k))
                    .is_some_and(|p| p.header == header);
            if !resumes {
                return self.refuse_locally(ex, r);
            }
        }
        let Some(key) = payment_key(&payload) else {
            return ex.fail(
                StatusCode::BAD_REQUEST,
                "invalid_payment_header",
                "the payment carries no authorization nonce or transaction",
            );
        };
        let Some(claim) = self.ledger.claim(&key) else {
            return ex.fail(
                StatusCode::CONFLICT,
                "payment_in_flight",
                "this payment is already being used by another request; wait for its answer",
            );
        };
        ex.slots.put(Claim(claim));
        // A payment whose settlement did not finish earlier: serve the kept reply, not new work.
        if let Some(pending) = self.ledger.pending(&key) {
            if pending.header == header {
                ex.payment = PaymentState::Verified(VerifiedPayment {
                    payload: pending.payload.clone(),
                    requirement: pending.requirement.clone(),
                    header,
                    key,
                    payer: None,
                });
                ex.reply = Some(pending.reply.clone());
                ex.slots.put(Resumed(pending));
                return Flow::Reply;
            }
        }
        match self.facilitator.verify(&payload, &offer).await {
            Ok(v) if v.is_valid => {
                if let Some(ext) = &v.extension_responses {
                    tracing::info!(request_id = %ex.id, extensions = %ext, "facilitator extension responses");
                }
                ex.payment = PaymentState::Verified(VerifiedPayment {
                    payload,
                    requirement: offer.to_value(),
                    header,
                    key,
                    payer: v.payer.clone(),
                });
                Flow::Continue
            }
            Ok(v) => {
                let reason = v
                    .invalid_reason
                    .clone()
                    .unwrap_or_else(|| "payment_invalid".into());
                tracing::info!(request_id = %ex.id, reason = %reason, "payment refused by verify");
                ex.reply = Some(self.challenge(
                    &ex.method,
                    &reason,
                    &format!("the facilitator refused the payment: {reason}"),
                ));
                Flow::Reply
            }
            Err(e) => {
                let status = StatusCode::from_u16(e.status()).unwrap_or(StatusCode::BAD_GATEWAY);
                tracing::warn!(request_id = %ex.id, error = %e, "facilitator verify failed");
                ex.reply = Some(
                    Reply::error(status, e.code(), facilitator_message(&e))
                        .with_header("retry-after", "5"),
                );
                Flow::Reply
            }
        }
    }
}

impl Gate {
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
                let mut reply = self.challenge(&ex.method, r.code, &r.message);
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
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
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
