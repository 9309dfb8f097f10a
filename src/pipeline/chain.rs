//! The Stage contract, the registry entry type, and the chain runner.
//!
//! A chain is built once per route at startup from its pipeline (pipelines/*.yaml) with the
//! route's caps merged over each stage's parameters (Envoy's per-route override). Chain shape
//! rules are checked here so an impossible chain is a startup error with file:line.

use async_trait::async_trait;
use futures_util::FutureExt;
use http::StatusCode;
use serde_json::Value;
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use super::exchange::{Exchange, Flow, Reply};
use crate::config::{Config, ConfigError, Origin, RouteSpec};

/// One step of a chain. Built once; keeps no per-request state.
#[async_trait]
pub trait Stage: Send + Sync {
    async fn run(&self, ex: &mut Exchange) -> Flow;
}

/// When a stage runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Runs first and may end the exchange (payment_gate).
    Gate,
    /// Does the route's work; the first reply ends the work phase.
    Work,
    /// Always runs after the work phase, whatever the reply (bill, settle).
    Finish,
}

/// Shared runtime services (HTTP clients, facilitator, caches), by type. Stages look up what
/// they need at build time; a new stage can bring its own service without editing this file.
#[derive(Clone, Default)]
pub struct Services(Arc<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>);

impl Services {
    pub fn builder() -> ServicesBuilder {
        ServicesBuilder(HashMap::new())
    }
    pub fn get<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        self.0
            .get(&TypeId::of::<T>())
            .cloned()
            .and_then(|a| a.downcast::<T>().ok())
    }
    /// For stage builders: the service or a build error naming it.
    pub fn need<T: Any + Send + Sync>(&self) -> Result<Arc<T>, String> {
        self.get::<T>().ok_or_else(|| {
            format!(
                "service {} is not available in this server",
                std::any::type_name::<T>()
            )
        })
    }
}

pub struct ServicesBuilder(HashMap<TypeId, Arc<dyn Any + Send + Sync>>);

impl ServicesBuilder {
    pub fn with<T: Any + Send + Sync>(mut self, value: Arc<T>) -> Self {
        self.0.insert(TypeId::of::<T>(), value);
        self
    }
    pub fn build(self) -> Services {
        Services(Arc::new(self.0))
    }
}

/// What a stage builder gets besides its parameters.
pub struct BuildCtx<'a> {
    pub config: &'a Config,
    pub route: &'a Arc<RouteSpec>,
    pub services: &'a Services,
}

pub type BuildFn = fn(&BuildCtx<'_>, Value) -> Result<Arc<dyn Stage>, String>;

/// One registry line: a YAML name and how to build the stage.
pub struct StageFactory {
    pub name: &'static str,
    pub phase: Phase,
    /// Payment stages are skipped by demo twins.
    pub payment: bool,
    /// Artefacts that an earlier stage must provide.
    pub needs: &'static [&'static str],
    /// Artefacts this stage provides.
    pub gives: &'static [&'static str],
    /// One line for `paycall check --stages` and the docs.
    pub doc: &'static str,
    /// Error statuses this stage can answer with, for /openapi.json.
    pub errors: &'static [(u16, &'static str)],
    pub build: BuildFn,
}

/// Deserialises stage parameters strictly (unknown keys refused).
pub fn params<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, String> {
    let value = if value.is_null() {
        Value::Object(Default::default())
    } else {
        value
    };
    serde_json::from_value(value).map_err(|e| e.to_string())
}

struct Link {
    name: &'static str,
    phase: Phase,
    payment: bool,
    stage: Arc<dyn Stage>,
}

/// A route's built chain.
pub struct Chain {
    links: Vec<Link>,
}

impl Chain {
    pub fn stage_names(&self) -> Vec<&'static str> {
        self.links.iter().map(|l| l.name).collect()
    }

    /// Walks the exchange through the chain. Always leaves `ex.reply` set.
    pub async fn run(&self, ex: &mut Exchange) {
        let mut replied = false;
        let mut input_checked = false;
        for link in &self.links {
            if ex.demo && link.payment {
                continue;
            }
            match link.phase {
                Phase::Gate | Phase::Work => {
                    if replied {
                        continue;
                    }
                    if link.phase == Phase::Work && !input_checked {
                        input_checked = true;
                        if let Some(r) = ex.input_error.take() {
                            ex.reply = Some(r);
                            replied = true;
                            continue;
                        }
                    }
                    if run_guarded(link, ex).await == Flow::Reply {
                        replied = true;
                    }
                }
                Phase::Finish => {
                    if ex.reply.is_none() {
                        ex.reply = Some(no_reply(ex));
                    }
                    run_guarded(link, ex).await;
                }
            }
        }
        if !input_checked {
            if let Some(r) = ex.input_error.take() {
                if ex.reply.is_none() {
                    ex.reply = Some(r);
                }
            }
        }
        if ex.reply.is_none() {
            ex.reply = Some(no_reply(ex));
        }
    }
}

fn no_reply(ex: &Exchange) -> Reply {
    tracing::error!(request_id = %ex.id, route = %ex.route.path, "chain produced no reply");
    Reply::error(
        StatusCode::INTERNAL_SERVER_ERROR,
        "internal_error",
        "the route produced no answer; you were not charged",
    )
}

