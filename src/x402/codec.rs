//! Header codec for the three x402 v2 headers (`PAYMENT-REQUIRED`, `PAYMENT-SIGNATURE`,
//! `PAYMENT-RESPONSE`): base64 (standard alphabet, padded) of compact UTF-8 JSON.
//!
//! Two decoders on purpose: [`decode_header`] is as strict as the TS reference and x402-rs
//! (what we accept on our own money path), [`decode_lenient`] is for reading third parties
//! (a facilitator's answer, another seller's 402 with [`decode_lenient_uncapped`]) and
//! reports which base64 variant they used.

use base64::alphabet;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, STANDARD};
use base64::engine::DecodePaddingMode;
use base64::Engine;
use serde_json::Value;

/// Longest header value we try to decode. A Solana payload (≈ 1.2 KB transaction) plus an
/// echoed bazaar extension stays well below this; anything larger is abuse.
pub const MAX_HEADER_LEN: usize = 64 * 1024;

/// Why a header value could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodecError {
    #[error("the header is empty")]
    Empty,
    #[error("the header is {0} bytes long, more than the {MAX_HEADER_LEN} accepted")]
    TooLong(usize),
    #[error("the header is not padded standard base64: {0}")]
    Base64(String),
    #[error("the decoded header is not JSON: {0}")]
    Json(String),
    #[error("the decoded header is JSON but not an object")]
    NotObject,
}

/// Which base64 flavour a third party used. `Standard` is the only conformant one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Base64Variant {
    /// Standard alphabet with correct `=` padding (or a length that needs none).
    Standard,
    /// Standard alphabet, padding missing.
    StandardNoPad,
    /// URL-safe alphabet (`-`, `_`) with padding.
    UrlSafe,
    /// URL-safe alphabet without padding.
    UrlSafeNoPad,
}

impl Base64Variant {
    /// Stable name for audit reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Base64Variant::Standard => "standard",
            Base64Variant::StandardNoPad => "standard-no-pad",
            Base64Variant::UrlSafe => "url-safe",
            Base64Variant::UrlSafeNoPad => "url-safe-no-pad",
        }
    }

    /// True only for the variant the x402 v2 transport spec requires.
    pub fn is_conformant(self) -> bool {
        self == Base64Variant::Standard
    }
}

/// Encodes a JSON value the way every x402 v2 header carries it.
pub fn encode_header(value: &Value) -> String {
    // Serialising a Value cannot fail (map keys are strings by construction).
    let json = serde_json::to_vec(value).unwrap_or_default();
    STANDARD.encode(json)
}

/// Strict decoder for headers we receive on the money path (PAYMENT-SIGNATURE).
///
/// Surrounding whitespace is tolerated (proxies and hand-written clients add it); anything
/// else outside padded standard base64 of a JSON object is rejected.
pub fn decode_header(raw: &str) -> Result<Value, CodecError> {
    let raw = precheck(raw)?;
    // STANDARD rejects missing/extra padding, URL-safe characters and non-canonical
    // trailing bits, matching the TS regex ^[A-Za-z0-9+/]*={0,2}$ plus length rules.
    let bytes = STANDARD
        .decode(raw)
        .map_err(|e| CodecError::Base64(e.to_string()))?;
    let value = parse_json(&bytes)?;
    if !value.is_object() {
        return Err(CodecError::NotObject);
    }
    Ok(value)
}

/// Lenient decoder for auditing other servers: accepts standard or URL-safe alphabets, with
/// or without padding, and says which one was used. The JSON may be any value: whether it is
/// an object is the auditor's finding to make.
pub fn decode_lenient(raw: &str) -> Result<(Value, Base64Variant), CodecError> {
    check_len(raw)?;
    decode_lenient_uncapped(raw)
}

/// As [`decode_lenient`], at any length: an auditor reports on whatever a third party sent
/// (a 402 listing 100,000 offers is a finding, not a reason to stop reading).
pub fn decode_lenient_uncapped(raw: &str) -> Result<(Value, Base64Variant), CodecError> {
    let raw = trimmed(raw)?;
    let url_safe = raw.contains(['-', '_']);
    if url_safe && raw.contains(['+', '/']) {
        return Err(CodecError::Base64(
            "mixes the standard (+/) and URL-safe (-_) alphabets".into(),
        ));
    }
    let padded = raw.ends_with('=') || raw.len() % 4 == 0;
    let variant = match (url_safe, padded) {
        (false, true) => Base64Variant::Standard,
        (false, false) => Base64Variant::StandardNoPad,
        (true, true) => Base64Variant::UrlSafe,
        (true, false) => Base64Variant::UrlSafeNoPad,
    };
    let config = GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true);
    let engine = if url_safe {
        GeneralPurpose::new(&alphabet::URL_SAFE, config)
    } else {
        GeneralPurpose::new(&alphabet::STANDARD, config)
    };
    let bytes = engine
        .decode(raw)
        .map_err(|e| CodecError::Base64(e.to_string()))?;
    Ok((parse_json(&bytes)?, variant))
}

fn precheck(raw: &str) -> Result<&str, CodecError> {
    check_len(raw)?;
    trimmed(raw)
}

fn check_len(raw: &str) -> Result<(), CodecError> {
    if raw.len() > MAX_HEADER_LEN {
        return Err(CodecError::TooLong(raw.len()));
    }
    Ok(())
}

