//! The real `paycall` binary as a child process, against the local payment stack: a copy of the
//! shipped routes.yaml and pipelines/ (static/ linked) in a temp dir (so a test may edit it and reload), its own
//! port, admin port and SQLite ledger, signals sent by pid. Every wait is bounded.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use super::net::free_port;
use super::stack::{self, LocalStack};

pub struct Paycall {
    pub port: u16,
    pub admin_port: u16,
    pub dir: tempfile::TempDir,
    /// Environment added to the stack's (facilitator, payTo, RPCs, allowed loopback).
    pub extra_env: Vec<(String, String)>,
    stack_env: Vec<(String, String)>,
    child: Option<Child>,
}

impl Paycall {
    /// A copy of the shipped configuration wired to `stack`; not started.
    pub fn new(stack: &LocalStack) -> Paycall {
        let dir = tempfile::Builder::new()
            .prefix("paycall-bin-")
            .tempdir()
            .unwrap();
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        std::fs::copy(root.join("routes.yaml"), dir.path().join("routes.yaml")).unwrap();
        std::fs::create_dir(dir.path().join("pipelines")).unwrap();
        for e in std::fs::read_dir(root.join("pipelines")).unwrap() {
            let p = e.unwrap().path();
            std::fs::copy(
                &p,
                dir.path().join("pipelines").join(p.file_name().unwrap()),
            )
            .unwrap();
        }
        // The samples the demo twins serve (read at build time, never edited).
        std::os::unix::fs::symlink(root.join("static"), dir.path().join("static")).unwrap();
        Paycall {
            port: free_port(),
            admin_port: free_port(),
            dir,
            extra_env: Vec::new(),
            stack_env: vec![
                (
                    "PAYCALL_FACILITATOR_URL".into(),
                    stack.facilitator_url.clone(),
                ),
                ("PAYCALL_EVM_PAY_TO".into(), stack.pay_to.clone()),
                ("PAYCALL_SOLANA_PAY_TO".into(), stack.solana("payTo")),
                ("PAYCALL_UPSTREAM_SOLANA_RPC".into(), stack.solana("rpcUrl")),
                ("PAYCALL_ALLOW_CIDRS".into(), "127.0.0.1/32".into()),
                ("PAYCALL_UPSTREAM_BASE_RPC".into(), stack.rpc_url.clone()),
                ("PAYCALL_LOG".into(), "info".into()),
            ],
            child: None,
        }
    }

    pub fn routes(&self) -> PathBuf {
        self.dir.path().join("routes.yaml")
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    pub fn admin_url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.admin_port)
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("paycall.log")
    }

    pub fn env(&self) -> Vec<(String, String)> {
        let mut v = self.stack_env.clone();
        v.push(("PAYCALL_LISTEN".into(), format!("127.0.0.1:{}", self.port)));
        v.push((
            "PAYCALL_ADMIN_LISTEN".into(),
            format!("127.0.0.1:{}", self.admin_port),
        ));
        v.push(("PAYCALL_BASE_URL".into(), self.url("")));
        v.push((
            "PAYCALL_LEDGER_URL".into(),
            format!("sqlite://{}", self.dir.path().join("ledger.db").display()),
        ));
        v.push(("PAYCALL_INSTANCE".into(), "binary-test".into()));
        v.extend(self.extra_env.iter().cloned());
        v
    }

    /// Starts the binary and waits (bounded) until /status answers.
    pub fn start(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_paycall"))
            .env_clear()
            .envs(self.env())
            .arg("--config")
            .arg(self.routes())
            .arg("serve")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("run paycall");
        self.child = Some(child);
        let started = Instant::now();
        loop {
            if let Ok((200, _)) = stack::http_request("GET", &self.url("/status"), None) {
                return;
            }
            if let Some(Ok(Some(status))) = self.child.as_mut().map(|c| c.try_wait()) {
                panic!("paycall exited ({status}):\n{}", self.log_text());
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "paycall not ready in 30 s:\n{}",
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn pid(&self) -> i32 {
        self.child.as_ref().expect("paycall is running").id() as i32
    }

    pub fn signal(&self, sig: libc::c_int) {
        // SAFETY: kill(2) on our own child's pid; no memory is involved.
        let rc = unsafe { libc::kill(self.pid(), sig) };
        assert_eq!(rc, 0, "kill({}, {sig})", self.pid());
    }

    /// Waits for the process to exit, at most `limit`; None when it is still running.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<ExitStatus> {
        let started = Instant::now();
        loop {
            let child = self.child.as_mut()?;
            if let Ok(Some(status)) = child.try_wait() {
                self.child = None;
                return Some(status);
            }
            if started.elapsed() > limit {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    /// `paycall ledger --json` on the same configuration.
    pub fn ledger_json(&self) -> serde_json::Value {
        let out = Command::new(env!("CARGO_BIN_EXE_paycall"))
            .env_clear()
            .envs(self.env())
            .arg("--config")
            .arg(self.routes())
            .args(["ledger", "--json", "--since", "1d"])
            .output()
            .expect("run paycall ledger");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("ledger --json prints JSON")
    }
}

impl Drop for Paycall {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The command line of process `pid`, its arguments joined by spaces ("" once it is gone).
pub fn cmdline(pid: i32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .unwrap_or_default()
}

/// GET with a PAYMENT-SIGNATURE, waiting up to 60 s (the real binary may be settling on the
/// chain, or shutting down with the call in flight): status, PAYMENT-RESPONSE header, raw body.
pub async fn send_paid(url: &str, sig: &str) -> (u16, Option<String>, Vec<u8>) {
    let r = super::server::client()
        .get(url)
        .header("PAYMENT-SIGNATURE", sig)
        .timeout(Duration::from_secs(60))
        .send()
        .await
        .expect("request to paycall");
    let status = r.status().as_u16();
    let receipt = r
        .headers()
        .get("payment-response")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    (
        status,
        receipt,
        r.bytes().await.unwrap_or_default().to_vec(),
    )
}
