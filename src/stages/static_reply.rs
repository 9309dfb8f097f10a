//! `static_reply`: answers with a fixed body, so a chain can run without any upstream (a free
//! /api/ping for operators, engine and discovery tests).
//!
//! Parameters:
//! - `status` (u16, default 200): a 2xx answers `body` as a success (with `source`, `priced`
//!   and `asOf` added); a 4xx/5xx answers the house error shape, so `body` must then be an
//!   object with string `error` and `message` (other keys are kept).
//! - `body` (any JSON, default `{}`): the answer. A non-object success body is wrapped as
//!   `{result: …}`.
//! - `delay_ms` (default 0, at most 10000): wait before answering, to stand in for a slow
//!   upstream (drills, graceful-shutdown tests).

use async_trait::async_trait;
use http::StatusCode;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::sync::Arc;
use std::time::Duration;

use crate::pipeline::{params, BuildCtx, Exchange, Flow, Phase, Reply, Stage, StageFactory};

pub const FACTORY: StageFactory = StageFactory {
    name: "static_reply",
    phase: Phase::Work,
    payment: false,
    needs: &[],
    gives: &[],
    // The configured status is not known statically; routes that answer a fixed error are rare
    // enough that /openapi.json not listing it is acceptable.
    errors: &[],
    doc: "answer a fixed JSON body with a fixed status (no upstream)",
    build,
};

const MAX_DELAY_MS: u64 = 10_000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    #[serde(default = "default_status")]
    status: u16,
    #[serde(default = "empty_object")]
    body: Value,
    #[serde(default)]
    delay_ms: u64,
}

fn default_status() -> u16 {
    200
}

fn empty_object() -> Value {
    Value::Object(Map::new())
}

#[derive(Debug)]
enum Answer {
    Success(StatusCode, Value),
    Error(Reply),
}

#[derive(Debug)]
struct StaticReply {
    answer: Answer,
    delay: Duration,
}

fn build(_ctx: &BuildCtx<'_>, p: Value) -> Result<Arc<dyn Stage>, String> {
    let p: Params = params(p)?;
    Ok(Arc::new(from_params(p)?))
}

fn from_params(p: Params) -> Result<StaticReply, String> {
    let status = StatusCode::from_u16(p.status)
        .map_err(|_| format!("status {} is not an HTTP status", p.status))?;
    if p.delay_ms > MAX_DELAY_MS {
        return Err(format!("delay_ms is at most {MAX_DELAY_MS}"));
    }
    let answer = if status.is_success() {
        Answer::Success(status, p.body)
    } else if status.is_client_error() || status.is_server_error() {
        let Value::Object(mut obj) = p.body else {
            return Err(format!(
                "status {} needs body: {{ error: <code>, message: <sentence> }}",
                p.status
            ));
        };
        let code = obj.remove("error");
        let message = obj.remove("message");
        match (code, message) {
            (Some(Value::String(code)), Some(Value::String(message))) => {
                Answer::Error(Reply::error_with(status, &code, message, obj))
            }
            _ => {
                return Err(format!(
                    "status {} needs body.error and body.message as strings (the error shape)",
                    p.status
                ))
            }
        }
    } else {
        return Err(format!(
            "status {} cannot be answered statically: use 2xx, 4xx or 5xx",
            p.status
        ));
    };
    Ok(StaticReply {
        answer,
        delay: Duration::from_millis(p.delay_ms),
    })
}

#[async_trait]
impl Stage for StaticReply {
    async fn run(&self, ex: &mut Exchange) -> Flow {
        if !self.delay.is_zero() {
            tokio::time::sleep(self.delay).await;
        }
        match &self.answer {
            Answer::Success(status, body) => {
                let flow = ex.respond_ok(body.clone());
                if let Some(r) = ex.reply.as_mut() {
                    r.status = *status;
                }
                flow
            }
            Answer::Error(reply) => {
                ex.reply = Some(reply.clone());
                Flow::Reply
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> Result<StaticReply, String> {
        from_params(params(v)?)
    }

    #[test]
    fn parameters_are_checked() {
        assert!(parse(json!({})).is_ok());
        assert!(parse(json!({"status": 201, "body": [1, 2]})).is_ok());
        assert!(parse(json!({"status": 99})).is_err());
        assert!(parse(json!({"status": 302})).unwrap_err().contains("2xx"));
        assert!(parse(json!({"status": 503, "body": "down"}))
            .unwrap_err()
            .contains("error"));
        assert!(parse(json!({"status": 503, "body": {"error": "x"}})).is_err());
        assert!(parse(json!({"delay_ms": 10_001})).is_err());
        assert!(parse(json!({"bodyy": {}}))
            .unwrap_err()
            .contains("unknown field"));
    }

    #[test]
    fn success_keeps_status_and_body() {
        let s = parse(json!({"status": 201, "body": {"pong": true}})).unwrap();
        let Answer::Success(status, body) = s.answer else {
            panic!("not a success")
        };
        assert_eq!(status, StatusCode::CREATED);
        assert_eq!(body, json!({"pong": true}));
    }

    #[test]
    fn error_has_the_house_shape_and_keeps_extra_fields() {
        let s = parse(json!({"status": 503, "body": {"error": "maintenance", "message": "back soon", "until": "noon"}})).unwrap();
        let Answer::Error(reply) = s.answer else {
            panic!("not an error")
        };
        assert_eq!(reply.status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            reply.body_json().unwrap(),
            json!({"error": "maintenance", "message": "back soon", "until": "noon"})
        );
    }
}