fn trimmed(raw: &str) -> Result<&str, CodecError> {
    let raw = raw.trim();
    if raw.is_empty() {
        return Err(CodecError::Empty);
    }
    Ok(raw)
}

fn parse_json(bytes: &[u8]) -> Result<Value, CodecError> {
    // serde_json caps nesting at 128 levels, so hostile input cannot overflow the stack.
    serde_json::from_slice(bytes).map_err(|e| CodecError::Json(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trip_is_compact_padded_standard() {
        let v = json!({"a": "é+/?", "n": 2});
        let enc = encode_header(&v);
        assert_eq!(
            STANDARD.decode(&enc).unwrap(),
            "{\"a\":\"é+/?\",\"n\":2}".as_bytes()
        );
        assert_eq!(enc.len() % 4, 0);
        assert_eq!(decode_header(&enc).unwrap(), v);
        assert_eq!(decode_header(&format!("  {enc}\t\r\n")).unwrap(), v);
    }

    /// A small object whose standard encoding has '+', '/' and '=' padding, so every
    /// variant differs from it.
    fn tricky() -> (Value, String) {
        for i in 0..5000u32 {
            let v = json!({"k": format!("{i}>>>???~~~")});
            let s = encode_header(&v);
            if s.contains('+') && s.contains('/') && s.ends_with('=') {
                return (v, s);
            }
        }
        panic!("no small value encodes with + / and padding");
    }

    #[test]
    fn strict_rejects_variants_and_non_objects() {
        let (v, std) = tricky();
        assert_eq!(decode_header(&std).unwrap(), v);
        let nopad = std.trim_end_matches('=');
        let url = std.replace('+', "-").replace('/', "_");
        assert!(matches!(decode_header(nopad), Err(CodecError::Base64(_))));
        assert!(matches!(decode_header(&url), Err(CodecError::Base64(_))));
        assert!(matches!(
            decode_header(&format!("{std}=")),
            Err(CodecError::Base64(_))
        ));
        assert_eq!(decode_header(""), Err(CodecError::Empty));
        assert_eq!(decode_header("   "), Err(CodecError::Empty));
        assert_eq!(
            decode_header(&STANDARD.encode("[1,2]")),
            Err(CodecError::NotObject)
        );
        assert_eq!(
            decode_header(&STANDARD.encode("\"x\"")),
            Err(CodecError::NotObject)
        );
        assert!(matches!(
            decode_header(&STANDARD.encode("{not json")),
            Err(CodecError::Json(_))
        ));
        assert!(matches!(
            decode_header(&STANDARD.encode([0xff, 0xfe, b'{'])),
            Err(CodecError::Json(_))
        ));
        assert!(matches!(
            decode_header("e30=e30="),
            Err(CodecError::Base64(_))
        ));
        // Deeply nested JSON is refused by serde_json's depth limit instead of overflowing.
        let deep = format!("{{\"a\":{}{}}}", "[".repeat(5000), "]".repeat(5000));
        assert!(matches!(
            decode_header(&STANDARD.encode(deep)),
            Err(CodecError::Json(_))
        ));
        let huge = "A".repeat(MAX_HEADER_LEN + 4);
        assert!(matches!(decode_header(&huge), Err(CodecError::TooLong(_))));
    }

    #[test]
    fn lenient_reports_each_variant() {
        let (v, std) = tricky();
        let nopad = std.trim_end_matches('=').to_string();
        let url = std.replace('+', "-").replace('/', "_");
        let url_nopad = url.trim_end_matches('=').to_string();

        assert_eq!(
            decode_lenient(&std).unwrap(),
            (v.clone(), Base64Variant::Standard)
        );
        assert_eq!(
            decode_lenient(&nopad).unwrap(),
            (v.clone(), Base64Variant::StandardNoPad)
        );
        assert_eq!(
            decode_lenient(&url).unwrap(),
            (v.clone(), Base64Variant::UrlSafe)
        );
        assert_eq!(
            decode_lenient(&url_nopad).unwrap(),
            (v.clone(), Base64Variant::UrlSafeNoPad)
        );
        assert!(Base64Variant::Standard.is_conformant());
        assert!(!Base64Variant::UrlSafeNoPad.is_conformant());
        assert_eq!(Base64Variant::UrlSafeNoPad.as_str(), "url-safe-no-pad");
        // Lenient does not insist on an object: that is the auditor's finding to make.
        assert_eq!(
            decode_lenient(&STANDARD.encode("[1]")).unwrap().0,
            json!([1])
        );
        // Mixed alphabets are an error, not a guess.
        assert!(matches!(decode_lenient("ab+-"), Err(CodecError::Base64(_))));
        assert!(matches!(decode_lenient("!!!!"), Err(CodecError::Base64(_))));
        assert_eq!(decode_lenient(" "), Err(CodecError::Empty));
    }

    #[test]
    fn only_the_uncapped_lenient_decoder_reads_past_the_cap() {
        let big = encode_header(&serde_json::json!({ "pad": "x".repeat(MAX_HEADER_LEN) }));
        assert!(matches!(decode_lenient(&big), Err(CodecError::TooLong(_))));
        assert_eq!(
            decode_lenient_uncapped(&big).unwrap().1,
            Base64Variant::Standard
        );
        assert_eq!(decode_lenient_uncapped("  "), Err(CodecError::Empty));
    }
}
