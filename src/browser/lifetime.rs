//! The browser's processes live no longer than paycall, even when paycall dies without a word
//! (SIGKILL, an OOM kill, a crash), so a restart never finds a second set running.
//!
//! - chromedriver, our child, gets `PR_SET_PDEATHSIG(SIGKILL)`: the kernel kills it when the
//!   thread that spawned it dies (a tokio worker: it lives as long as the runtime).
//! - chromium is chromedriver's child, so it cannot inherit that (the setting is cleared on
//!   fork). chromedriver is told to start it through a two-line launcher that execs util-linux
//!   `setpriv --pdeathsig KILL` then chromium: chromium dies with chromedriver, and its own
//!   helper processes die with it. Without a `setpriv` that knows `--pdeathsig` chromium is
//!   started directly, and only the startup sweep below covers it.
//! - At startup, [`reap_orphans`] kills whatever still runs under the browser profile folder of
//!   a paycall process that no longer exists (profile folders are named after the owner's pid)
//!   and removes those folders.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Profile roots are `<tmp>/paycall-browser-<owner pid>-<random>` (see `Pool::new`).
pub const PROFILE_PREFIX: &str = "paycall-browser-";

/// Makes `cmd`'s process receive SIGKILL when the spawning thread's process dies.
pub fn die_with_parent(cmd: &mut tokio::process::Command) {
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the closure runs between fork and exec and only makes async-signal-safe calls
    // (prctl, getppid) without allocating.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(io::Error::last_os_error());
            }
            // The parent died before the prctl: the signal will never come.
            if libc::getppid() != parent {
                return Err(io::Error::other(
                    "paycall exited while starting the browser",
                ));
            }
            Ok(())
        });
    }
}

fn setpriv_with_pdeathsig() -> Option<&'static Path> {
    static FOUND: OnceLock<Option<PathBuf>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            ["/usr/bin/setpriv", "/bin/setpriv"]
                .into_iter()
                .map(PathBuf::from)
                .find(|p| {
                    std::process::Command::new(p)
                        .arg("--help")
                        .output()
                        .map(|o| String::from_utf8_lossy(&o.stdout).contains("--pdeathsig"))
                        .unwrap_or(false)
                })
        })
        .as_deref()
}

/// The shell text of a launcher that starts `chromium` so that it dies with its parent.
pub fn launcher_script(setpriv: &Path, chromium: &Path) -> String {
    format!(
        "#!/bin/sh\nexec {} --pdeathsig KILL -- {} \"$@\"\n",
        shell_quote(&setpriv.to_string_lossy()),
        shell_quote(&chromium.to_string_lossy())
    )
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The binary chromedriver should start for `chromium`: a launcher written into `dir` when
/// `setpriv --pdeathsig` is available, else chromium itself.
pub fn chromium_launcher(dir: &Path, chromium: &Path) -> PathBuf {
    let Some(setpriv) = setpriv_with_pdeathsig() else {
        tracing::warn!(
            "setpriv --pdeathsig is not available (util-linux): chromium will not die with a killed paycall until the next start"
        );
        return chromium.to_path_buf();
    };
    let path = dir.join("paycall-chromium-launcher");
    let written = std::fs::write(&path, launcher_script(setpriv, chromium)).and_then(|_| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700))
    });
    match written {
        Ok(()) => path,
        Err(e) => {
            tracing::warn!(error = %e, "cannot write the chromium launcher; starting chromium directly");
            chromium.to_path_buf()
        }
    }
}

