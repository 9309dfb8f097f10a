//! The `payment-identifier` extension: a client-chosen id that makes a paid request
//! idempotent. We advertise it in every challenge (`required: false`); a payload that carries
//! `extensions["payment-identifier"].info.id` is looked up before any facilitator call: the
//! same id with the same payment gets the stored reply, the same id with another payment is a
//! conflict. Ids are scoped per route (the ledger's unique index is on route + id).

use serde_json::{json, Value};

pub const EXTENSION: &str = "payment-identifier";
pub const MIN_LEN: usize = 16;
pub const MAX_LEN: usize = 128;

/// The declaration for `PaymentRequired.extensions`.
pub fn declaration(required: bool) -> Value {
    json!({
        "info": { "required": required },
        "schema": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "id": {
                    "type": "string",
                    "minLength": MIN_LEN,
                    "maxLength": MAX_LEN,
                    "pattern": "^[a-zA-Z0-9_-]+$"
                }
            },
            "required": ["id"]
        }
    })
}

/// True for 16–128 letters, digits, `-` and `_`.
pub fn valid_id(id: &str) -> bool {
    (MIN_LEN..=MAX_LEN).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The id a payload carries: Ok(None) when the client sent none (the extension absent, or
/// echoed back without an id), Err with the reason when it is malformed (a 400 before any
/// facilitator call).
pub fn parse(payload: &Value) -> Result<Option<String>, String> {
    let Some(ext) = payload.get("extensions").and_then(|e| e.get(EXTENSION)) else {
        return Ok(None);
    };
    let id = match ext.get("info").and_then(|i| i.get("id")) {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(s)) => s,
        Some(_) => return Err("extensions.payment-identifier.info.id must be a string".into()),
    };
    if !valid_id(id) {
        return Err(format!(
            "extensions.payment-identifier.info.id must be {MIN_LEN}-{MAX_LEN} letters, digits, '-' or '_' (got {} characters)",
            id.chars().count()
        ));
    }
    Ok(Some(id.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_read_only_when_well_formed() {
        let with = |info: Value| json!({"extensions": {"payment-identifier": {"info": info}}});
        assert_eq!(parse(&json!({})), Ok(None));
        assert_eq!(parse(&with(json!({"required": false}))), Ok(None));
        assert_eq!(
            parse(&with(json!({"id": "pay_0123456789abcdef"}))),
            Ok(Some("pay_0123456789abcdef".into()))
        );
        assert!(parse(&with(json!({"id": "short"}))).is_err());
        assert!(parse(&with(json!({"id": "has space 0123456789"}))).is_err());
        assert!(parse(&with(json!({"id": "x".repeat(129)}))).is_err());
        assert!(parse(&with(json!({"id": 12345678901234567u64}))).is_err());
        assert!(valid_id(&"a".repeat(128)) && valid_id(&"-_".repeat(8)));
    }

    #[test]
    fn the_declaration_is_optional_and_carries_its_schema() {
        let d = declaration(false);
        assert_eq!(d["info"]["required"], false);
        assert_eq!(d["schema"]["properties"]["id"]["minLength"], 16);
    }
}
