//! `extract`: /api/extract's transform (docs/extract.md). Reads the page the `fetch` stage
//! got (HTML only: 415 otherwise) or the caller's own `html` (then `url`, if given, is only
//! echoed and used to make links absolute), and answers the page facts (title, description,
//! canonical, language, links, images, JSON-LD, headings, text sample) plus the caller's
//! CSS-selector `fields`.
//!
//! Billing: with fields, none matching is 422 `no_fields_matched` (not charged by the default
//! bill rule, status ≥ 400). Input checks (missing input, `html` too large or unreadable, a bad
//! fields spec) run before the payment gate verifies.
//!
//! Parsing and selector work run on the blocking pool, at most `max_concurrent` at once, with
//! the time budget checked inside the work before every element tested (docs/decisions.md#limits): a hostile
//! page or selector ends its fields with `time_budget` instead of holding a thread.
//!
//! Parameters (defaults are the limits in docs/decisions.md#limits):
//! - `url_param` (`url`), `html_param` (`html`), `fields_param` (`fields`): input names.
//! - `max_html_bytes` (200000): a larger `html` is 413 `html_too_large`.
//! - `budget_ms` (2000): parse + selector time budget per request.
//! - `max_concurrent` (4), `queue` (16), `queue_wait_ms` (4000): extraction jobs running at
//!   once on this route, callers allowed to wait for a turn and for how long
//!   (`pipeline::parse_slots`); past them 503 `parser_busy` with `Retry-After`, not charged.
//! - `nodes_per_byte` (1), `min_nodes` (4096): the parse's node budget,
//!   `min_nodes + nodes_per_byte × bytes`, counted as the tree builder makes nodes. A page whose
//!   tree outgrows it (misnested formatting elements reconstructed in every paragraph: 200 KB
//!   becoming 24 million elements, issue 21) is 413 `html_too_complex`; a parse that does not
//!   finish within `budget_ms` is 504 `parse_timeout`. Both not charged.

use async_trait::async_trait;
use http::StatusCode;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::doc::fields::{self, FieldSpec};
use crate::doc::page::{self, Page};
use crate::doc::parse::{Budget, Refused};
use crate::net::Fetched;
use crate::pipeline::parse_slots::{busy_reply, ParseSlots, SlotLimits};
use crate::pipeline::{params, BuildCtx, Exchange, Flow, Phase, Reply, Stage, StageFactory};

pub const FACTORY: StageFactory = StageFactory {
    name: "extract",
    phase: Phase::Work,
    payment: false,
    needs: &[],
    gives: &[],
    doc: "page facts and CSS-selector fields from the fetched page or the caller's html",
    errors: &[
        (
            400,
            "Neither url nor html given (missing_parameter), html unreadable (bad_html: empty, NUL characters or no markup), or a bad fields spec (bad_fields: not an object, over 20 fields, a selector missing, empty or over 300 characters, limit outside 1-50, unknown keys)",
        ),
        (
            413,
            "html larger than 200,000 bytes (html_too_large), or HTML whose tree outgrows the node budget for its size (html_too_complex)",
        ),
        (415, "The fetched page is not HTML (unsupported_content_type)"),
        (
            422,
            "no_fields_matched: fields were requested and none matched. The body carries fields (all null), fieldErrors (per field: bad_selector, no_match, attr_missing, time_budget, document_too_deep, eval_failed), matchedFields and requestedFields",
        ),
        (502, "The page could not be read (extract_failed)"),
        (
            503,
            "Every extraction slot of the route is taken and the queue is full or the wait ran out (parser_busy, Retry-After)",
        ),
        (
            504,
            "The page could not be parsed within the time budget (parse_timeout)",
        ),
    ],
    build,
};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    #[serde(default = "default_url")]
    url_param: String,
    #[serde(default = "default_html")]
    html_param: String,
    #[serde(default = "default_fields")]
    fields_param: String,
    #[serde(default = "default_max_html")]
    max_html_bytes: usize,
    #[serde(default = "default_budget")]
    budget_ms: u64,
    #[serde(default = "default_concurrent")]
    max_concurrent: usize,
    #[serde(default = "default_nodes_per_byte")]
    nodes_per_byte: usize,
    #[serde(default = "default_min_nodes")]
    min_nodes: usize,
    #[serde(default = "default_queue")]
    queue: usize,
    #[serde(default = "default_queue_wait")]
    queue_wait_ms: u64,
}

