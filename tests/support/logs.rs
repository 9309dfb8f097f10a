//! The JSON log lines of the whole test process, captured by one global subscriber (a process
//! has one; every test reading logs shares it and tells its own lines apart by request id).

use serde_json::Value;
use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};

/// The captured bytes; a `Write` for the subscriber.
#[derive(Clone, Default)]
pub struct Lines(Arc<Mutex<Vec<u8>>>);

impl Write for Lines {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Lines {
    /// Every JSON line so far.
    pub fn all(&self) -> Vec<Value> {
        let bytes = self.0.lock().unwrap_or_else(|p| p.into_inner()).clone();
        String::from_utf8_lossy(&bytes)
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .collect()
    }

    /// The request log line (`message: "request"`) of the request with this `X-Request-Id`.
    pub fn request(&self, request_id: &str) -> Option<Value> {
        self.all()
            .into_iter()
            .find(|l| l["message"] == "request" && l["request_id"] == request_id)
    }
}

/// Starts capturing (info and above, JSON, flattened like `paycall serve`'s lines) on the first
/// call; every call returns the same lines. Panics when another global subscriber came first.
pub fn capture() -> Lines {
    static LINES: OnceLock<Lines> = OnceLock::new();
    LINES
        .get_or_init(|| {
            let lines = Lines::default();
            let writer = lines.clone();
            tracing_subscriber::fmt()
                .json()
                .flatten_event(true)
                .with_env_filter("info")
                .with_writer(move || writer.clone())
                .try_init()
                .expect("a global log subscriber was installed before support::logs::capture");
            lines
        })
        .clone()
}
