//! The bazaar extension's `info` must validate against its own `schema` (facilitators check
//! exactly this before cataloguing). Validated with boon, an independent JSON Schema
//! 2020-12 implementation, so the generator cannot grade its own homework.

use paycall::x402::{bazaar_extension, BazaarInput, BazaarParam, JsonType};
use serde_json::{json, Number, Value};

fn validate(schema: &Value, instance: &Value) -> Result<(), String> {
    let mut schemas = boon::Schemas::new();
    let mut compiler = boon::Compiler::new();
    compiler
        .add_resource("urn:paycall:bazaar", schema.clone())
        .map_err(|e| format!("add: {e}"))?;
    let idx = compiler
        .compile("urn:paycall:bazaar", &mut schemas)
        .map_err(|e| format!("schema does not compile: {e:#}"))?;
    schemas
        .validate(instance, idx)
        .map_err(|e| format!("{e:#}"))
}

fn query_params() -> Vec<BazaarParam> {
    let mut url = BazaarParam::new("url", JsonType::String);
    url.required = true;
    url.description = Some("Page to fetch (https)".into());
    url.max_length = Some(2048);
    url.pattern = Some("^https?://".into());
    url.example = Some(json!("https://example.com/"));

    let mut format = BazaarParam::new("format", JsonType::String);
    format.enum_values = Some(vec![json!("markdown"), json!("text")]);
    format.default = Some(json!("markdown"));

    let mut limit = BazaarParam::new("limit", JsonType::Integer);
    limit.required = true;
    limit.minimum = Some(Number::from(5));
    limit.maximum = Some(Number::from(50));

    let mut verbose = BazaarParam::new("verbose", JsonType::Boolean);
    verbose.description = Some("More detail".into());
    vec![url, format, limit, verbose]
}

#[test]
fn get_extension_has_the_reference_shape() {
    let ext = bazaar_extension(
        "get",
        &BazaarInput::Query(query_params()),
        Some(json!({"ok": true})),
    );
    let info = &ext["info"];
    assert_eq!(info["input"]["type"], "http");
    assert_eq!(info["input"]["method"], "GET");
    assert_eq!(
        info["input"]["queryParams"],
        json!({"url": "https://example.com/", "format": "markdown", "limit": 5})
    );
    assert!(info["input"].get("body").is_none());
    assert_eq!(
        info["output"],
        json!({"type": "json", "example": {"ok": true}})
    );

    let schema = &ext["schema"];
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert_eq!(schema["required"], json!(["input"]));
    let input = &schema["properties"]["input"];
    assert_eq!(input["properties"]["type"]["const"], "http");
    assert_eq!(input["properties"]["method"]["enum"], json!(["GET"]));
    assert_eq!(input["additionalProperties"], false);
    let qp = &input["properties"]["queryParams"];
    assert_eq!(qp["required"], json!(["url", "limit"]));
    assert_eq!(
        qp["properties"]["url"],
        json!({"type": "string", "description": "Page to fetch (https)", "maxLength": 2048,
               "pattern": "^https?://", "examples": ["https://example.com/"]})
    );
    assert_eq!(
        qp["properties"]["format"],
        json!({"type": "string", "enum": ["markdown", "text"], "default": "markdown"})
    );
    assert_eq!(
        qp["properties"]["limit"],
        json!({"type": "integer", "minimum": 5, "maximum": 50})
    );

    validate(schema, info).expect("info validates against its own schema");
}

