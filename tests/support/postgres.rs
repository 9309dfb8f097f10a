//! A throwaway Postgres cluster for tests: Debian's server binaries, initdb in a temp dir as an
//! unprivileged user (postgres refuses to run as root; as root we drop to `nobody`), listening
//! on 127.0.0.1 on a free port, trust auth, fsync off. Stopped and removed on drop.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Cluster {
    pub port: u16,
    child: Option<Child>,
    dir: tempfile::TempDir,
}

/// The newest installed server's bin dir (/usr/lib/postgresql/<v>/bin).
fn bin_dir() -> PathBuf {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .unwrap_or_else(|e| panic!("no /usr/lib/postgresql ({e}): run scripts/setup.sh"))
        .filter_map(|e| {
            let e = e.ok()?;
            let v: u32 = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((v, bin))
        })
        .collect();
    versions.sort();
    versions
        .pop()
        .map(|(_, b)| b)
        .expect("no Postgres server installed: run scripts/setup.sh")
}

fn is_root() -> bool {
    // SAFETY: getuid has no preconditions.
    unsafe { libc::getuid() == 0 }
}

/// A command run as `nobody` when we are root, as ourselves otherwise.
fn as_unprivileged(program: &Path) -> Command {
    if is_root() {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(program);
        c
    } else {
        Command::new(program)
    }
}

impl Cluster {
    /// initdb + postgres; waits (bounded) until it accepts connections.
    pub fn start() -> Cluster {
        let bin = bin_dir();
        let dir = tempfile::Builder::new()
            .prefix("paycall-pg-")
            .tempdir()
            .expect("temp dir");
        let data = dir.path().join("data");
        if is_root() {
            std::os::unix::fs::chown(dir.path(), Some(65534), Some(65534)).expect("chown");
        }
        let out = as_unprivileged(&bin.join("initdb"))
            .arg("-D")
            .arg(&data)
            .args(["-U", "paycall", "--auth=trust", "-E", "UTF8", "--no-sync"])
            .env("LC_ALL", "C")
            .output()
            .expect("run initdb");
        assert!(
            out.status.success(),
            "initdb failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let port = super::net::free_port();
        let log = std::fs::File::create(dir.path().join("postgres.log")).unwrap();
        if is_root() {
            std::os::unix::fs::chown(dir.path().join("postgres.log"), Some(65534), Some(65534))
                .ok();
        }
        let child = as_unprivileged(&bin.join("postgres"))
            .arg("-D")
            .arg(&data)
            .args(["-h", "127.0.0.1", "-p", &port.to_string()])
            .arg("-k")
            .arg(dir.path())
            .args(["-c", "fsync=off", "-c", "synchronous_commit=off"])
            .args(["-c", "full_page_writes=off", "-c", "max_connections=200"])
            .env("LC_ALL", "C")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("run postgres");
        let mut cluster = Cluster {
            port,
            child: Some(child),
            dir,
        };
        let started = Instant::now();
        loop {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                let ok = Command::new(bin.join("psql"))
                    .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-U", "paycall"])
                    .args(["-d", "postgres", "-c", "SELECT 1"])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .map(|s| s.success())
                    .unwrap_or(false);
                if ok {
                    break;
                }
            }
            if let Some(Ok(Some(st))) = cluster.child.as_mut().map(|c| c.try_wait()) {
                panic!("postgres exited ({st}):\n{}", cluster.log());
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "postgres not ready in 30 s:\n{}",
                cluster.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        cluster
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("postgres.log")).unwrap_or_default()
    }

    /// Creates a database and returns its URL.
    pub fn database(&self, name: &str) -> String {
        let psql = bin_dir().join("psql");
        let st = Command::new(psql)
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-U",
                "paycall",
            ])
            .args(["-d", "postgres", "-c", &format!("CREATE DATABASE {name}")])
            .output()
            .expect("psql");
        assert!(
            st.status.success(),
            "{}",
            String::from_utf8_lossy(&st.stderr)
        );
        format!("postgres://paycall@127.0.0.1:{}/{name}", self.port)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            // SIGINT: Postgres' fast shutdown. As root the child is setpriv, which exec'd postgres.
            unsafe {
                libc::kill(c.id() as i32, libc::SIGINT);
            }
            let started = Instant::now();
            while started.elapsed() < Duration::from_secs(10) {
                if let Ok(Some(_)) = c.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(25));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