fn default_url() -> String {
    "url".into()
}
fn default_html() -> String {
    "html".into()
}
fn default_fields() -> String {
    "fields".into()
}
fn default_max_html() -> usize {
    200_000
}
fn default_budget() -> u64 {
    2000
}
fn default_concurrent() -> usize {
    4
}
fn default_queue() -> usize {
    16
}
fn default_queue_wait() -> u64 {
    4000
}
fn default_nodes_per_byte() -> usize {
    crate::doc::parse::DEFAULT_NODES_PER_BYTE
}
fn default_min_nodes() -> usize {
    crate::doc::parse::DEFAULT_MIN_NODES
}

struct Extract {
    p: Params,
    jobs: ParseSlots,
}

fn build(ctx: &BuildCtx<'_>, p: Value) -> Result<Arc<dyn Stage>, String> {
    let p: Params = params(p)?;
    for name in [&p.url_param, &p.html_param, &p.fields_param] {
        if ctx.route.param(name).is_none() {
            return Err(format!("the route has no input parameter `{name}`"));
        }
    }
    if p.max_html_bytes == 0 || p.budget_ms == 0 || p.nodes_per_byte == 0 {
        return Err("max_html_bytes, budget_ms and nodes_per_byte must be positive".into());
    }
    let slots = SlotLimits::new(
        p.max_concurrent,
        p.queue,
        p.queue_wait_ms,
        ["max_concurrent", "queue", "queue_wait_ms"],
    )?;
    if p.budget_ms > 30_000 {
        return Err("budget_ms above 30000 is not allowed".into());
    }
    Ok(Arc::new(Extract {
        jobs: ParseSlots::new(slots),
        p,
    }))
}

impl Extract {
    /// The checked fields spec: None when no fields were asked for (absent or `{}`).
    #[allow(clippy::result_large_err)] // the error is the finished reply, as everywhere
    fn fields(&self, input: &Map<String, Value>) -> Result<Option<Vec<FieldSpec>>, Reply> {
        match input.get(&self.p.fields_param) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Object(m)) if m.is_empty() => Ok(None),
            Some(Value::Object(m)) => fields::parse_spec(m)
                .map(Some)
                .map_err(|msg| Reply::error(StatusCode::BAD_REQUEST, "bad_fields", msg)),
            Some(_) => Err(Reply::error(
                StatusCode::BAD_REQUEST,
                "bad_fields",
                "`fields` must be a JSON object mapping names to selectors",
            )),
        }
    }

    #[allow(clippy::result_large_err)]
    fn html<'a>(&self, input: &'a Map<String, Value>) -> Result<Option<&'a str>, Reply> {
        let Some(html) = input.get(&self.p.html_param).and_then(Value::as_str) else {
            return Ok(None);
        };
        if html.len() > self.p.max_html_bytes {
            return Err(Reply::error(
                StatusCode::PAYLOAD_TOO_LARGE,
                "html_too_large",
                format!(
                    "`{}` is {} bytes; the limit is {} bytes",
                    self.p.html_param,
                    html.len(),
                    self.p.max_html_bytes
                ),
            ));
        }
        if let Some(why) = page::html_problem(html) {
            return Err(Reply::error(StatusCode::BAD_REQUEST, "bad_html", why));
        }
        Ok(Some(html))
    }
}

/// What the blocking job produces.
struct Outcome {
    facts: Map<String, Value>,
    fields: Option<Vec<(String, fields::FieldResult)>>,
}

/// The page to read, and what the answer says about where it came from.
struct Source {
    text: String,
    /// Echoed as `url`: the caller's `url`, or the URL fetched.
    url: Option<url::Url>,
    /// Where the page was in the end (after redirects): `finalUrl`, and the base for links.
    final_url: Option<url::Url>,
    bytes_read: usize,
    truncated: bool,
}

impl Source {
    /// The caller's own html: `url`, when given, is only echoed and used as the base.
    fn given(html: &str, given_url: Option<url::Url>) -> Source {
        Source {
            text: html.to_string(),
            url: given_url.clone(),
            final_url: given_url,
            bytes_read: html.len(),
            truncated: false,
        }
    }

