//! /openapi.json as an indexer reads it: the document served for the SHIPPED routes.yaml, and
//! for the discovery tests' config (every parameter kind), must pass the real OpenAPI 3.1
//! validator (Python `openapi-spec-validator`, pinned in tests/requirements.txt and installed in
//! tests/.venv by scripts/setup.sh). A missing venv fails the test: it never skips.

use crate::support;

use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use paycall::config;
use paycall::server;

/// Runs the validator on `doc`; the validator's own words on failure.
fn validate(doc: &Value, what: &str) {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("openapi.json");
    std::fs::write(&file, serde_json::to_vec_pretty(doc).unwrap()).expect("write doc");
    let script = "import json,sys\n\
from openapi_spec_validator import validate\n\
from openapi_spec_validator.validation.validators import OpenAPIV31SpecValidator\n\
doc = json.load(open(sys.argv[1]))\n\
errors = [f\"{'/'.join(str(p) for p in e.absolute_path)}: {e.message}\" for e in OpenAPIV31SpecValidator(doc).iter_errors()]\n\
print('\\n'.join(errors))\n\
validate(doc)\n\
print('valid')\n";
    let mut child = Command::new(support::clients::venv_python())
        .arg("-c")
        .arg(script)
        .arg(&file)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start the validator");
    // Bounded: the validator takes about a second; a hang is a failure, not a wait.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        if child.try_wait().expect("validator status").is_some() {
            break;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("openapi-spec-validator did not finish in 60 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().expect("validator output");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.trim_end().ends_with("valid"),
        "{what}: /openapi.json is not valid OpenAPI 3.1:\n{stdout}\n{stderr}"
    );
}

async fn served_openapi(app: server::App) -> Value {
    let srv = support::server::start_app(app).await;
    let (status, _, doc) = support::server::get_json(&srv.url("/openapi.json")).await;
    assert_eq!(status, 200);
    srv.shutdown().await;
    doc
}

#[tokio::test]
async fn the_shipped_openapi_document_is_valid_openapi_3_1() {
    let routes = Path::new(env!("CARGO_MANIFEST_DIR")).join("routes.yaml");
    let cfg = config::load_with_env(&routes, &support::server::test_env)
        .unwrap_or_else(|e| panic!("{e}"));
    let services = server::services::build(&cfg).expect("services");
    let app = server::build_app(cfg, services).unwrap_or_else(|e| panic!("{e}"));
    let doc = served_openapi(app).await;
    assert_eq!(doc["openapi"].as_str().map(|v| &v[..4]), Some("3.1."));
    validate(&doc, "shipped routes.yaml");
    x402scan_conventions(&doc);
}

#[tokio::test]
async fn an_openapi_document_with_every_parameter_kind_is_valid() {
    // An object-typed query parameter with an example (the `content` form), a free `any`
    // body, patterns, bounds, enums, a POST-only route, a free route.
    let yaml = format!(
        "{}routes:
  - path: /api/echo
    methods: [GET, POST]
    price_usd: \"0.01\"
    summary: Echo things
    description: Answers a fixed body.
    pipeline: paid_static
    input:
      - {{ name: url, type: string, required: true, format: uri, max_length: 2048, description: A URL, example: \"https://example.com/\" }}
      - {{ name: n, type: integer, minimum: 1, maximum: 5, default: 3, description: How many }}
      - {{ name: mode, type: string, enum: [fast, full], case_insensitive: true, default: fast, description: Mode }}
      - {{ name: fields, type: object, max_length: 16000, description: Field spec, example: {{ title: h1 }} }}
      - {{ name: tag, type: string, pattern: \"^[a-z]+$\", min_length: 2, max_length: 20, description: A tag }}
      - {{ name: ratio, type: number, minimum: 0.5, maximum: 2.5, description: A ratio }}
      - {{ name: body, type: any, description: Anything }}
    demo:
      input: {{ url: \"https://example.com/\", fields: {{ title: h1 }} }}
      ttl_s: 600
      describe: an echo
    output_example: {{ ok: true, echoed: \"https://example.com/\" }}
  - path: /api/push
    methods: [POST]
    price_usd: \"0.02\"
    summary: Post only
    pipeline: paid_static
    input:
      - {{ name: text, type: string, required: true, max_length: 100, description: Some text, example: hello }}
  - path: /api/ping
    methods: [GET]
    summary: Free ping
    pipeline: ping
",
        support::server::service_yaml("http://127.0.0.1:9", 30, 10, &[])
    );
    let dir = support::server::write_config(
        &yaml,
        &[
            ("paid_static", "name: paid_static\nstages:\n  - stage: payment_gate\n  - stage: static_reply\n    with: { body: { echoed: true } }\n  - stage: bill\n  - stage: settle\n"),
            ("ping", "name: ping\nstages:\n  - stage: static_reply\n    with: { body: { pong: true } }\n"),
        ],
    );
    let cfg = support::server::load(&dir).unwrap_or_else(|e| panic!("{e}"));
    let app = support::server::build(cfg).unwrap_or_else(|e| panic!("{e}"));
    let doc = served_openapi(app).await;
    validate(&doc, "every parameter kind");
    x402scan_conventions(&doc);
    // The object parameter's example sits on its media type, as the object itself.
    let fields = &doc["paths"]["/api/echo"]["get"]["parameters"][3];
    assert_eq!(fields["name"], "fields");
    assert!(fields.get("example").is_none(), "{fields}");
    assert_eq!(
        fields["content"]["application/json"]["example"],
        serde_json::json!({"title": "h1"})
    );
}

/// What x402scan asks of each paid operation: `x-payment-info` with `protocols`,
/// `pricingMode: fixed` and a price, a declared 402, a security requirement whose scheme is
/// declared; and `x-discovery.llmsTxtUrl` at the top.
fn x402scan_conventions(doc: &Value) {
    assert!(doc["x-discovery"]["llmsTxtUrl"]
        .as_str()
        .is_some_and(|u| u.ends_with("/llms.txt")));
    let mut paid = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let Some(info) = op.get("x-payment-info") else {
                assert!(op.get("security").is_none(), "{method} {path}");
                continue;
            };
            paid += 1;
            assert_eq!(info["pricingMode"], "fixed", "{method} {path}");
            assert!(info["price"]["amount"].is_string(), "{method} {path}");
            assert!(info["protocols"][0]["x402"].is_object(), "{method} {path}");
            assert!(op["responses"]["402"].is_object(), "{method} {path}");
            let scheme = op["security"][0]
                .as_object()
                .unwrap()
                .keys()
                .next()
                .unwrap();
            assert!(
                doc["components"]["securitySchemes"][scheme].is_object(),
                "{method} {path}: {scheme}"
            );
        }
    }
    assert!(paid > 0);
}
