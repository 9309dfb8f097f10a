//! How market answers write numbers and times: rounded for reading, NaN and infinity as null,
//! times as ISO 8601 UTC with milliseconds.

use chrono::{DateTime, Utc};
use serde_json::Value;

pub fn iso(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

/// Rounds for display: prices and rates keep their meaning, JSON stays readable.
pub fn round(x: f64, decimals: i32) -> f64 {
    let m = 10f64.powi(decimals);
    (x * m).round() / m
}

/// A finite f64 as JSON (NaN/inf → null).
pub fn jnum(x: f64) -> Value {
    serde_json::Number::from_f64(x)
        .map(Value::Number)
        .unwrap_or(Value::Null)
}

pub fn jopt(x: Option<f64>) -> Value {
    x.map(jnum).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_round_and_non_finite_is_null() {
        assert_eq!(round(1.23456, 2), 1.23);
        assert_eq!(round(-0.005, 2), -0.01);
        assert_eq!(jnum(f64::NAN), Value::Null);
        assert_eq!(jnum(f64::INFINITY), Value::Null);
        assert_eq!(jopt(None), Value::Null);
        assert_eq!(jopt(Some(2.5)), serde_json::json!(2.5));
    }

    #[test]
    fn times_are_utc_with_milliseconds() {
        let t = DateTime::parse_from_rfc3339("2026-11-22T03:58:08.123456Z")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(iso(t), "2026-11-22T03:58:08.123Z");
    }
}