    /// The answer's closing facts about the page read (after the page facts and fields).
    fn describe(&self, out: &mut Map<String, Value>) {
        out.insert("bytesRead".into(), json!(self.bytes_read));
        if let Some(f) = &self.final_url {
            out.insert("finalUrl".into(), json!(f.as_str()));
        }
        if self.truncated {
            out.insert("truncated".into(), json!(true));
        }
    }
}

/// The requested fields sorted into values and errors, in the order asked.
struct FieldReport {
    values: Map<String, Value>,
    errors: Map<String, Value>,
    matched: usize,
    requested: usize,
}

impl FieldReport {
    /// A field that failed is null among the values and named with its error code.
    fn of(results: Vec<(String, fields::FieldResult)>) -> FieldReport {
        let mut report = FieldReport {
            values: Map::new(),
            errors: Map::new(),
            matched: 0,
            requested: results.len(),
        };
        for (name, r) in results {
            match r {
                Ok(v) => {
                    report.matched += 1;
                    report.values.insert(name, v);
                }
                Err(e) => {
                    report.values.insert(name.clone(), Value::Null);
                    report.errors.insert(name, json!(e.code()));
                }
            }
        }
        report
    }

    /// 422 when nothing matched: an error, so the default bill rule does not charge it.
    fn none_matched(self) -> Reply {
        let mut extra = Map::new();
        extra.insert("fields".into(), Value::Object(self.values));
        extra.insert("fieldErrors".into(), Value::Object(self.errors));
        extra.insert("matchedFields".into(), json!(0));
        extra.insert("requestedFields".into(), json!(self.requested));
        Reply::error_with(
            StatusCode::UNPROCESSABLE_ENTITY,
            "no_fields_matched",
            "none of the requested fields matched (see fieldErrors); nothing was charged",
            extra,
        )
    }

    /// The fields part of a successful answer (`fieldErrors` only when some failed).
    fn write(self, out: &mut Map<String, Value>) {
        out.insert("fields".into(), Value::Object(self.values));
        if !self.errors.is_empty() {
            out.insert("fieldErrors".into(), Value::Object(self.errors));
        }
        out.insert("matchedFields".into(), json!(self.matched));
        out.insert("requestedFields".into(), json!(self.requested));
    }
}

impl Extract {
    /// The caller's html, else the page the `fetch` stage got (HTML only: 415 otherwise).
    fn source(&self, ex: &mut Exchange) -> Result<Source, Flow> {
        let given_url = ex
            .input_str(&self.p.url_param)
            .and_then(|u| url::Url::parse(u).ok());
        match self.html(&ex.input) {
            Err(r) => {
                ex.reply = Some(r);
                Err(Flow::Reply)
            }
            Ok(Some(html)) => Ok(Source::given(html, given_url)),
            Ok(None) => fetched_source(ex),
        }
    }

    /// Parses the page and evaluates the fields on the blocking pool, in one of the route's
    /// slots, within the time and node budgets; refusals become the answer (not charged).
    async fn parse_and_select(
        &self,
        ex: &mut Exchange,
        text: String,
        base: Option<url::Url>,
        specs: Option<Vec<FieldSpec>>,
    ) -> Result<Outcome, Flow> {
        let permit = match self.jobs.acquire().await {
            Ok(p) => p,
            Err(busy) => {
                ex.reply = Some(busy_reply(busy, "pages", self.jobs.limits()));
                return Err(Flow::Reply);
            }
        };
        let budget = Duration::from_millis(self.p.budget_ms);
        let nodes = Budget {
            nodes_per_byte: self.p.nodes_per_byte,
            min_nodes: self.p.min_nodes,
            deadline: None,
        };
        let work = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            let deadline = Instant::now() + budget;
            let page = Page::parse(&text, base.as_ref(), &nodes.with_deadline(deadline))?;
            let facts = page.facts();
            let fields = specs.map(|s| fields::evaluate(&page, &s, deadline));
            Ok::<_, Refused>(Outcome { facts, fields })
        })
        .await;
        match work {
            Ok(Ok(o)) => Ok(o),
            Ok(Err(r)) => {
                let status = match r {
                    Refused::TooManyNodes { .. } => StatusCode::PAYLOAD_TOO_LARGE,
                    Refused::Timeout => StatusCode::GATEWAY_TIMEOUT,
                };
                Err(ex.fail(status, r.code(), format!("{r}; nothing was charged")))
            }
            Err(_) => Err(ex.fail(
                StatusCode::BAD_GATEWAY,
                "extract_failed",
                "the page could not be read; nothing was charged",
            )),
        }
    }
}