/// The owner pid named by a path under `<tmp>/paycall-browser-<pid>-…`, if `text` holds one.
pub fn profile_owner(text: &str, tmp: &Path) -> Option<u32> {
    let marker = format!(
        "{}/{PROFILE_PREFIX}",
        tmp.to_string_lossy().trim_end_matches('/')
    );
    let rest = &text[text.find(&marker)? + marker.len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    rest[digits.len()..].starts_with('-').then_some(())?;
    digits.parse().ok()
}

fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Kills the browser processes left by paycall processes that no longer exist (their profile
/// folder under `tmp` names a dead owner) and removes those folders. Returns the pids killed.
pub fn reap_orphans(tmp: &Path) -> Vec<i32> {
    let me = std::process::id();
    let mut killed = Vec::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for pid in entries
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()))
        {
            let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
                continue;
            };
            let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            match profile_owner(&text, tmp) {
                Some(owner) if owner != me && !alive(owner) => {
                    // SAFETY: kill only sends a signal.
                    unsafe {
                        libc::kill(pid, libc::SIGKILL);
                    }
                    killed.push(pid);
                }
                _ => {}
            }
        }
    }
    if let Ok(entries) = std::fs::read_dir(tmp) {
        for e in entries.filter_map(|e| e.ok()) {
            let path = e.path();
            match profile_owner(&path.to_string_lossy(), tmp) {
                Some(owner) if owner != me && !alive(owner) => {
                    let _ = std::fs::remove_dir_all(&path);
                }
                _ => {}
            }
        }
    }
    if !killed.is_empty() {
        tracing::warn!(
            processes = killed.len(),
            "killed browser processes left by an earlier paycall"
        );
    }
    killed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_are_read_from_profile_paths() {
        let tmp = Path::new("/tmp");
        assert_eq!(
            profile_owner(
                "/usr/lib/chromium/chromium --user-data-dir=/tmp/paycall-browser-4242-0a1b2c3d/session-0",
                tmp
            ),
            Some(4242)
        );
        assert_eq!(
            profile_owner("/tmp/paycall-browser-17-ffffffff", Path::new("/tmp/")),
            Some(17)
        );
        assert_eq!(profile_owner("/tmp/paycall-browser-x-1", tmp), None);
        assert_eq!(profile_owner("/tmp/paycall-browser-12", tmp), None);
        assert_eq!(profile_owner("/var/tmp/other-browser-12-1", tmp), None);
        assert_eq!(
            profile_owner("/elsewhere/paycall-browser-12-1", tmp),
            None,
            "only under the temp dir"
        );
    }

    #[test]
    fn the_launcher_quotes_its_paths() {
        let s = launcher_script(
            Path::new("/usr/bin/setpriv"),
            Path::new("/opt/it's/chromium"),
        );
        assert_eq!(
            s,
            "#!/bin/sh\nexec '/usr/bin/setpriv' --pdeathsig KILL -- '/opt/it'\\''s/chromium' \"$@\"\n"
        );
    }

    #[test]
    fn orphans_of_a_dead_owner_are_reaped_and_live_owners_left_alone() {
        let tmp = tempfile::tempdir().unwrap();
        // A pid that has just exited stands for a killed paycall.
        let mut gone = std::process::Command::new("true").spawn().unwrap();
        gone.wait().unwrap();
        let dead_root = tmp
            .path()
            .join(format!("{PROFILE_PREFIX}{}-00000000", gone.id()));
        let live_root = tmp
            .path()
            .join(format!("{PROFILE_PREFIX}{}-00000000", std::process::id()));
        std::fs::create_dir_all(dead_root.join("session-0")).unwrap();
        std::fs::create_dir_all(live_root.join("session-0")).unwrap();
        let spawn = |root: &Path| {
            std::process::Command::new("sh")
                .arg("-c")
                .arg("while :; do sleep 1; done")
                .arg("sh")
                .arg(format!(
                    "--user-data-dir={}",
                    root.join("session-0").display()
                ))
                .spawn()
                .unwrap()
        };
        let mut orphan = spawn(&dead_root);
        let mut ours = spawn(&live_root);
        // A spawned child shows the test binary's argv until it has exec'd `sh`: wait (bounded)
        // until both show theirs, or the reaper has nothing to find.
        let execd = |pid: u32| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| String::from_utf8_lossy(&c).contains("--user-data-dir"))
                .unwrap_or(false)
        };
        let started = std::time::Instant::now();
        while !(execd(orphan.id()) && execd(ours.id())) {
            assert!(started.elapsed() < std::time::Duration::from_secs(10));
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let killed = reap_orphans(tmp.path());
        // The orphan shell, and any child it had just forked (a fork carries the same argv).
        assert!(killed.contains(&(orphan.id() as i32)), "{killed:?}");
        assert!(!killed.contains(&(ours.id() as i32)), "{killed:?}");
        assert!(orphan.wait().is_ok());
        assert!(
            ours.try_wait().unwrap().is_none(),
            "a live owner's browser is left alone"
        );
        assert!(!dead_root.exists() && live_root.exists());
        let _ = ours.kill();
        let _ = ours.wait();
    }
}
