//! The `bazaar` discovery extension of a challenge: `{ info, schema }`, where `info` is an
//! example call and `schema` a JSON Schema (draft 2020-12) that validates `info`.
//! Facilitators validate one against the other before cataloguing, so both are generated
//! from one parameter list and cannot drift apart.

use serde_json::{json, Map, Number, Value};

/// JSON types a parameter can have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JsonType {
    String,
    Integer,
    Number,
    Boolean,
    Array,
    Object,
}

impl JsonType {
    /// The JSON Schema `type` keyword value.
    pub fn as_str(self) -> &'static str {
        match self {
            JsonType::String => "string",
            JsonType::Integer => "integer",
            JsonType::Number => "number",
            JsonType::Boolean => "boolean",
            JsonType::Array => "array",
            JsonType::Object => "object",
        }
    }
}

/// One input parameter of a route, as the route config describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct BazaarParam {
    pub name: String,
    pub json_type: JsonType,
    pub required: bool,
    pub description: Option<String>,
    pub enum_values: Option<Vec<Value>>,
    pub minimum: Option<Number>,
    pub maximum: Option<Number>,
    pub max_length: Option<u64>,
    pub pattern: Option<String>,
    pub default: Option<Value>,
    /// Value shown in `info`. Give one for every required parameter with a `pattern`:
    /// without it the placeholder may not match.
    pub example: Option<Value>,
}

impl BazaarParam {
    /// A parameter with only a name and a type; set the other fields directly.
    pub fn new(name: impl Into<String>, json_type: JsonType) -> Self {
        BazaarParam {
            name: name.into(),
            json_type,
            required: false,
            description: None,
            enum_values: None,
            minimum: None,
            maximum: None,
            max_length: None,
            pattern: None,
            default: None,
            example: None,
        }
    }
}

/// Where a route takes its input.
#[derive(Debug, Clone, PartialEq)]
pub enum BazaarInput {
    /// Query-string parameters (GET, HEAD, DELETE): `info.input.queryParams`.
    Query(Vec<BazaarParam>),
    /// A JSON body (POST, PUT, PATCH): `info.input.bodyType = "json"` and `info.input.body`.
    JsonBody(Vec<BazaarParam>),
}

/// Builds `{ info, schema }` for `extensions.bazaar`. `method` is upper-cased and is the
/// only one the schema allows (the extension describes one request method).
pub fn bazaar_extension(method: &str, input: &BazaarInput, output_example: Option<Value>) -> Value {
    let method = method.to_ascii_uppercase();

    let mut info_input = Map::new();
    info_input.insert("type".into(), json!("http"));
    info_input.insert("method".into(), json!(method));
    let mut input_props = Map::new();
    input_props.insert("type".into(), json!({"type": "string", "const": "http"}));
    input_props.insert("method".into(), json!({"type": "string", "enum": [method]}));
    let mut input_required = vec![json!("type"), json!("method")];

    match input {
        BazaarInput::Query(params) => {
            if !params.is_empty() {
                info_input.insert("queryParams".into(), example_object(params));
                input_props.insert("queryParams".into(), object_schema(params));
                if params.iter().any(|p| p.required) {
                    input_required.push(json!("queryParams"));
                }
            }
        }
        BazaarInput::JsonBody(params) => {
            info_input.insert("bodyType".into(), json!("json"));
            info_input.insert("body".into(), example_object(params));
            input_props.insert(
                "bodyType".into(),
                json!({"type": "string", "const": "json"}),
            );
            input_props.insert("body".into(), object_schema(params));
            input_required.push(json!("bodyType"));
            input_required.push(json!("body"));
        }
    }

    let mut info_output = Map::new();
    info_output.insert("type".into(), json!("json"));
    let mut output_props = Map::new();
    output_props.insert("type".into(), json!({"type": "string"}));
    if let Some(example) = output_example {
        output_props.insert("example".into(), json!({"type": json_type_of(&example)}));
        info_output.insert("example".into(), example);
    }

    json!({
        "info": {
            "input": Value::Object(info_input),
            "output": Value::Object(info_output),
        },
        "schema": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "input": {
                    "type": "object",
                    "properties": Value::Object(input_props),
                    "required": input_required,
                    "additionalProperties": false
                },
                "output": {
                    "type": "object",
                    "properties": Value::Object(output_props),
                    "required": ["type"]
                }
            },
            "required": ["input"]
        }
    })
}

