//! `bill`: decides from the finished reply whether this call is charged.
//!
//! The rule is the route's `billing` (routes.yaml): `status_below_400` (default: every
//! not-charged case is an error status, docs/decisions.md#billing) or `never`. Parameters: none.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;
use std::sync::Arc;

use super::paid::Billed;
use crate::pipeline::{params, Artefact, BuildCtx, Exchange, Flow, Phase, Stage, StageFactory};

pub const FACTORY: StageFactory = StageFactory {
    name: "bill",
    phase: Phase::Finish,
    payment: false,
    needs: &[],
    gives: &[Artefact::of::<Billed>("bill")],
    errors: &[],
    doc: "decide whether the finished reply is charged (route's billing rule)",
    build,
};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {}

struct Bill {
    rule: String,
}

fn build(ctx: &BuildCtx<'_>, p: Value) -> Result<Arc<dyn Stage>, String> {
    let _: Params = params(p)?;
    Ok(Arc::new(Bill {
        rule: ctx.route.billing.clone(),
    }))
}

/// The bill rules, as a pure function of the reply status.
pub fn charged(rule: &str, status: u16) -> bool {
    match rule {
        "status_below_400" => status < 400,
        _ => false,
    }
}

#[async_trait]
impl Stage for Bill {
    async fn run(&self, ex: &mut Exchange) -> Flow {
        let status = ex.reply.as_ref().map(|r| r.status.as_u16()).unwrap_or(500);
        ex.slots.put(Billed(charged(&self.rule, status)));
        Flow::Continue
    }
}

#[cfg(test)]
mod tests {
    use super::charged;

    #[test]
    fn default_rule_charges_only_successes() {
        for s in [200, 201, 204, 302, 399] {
            assert!(charged("status_below_400", s), "{s}");
        }
        for s in [400, 402, 404, 413, 415, 422, 429, 500, 502, 503, 504] {
            assert!(!charged("status_below_400", s), "{s}");
        }
        assert!(!charged("never", 200));
        assert!(!charged("unknown", 200));
    }
}
