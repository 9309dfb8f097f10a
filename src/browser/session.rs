//! A browser session's state and its processes: the WebDriver client, the browser-level
//! DevTools socket, the context kept ready for the next render, and the chromedriver +
//! chromium processes that die with it. The pool starts and lends sessions; a render uses one.

use std::path::{Path, PathBuf};

use fantoccini::wd::WindowHandle;

/// A browser context with one blank tab, never used by any caller yet.
#[derive(Debug, Clone)]
pub struct FreshContext {
    pub context_id: String,
    pub target_id: String,
    /// Set when the tab is already the WebDriver window with this viewport applied (done
    /// ahead, after the previous render, for the route's default viewport).
    pub prepared: Option<(u32, u32)>,
}

/// A chromedriver process, its chromium, and the WebDriver session between them.
pub struct Session {
    pub client: fantoccini::Client,
    /// The window the session opened with; kept open so the session lives between renders.
    pub home: WindowHandle,
    /// The proxy's refusal-page token (see net::proxy).
    pub proxy_token: String,
    /// `http://127.0.0.1:<port>` of the guarded proxy, given again to each new context.
    pub proxy_server: String,
    /// The browser-level DevTools connection (contexts and tabs).
    pub browser: super::cdp::BrowserCdp,
    /// A context opened ahead for the next render, never used yet.
    pub fresh: Option<FreshContext>,
    /// The context the last render used, until `tidy` disposes it.
    pub used: Option<String>,
    pub uses: u32,
    pub(super) procs: Procs,
}

impl Session {
    /// The session's profile folder: every process of its chromium names it.
    pub fn profile(&self) -> &Path {
        &self.procs.profile
    }
}

/// The processes of a session; dropping this kills them.
pub(super) struct Procs {
    pub(super) driver: Option<tokio::process::Child>,
    pub(super) pgid: Option<i32>,
    pub(super) profile: PathBuf,
}

impl Procs {
    pub(super) fn kill(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            // SAFETY: killpg only sends a signal; pgid is the group chromedriver leads.
            unsafe {
                libc::killpg(pgid, libc::SIGKILL);
            }
        }
        sweep_profile_processes(&self.profile);
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

impl Drop for Procs {
    fn drop(&mut self) {
        self.kill();
    }
}

/// SIGKILLs every process whose command line names `dir` (a session's or a pool's profile
/// folder), in case one left chromedriver's process group.
pub fn sweep_profile_processes(dir: &Path) {
    for pid in processes_naming(dir) {
        // SAFETY: kill only sends a signal.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
    }
}

/// The memory of every process naming `dir` (a session's chromium: browser, renderers, GPU
/// and utility processes), as the sum of their proportional set sizes (shared pages split
/// between the processes sharing them, so the libraries all of them map count once), in bytes.
/// Falls back to resident size where smaps_rollup cannot be read.
pub fn profile_memory_bytes(dir: &Path) -> u64 {
    processes_naming(dir)
        .into_iter()
        .map(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup"))
                .ok()
                .and_then(|s| {
                    s.lines()
                        .find(|l| l.starts_with("Pss:"))
                        .and_then(|l| l.split_whitespace().nth(1))
                        .and_then(|kb| kb.parse::<u64>().ok())
                })
                .map(|kb| kb * 1024)
                .or_else(|| {
                    let statm = std::fs::read_to_string(format!("/proc/{pid}/statm")).ok()?;
                    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
                    Some(pages * 4096)
                })
                .unwrap_or(0)
        })
        .sum()
}

/// Processes whose command line contains `needle`'s path.
pub fn processes_naming(needle: &Path) -> Vec<i32> {
    let needle = needle.to_string_lossy().into_owned();
    let me = std::process::id() as i32;
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()))
        .filter(|pid| *pid != me)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| String::from_utf8_lossy(&c).contains(&needle))
                .unwrap_or(false)
        })
        .collect()
}
