//! `GET /.well-known/x402`: x402scan's version-1 list of paid resources.

use serde_json::{json, Value};

use super::{how_to_pay, origin, paid_routes, LLMS_PATH, OPENAPI_PATH};
use crate::server::App;
use http::Method;

/// x402scan's version-1 document: absolute URLs for GET routes, "METHOD /path" for the others.
pub fn well_known(app: &App) -> Value {
    let base = origin(&app.config);
    let mut resources = Vec::new();
    for r in paid_routes(app) {
        for m in &r.spec.methods {
            if *m == Method::GET {
                resources.push(format!("{base}{}", r.spec.path));
            } else {
                resources.push(format!("{m} {}", r.spec.path));
            }
        }
    }
    let unavailable: Vec<Value> = paid_routes(app)
        .filter_map(|r| {
            crate::server::availability::check(app, r)
                .err()
                .map(|reason| json!({ "path": r.spec.path, "reason": reason }))
        })
        .collect();
    json!({
        "version": 1,
        "resources": resources,
        // Listed routes that cannot work now: they answer 503 with Retry-After, not 402.
        "unavailable": unavailable,
        "instructions": format!(
            "{} The full catalogue with parameters is at {base}{OPENAPI_PATH} and {base}{LLMS_PATH}. \
             The same routes are paid MCP tools at {base}{}.",
            how_to_pay(app),
            crate::mcp::PATH
        ),
        "mcp": format!("{base}{}", crate::mcp::PATH),
    })
}
