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
use std::collections::{BTreeMap, HashMap};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use super::artefact::Artefact;
use super::exchange::{Exchange, Flow, Reply};
use crate::config::{Config, ConfigError, Origin, RouteSpec};

/// One step of a chain. Built once; keeps no per-request state.
#[async_trait]
pub trait Stage: Send + Sync {
    async fn run(&self, ex: &mut Exchange) -> Flow;

    /// Whether the stage can work right now (a screenshot stage: "chromium missing"). Shown per
    /// route on /status; cheap and side-effect free, it is called on every /status request.
    fn readiness(&self) -> Result<(), String> {
        Ok(())
    }

    /// Outcomes of this stage whose billing a caller could not guess from the status rule alone
    /// (an upstream's 404 delivered in a 200 record), from the stage's own parameters, so
    /// discovery and docs describe what the stage does. The verdict is not the stage's to say:
    /// discovery applies the route's bill rule to `status`.
    fn billing_cases(&self) -> Vec<BillingCase> {
        Vec::new()
    }

    /// Checks of the validated input that need no I/O (a URL the guard refuses by its spelling,
    /// a bad fields spec, a bad header name). They run before the payment gate verifies, so a
    /// bad request is a 400 that never reaches the facilitator (docs/decisions.md#order-of-checks).
    fn check_input(&self, _input: &serde_json::Map<String, Value>) -> Result<(), Reply> {
        Ok(())
    }

    /// A gate's ready-made answer to a request that carries no payment (a paid route's 402), or
    /// None to run the chain. Asked before the body is read or the input validated, so it may
    /// depend on the method and headers only; it must give what `run` would.
    fn unpaid_answer(&self, _method: &http::Method, _headers: &http::HeaderMap) -> Option<Reply> {
        None
    }
}