/// Runs one stage; a panic becomes a 500 (never charged) instead of a dropped connection.
async fn run_guarded(link: &Link, ex: &mut Exchange) -> Flow {
    let result = AssertUnwindSafe(link.stage.run(ex)).catch_unwind().await;
    match result {
        Ok(flow) => flow,
        Err(_) => {
            tracing::error!(request_id = %ex.id, stage = link.name, "stage panicked");
            ex.reply = Some(Reply::error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal_error",
                "the route failed unexpectedly; you were not charged",
            ));
            Flow::Reply
        }
    }
}

/// Builds the chain of one route, checking names, parameters and shape.
pub fn build_chain(
    registry: &[StageFactory],
    ctx: &BuildCtx<'_>,
) -> Result<Chain, Vec<ConfigError>> {
    let route = ctx.route;
    let mut errors = Vec::new();
    let err = |errors: &mut Vec<ConfigError>, origin: &Origin, msg: String, hint: String| {
        errors.push(ConfigError {
            file: origin.file.clone(),
            line: origin.loc.line().max(1),
            column: origin.loc.column().max(1),
            message: msg,
            hint,
        })
    };
    let Some(pipeline) = ctx.config.pipelines.get(&route.pipeline) else {
        err(
            &mut errors,
            &route.pipeline_origin,
            format!("unknown pipeline `{}`", route.pipeline),
            "define it in pipelines/".into(),
        );
        return Err(errors);
    };
    // caps must name stages of this pipeline
    for (stage, (_, origin)) in &route.caps {
        if !pipeline.stages.iter().any(|s| &s.name == stage) {
            err(
                &mut errors,
                origin,
                format!(
                    "route {} has caps for `{stage}`, which is not in pipeline `{}`",
                    route.path, pipeline.name
                ),
                format!(
                    "caps keys are stage names of the pipeline: {}",
                    pipeline
                        .stages
                        .iter()
                        .map(|s| s.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
        }
    }
    let mut links = Vec::new();
    let mut provided: Vec<&str> = Vec::new();
    let mut seen_finish = false;
    for (i, sref) in pipeline.stages.iter().enumerate() {
        let Some(factory) = registry.iter().find(|f| f.name == sref.name) else {
            let known: Vec<&str> = registry.iter().map(|f| f.name).collect();
            err(
                &mut errors,
                &sref.origin,
                format!("unknown stage `{}`", sref.name),
                format!("registered stages: {}", known.join(", ")),
            );
            continue;
        };
        if factory.phase == Phase::Gate && i != 0 {
            err(
                &mut errors,
                &sref.origin,
                format!("`{}` must be the first stage", factory.name),
                "move it to the top of the chain".into(),
            );
        }
        if factory.phase == Phase::Finish {
            seen_finish = true;
        } else if seen_finish {
            err(
                &mut errors,
                &sref.origin,
                format!(
                    "`{}` comes after a finishing stage (bill/settle)",
                    factory.name
                ),
                "finishing stages go at the end of the chain".into(),
            );
        }
        for need in factory.needs {
            if !provided.contains(need) {
                err(
                    &mut errors,
                    &sref.origin,
                    format!(
                        "`{}` needs `{need}`, which no earlier stage provides",
                        factory.name
                    ),
                    format!(
                        "put a stage that provides `{need}` before it (see `paycall check --stages`)"
                    ),
                );
            }
        }
        provided.extend(factory.gives.iter().copied());
        let mut params = sref.params.clone();
        let mut params_origin = &sref.params_origin;
        if let Some((over, origin)) = route.caps.get(&sref.name) {
            params = merge(params, over.clone());
            params_origin = origin;
        }
        match (factory.build)(ctx, params) {
            Ok(stage) => links.push(Link {
                name: factory.name,
                phase: factory.phase,
                payment: factory.payment,
                stage,
            }),
            Err(e) => err(
                &mut errors,
                params_origin,
                format!(
                    "stage `{}` in route {}: bad parameters: {e}",
                    factory.name, route.path
                ),
                "see the stage's parameter list in its module documentation".into(),
            ),
        }
    }
    let has = |n: &str| pipeline.stages.iter().any(|s| s.name == n);
    if route.is_paid() && !(has("payment_gate") && has("bill") && has("settle")) {
        err(
            &mut errors,
            &route.pipeline_origin,
            format!(
                "route {} has a price but pipeline `{}` lacks payment_gate, bill or settle",
                route.path, pipeline.name
            ),
            "a paid chain starts with payment_gate and ends with bill, settle".into(),
        );
    }
    if !route.is_paid() && has("payment_gate") {
        err(
            &mut errors,
            &route.pipeline_origin,
            format!(
                "route {} has no price but its pipeline takes payments",
                route.path
            ),
            "add price_usd or use a pipeline without payment stages".into(),
        );
    }
    if errors.is_empty() {
        Ok(Chain { links })
    } else {
        Err(errors)
    }
}

/// Shallow merge of objects: keys of `over` replace keys of `base`.
fn merge(base: Value, over: Value) -> Value {
    match (base, over) {
        (Value::Object(mut b), Value::Object(o)) => {
            for (k, v) in o {
                b.insert(k, v);
            }
            Value::Object(b)
        }
        (b, Value::Null) => b,
        (_, o) => o,
    }
}
