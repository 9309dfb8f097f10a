//! Demo twins: GET /api/demo/<route>.

use std::sync::Arc;
use warp::filters::BoxedFilter;
use warp::Filter;

use super::App;
use crate::config::Config;

pub struct DemoState {}

impl DemoState {
    pub fn new(_config: &Config) -> DemoState {
        DemoState {}
    }
}

pub fn filter(_app: Arc<App>) -> BoxedFilter<(warp::reply::Response,)> {
    warp::any()
        .and_then(|| async { Err::<warp::reply::Response, _>(warp::reject::not_found()) })
        .boxed()
}