/// One outcome a stage documents for billing: which case, the reply status it gives, in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BillingCase {
    /// Stable name, e.g. `upstream_error_status`.
    pub case: &'static str,
    /// The status of the route's answer in this case.
    pub status: u16,
    /// What happens, without the verdict ("an upstream 404 or 500 is reported in a 200 record").
    pub what: String,
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
#[derive(Clone, Copy)]
pub struct StageFactory {
    pub name: &'static str,
    pub phase: Phase,
    /// Payment stages are skipped by demo twins.
    pub payment: bool,
    /// Artefacts that an earlier stage must provide, with the types this stage reads.
    pub needs: &'static [Artefact],
    /// Artefacts this stage provides, with the types it writes.
    pub gives: &'static [Artefact],
    /// The error statuses this stage can answer, with a short description each: /openapi.json
    /// documents them per operation (400 and 413 for inputs are documented for every route).
    pub errors: &'static [(u16, &'static str)],
    /// One line for `paycall check --stages` and the docs.
    pub doc: &'static str,
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
    errors: &'static [(u16, &'static str)],
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

    /// Every error status the chain's stages declare, with their descriptions, by status.
    pub fn error_statuses(&self) -> BTreeMap<u16, Vec<&'static str>> {
        let mut out: BTreeMap<u16, Vec<&'static str>> = BTreeMap::new();
        for link in &self.links {
            for (status, what) in link.errors {
                let list = out.entry(*status).or_default();
                if !list.contains(what) {
                    list.push(what);
                }
            }
        }
        out
    }

    /// Ok when every stage is ready; otherwise each unready stage as "stage: reason", joined.
    pub fn readiness(&self) -> Result<(), String> {
        let reasons: Vec<String> = self
            .links
            .iter()
            .filter_map(|l| {
                l.stage
                    .readiness()
                    .err()
                    .map(|r| format!("{}: {r}", l.name))
            })
            .collect();
        if reasons.is_empty() {
            Ok(())
        } else {
            Err(reasons.join("; "))
        }
    }

    /// The billing cases every stage documents, in chain order, one per case name.
    pub fn billing_cases(&self) -> Vec<BillingCase> {
        let mut out: Vec<BillingCase> = Vec::new();
        for link in &self.links {
            for c in link.stage.billing_cases() {
                if !out.iter().any(|x| x.case == c.case) {
                    out.push(c);
                }
            }
        }
        out
    }

    /// The first stage's ready-made answer to an unpaid request (see `Stage::unpaid_answer`).
    pub fn unpaid_answer(&self, method: &http::Method, headers: &http::HeaderMap) -> Option<Reply> {
        let first = self.links.first()?;
        if first.phase != Phase::Gate {
            return None;
        }
        first.stage.unpaid_answer(method, headers)
    }

    /// Walks the exchange through the chain. Always leaves `ex.reply` set.
    /// The stages' own input checks (see `Stage::check_input`), first failure wins.
    pub fn check_input(&self, input: &serde_json::Map<String, Value>) -> Result<(), Reply> {
        for link in &self.links {
            if link.phase == Phase::Work {
                link.stage.check_input(input)?;
            }
        }
        Ok(())
    }

    pub async fn run(&self, ex: &mut Exchange) {
        if ex.input_error.is_none() {
            if let Err(r) = self.check_input(&ex.input) {
                ex.input_error = Some(r);
            }
        }
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

/// What a paid route's chain must provide.
pub const PAID_ARTEFACTS: &[&str] = &["payment", "bill", "settlement"];

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
    let mut provided: Vec<(&str, Artefact)> = Vec::new();
    let mut seen_finish = false;
    // After an unknown stage, what it would have provided is unknown: the checks that follow from
    // it (needs, a paid chain's artefacts) are left out, so one typo is one error.
    let mut unknown_seen = false;
    for (i, sref) in pipeline.stages.iter().enumerate() {
        let Some(factory) = registry.iter().find(|f| f.name == sref.name) else {
            let known: Vec<&str> = registry.iter().map(|f| f.name).collect();
            let hint = match crate::config::hints::did_you_mean(&sref.name, known.iter().copied()) {
                Some(near) => {
                    format!("did you mean `{near}`? (`paycall check --stages` lists every stage)")
                }
                None => format!("registered stages: {}", known.join(", ")),
            };
            err(
                &mut errors,
                &sref.origin,
                format!("unknown stage `{}`", sref.name),
                hint,
            );
            unknown_seen = true;
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
            if unknown_seen || provided.iter().any(|(_, a)| a.is(need)) {
                continue;
            }
            let (message, hint) = match provided.iter().find(|(_, a)| a.name == need.name) {
                Some((giver, given)) => (
                    format!(
                        "`{}` needs `{}` as {}, but `{giver}` gives it as {}",
                        factory.name,
                        need.name,
                        need.type_name(),
                        given.type_name()
                    ),
                    format!(
                        "the two stages disagree on what `{}` is: one of them is not meant for this chain",
                        need.name
                    ),
                ),
                None => (
                    format!(
                        "`{}` needs `{}`, which no earlier stage provides",
                        factory.name, need.name
                    ),
                    format!(
                        "put a stage that provides `{}` before it (see `paycall check --stages`)",
                        need.name
                    ),
                ),
            };
            err(&mut errors, &sref.origin, message, hint);
        }
        provided.extend(factory.gives.iter().map(|a| (factory.name, *a)));
        let params = with_route_caps(route, &sref.name, sref.params.clone());
        let params_origin = route
            .caps
            .get(&sref.name)
            .map_or(&sref.params_origin, |(_, origin)| origin);
        match (factory.build)(ctx, params) {
            Ok(stage) => links.push(Link {
                name: factory.name,
                phase: factory.phase,
                payment: factory.payment,
                errors: factory.errors,
                stage,
            }),
            Err(e) => {
                let (message, hint) = build_problem(factory.name, &e);
                err(
                    &mut errors,
                    params_origin,
                    format!(
                        "stage `{}` in route {}: {message}",
                        factory.name, route.path
                    ),
                    hint,
                )
            }
        }
    }
    // A priced route must take the payment, decide the bill and settle it: stages declare
    // those artefacts (`payment`, `bill`, `settlement`), so the runner names no stage.
    let missing: Vec<&str> = PAID_ARTEFACTS
        .iter()
        .copied()
        .filter(|a| !provided.iter().any(|(_, p)| p.name == *a))
        .collect();
    if route.is_paid() && !missing.is_empty() && !unknown_seen {
        let providers: Vec<String> = missing
            .iter()
            .map(|a| {
                registry
                    .iter()
                    .find(|f| f.gives.iter().any(|g| g.name == *a))
                    .map(|f| format!("{} (which provides `{a}`)", f.name))
                    .unwrap_or_else(|| format!("a stage that provides `{a}`"))
            })
            .collect();
        err(
            &mut errors,
            &route.pipeline_origin,
            format!(
                "route {} has a price but pipeline `{}` lacks {}",
                route.path,
                pipeline.name,
                providers.join(", ")
            ),
            "a paid chain starts with payment_gate and ends with bill, settle".into(),
        );
    }
    if !route.is_paid() && links.iter().any(|l| l.payment) {
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

/// A builder's error as (message, fix). Builders say `message` + `BUILD_FIX` + `fix` when they
/// know the fix (a missing file: where it was looked for); a bare error is the parameters
/// failing to deserialise, whose fix is the stage's parameter list.
pub fn build_problem(stage: &str, error: &str) -> (String, String) {
    match error.split_once(BUILD_FIX) {
        Some((message, fix)) => (message.to_string(), fix.to_string()),
        None => (
            format!("bad parameters: {error}"),
            format!(
                "`{stage}` takes the parameters listed at the top of its module (src/stages/, src/payment/); unknown keys are refused"
            ),
        ),
    }
}

/// Separates a stage builder's message from its fix (see `build_problem`).
pub const BUILD_FIX: &str = "\nfix: ";

/// A stage's parameters as the route runs it: the pipeline's, with the route's caps for that
/// stage laid over them.
pub fn with_route_caps(route: &RouteSpec, stage: &str, params: Value) -> Value {
    match route.caps.get(stage) {
        Some((over, _)) => merge(params, over.clone()),
        None => params,
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

/// For stage unit tests: a build context over the shipped routes.yaml (fixed test payTo
/// addresses) for one of its routes, with no services.
#[cfg(test)]
pub(crate) fn with_shipped_route<R>(path: &str, f: impl FnOnce(&BuildCtx<'_>) -> R) -> R {
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("routes.yaml");
    let env = |k: &str| match k {
        "PAYCALL_EVM_PAY_TO" => Some("0xdF1D7b5C056D78F5aA14138a5695f7FF6F7aCFf3".to_string()),
        "PAYCALL_SOLANA_PAY_TO" => Some("FYA23SLFVpETuY13UnwTDJA9W6ipiL1sKXd6XJUhViA1".to_string()),
        _ => None,
    };
    let config = crate::config::load_with_env(&file, &env).unwrap_or_else(|e| panic!("{e}"));
    let route = Arc::new(
        config
            .routes
            .iter()
            .find(|r| r.path == path)
            .unwrap_or_else(|| panic!("no route {path}"))
            .clone(),
    );
    let services = Services::default();
    f(&BuildCtx {
        config: &config,
        route: &route,
        services: &services,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{load_with_env, StageRef};

    const EVM: &str = "0xdF1D7b5C056D78F5aA14138a5695f7FF6F7aCFf3";
    const SOL: &str = "FYA23SLFVpETuY13UnwTDJA9W6ipiL1sKXd6XJUhViA1";

    fn config() -> Config {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/config/free/routes.yaml");
        let env = |k: &str| match k {
            "PAYCALL_EVM_PAY_TO" => Some(EVM.to_string()),
            "PAYCALL_SOLANA_PAY_TO" => Some(SOL.to_string()),
            _ => None,
        };
        load_with_env(&path, &env).unwrap_or_else(|e| panic!("{e}"))
    }

    fn route() -> Arc<RouteSpec> {
        Arc::new(config().routes[0].clone())
    }

    struct Passes;
    #[async_trait]
    impl Stage for Passes {
        async fn run(&self, _ex: &mut Exchange) -> Flow {
            Flow::Continue
        }
    }

    fn factory(
        name: &'static str,
        needs: &'static [Artefact],
        gives: &'static [Artefact],
    ) -> StageFactory {
        StageFactory {
            name,
            phase: Phase::Work,
            payment: false,
            needs,
            gives,
            errors: &[],
            doc: "",
            build: |_, _| Ok(Arc::new(Passes)),
        }
    }

    /// Builds the first route of the fixture with its pipeline replaced by `stages`.
    fn build_with(registry: &[StageFactory], stages: &[&str]) -> Result<Chain, Vec<ConfigError>> {
        let mut cfg = config();
        let route = Arc::new(cfg.routes[0].clone());
        let pipeline = cfg
            .pipelines
            .get_mut(&route.pipeline)
            .expect("the route's pipeline");
        let template = pipeline.stages[0].clone();
        pipeline.stages = stages
            .iter()
            .map(|name| StageRef {
                name: name.to_string(),
                params: Value::Null,
                ..template.clone()
            })
            .collect();
        let services = Services::default();
        let ctx = BuildCtx {
            config: &cfg,
            route: &route,
            services: &services,
        };
        build_chain(registry, &ctx)
    }

    #[test]
    fn a_chain_that_hands_a_stage_the_wrong_type_is_refused() {
        const COUNT: &[Artefact] = &[Artefact::of::<u64>("count")];
        const COUNT_SPELLED: &[Artefact] = &[Artefact::of::<String>("count")];
        let registry = [
            factory("counts", &[], COUNT),
            factory("spells", &[], COUNT_SPELLED),
            factory("reads_count", COUNT, &[]),
        ];
        assert!(build_with(&registry, &["counts", "reads_count"]).is_ok());
        let errors = build_with(&registry, &["spells", "reads_count"])
            .err()
            .expect("a type mismatch is refused");
        assert_eq!(errors.len(), 1);
        assert_eq!(
            errors[0].message,
            "`reads_count` needs `count` as u64, but `spells` gives it as alloc::string::String"
        );
        let errors = build_with(&registry, &["reads_count"])
            .err()
            .expect("a missing artefact is refused");
        assert!(
            errors[0]
                .message
                .contains("which no earlier stage provides"),
            "{}",
            errors[0].message
        );
    }

    struct Panics;
    #[async_trait]
    impl Stage for Panics {
        async fn run(&self, _ex: &mut Exchange) -> Flow {
            panic!("stage bug")
        }
    }

    struct Unready(&'static str);
    #[async_trait]
    impl Stage for Unready {
        async fn run(&self, _ex: &mut Exchange) -> Flow {
            Flow::Continue
        }
        fn readiness(&self) -> Result<(), String> {
            Err(self.0.to_string())
        }
    }

    /// Records that the finishing phase ran and what reply it saw.
    struct SeesReply;
    #[async_trait]
    impl Stage for SeesReply {
        async fn run(&self, ex: &mut Exchange) -> Flow {
            let status = ex.reply.as_ref().map(|r| r.status.as_u16());
            ex.slots.put(status);
            Flow::Continue
        }
    }

    fn link(
        name: &'static str,
        phase: Phase,
        errors: &'static [(u16, &'static str)],
        stage: Arc<dyn Stage>,
    ) -> Link {
        Link {
            name,
            phase,
            payment: false,
            errors,
            stage,
        }
    }

    #[tokio::test]
    async fn a_panicking_stage_becomes_a_500_and_finishing_stages_still_run() {
        let chain = Chain {
            links: vec![
                link("boom", Phase::Work, &[], Arc::new(Panics)),
                link("finish", Phase::Finish, &[], Arc::new(SeesReply)),
            ],
        };
        let mut ex = Exchange::new(route(), None, http::Method::GET);
        chain.run(&mut ex).await;
        let reply = ex.reply.as_ref().expect("a reply");
        assert_eq!(reply.status, StatusCode::INTERNAL_SERVER_ERROR);
        let body = reply.body_json().expect("JSON body");
        assert_eq!(body["error"], "internal_error");
        assert!(body["message"].as_str().unwrap().contains("not charged"));
        assert_eq!(ex.slots.get::<Option<u16>>(), Some(&Some(500)));
    }

    #[test]
    fn readiness_and_error_statuses_are_collected_from_the_stages() {
        let chain = Chain {
            links: vec![
                link(
                    "a",
                    Phase::Work,
                    &[(502, "upstream error"), (504, "timeout")],
                    Arc::new(Unready("chromium missing")),
                ),
                link(
                    "b",
                    Phase::Work,
                    &[(502, "upstream error"), (415, "not html")],
                    Arc::new(Unready("no key")),
                ),
                link("c", Phase::Finish, &[], Arc::new(SeesReply)),
            ],
        };
        assert_eq!(
            chain.readiness().unwrap_err(),
            "a: chromium missing; b: no key"
        );
        let errors = chain.error_statuses();
        assert_eq!(
            errors.keys().copied().collect::<Vec<_>>(),
            vec![415, 502, 504]
        );
        assert_eq!(errors[&502], vec!["upstream error"]);
        let ready = Chain {
            links: vec![link("c", Phase::Finish, &[], Arc::new(SeesReply))],
        };
        assert!(ready.readiness().is_ok());
    }
}
