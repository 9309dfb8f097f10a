//! Loopback servers for the outbound-guard tests: a scripted HTTP/1.1 upstream that records what
//! it received, and canaries that count every TCP connection they accept (they must see none).
//!
//! The upstream is hand-rolled on tokio so that tests control the bytes exactly: declared lengths
//! that lie, chunked bodies, servers that stall or never answer.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Longest a stalling server holds a connection: tests never wait on it longer than this.
const HOLD: Duration = Duration::from_secs(20);

/// One request as the upstream received it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// What the upstream does with a request.
#[derive(Debug, Clone)]
pub enum Reply {
    Full {
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    },
    Chunked {
        status: u16,
        chunks: Vec<Vec<u8>>,
    },
    /// Declare `content_length`, send `prefix`, then hold the connection open (or close it).
    Declare {
        content_length: u64,
        prefix: Vec<u8>,
        then_close: bool,
    },
    /// Read the request and never answer.
    Silent,
}

impl Reply {
    pub fn ok(body: impl Into<Vec<u8>>) -> Reply {
        Reply::Full {
            status: 200,
            headers: vec![("content-type".into(), "text/plain".into())],
            body: body.into(),
        }
    }

    pub fn redirect(status: u16, location: &str) -> Reply {
        Reply::Full {
            status,
            headers: vec![("location".into(), location.into())],
            body: b"moved".to_vec(),
        }
    }
}

type Handler = dyn Fn(&Recorded) -> Reply + Send + Sync + 'static;

/// A scripted HTTP/1.1 server on a loopback address.
pub struct Upstream {
    pub addr: SocketAddr,
    log: Arc<Mutex<Vec<Recorded>>>,
}

impl Upstream {
    pub async fn start(
        ip: &str,
        handler: impl Fn(&Recorded) -> Reply + Send + Sync + 'static,
    ) -> Upstream {
        let listener = TcpListener::bind((ip, 0)).await.expect("bind upstream");
        Upstream::serve(listener, Arc::new(handler))
    }

    /// Same, on a chosen port (to put a canary on another loopback address with this port).
    pub async fn start_on(
        addr: SocketAddr,
        handler: impl Fn(&Recorded) -> Reply + Send + Sync + 'static,
    ) -> Upstream {
        let listener = TcpListener::bind(addr).await.expect("bind upstream");
        Upstream::serve(listener, Arc::new(handler))
    }

    fn serve(listener: TcpListener, handler: Arc<Handler>) -> Upstream {
        let addr = listener.local_addr().expect("local addr");
        let log = Arc::new(Mutex::new(Vec::new()));
        let task_log = log.clone();
        tokio::spawn(async move {
            while let Ok((sock, _)) = listener.accept().await {
                let handler = handler.clone();
                let log = task_log.clone();
                tokio::spawn(async move {
                    let _ = tokio::time::timeout(HOLD, serve_one(sock, handler, log)).await;
                });
            }
        });
        Upstream { addr, log }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.log.lock().unwrap().clone()
    }
}

async fn serve_one(
    mut sock: TcpStream,
    handler: Arc<Handler>,
    log: Arc<Mutex<Vec<Recorded>>>,
) -> std::io::Result<()> {
    let Some(req) = read_request(&mut sock).await? else {
        return Ok(());
    };
    log.lock().unwrap().push(req.clone());
    match handler(&req) {
        Reply::Full {
            status,
            headers,
            body,
        } => {
            let mut head = format!("HTTP/1.1 {status} X\r\nconnection: close\r\n");
            for (k, v) in headers {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
            head.push_str(&format!("content-length: {}\r\n\r\n", body.len()));
            sock.write_all(head.as_bytes()).await?;
            sock.write_all(&body).await?;
        }
        Reply::Chunked { status, chunks } => {
            let head = format!(
                "HTTP/1.1 {status} X\r\nconnection: close\r\ntransfer-encoding: chunked\r\n\r\n"
            );
            sock.write_all(head.as_bytes()).await?;
            for c in chunks {
                sock.write_all(format!("{:x}\r\n", c.len()).as_bytes())
                    .await?;
                sock.write_all(&c).await?;
                sock.write_all(b"\r\n").await?;
                sock.flush().await?;
            }
            sock.write_all(b"0\r\n\r\n").await?;
        }
        Reply::Declare {
            content_length,
            prefix,
            then_close,
        } => {
            let head = format!(
                "HTTP/1.1 200 X\r\nconnection: close\r\ncontent-length: {content_length}\r\n\r\n"
            );
            sock.write_all(head.as_bytes()).await?;
            sock.write_all(&prefix).await?;
            sock.flush().await?;
            if !then_close {
                tokio::time::sleep(HOLD).await;
            }
        }
        Reply::Silent => tokio::time::sleep(HOLD).await,
    }
    sock.flush().await?;
    sock.shutdown().await
}

/// Read one request: head up to 64 KiB, body by Content-Length.
async fn read_request(sock: &mut TcpStream) -> std::io::Result<Option<Recorded>> {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 4096];
    let head_end = loop {
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p;
        }
        if buf.len() > 64 * 1024 {
            return Ok(None);
        }
        let n = sock.read(&mut tmp).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&tmp[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let mut lines = head.split("\r\n");
    let mut first = lines.next().unwrap_or("").split(' ');
    let method = first.next().unwrap_or("").to_owned();
    let target = first.next().unwrap_or("").to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let len: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < len.min(1 << 20) {
        let n = sock.read(&mut tmp).await?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&tmp[..n]);
    }
    Ok(Some(Recorded {
        method,
        target,
        headers,
        body,
    }))
}

/// A listener that must never be reached: it counts and drops every connection.
pub struct Canary {
    pub addr: SocketAddr,
    hits: Arc<AtomicUsize>,
}

impl Canary {
    pub async fn start(ip: &str) -> Canary {
        let listener = TcpListener::bind((ip, 0)).await.expect("bind canary");
        Canary::watch(listener)
    }

    pub async fn start_on(addr: SocketAddr) -> Canary {
        let listener = TcpListener::bind(addr).await.expect("bind canary");
        Canary::watch(listener)
    }

    fn watch(listener: TcpListener) -> Canary {
        let addr = listener.local_addr().expect("local addr");
        let hits = Arc::new(AtomicUsize::new(0));
        let counter = hits.clone();
        tokio::spawn(async move {
            while let Ok((sock, _)) = listener.accept().await {
                counter.fetch_add(1, Ordering::SeqCst);
                drop(sock);
            }
        });
        Canary { addr, hits }
    }

    pub fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }

    /// A URL that names the canary by its IPv4 literal.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }
}
