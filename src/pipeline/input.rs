//! A route's input schema applied to a request: query string for GET/DELETE, JSON body for
//! POST/PUT/PATCH. Produces the validated input (defaults applied) or the 400/413 reply.
//!
//! Rules worth knowing (also in /openapi.json): unknown parameters are ignored; an empty query
//! value counts as absent; a repeated query parameter takes its first value; object parameters
//! arrive in a query as JSON text; numbers in a JSON body may also be numeric strings.
//!
//! A query string holds at most [`MAX_QUERY_PARAMS`] parameters (repeats count): more is a 400
//! `too_many_parameters`. Reading stops at the first one too many, so the work per request is
//! bounded by the cap, not by the URI; like every input error it is answered after the payment
//! gate (an unpaid request still gets its 402).

use http::{Method, StatusCode};
use serde_json::{Map, Number, Value};
use std::borrow::Cow;
use std::collections::HashMap;

use super::exchange::Reply;
use crate::config::{ParamSpec, ParamType, RouteSpec};

pub fn reads_body(method: &Method) -> bool {
    matches!(*method, Method::POST | Method::PUT | Method::PATCH)
}

/// Validates a request's input against the route's schema.
pub fn validate(
    route: &RouteSpec,
    method: &Method,
    query: &str,
    body: &[u8],
) -> Result<Map<String, Value>, Reply> {
    if reads_body(method) {
        if body.len() > route.max_request_bytes {
            return Err(too_large(route.max_request_bytes));
        }
        let trimmed = body.iter().all(u8::is_ascii_whitespace);
        let obj = if trimmed {
            Map::new()
        } else {
            match serde_json::from_slice::<Value>(body) {
                Ok(Value::Object(m)) => m,
                Ok(_) => {
                    return Err(bad(
                        "invalid_body",
                        "the request body must be a JSON object",
                    ))
                }
                Err(e) => {
                    return Err(bad(
                        "invalid_body",
                        format!("the request body is not valid JSON: {e}"),
                    ))
                }
            }
        };
        validate_values(route, |name| obj.get(name).cloned(), false)
    } else {
        let pairs = query_pairs(query)?;
        validate_values(
            route,
            |name| {
                pairs
                    .get(name)
                    .filter(|v| !v.is_empty())
                    .map(|v| Value::String(v.to_string()))
            },
            true,
        )
    }
}

/// More query parameters than any route takes (the largest has a handful): a longer query is
/// not a caller's mistake worth parsing.
pub const MAX_QUERY_PARAMS: usize = 64;

/// The query's parameters, first value of each name kept; linear in the query's length and
/// stopped at the first parameter over [`MAX_QUERY_PARAMS`].
pub fn query_pairs(query: &str) -> Result<HashMap<Cow<'_, str>, Cow<'_, str>>, Reply> {
    let mut pairs = HashMap::new();
    for (i, (k, v)) in url::form_urlencoded::parse(query.as_bytes()).enumerate() {
        if i == MAX_QUERY_PARAMS {
            return Err(bad(
                "too_many_parameters",
                format!("the query string has more than {MAX_QUERY_PARAMS} parameters"),
            ));
        }
        pairs.entry(k).or_insert(v);
    }
    Ok(pairs)
}

/// Validates a JSON object (the demo's fixed input) as if it were a body.
pub fn validate_object(
    route: &RouteSpec,
    obj: &Map<String, Value>,
) -> Result<Map<String, Value>, Reply> {
    validate_values(route, |name| obj.get(name).cloned(), false)
}

pub fn too_large(cap: usize) -> Reply {
    Reply::error(
        StatusCode::PAYLOAD_TOO_LARGE,
        "request_too_large",
        format!("the request body is larger than {cap} bytes"),
    )
}

fn bad(code: &str, message: impl Into<String>) -> Reply {
    Reply::error(StatusCode::BAD_REQUEST, code, message)
}

fn validate_values(
    route: &RouteSpec,
    get: impl Fn(&str) -> Option<Value>,
    from_query: bool,
) -> Result<Map<String, Value>, Reply> {
    let mut out = Map::new();
    for p in &route.input {
        match get(&p.name) {
            None | Some(Value::Null) => {
                if p.required {
                    return Err(bad(
                        "missing_parameter",
                        format!("`{}` is required: {}", p.name, p.description),
                    ));
                }
                if let Some(d) = &p.default {
                    out.insert(p.name.clone(), d.clone());
                }
            }
            Some(v) => {
                let v = convert(p, v, from_query).map_err(|m| bad(&p.error_code, m))?;
                out.insert(p.name.clone(), v);
            }
        }
    }
    Ok(out)
}

