//! The Exchange: one request walking its route's chain, and the Reply it ends with.
//!
//! Stages meet only here. Well-known artefacts have named fields (input, target, reply);
//! anything (the payment and its bill decision included, see `crate::payment`) route-specific travels in the typed `slots` map so a new stage
//! never has to edit this file.

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, StatusCode};
use serde_json::{json, Map, Value};
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use crate::config::RouteSpec;

/// What a stage hands back to the chain runner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Go on with the next stage.
    Continue,
    /// `ex.reply` is final for the work phase; only finishing stages (bill, settle) still run.
    Reply,
}

/// A finished HTTP answer, before the server adds the common headers.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Reply {
    pub fn json(status: StatusCode, value: &Value) -> Reply {
        let mut headers = HeaderMap::new();
        headers.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        Reply {
            status,
            headers,
            body: Bytes::from(serde_json::to_vec(value).unwrap_or_else(|_| b"{}".to_vec())),
        }
    }

    /// The house error shape: `{ "error": code, "message": sentence }`.
    pub fn error(status: StatusCode, code: &str, message: impl Into<String>) -> Reply {
        Reply::error_with(status, code, message, Map::new())
    }

    /// The error shape plus fields the route names (fieldErrors, …).
    pub fn error_with(
        status: StatusCode,
        code: &str,
        message: impl Into<String>,
        extra: Map<String, Value>,
    ) -> Reply {
        let mut body = Map::new();
        body.insert("error".into(), Value::String(code.into()));
        body.insert("message".into(), Value::String(message.into()));
        for (k, v) in extra {
            body.insert(k, v);
        }
        Reply::json(status, &Value::Object(body))
    }

    pub fn with_header(mut self, name: &'static str, value: &str) -> Reply {
        if let Ok(v) = HeaderValue::from_str(value) {
            self.headers.insert(name, v);
        }
        self
    }

    /// The JSON body, when it is JSON.
    pub fn body_json(&self) -> Option<Value> {
        serde_json::from_slice(&self.body).ok()
    }
}

/// Typed artefacts by type: one value per type.
#[derive(Default)]
pub struct Slots(HashMap<TypeId, Box<dyn Any + Send + Sync>>);

impl Slots {
    pub fn put<T: Any + Send + Sync>(&mut self, value: T) {
        self.0.insert(TypeId::of::<T>(), Box::new(value));
    }
    pub fn get<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.0
            .get(&TypeId::of::<T>())
            .and_then(|b| b.downcast_ref())
    }
    pub fn take<T: Any + Send + Sync>(&mut self) -> Option<T> {
        self.0
            .remove(&TypeId::of::<T>())
            .and_then(|b| b.downcast().ok())
            .map(|b| *b)
    }
}

pub struct Exchange {
    pub id: String,
    pub arrived: Instant,
    pub route: Arc<RouteSpec>,
    /// The route's `priced` block (2.1), precomputed.
    pub priced: Option<Arc<Value>>,
    pub method: Method,
    pub query: String,
    pub headers: HeaderMap,
    pub body: Bytes,
    pub remote: Option<SocketAddr>,
    /// Running as the free demo twin: payment stages are skipped.
    pub demo: bool,
    /// Validated input with defaults applied.
    pub input: Map<String, Value>,
    /// The 400/413 to give once payment is settled as a question (docs/decisions.md#order-of-checks).
    pub input_error: Option<Reply>,
    /// The vetted outbound URL (url_guard).
    pub target: Option<url::Url>,
    pub reply: Option<Reply>,
    pub slots: Slots,
}

impl Exchange {
    pub fn new(route: Arc<RouteSpec>, priced: Option<Arc<Value>>, method: Method) -> Exchange {
        Exchange {
            id: new_request_id(),
            arrived: Instant::now(),
            route,
            priced,
            method,
            query: String::new(),
            headers: HeaderMap::new(),
            body: Bytes::new(),
            remote: None,
            demo: false,
            input: Map::new(),
            input_error: None,
            target: None,
            reply: None,
            slots: Slots::default(),
        }
    }

    pub fn elapsed_ms(&self) -> u64 {
        self.arrived.elapsed().as_millis() as u64
    }

    pub fn input_str(&self, name: &str) -> Option<&str> {
        self.input.get(name).and_then(Value::as_str)
    }
    pub fn input_i64(&self, name: &str) -> Option<i64> {
        self.input.get(name).and_then(Value::as_i64)
    }
    pub fn input_bool(&self, name: &str) -> Option<bool> {
        self.input.get(name).and_then(Value::as_bool)
    }

    /// Finish with an error reply.
    pub fn fail(&mut self, status: StatusCode, code: &str, message: impl Into<String>) -> Flow {
        self.reply = Some(Reply::error(status, code, message));
        Flow::Reply
    }

