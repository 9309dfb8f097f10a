//! MCP's JSON-RPC framing, pure: parsing one POSTed message, the error codes, revision
//! negotiation and the `Origin` rule. No I/O here; `super::filter` wires it to warp.

use serde_json::{json, Map, Value};

/// Revisions we speak, newest first. Both have `isError`, `structuredContent`, `content` and
/// `_meta` on tool results, which is all the x402 tool-result binding needs.
pub const REVISIONS: &[&str] = &["2025-11-25", "2025-06-18"];

/// What a client that sends no `MCP-Protocol-Version` header is assumed to speak (the
/// streamable HTTP transport's rule); we answer it like the oldest revision we know.
pub const DEFAULT_HEADER_REVISION: &str = "2025-03-26";

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;

/// A JSON-RPC error, with the id it answers (`null` when the message had none we could read).
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub id: Value,
    pub code: i64,
    pub message: String,
}

impl RpcError {
    pub fn new(id: Value, code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            id,
            code,
            message: message.into(),
        }
    }

    pub fn to_json(&self) -> Value {
        json!({
            "jsonrpc": "2.0",
            "id": self.id,
            "error": { "code": self.code, "message": self.message },
        })
    }
}

/// One incoming message.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// A request: it gets exactly one answer.
    Request {
        id: Value,
        method: String,
        params: Map<String, Value>,
    },
    /// A notification (no id): accepted, never answered.
    Notification { method: String },
    /// A response from the client (to a server request we never send): accepted and dropped.
    Response,
}

/// Reads one POSTed body. Batches are refused: revision 2025-06-18 removed them.
pub fn parse(body: &[u8]) -> Result<Message, RpcError> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| RpcError::new(Value::Null, PARSE_ERROR, format!("not JSON: {e}")))?;
    let Value::Object(mut m) = v else {
        let why = if v.is_array() {
            "JSON-RPC batches are not supported (MCP 2025-06-18 removed them): send one message per POST"
        } else {
            "a JSON-RPC message is a JSON object"
        };
        return Err(RpcError::new(Value::Null, INVALID_REQUEST, why));
    };
    // The id, when usable, goes on every error about this message.
    let id = match m.get("id") {
        Some(v @ (Value::String(_) | Value::Number(_))) => Some(v.clone()),
        Some(Value::Null) | None => None,
        Some(_) => {
            return Err(RpcError::new(
                Value::Null,
                INVALID_REQUEST,
                "`id` must be a string or a number",
            ))
        }
    };
    let err = |code, msg: &str| RpcError::new(id.clone().unwrap_or(Value::Null), code, msg);
    if m.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(err(INVALID_REQUEST, "`jsonrpc` must be \"2.0\""));
    }
    let method = match m.remove("method") {
        Some(Value::String(s)) => s,
        Some(_) => return Err(err(INVALID_REQUEST, "`method` must be a string")),
        None if m.contains_key("result") || m.contains_key("error") => {
            return Ok(Message::Response)
        }
        None => return Err(err(INVALID_REQUEST, "`method` is missing")),
    };
    if m.contains_key("id") && id.is_none() {
        // MCP: "the ID MUST NOT be null".
        return Err(err(INVALID_REQUEST, "`id` must not be null"));
    }
    let params = match m.remove("params") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(p)) => p,
        Some(_) => return Err(err(INVALID_PARAMS, "`params` must be an object")),
    };
    Ok(match id {
        Some(id) => Message::Request { id, method, params },
        None => Message::Notification { method },
    })
}

/// A successful answer.
pub fn result(id: &Value, result: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "result": result })
}

/// The revision to answer `initialize` with: the client's when we speak it, else our newest
/// (the client then decides whether to go on).
pub fn negotiate(requested: Option<&str>) -> &'static str {
    requested
        .and_then(|r| REVISIONS.iter().find(|v| **v == r))
        .copied()
        .unwrap_or(REVISIONS[0])
}

/// Whether a request's `MCP-Protocol-Version` header is one we can answer.
pub fn header_revision_ok(header: Option<&str>) -> bool {
    match header {
        None => true,
        Some(v) => v == DEFAULT_HEADER_REVISION || REVISIONS.contains(&v),
    }
}

/// The DNS-rebinding defence MCP requires: a browser page may talk to /mcp only from our own
/// origins or from loopback (a local MCP inspector); clients that send no `Origin` (every
/// non-browser agent) pass.
pub fn origin_allowed(origin: Option<&str>, ours: &[String]) -> bool {
    let Some(origin) = origin else {
        return true;
    };
    let origin = origin.trim_end_matches('/');
    if ours.iter().any(|o| o.trim_end_matches('/') == origin) {
        return true;
    }
    match url::Url::parse(origin) {
        Ok(u) if matches!(u.scheme(), "http" | "https") => match u.host() {
            Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            None => false,
        },
        _ => false,
    }
}

