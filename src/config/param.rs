//! One entry of a route's `input:` → a `ParamSpec` the input validator and the discovery
//! documents read.

use super::{raw, ParamSpec, ParamType};

/// The parameter, or the first thing wrong with it as (message, hint): the caller places it.
pub fn validate_param(p: &raw::Param) -> Result<ParamSpec, (String, String)> {
    let ty = match p.ty.as_str() {
        "string" => ParamType::String,
        "integer" => ParamType::Integer,
        "number" => ParamType::Number,
        "boolean" => ParamType::Boolean,
        "object" => ParamType::Object,
        "any" => ParamType::Any,
        other => {
            return Err((
                format!("parameter `{}` has unknown type `{other}`", p.name),
                "use string, integer, number, boolean, object or any".into(),
            ))
        }
    };
    if p.name.is_empty()
        || !p
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return Err((
            format!("parameter name `{}` is not a plain identifier", p.name),
            "use letters, digits and _".into(),
        ));
    }
    let pattern = match &p.pattern {
        None => None,
        Some(src) => Some(regex::Regex::new(src).map_err(|e| {
            (
                format!("parameter `{}`: pattern does not compile: {e}", p.name),
                "write a valid regular expression (Rust regex syntax)".into(),
            )
        })?),
    };
    if let Some(f) = &p.format {
        if f != "uri" {
            return Err((
                format!("parameter `{}`: unknown format `{f}`", p.name),
                "the only format is uri".into(),
            ));
        }
    }
    if p.required && p.default.is_some() {
        return Err((
            format!("parameter `{}` is required and has a default", p.name),
            "drop one of the two".into(),
        ));
    }
    if let (Some(lo), Some(hi)) = (p.minimum, p.maximum) {
        if lo > hi {
            return Err((
                format!("parameter `{}`: minimum is above maximum", p.name),
                "swap them".into(),
            ));
        }
    }
    Ok(ParamSpec {
        name: p.name.clone(),
        ty,
        required: p.required,
        default: p.default.clone(),
        description: p.description.clone(),
        enumeration: p.enumeration.clone(),
        minimum: p.minimum,
        maximum: p.maximum,
        min_length: p.min_length,
        max_length: p.max_length,
        pattern,
        format: p.format.clone(),
        example: p.example.clone(),
        error_code: p
            .error_code
            .clone()
            .unwrap_or_else(|| "invalid_parameter".into()),
        case_insensitive: p.case_insensitive,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn param(yaml: &str) -> Result<ParamSpec, (String, String)> {
        validate_param(&serde_saphyr::from_str::<raw::Param>(yaml).unwrap())
    }

    #[test]
    fn a_plain_parameter_takes_the_default_error_code() {
        let p = param("{ name: url, type: string, required: true, format: uri }").unwrap();
        assert_eq!(p.ty, ParamType::String);
        assert_eq!(p.error_code, "invalid_parameter");
    }

    #[test]
    fn each_mistake_has_its_message() {
        for (yaml, message) in [
            (
                "{ name: a, type: text }",
                "parameter `a` has unknown type `text`",
            ),
            (
                "{ name: a-b, type: string }",
                "parameter name `a-b` is not a plain identifier",
            ),
            (
                "{ name: a, type: string, pattern: '(' }",
                "parameter `a`: pattern does not compile",
            ),
            (
                "{ name: a, type: string, format: email }",
                "parameter `a`: unknown format `email`",
            ),
            (
                "{ name: a, type: integer, required: true, default: 1 }",
                "parameter `a` is required and has a default",
            ),
            (
                "{ name: a, type: integer, minimum: 2, maximum: 1 }",
                "parameter `a`: minimum is above maximum",
            ),
        ] {
            let (got, _) = param(yaml).unwrap_err();
            assert!(got.starts_with(message), "{yaml}: {got}");
        }
    }
}
