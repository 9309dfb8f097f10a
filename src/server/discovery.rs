//! Discovery and information routes.

use std::sync::Arc;
use warp::filters::BoxedFilter;
use warp::Filter;

use super::App;

pub fn filter(_app: Arc<App>) -> BoxedFilter<(warp::reply::Response,)> {
    warp::any()
        .and_then(|| async { Err::<warp::reply::Response, _>(warp::reject::not_found()) })
        .boxed()
}