/// The page the `fetch` stage got, decoded, if it is HTML (415 otherwise: not charged).
fn fetched_source(ex: &mut Exchange) -> Result<Source, Flow> {
    let Some(f) = ex.slots.take::<Fetched>() else {
        return Err(ex.fail_internal("nothing fetched"));
    };
    let r = &f.response;
    let ct = r.content_type().unwrap_or("").to_string();
    if !page::is_html(&ct, &r.body) {
        return Err(ex.fail(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_content_type",
            format!(
                "the page is `{ct}`, not HTML; /api/extract reads text/html and application/xhtml+xml (nothing was charged)"
            ),
        ));
    }
    Ok(Source {
        text: page::decode_html(&ct, &r.body),
        url: Some(f.requested.clone()),
        final_url: Some(r.final_url.clone()),
        bytes_read: r.bytes_read,
        truncated: r.truncated,
    })
}

#[async_trait]
impl Stage for Extract {
    fn check_input(&self, input: &Map<String, Value>) -> Result<(), Reply> {
        let has_url = input.get(&self.p.url_param).is_some_and(Value::is_string);
        let html = self.html(input)?;
        if !has_url && html.is_none() {
            return Err(Reply::error(
                StatusCode::BAD_REQUEST,
                "missing_parameter",
                format!(
                    "give `{}` (a page to fetch) or `{}` (the page's HTML, POST)",
                    self.p.url_param, self.p.html_param
                ),
            ));
        }
        self.fields(input).map(|_| ())
    }

    async fn run(&self, ex: &mut Exchange) -> Flow {
        let specs = match self.fields(&ex.input) {
            Ok(s) => s,
            Err(r) => {
                ex.reply = Some(r);
                return Flow::Reply;
            }
        };
        let mut source = match self.source(ex) {
            Ok(s) => s,
            Err(flow) => return flow,
        };
        // The text goes to the blocking job; the rest of the source stays for the answer.
        let text = std::mem::take(&mut source.text);
        let base = source.final_url.clone();
        let outcome = match self.parse_and_select(ex, text, base, specs).await {
            Ok(o) => o,
            Err(flow) => return flow,
        };
        let mut out = Map::new();
        out.insert("ok".into(), json!(true));
        if let Some(u) = &source.url {
            out.insert("url".into(), json!(u.as_str()));
        }
        out.extend(outcome.facts);
        if let Some(results) = outcome.fields {
            let report = FieldReport::of(results);
            if report.matched == 0 {
                ex.reply = Some(report.none_matched());
                return Flow::Reply;
            }
            report.write(&mut out);
        }
        source.describe(&mut out);
        out.insert("elapsedMs".into(), json!(ex.elapsed_ms()));
        ex.respond_ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::chain::with_shipped_route;
    use serde_json::json;

    #[test]
    fn parameters_name_route_inputs_and_budgets_are_positive() {
        with_shipped_route("/api/extract", |ctx| {
            let e = build(ctx, json!({"fields_param": "nope"})).err().unwrap();
            assert!(e.contains("no input parameter `nope`"), "{e}");
            let e = build(ctx, json!({"budget_ms": 0})).err().unwrap();
            assert!(e.contains("must be positive"), "{e}");
            let e = build(ctx, json!({"budgt_ms": 10})).err().unwrap();
            assert!(e.contains("unknown field"), "{e}");
        });
    }

    #[test]
    fn field_report_nulls_failed_fields_and_counts_the_matches() {
        let report = FieldReport::of(vec![
            ("a".into(), Ok(json!("x"))),
            ("b".into(), Err(fields::FieldError::NoMatch)),
        ]);
        assert_eq!((report.matched, report.requested), (1, 2));
        let mut out = Map::new();
        report.write(&mut out);
        assert_eq!(
            serde_json::to_string(&out).unwrap(),
            r#"{"fields":{"a":"x","b":null},"fieldErrors":{"b":"no_match"},"matchedFields":1,"requestedFields":2}"#
        );
    }

    #[test]
    fn nothing_matched_is_a_422_with_every_field_null() {
        let report = FieldReport::of(vec![("a".into(), Err(fields::FieldError::NoMatch))]);
        assert_eq!(report.matched, 0);
        assert_eq!(
            report.none_matched().status,
            StatusCode::UNPROCESSABLE_ENTITY
        );
    }
}
