//! Proxy variables from the environment must not divert the guarded client.
//!
//! Environment variables are process-global, so this lives alone in its own test binary, sets
//! them before any runtime or client exists, and runs a single test.

mod support;

use std::sync::Arc;
use std::time::Duration;

use paycall::net::{install_crypto_provider, FetchRequest, Guard, GuardedClient, StaticResolver};
use url::Url;

use support::guard::{Canary, Reply, Upstream};

#[test]
fn proxy_variables_are_ignored() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let canary = Canary::start("127.0.0.2").await;
        let up = Upstream::start("127.0.0.1", |_| Reply::ok("direct")).await;
        let proxy = format!("http://{}", canary.addr);
        for var in [
            "HTTP_PROXY",
            "http_proxy",
            "HTTPS_PROXY",
            "https_proxy",
            "ALL_PROXY",
            "all_proxy",
        ] {
            std::env::set_var(var, &proxy);
        }
        // A NO_PROXY listing loopback would make this test pass for the wrong reason.
        std::env::remove_var("NO_PROXY");
        std::env::remove_var("no_proxy");

        let guard = Guard::new(vec!["127.0.0.1/32".parse().unwrap()]);
        let client = GuardedClient::new(Arc::new(guard), Arc::new(StaticResolver::new()), "t/1")
            .expect("client builds");
        let mut req = FetchRequest::get(Url::parse(&up.url("/")).unwrap());
        req.timeout = Duration::from_secs(10);
        let resp = client.fetch(req).await.expect("direct fetch");
        assert_eq!(&resp.body[..], b"direct");
        assert_eq!(resp.remote_addr, Some(up.addr));
        assert_eq!(up.requests().len(), 1);
        assert_eq!(
            canary.hits(),
            0,
            "the guarded client went through the proxy"
        );

        // Control: a plain reqwest client built in this same environment does use the proxy, so
        // the variables above are live and the assertion before could have failed.
        install_crypto_provider();
        let plain = reqwest::Client::builder().build().unwrap();
        let _ = tokio::time::timeout(Duration::from_secs(10), plain.get(up.url("/")).send()).await;
        assert!(
            canary.hits() >= 1,
            "control: a default client should have used the proxy"
        );
        assert_eq!(
            up.requests().len(),
            1,
            "control: the upstream was not reached directly"
        );
    });
}