fn object_schema(params: &[BazaarParam]) -> Value {
    let mut props = Map::new();
    for p in params {
        props.insert(p.name.clone(), param_schema(p));
    }
    let required: Vec<Value> = params
        .iter()
        .filter(|p| p.required)
        .map(|p| json!(p.name))
        .collect();
    let mut schema = Map::new();
    schema.insert("type".into(), json!("object"));
    schema.insert("properties".into(), Value::Object(props));
    if !required.is_empty() {
        schema.insert("required".into(), Value::Array(required));
    }
    Value::Object(schema)
}

fn param_schema(p: &BazaarParam) -> Value {
    let mut s = Map::new();
    s.insert("type".into(), json!(p.json_type.as_str()));
    if let Some(d) = &p.description {
        s.insert("description".into(), json!(d));
    }
    if let Some(e) = &p.enum_values {
        s.insert("enum".into(), Value::Array(e.clone()));
    }
    if let Some(n) = &p.minimum {
        s.insert("minimum".into(), Value::Number(n.clone()));
    }
    if let Some(n) = &p.maximum {
        s.insert("maximum".into(), Value::Number(n.clone()));
    }
    if let Some(n) = p.max_length {
        s.insert("maxLength".into(), json!(n));
    }
    if let Some(pat) = &p.pattern {
        s.insert("pattern".into(), json!(pat));
    }
    if let Some(d) = &p.default {
        s.insert("default".into(), d.clone());
    }
    if let Some(ex) = &p.example {
        s.insert("examples".into(), json!([ex]));
    }
    Value::Object(s)
}

/// The example call's parameters: every parameter that has an example (or a default or an
/// enum to borrow one from), and a placeholder for required ones that have none, so `info`
/// always satisfies the schema's `required`.
fn example_object(params: &[BazaarParam]) -> Value {
    let mut out = Map::new();
    for p in params {
        let value = p
            .example
            .clone()
            .or_else(|| p.default.clone())
            .or_else(|| p.enum_values.as_ref().and_then(|e| e.first().cloned()))
            .or_else(|| p.required.then(|| placeholder(p)));
        if let Some(v) = value {
            out.insert(p.name.clone(), v);
        }
    }
    Value::Object(out)
}

fn placeholder(p: &BazaarParam) -> Value {
    match p.json_type {
        JsonType::String => {
            let cap = p.max_length.unwrap_or(7).min(7) as usize;
            json!("example"[..cap])
        }
        JsonType::Integer | JsonType::Number => {
            // The bound itself is always valid; zero when unbounded or within bounds.
            let zero_ok = p.minimum.as_ref().is_none_or(|m| !is_positive(m))
                && p.maximum.as_ref().is_none_or(|m| !is_negative(m));
            if zero_ok {
                json!(0)
            } else if let Some(m) = p.minimum.as_ref().filter(|m| is_positive(m)) {
                Value::Number(m.clone())
            } else {
                p.maximum.clone().map(Value::Number).unwrap_or(json!(0))
            }
        }
        JsonType::Boolean => json!(false),
        JsonType::Array => json!([]),
        JsonType::Object => json!({}),
    }
}

fn is_positive(n: &Number) -> bool {
    // Sign from the textual form: no float comparison needed.
    let s = n.to_string();
    !s.starts_with('-') && s.bytes().any(|b| (b'1'..=b'9').contains(&b))
}

fn is_negative(n: &Number) -> bool {
    n.to_string().starts_with('-') && n.to_string().bytes().any(|b| (b'1'..=b'9').contains(&b))
}

fn json_type_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}