fn convert(p: &ParamSpec, v: Value, from_query: bool) -> Result<Value, String> {
    let name = &p.name;
    let v = match p.ty {
        ParamType::String => match v {
            Value::String(s) => Value::String(s),
            _ => return Err(format!("`{name}` must be a string")),
        },
        ParamType::Integer => {
            let n = match &v {
                Value::Number(n) => n.as_i64().ok_or(()).or_else(|_| {
                    n.as_f64()
                        .filter(|f| f.fract() == 0.0 && f.abs() < 9e15)
                        .map(|f| f as i64)
                        .ok_or(())
                }),
                Value::String(s) => s.trim().parse::<i64>().map_err(|_| ()),
                _ => Err(()),
            }
            .map_err(|_| format!("`{name}` must be an integer"))?;
            check_range(p, n as f64)?;
            Value::Number(n.into())
        }
        ParamType::Number => {
            let f = match &v {
                Value::Number(n) => n.as_f64(),
                Value::String(s) => s.trim().parse::<f64>().ok(),
                _ => None,
            }
            .filter(|f| f.is_finite())
            .ok_or_else(|| format!("`{name}` must be a number"))?;
            check_range(p, f)?;
            Value::Number(
                Number::from_f64(f).ok_or_else(|| format!("`{name}` must be a finite number"))?,
            )
        }
        ParamType::Boolean => match &v {
            Value::Bool(b) => Value::Bool(*b),
            Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
                "true" | "1" | "yes" => Value::Bool(true),
                "false" | "0" | "no" => Value::Bool(false),
                _ => return Err(format!("`{name}` must be true or false")),
            },
            _ => return Err(format!("`{name}` must be true or false")),
        },
        ParamType::Object => match v {
            Value::Object(m) => Value::Object(m),
            Value::String(s) if from_query => {
                if let Some(max) = p.max_length {
                    if s.chars().count() > max {
                        return Err(format!("`{name}` is longer than {max} characters"));
                    }
                }
                match serde_json::from_str::<Value>(&s) {
                    Ok(Value::Object(m)) => Value::Object(m),
                    Ok(_) => return Err(format!("`{name}` must be a JSON object")),
                    Err(e) => return Err(format!("`{name}` is not valid JSON: {e}")),
                }
            }
            _ => return Err(format!("`{name}` must be a JSON object")),
        },
        ParamType::Any => v,
    };
    if let Value::String(s) = &v {
        let len = s.chars().count();
        if let Some(max) = p.max_length {
            if len > max {
                return Err(format!("`{name}` is longer than {max} characters"));
            }
        }
        if let Some(min) = p.min_length {
            if len < min {
                return Err(format!("`{name}` is shorter than {min} characters"));
            }
        }
        if let Some(re) = &p.pattern {
            if !re.is_match(s) {
                return Err(format!(
                    "`{name}` does not match the pattern {}",
                    re.as_str()
                ));
            }
        }
        if p.format.as_deref() == Some("uri") {
            match url::Url::parse(s) {
                Ok(u) if matches!(u.scheme(), "http" | "https") => {}
                _ => return Err(format!("`{name}` must be an absolute http(s) URL")),
            }
        }
    }
    if let Some(allowed) = &p.enumeration {
        let found = allowed.iter().find(|a| match (a, &v) {
            (Value::String(a), Value::String(s)) if p.case_insensitive => a.eq_ignore_ascii_case(s),
            (a, v) => *a == v,
        });
        match found {
            Some(a) => return Ok(a.clone()),
            None => {
                let list: Vec<String> = allowed
                    .iter()
                    .map(|a| {
                        a.as_str()
                            .map(str::to_string)
                            .unwrap_or_else(|| a.to_string())
                    })
                    .collect();
                return Err(format!("`{name}` must be one of: {}", list.join(", ")));
            }
        }
    }
    Ok(v)
}

fn check_range(p: &ParamSpec, f: f64) -> Result<(), String> {
    if let Some(lo) = p.minimum {
        if f < lo {
            return Err(format!("`{}` must be at least {lo}", p.name));
        }
    }
    if let Some(hi) = p.maximum {
        if f > hi {
            return Err(format!("`{}` must be at most {hi}", p.name));
        }
    }
    Ok(())
}

/// For stages with a `skip_if_param` parameter: whether this request carries that parameter
/// (present, not null), so the stage sits it out (url_guard and fetch when /api/extract gets
/// the caller's own `html`).
pub fn skips(param: Option<&str>, input: &Map<String, Value>) -> bool {
    param.is_some_and(|p| input.get(p).is_some_and(|v| !v.is_null()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_value_wins_and_every_pair_is_read() {
        let p = query_pairs("a=1&b=2&a=3&c=&d=x%20y").unwrap();
        assert_eq!(p["a"], "1");
        assert_eq!(p["b"], "2");
        assert_eq!(p["c"], "");
        assert_eq!(p["d"], "x y");
        assert_eq!(p.len(), 4);
        assert!(query_pairs("").unwrap().is_empty());
    }

    #[test]
    fn the_parameter_cap_is_exact() {
        let q = |n: usize| {
            (0..n)
                .map(|i| format!("k{i}=v"))
                .collect::<Vec<_>>()
                .join("&")
        };
        assert_eq!(
            query_pairs(&q(MAX_QUERY_PARAMS)).unwrap().len(),
            MAX_QUERY_PARAMS
        );
        let err = query_pairs(&q(MAX_QUERY_PARAMS + 1)).unwrap_err();
        assert_eq!(err.status, StatusCode::BAD_REQUEST);
        assert_eq!(err.body_json().unwrap()["error"], "too_many_parameters");
        // repeats count too: they cost the same to read
        let repeated = vec!["a=1"; MAX_QUERY_PARAMS + 1].join("&");
        assert!(query_pairs(&repeated).is_err());
    }

    #[test]
    fn a_huge_query_of_distinct_keys_is_refused() {
        // ~13,000 distinct short keys under the URI limit: the read stops at the cap.
        let q: String = (0..13_000).map(|i| format!("{i:x}&")).collect();
        assert_eq!(
            query_pairs(&q).unwrap_err().body_json().unwrap()["error"],
            "too_many_parameters"
        );
    }
}
