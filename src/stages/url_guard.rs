//! `url_guard`: vets the caller's URL before anything leaves the service.
//!
//! Parses the input parameter named by `param` as an absolute http(s) URL and judges it with
//! the outbound guard (odd IPv4 spellings, IPv6 wrappings, local names, userinfo tricks);
//! refused → 400 `blocked_target`, malformed → 400 `bad_url`. DNS answers and redirect hops
//! are judged again by the fetch client. Parameters: `param` (default `url`); `skip_if_param`
//! (optional): when the input carries this parameter, the stage does nothing (nothing will be
//! fetched: /api/extract with the caller's own `html`).

use async_trait::async_trait;
use http::StatusCode;
use serde::Deserialize;
use serde_json::Value;
use std::sync::Arc;

use crate::net::{FetchError, Guard};
use crate::pipeline::{
    params, Artefact, BuildCtx, Exchange, Flow, Phase, Reply, Stage, StageFactory,
};

pub const FACTORY: StageFactory = StageFactory {
    name: "url_guard",
    phase: Phase::Work,
    payment: false,
    needs: &[],
    gives: &[Artefact::of::<url::Url>("target")],
    doc: "parse the caller's URL and refuse private, loopback, link-local and metadata targets",
    errors: &[(
        400,
        "Bad URL, or a private, loopback, link-local or metadata target (blocked_target)",
    )],
    build,
};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    #[serde(default = "default_param")]
    param: String,
    #[serde(default)]
    skip_if_param: Option<String>,
}

fn default_param() -> String {
    "url".into()
}

struct UrlGuard {
    param: String,
    skip_if_param: Option<String>,
    guard: Arc<Guard>,
}

fn build(ctx: &BuildCtx<'_>, p: Value) -> Result<Arc<dyn Stage>, String> {
    let p: Params = params(p)?;
    if ctx.route.param(&p.param).is_none() {
        return Err(format!("the route has no input parameter `{}`", p.param));
    }
    if let Some(skip) = &p.skip_if_param {
        if ctx.route.param(skip).is_none() {
            return Err(format!("the route has no input parameter `{skip}`"));
        }
    }
    Ok(Arc::new(UrlGuard {
        param: p.param,
        skip_if_param: p.skip_if_param,
        guard: ctx.services.need::<Guard>()?,
    }))
}

impl UrlGuard {
    fn skipped(&self, input: &serde_json::Map<String, Value>) -> bool {
        crate::pipeline::input::skips(self.skip_if_param.as_deref(), input)
    }

    fn judge(&self, raw: &str) -> Result<url::Url, Reply> {
        self.guard.parse_target(raw).map_err(|refusal| {
            let e = FetchError::from_url_refusal(refusal);
            Reply::error(StatusCode::BAD_REQUEST, e.code(), e.to_string())
        })
    }
}

#[async_trait]
impl Stage for UrlGuard {
    fn check_input(&self, input: &serde_json::Map<String, Value>) -> Result<(), Reply> {
        if self.skipped(input) {
            return Ok(());
        }
        match input.get(&self.param).and_then(Value::as_str) {
            Some(raw) => self.judge(raw).map(|_| ()),
            None => Ok(()),
        }
    }

    async fn run(&self, ex: &mut Exchange) -> Flow {
        if self.skipped(&ex.input) {
            return Flow::Continue;
        }
        let Some(raw) = ex.input_str(&self.param).map(str::to_string) else {
            return ex.fail(
                StatusCode::BAD_REQUEST,
                "missing_parameter",
                format!("`{}` is required", self.param),
            );
        };
        match self.judge(&raw) {
            Ok(url) => {
                ex.target = Some(url);
                Flow::Continue
            }
            Err(r) => {
                ex.reply = Some(r);
                Flow::Reply
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::chain::with_shipped_route;
    use serde_json::json;

    fn build_error(p: Value) -> String {
        with_shipped_route("/api/fetch", |ctx| build(ctx, p).err().unwrap_or_default())
    }

    #[test]
    fn parameters_are_strict_and_name_inputs_of_the_route() {
        assert!(build_error(json!({"param": "nope"})).contains("no input parameter `nope`"));
        assert!(build_error(json!({"skip_if_param": "nope"})).contains("no input parameter `nope`"));
        assert!(build_error(json!({"parm": "url"})).contains("unknown field"));
        // Good parameters: only the guard service is missing in a unit test.
        assert!(build_error(json!({})).contains("service"));
    }
}