#[test]
fn schema_rejects_what_it_should() {
    let ext = bazaar_extension("GET", &BazaarInput::Query(query_params()), None);
    let schema = &ext["schema"];
    let info = &ext["info"];
    validate(schema, info).unwrap();

    let mutate = |f: &dyn Fn(&mut Value)| {
        let mut v = info.clone();
        f(&mut v);
        v
    };
    let bad = [
        (
            "wrong method",
            mutate(&|v| v["input"]["method"] = json!("POST")),
        ),
        ("mcp type", mutate(&|v| v["input"]["type"] = json!("mcp"))),
        (
            "no input",
            mutate(&|v| {
                v.as_object_mut().unwrap().remove("input");
            }),
        ),
        (
            "unknown input key",
            mutate(&|v| v["input"]["toolName"] = json!("x")),
        ),
        (
            "missing required param",
            mutate(&|v| {
                v["input"]["queryParams"]
                    .as_object_mut()
                    .unwrap()
                    .remove("url");
            }),
        ),
        (
            "pattern",
            mutate(&|v| v["input"]["queryParams"]["url"] = json!("ftp://x")),
        ),
        (
            "enum",
            mutate(&|v| v["input"]["queryParams"]["format"] = json!("pdf")),
        ),
        (
            "minimum",
            mutate(&|v| v["input"]["queryParams"]["limit"] = json!(4)),
        ),
        (
            "maximum",
            mutate(&|v| v["input"]["queryParams"]["limit"] = json!(51)),
        ),
        (
            "integer type",
            mutate(&|v| v["input"]["queryParams"]["limit"] = json!("5")),
        ),
        (
            "boolean type",
            mutate(&|v| v["input"]["queryParams"]["verbose"] = json!("yes")),
        ),
        (
            "maxLength",
            mutate(&|v| {
                v["input"]["queryParams"]["url"] = json!(format!("https://{}", "a".repeat(2048)))
            }),
        ),
    ];
    for (what, instance) in bad {
        assert!(
            validate(schema, &instance).is_err(),
            "{what}: schema should reject {instance}"
        );
    }
}

#[test]
fn body_method_uses_json_body() {
    let mut target = BazaarParam::new("target", JsonType::String);
    target.required = true;
    target.example = Some(json!("https://vendor.example/quote"));
    let mut headers = BazaarParam::new("headers", JsonType::Object);
    headers.description = Some("Extra request headers".into());
    let mut tags = BazaarParam::new("tags", JsonType::Array);
    tags.required = true; // no example: a placeholder must still satisfy the schema
    let mut n = BazaarParam::new("n", JsonType::Number);
    n.required = true;
    n.minimum = Some(Number::from(-10));
    n.maximum = Some(Number::from(-2)); // zero is out of range: the placeholder picks a bound
    let mut code = BazaarParam::new("code", JsonType::String);
    code.required = true;
    code.max_length = Some(3);

    let ext = bazaar_extension(
        "POST",
        &BazaarInput::JsonBody(vec![target, headers, tags, n, code]),
        Some(json!([1, 2])),
    );
    let info = &ext["info"];
    assert_eq!(info["input"]["method"], "POST");
    assert_eq!(info["input"]["bodyType"], "json");
    assert!(info["input"].get("queryParams").is_none());
    assert_eq!(
        info["input"]["body"]["target"],
        "https://vendor.example/quote"
    );
    assert!(info["input"]["body"].get("headers").is_none());
    let input_schema = &ext["schema"]["properties"]["input"];
    assert_eq!(
        input_schema["required"],
        json!(["type", "method", "bodyType", "body"])
    );
    assert_eq!(input_schema["properties"]["bodyType"]["const"], "json");
    assert_eq!(
        ext["schema"]["properties"]["output"]["properties"]["example"]["type"],
        "array"
    );
    validate(&ext["schema"], info).expect("POST info validates against its own schema");

    let mut wrong = info.clone();
    wrong["input"]["bodyType"] = json!("form-data");
    assert!(validate(&ext["schema"], &wrong).is_err());
}

#[test]
fn no_parameters_and_no_output_example() {
    let ext = bazaar_extension("GET", &BazaarInput::Query(vec![]), None);
    assert_eq!(
        ext["info"],
        json!({"input": {"type": "http", "method": "GET"}, "output": {"type": "json"}})
    );
    assert!(ext["schema"]["properties"]["input"]["properties"]
        .get("queryParams")
        .is_none());
    validate(&ext["schema"], &ext["info"]).unwrap();
}
