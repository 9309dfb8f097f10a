//! The admin listener (`service.admin_listen`, default 127.0.0.1:9402; docs/decisions.md#operations): never the
//! public port, because /metrics shows revenue.
//!
//! - `GET /metrics`: Prometheus exposition text.
//! - `GET /config`: the served configuration's hash and load time, its routes and prices, and
//!   the last reload's report.
//! - `POST /reload`: re-read routes.yaml and pipelines/ (as SIGHUP does); 200 with the report, or
//!   422 with the located errors (the running configuration stays).
//! - `GET /healthz`: 200 while serving.

use http::StatusCode;
use serde_json::{json, Value};
use std::sync::Arc;
use warp::filters::BoxedFilter;
use warp::Filter;

use crate::ops::reload::Live;

pub fn filter(live: Arc<Live>) -> BoxedFilter<(warp::reply::Response,)> {
    let l = live.clone();
    let metrics = warp::path!("metrics").and(warp::get()).map(move || {
        let app = l.app();
        app.metrics
            .paid_in_flight
            .set(app.paid_calls.in_flight() as i64);
        let mut r = warp::reply::Response::new(app.metrics.render().into());
        r.headers_mut().insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
        );
        r
    });
    let l = live.clone();
    let config = warp::path!("config")
        .and(warp::get())
        .map(move || json_response(StatusCode::OK, &config_document(&l)));
    let l = live.clone();
    let reload = warp::path!("reload").and(warp::post()).then(move || {
        let l = l.clone();
        async move {
            let report = l.reload().await;
            let status = if report.ok {
                StatusCode::OK
            } else {
                StatusCode::UNPROCESSABLE_ENTITY
            };
            json_response(status, &report.to_json())
        }
    });
    let health = warp::path!("healthz")
        .and(warp::get())
        .map(|| json_response(StatusCode::OK, &json!({"ok": true})));
    let not_found = warp::any().map(|| {
        json_response(
            StatusCode::NOT_FOUND,
            &json!({"error": "not_found", "message": "admin: GET /metrics, GET /config, POST /reload, GET /healthz"}),
        )
    });
    metrics
        .or(config)
        .unify()
        .or(reload)
        .unify()
        .or(health)
        .unify()
        .or(not_found)
        .unify()
        .boxed()
}

/// What GET /config answers.
pub fn config_document(live: &Live) -> Value {
    let app = live.app();
    let routes: Vec<Value> = app
        .routes
        .iter()
        .map(|r| {
            json!({
                "path": r.spec.path,
                "name": r.spec.name,
                "priceUsd": r.spec.price.as_ref().map(|p| p.usd.clone()),
                "atomic": r.spec.price.as_ref().map(|p| p.atomic.clone()),
            })
        })
        .collect();
    json!({
        "config": app.stamp.to_json(),
        "file": app.config.root.join("routes.yaml").display().to_string(),
        "routes": routes,
        "lastReload": live.last_reload().map(|r| r.to_json()),
        "paidCallsInFlight": app.paid_calls.in_flight(),
    })
}

fn json_response(status: StatusCode, v: &Value) -> warp::reply::Response {
    let mut r = warp::reply::Response::new(v.to_string().into());
    *r.status_mut() = status;
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    r
}