/// A request's per-request client capabilities say it speaks the `org.x402/payment` extension
/// binding (`_meta["io.modelcontextprotocol/clientCapabilities"].extensions`, as a list of
/// names or an object keyed by name).
pub fn advertises_payment_extension(params: &Map<String, Value>) -> bool {
    let ext = params
        .get("_meta")
        .and_then(|m| m.get("io.modelcontextprotocol/clientCapabilities"))
        .and_then(|c| c.get("extensions"));
    match ext {
        Some(Value::Object(m)) => m.contains_key(PAYMENT_EXTENSION),
        Some(Value::Array(a)) => a.iter().any(|v| v.as_str() == Some(PAYMENT_EXTENSION)),
        _ => false,
    }
}

pub const PAYMENT_EXTENSION: &str = "org.x402/payment";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_notifications_and_responses_are_told_apart() {
        let m = parse(br#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#).unwrap();
        assert_eq!(
            m,
            Message::Request {
                id: json!(7),
                method: "tools/list".into(),
                params: Map::new()
            }
        );
        let m = parse(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).unwrap();
        assert_eq!(
            m,
            Message::Notification {
                method: "notifications/initialized".into()
            }
        );
        assert_eq!(
            parse(br#"{"jsonrpc":"2.0","id":"a","result":{}}"#).unwrap(),
            Message::Response
        );
    }

    #[test]
    fn malformed_messages_get_their_json_rpc_codes() {
        let code = |b: &[u8]| parse(b).unwrap_err().code;
        assert_eq!(code(b"{not json"), PARSE_ERROR);
        assert_eq!(code(b""), PARSE_ERROR);
        assert_eq!(
            code(br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#),
            INVALID_REQUEST
        );
        assert_eq!(code(br#""ping""#), INVALID_REQUEST);
        assert_eq!(code(br#"{"id":1,"method":"ping"}"#), INVALID_REQUEST);
        assert_eq!(code(br#"{"jsonrpc":"2.0","id":1}"#), INVALID_REQUEST);
        assert_eq!(
            code(br#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#),
            INVALID_REQUEST
        );
        assert_eq!(
            code(br#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#),
            INVALID_REQUEST
        );
        assert_eq!(
            code(br#"{"jsonrpc":"2.0","id":1,"method":5}"#),
            INVALID_REQUEST
        );
        let e = parse(br#"{"jsonrpc":"2.0","id":3,"method":"ping","params":[1]}"#).unwrap_err();
        assert_eq!((e.code, e.id), (INVALID_PARAMS, json!(3)));
        // The error names the id it answers when it could be read.
        let e = parse(br#"{"jsonrpc":"1.0","id":"x","method":"ping"}"#).unwrap_err();
        assert_eq!(e.id, json!("x"));
    }

    #[test]
    fn revisions_are_echoed_when_known_else_the_newest() {
        assert_eq!(negotiate(Some("2025-06-18")), "2025-06-18");
        assert_eq!(negotiate(Some("2025-11-25")), "2025-11-25");
        assert_eq!(negotiate(Some("2024-11-05")), "2025-11-25");
        assert_eq!(negotiate(None), "2025-11-25");
        assert!(header_revision_ok(None));
        assert!(header_revision_ok(Some("2025-06-18")));
        assert!(header_revision_ok(Some("2025-03-26")));
        assert!(!header_revision_ok(Some("1999-01-01")));
    }

    #[test]
    fn only_our_origins_and_loopback_may_call_from_a_browser() {
        let ours = vec!["https://paycall.example.com".to_string()];
        assert!(origin_allowed(None, &ours));
        assert!(origin_allowed(Some("https://paycall.example.com"), &ours));
        assert!(origin_allowed(Some("http://localhost:6274"), &ours));
        assert!(origin_allowed(Some("http://127.0.0.1:6274"), &ours));
        assert!(origin_allowed(Some("http://[::1]:3000"), &ours));
        assert!(!origin_allowed(Some("https://evil.example"), &ours));
        assert!(!origin_allowed(
            Some("https://paycall.example.com.evil.example"),
            &ours
        ));
        assert!(!origin_allowed(
            Some("http://localhost.evil.example"),
            &ours
        ));
        assert!(!origin_allowed(Some("null"), &ours));
    }

    #[test]
    fn the_payment_extension_is_seen_only_when_advertised() {
        let p = |v: Value| v.as_object().unwrap().clone();
        assert!(!advertises_payment_extension(&p(json!({"name": "fetch"}))));
        assert!(advertises_payment_extension(&p(json!({"_meta": {
            "io.modelcontextprotocol/clientCapabilities": {"extensions": {"org.x402/payment": {}}}
        }}))));
        assert!(advertises_payment_extension(&p(json!({"_meta": {
            "io.modelcontextprotocol/clientCapabilities": {"extensions": ["org.x402/payment"]}
        }}))));
        assert!(!advertises_payment_extension(&p(json!({"_meta": {
            "io.modelcontextprotocol/clientCapabilities": {"extensions": ["other"]}
        }}))));
    }
}
