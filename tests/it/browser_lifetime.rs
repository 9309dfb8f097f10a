//! The browser dies with paycall: a real `paycall serve` (the shipped config, one warm browser
//! session) is SIGKILLed, as an OOM kill or a crash would, and neither chromedriver nor any
//! chromium process survives it.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::binary::cmdline;
use crate::support::server::{EVM_PAY_TO, SOL_PAY_TO};

/// The shipped config in `dir`, with one browser session started with the server.
fn shipped_with_warm_browser(dir: &Path) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for sub in ["pipelines", "static"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
        for e in std::fs::read_dir(root.join(sub)).unwrap() {
            let p = e.unwrap().path();
            std::fs::copy(&p, dir.join(sub).join(p.file_name().unwrap())).unwrap();
        }
    }
    let routes = std::fs::read_to_string(root.join("routes.yaml")).unwrap();
    let warm = "queue_wait_ms: 20000, warm: 0";
    assert!(routes.contains(warm), "the shipped screenshot caps changed");
    let path = dir.join("routes.yaml");
    std::fs::write(&path, routes.replace(warm, "queue_wait_ms: 20000, warm: 1")).unwrap();
    path
}

/// Processes whose command line names `needle` (chromedriver's and chromium's name the profile
/// folder under the server's temp dir).
fn processes_naming(needle: &Path) -> Vec<(i32, String)> {
    paycall::browser::session::processes_naming(needle)
        .into_iter()
        .map(|pid| (pid, cmdline(pid)))
        .collect()
}

/// Children of `parent` (chromedriver names no profile folder: it is found as paycall's child).
fn children_of(parent: u32) -> Vec<(i32, String)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()))
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|st| {
                    // pid (comm) state ppid …: comm may hold spaces, so read after the last ')'
                    let rest = &st[st.rfind(')')? + 2..];
                    rest.split(' ').nth(1)?.parse::<u32>().ok()
                })
                == Some(parent)
        })
        .map(|pid| (pid, cmdline(pid)))
        .collect()
}

/// Running (not a zombie waiting for its reaper).
fn running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|st| st[st.rfind(')')? + 2..].chars().next())
        .is_some_and(|state| state != 'Z')
}

#[test]
fn a_sigkilled_server_takes_chromedriver_and_chromium_with_it() {
    if !Path::new(paycall::browser::DEFAULT_CHROMIUM).exists() {
        eprintln!("skipped: chromium is not installed (scripts/setup.sh installs it)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap(); // the server's TMPDIR: its profiles live here only
    let config = shipped_with_warm_browser(dir.path());
    let log_path = dir.path().join("paycall.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let mut paycall = Command::new(env!("CARGO_BIN_EXE_paycall"))
        .args(["serve", "--config"])
        .arg(&config)
        .env("TMPDIR", tmp.path())
        .env("PAYCALL_LISTEN", "127.0.0.1:0")
        .env("PAYCALL_EVM_PAY_TO", EVM_PAY_TO)
        .env("PAYCALL_SOLANA_PAY_TO", SOL_PAY_TO)
        .env("PAYCALL_FACILITATOR_URL", "http://127.0.0.1:9/")
        // Startup's network checks read the Solana RPC: loopback only in tests.
        .env("PAYCALL_UPSTREAM_SOLANA_RPC", "http://127.0.0.1:9/")
        .env("PAYCALL_LEDGER_URL", "sqlite::memory:")
        .env("PAYCALL_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("paycall starts");

    // Wait (bounded) for the warm session: chromedriver and chromium both running.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut text = String::new();
    loop {
        text.clear();
        std::fs::File::open(&log_path)
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        let mut procs = processes_naming(tmp.path());
        procs.extend(children_of(paycall.id()));
        let has = |what: &str| procs.iter().any(|(_, c)| c.contains(what));
        if text.contains("browser pool warm") && has("chromedriver") && has("chromium") {
            break;
        }
        if Instant::now() > deadline || paycall.try_wait().unwrap().is_some() {
            let _ = paycall.kill();
            panic!("no warm browser session within 60 s; processes {procs:?}; log:\n{text}");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let mut before = processes_naming(tmp.path());
    before.extend(children_of(paycall.id()));
    before.sort();
    before.dedup();
    assert!(before.len() >= 2, "{before:?}");

    // SIGKILL: no shutdown code of ours runs.
    paycall.kill().unwrap();
    paycall.wait().unwrap();

    let survivors = || -> Vec<(i32, String)> {
        before
            .iter()
            .filter(|(pid, _)| running(*pid))
            .cloned()
            .chain(processes_naming(tmp.path()))
            .collect()
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut left = survivors();
    while !left.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        left = survivors();
    }
    // Never leave them running whatever the verdict (these pids name our own temp dir).
    for (pid, _) in &left {
        // SAFETY: kill only sends a signal.
        unsafe {
            libc::kill(*pid, libc::SIGKILL);
        }
    }
    assert!(
        left.is_empty(),
        "still running 10 s after paycall was killed: {left:#?}"
    );
}