    /// `fail` with extra response headers (Retry-After, …).
    pub fn fail_with(
        &mut self,
        status: StatusCode,
        code: &str,
        message: impl Into<String>,
        headers: &[(&'static str, &str)],
    ) -> Flow {
        let mut r = Reply::error(status, code, message);
        for (n, v) in headers {
            r = r.with_header(n, v);
        }
        self.reply = Some(r);
        Flow::Reply
    }

    /// Finish with a success body, adding `source`, `priced` and `asOf` (docs/decisions.md#answer-shape).
    pub fn respond_ok(&mut self, body: Value) -> Flow {
        self.reply = Some(Reply::json(StatusCode::OK, &self.stamp(body)));
        Flow::Reply
    }

    /// `respond_ok` with `asOf` = when the data was taken (the oldest part), not the time of the
    /// answer: a cached upstream answer says how old it is.
    pub fn respond_ok_as_of(&mut self, body: Value, taken: chrono::DateTime<chrono::Utc>) -> Flow {
        let mut v = self.stamp(body);
        if let Value::Object(o) = &mut v {
            o.insert("asOf".into(), Value::String(iso(taken)));
        }
        self.reply = Some(Reply::json(StatusCode::OK, &v));
        Flow::Reply
    }

    /// A stage ran without the artefact an earlier stage should have left (a chain bug).
    pub fn missing(&mut self, what: &str) -> Flow {
        self.fail_internal(&format!("{what} is missing; you were not charged"))
    }

    /// A 500 `internal_error` saying `message`: the chain is wrong, not the caller's input.
    pub fn fail_internal(&mut self, message: &str) -> Flow {
        self.fail(StatusCode::INTERNAL_SERVER_ERROR, "internal_error", message)
    }

    /// An upstream failed (not charged): the error shape with the upstream named in `upstream`,
    /// and `Retry-After` when the caller is asked to come back.
    pub fn fail_upstream(
        &mut self,
        status: u16,
        code: &str,
        message: &str,
        upstream: &str,
        retry_after_s: Option<u64>,
    ) -> Flow {
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
        tracing::warn!(request_id = %self.id, route = %self.route.path, upstream, error = message, "upstream failed");
        let mut extra = Map::new();
        extra.insert("upstream".into(), Value::String(upstream.into()));
        let mut reply = Reply::error_with(
            status,
            code,
            format!("{message}; you were not charged"),
            extra,
        );
        if let Some(s) = retry_after_s {
            reply = reply.with_header("retry-after", &s.to_string());
        }
        self.reply = Some(reply);
        Flow::Reply
    }

    /// An upstream failed and its error says the rest: [`Self::fail_upstream`] with the error's
    /// own status, code, upstream and when to come back.
    pub fn fail_upstream_error(&mut self, e: &dyn UpstreamFailure) -> Flow {
        self.fail_upstream(
            e.status(),
            e.code(),
            &e.to_string(),
            e.upstream(),
            e.retry_after_s(),
        )
    }

    /// Adds source/priced/asOf to an object body; other values are wrapped as `{result: …}`.
    pub fn stamp(&self, body: Value) -> Value {
        let mut obj = match body {
            Value::Object(m) => m,
            other => {
                let mut m = Map::new();
                m.insert("result".into(), other);
                m
            }
        };
        obj.insert("source".into(), Value::String(self.route.name.clone()));
        if let Some(p) = &self.priced {
            obj.insert("priced".into(), (**p).clone());
        }
        obj.insert("asOf".into(), Value::String(now_iso()));
        Value::Object(obj)
    }
}

/// ISO 8601 UTC with milliseconds, e.g. 2026-11-22T03:58:08.123Z.
pub fn now_iso() -> String {
    iso(chrono::Utc::now())
}

/// A time as ISO 8601 UTC with milliseconds.
pub fn iso(t: chrono::DateTime<chrono::Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

/// Short unique request id: time-ordered prefix + randomness.
pub fn new_request_id() -> String {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    let r: u32 = rand::random();
    format!("{t:011x}{r:08x}")
}

/// The `priced` block for a route (docs/decisions.md#answer-shape): first accepted option's network short name.
pub fn priced_block(route: &RouteSpec, accepts: &[crate::config::AcceptOption]) -> Option<Value> {
    let price = route.price.as_ref()?;
    let first = accepts.first()?;
    Some(json!({
        "amountUsd": price.usd,
        "amountAtomic": price.atomic.first().cloned().unwrap_or_default(),
        "asset": first.asset,
        "network": first.name,
        "payTo": first.pay_to,
    }))
}

/// What a failed upstream says of itself, so the engine can answer for a domain's error
/// ([`Exchange::fail_upstream_error`]) without knowing the domain: the engine imports no domain
/// module; the impls live with the stages that use them (`crate::stages`).
pub trait UpstreamFailure: std::fmt::Display {
    /// The HTTP status to answer (a 5xx, or 429/504 as the failure says).
    fn status(&self) -> u16;
    /// The stable error code.
    fn code(&self) -> &str;
    /// The upstream's configured name.
    fn upstream(&self) -> &str;
    /// Seconds after which the caller may retry, when the failure knows.
    fn retry_after_s(&self) -> Option<u64>;
}
