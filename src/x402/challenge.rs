//! Builds the x402 v2 `PaymentRequired` object carried (base64) in the `PAYMENT-REQUIRED`
//! header of a 402.

use serde_json::{Map, Value};

use super::types::{Requirement, ResourceInfo};

/// CDP rejects a `resource.description` longer than 500 characters with a confusing
/// `invalid_request`. The CDP side is JavaScript, whose string length counts UTF-16 code
/// units, so we cap in those units (which also keeps it ≤ 500 Unicode scalar values).
pub const MAX_DESCRIPTION_UTF16: usize = 500;

/// The v2 challenge: `{x402Version: 2, error, resource, accepts, extensions?}`.
///
/// `extensions` is omitted when `None`, `null` or an empty object. The description is
/// truncated on a character boundary to [`MAX_DESCRIPTION_UTF16`].
pub fn payment_required(
    error: &str,
    resource: &ResourceInfo,
    accepts: &[Requirement],
    extensions: Option<Value>,
) -> Value {
    let mut resource = resource.clone();
    resource.description = cap_description(&resource.description);

    let mut out = Map::new();
    out.insert("x402Version".into(), Value::from(2u64));
    out.insert("error".into(), Value::from(error));
    out.insert(
        "resource".into(),
        serde_json::to_value(&resource).unwrap_or(Value::Null),
    );
    out.insert(
        "accepts".into(),
        Value::Array(accepts.iter().map(Requirement::to_value).collect()),
    );
    match extensions {
        None | Some(Value::Null) => {}
        Some(Value::Object(m)) if m.is_empty() => {}
        Some(ext) => {
            out.insert("extensions".into(), ext);
        }
    }
    Value::Object(out)
}

/// Truncates to at most [`MAX_DESCRIPTION_UTF16`] UTF-16 code units without splitting a
/// character.
pub fn cap_description(description: &str) -> String {
    let mut units = 0usize;
    for (i, ch) in description.char_indices() {
        units += ch.len_utf16();
        if units > MAX_DESCRIPTION_UTF16 {
            return description[..i].to_string();
        }
    }
    description.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn resource(desc: &str) -> ResourceInfo {
        ResourceInfo {
            url: "https://paycall.example/api/pulse".into(),
            description: desc.into(),
            mime_type: "application/json".into(),
            service_name: Some("paycall".into()),
            tags: Some(vec!["crypto".into(), "prices".into()]),
        }
    }

    fn base_offer() -> Requirement {
        Requirement {
            scheme: "exact".into(),
            network: "eip155:8453".into(),
            amount: "5000".into(),
            asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913".into(),
            pay_to: "0xdF1D7b5C056D78F5aA14138a5695f7FF6F7aCFf3".into(),
            max_timeout_seconds: 120,
            extra: json!({"name": "USD Coin", "version": "2"})
                .as_object()
                .cloned()
                .unwrap(),
        }
    }

    #[test]
    fn emits_the_v2_shape() {
        let v = payment_required(
            "Payment required",
            &resource("Prices"),
            &[base_offer()],
            None,
        );
        assert_eq!(
            v,
            json!({
                "x402Version": 2,
                "error": "Payment required",
                "resource": {
                    "url": "https://paycall.example/api/pulse",
                    "description": "Prices",
                    "mimeType": "application/json",
                    "serviceName": "paycall",
                    "tags": ["crypto", "prices"]
                },
                "accepts": [{
                    "scheme": "exact",
                    "network": "eip155:8453",
                    "amount": "5000",
                    "asset": "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
                    "payTo": "0xdF1D7b5C056D78F5aA14138a5695f7FF6F7aCFf3",
                    "maxTimeoutSeconds": 120,
                    "extra": {"name": "USD Coin", "version": "2"}
                }]
            })
        );
        assert!(v["x402Version"].is_u64());
        let keys: Vec<_> = v.as_object().unwrap().keys().cloned().collect();
        assert_eq!(keys, ["x402Version", "error", "resource", "accepts"]);
    }

    #[test]
    fn extensions_only_when_non_empty() {
        let r = resource("x");
        assert!(payment_required("e", &r, &[], Some(json!({})))
            .get("extensions")
            .is_none());
        assert!(payment_required("e", &r, &[], Some(Value::Null))
            .get("extensions")
            .is_none());
        let ext = json!({"bazaar": {"info": {}, "schema": {}}});
        assert_eq!(
            payment_required("e", &r, &[], Some(ext.clone()))["extensions"],
            ext
        );
    }

    #[test]
    fn optional_resource_fields_are_omitted() {
        let mut r = resource("x");
        r.service_name = None;
        r.tags = None;
        let v = payment_required("e", &r, &[], None);
        assert_eq!(
            v["resource"],
            json!({"url": r.url, "description": "x", "mimeType": "application/json"})
        );
    }

    #[test]
    fn description_is_capped_on_a_char_boundary() {
        let long = "a".repeat(600);
        let v = payment_required("e", &resource(&long), &[], None);
        assert_eq!(v["resource"]["description"].as_str().unwrap().len(), 500);

        // 499 ASCII + an emoji (2 UTF-16 units) would be 501 units: the emoji goes.
        let s = format!("{}😀tail", "a".repeat(499));
        assert_eq!(cap_description(&s), "a".repeat(499));
        // Multi-byte but single-unit characters count once.
        let e = "é".repeat(500);
        assert_eq!(cap_description(&e), e);
        assert_eq!(cap_description(&format!("{e}é")), e);
        assert_eq!(cap_description(""), "");
    }
}
