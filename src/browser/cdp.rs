//! A minimal client for chromium's browser-level DevTools endpoint, for the few commands that
//! chromedriver's page-level `goog/cdp/execute` refuses ("Not allowed"): creating and disposing
//! browser contexts and opening a tab in one. Everything else goes through chromedriver.
//!
//! The endpoint is the `debuggerAddress` chromedriver reports for its session (loopback). The
//! WebSocket is spoken by hand (RFC 6455: client frames masked, text messages, ping answered)
//! because that is all these three commands need; commands are sent one at a time and the
//! answer with the same id is awaited, events are skipped.

use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Mutex;

/// Largest message accepted from the browser (answers here are tiny).
const MAX_MESSAGE: usize = 8 << 20;
const CALL_TIMEOUT: Duration = Duration::from_secs(10);

pub struct BrowserCdp {
    conn: Mutex<Conn>,
}

struct Conn {
    stream: TcpStream,
    next_id: u64,
}

impl BrowserCdp {
    /// Connects to the browser endpoint behind `debugger_address` (`host:port`, loopback).
    pub async fn connect(debugger_address: &str) -> Result<BrowserCdp, String> {
        let addr = debugger_address.replace("localhost", "127.0.0.1");
        let fut = async {
            let version = http_get(&addr, "/json/version").await?;
            let v: Value = serde_json::from_str(&version)
                .map_err(|e| format!("/json/version is not JSON: {e}"))?;
            let ws = v["webSocketDebuggerUrl"]
                .as_str()
                .ok_or("no webSocketDebuggerUrl in /json/version")?;
            let path = ws
                .split_once("/devtools/")
                .map(|(_, p)| format!("/devtools/{p}"))
                .ok_or("unexpected webSocketDebuggerUrl")?;
            let stream = handshake(&addr, &path).await?;
            Ok::<_, String>(BrowserCdp {
                conn: Mutex::new(Conn { stream, next_id: 0 }),
            })
        };
        tokio::time::timeout(CALL_TIMEOUT, fut)
            .await
            .map_err(|_| "the browser's DevTools endpoint did not answer".to_string())?
    }

    /// Sends one command and returns its `result` (or the browser's error as text).
    pub async fn call(&self, method: &str, params: Value) -> Result<Value, String> {
        let mut conn = self.conn.lock().await;
        tokio::time::timeout(CALL_TIMEOUT, conn.call(method, params))
            .await
            .map_err(|_| format!("{method}: no answer from the browser"))?
    }
}

impl Conn {
    async fn call(&mut self, method: &str, params: Value) -> Result<Value, String> {
        self.next_id += 1;
        let id = self.next_id;
        let msg = json!({ "id": id, "method": method, "params": params }).to_string();
        write_frame(&mut self.stream, 0x1, msg.as_bytes())
            .await
            .map_err(|e| format!("{method}: {e}"))?;
        loop {
            let text = self
                .read_message()
                .await
                .map_err(|e| format!("{method}: {e}"))?;
            let v: Value = match serde_json::from_str(&text) {
                Ok(v) => v,
                Err(_) => continue,
            };
            if v["id"].as_u64() != Some(id) {
                continue; // an event or a stale answer
            }
            if let Some(err) = v.get("error") {
                return Err(format!(
                    "{method}: {}",
                    err["message"].as_str().unwrap_or("error")
                ));
            }
            return Ok(v["result"].clone());
        }
    }

    async fn read_message(&mut self) -> Result<String, String> {
        let mut message = Vec::new();
        loop {
            let mut head = [0u8; 2];
            self.stream
                .read_exact(&mut head)
                .await
                .map_err(|e| e.to_string())?;
            let fin = head[0] & 0x80 != 0;
            let opcode = head[0] & 0x0f;
            let masked = head[1] & 0x80 != 0;
            let mut len = (head[1] & 0x7f) as u64;
            if len == 126 {
                let mut b = [0u8; 2];
                self.stream
                    .read_exact(&mut b)
                    .await
                    .map_err(|e| e.to_string())?;
                len = u16::from_be_bytes(b) as u64;
            } else if len == 127 {
                let mut b = [0u8; 8];
                self.stream
                    .read_exact(&mut b)
                    .await
                    .map_err(|e| e.to_string())?;
                len = u64::from_be_bytes(b);
            }
            if len as usize > MAX_MESSAGE || message.len() + len as usize > MAX_MESSAGE {
                return Err("message from the browser too large".into());
            }
            let mut mask = [0u8; 4];
            if masked {
                self.stream
                    .read_exact(&mut mask)
                    .await
                    .map_err(|e| e.to_string())?;
            }
            let mut payload = vec![0u8; len as usize];
            self.stream
                .read_exact(&mut payload)
                .await
                .map_err(|e| e.to_string())?;
            if masked {
                for (i, b) in payload.iter_mut().enumerate() {
                    *b ^= mask[i % 4];
                }
            }
            match opcode {
                0x8 => return Err("the browser closed the DevTools connection".into()),
                0x9 => {
                    write_frame(&mut self.stream, 0xA, &payload)
                        .await
                        .map_err(|e| e.to_string())?;
                    continue;
                }
                0xA => continue,
                _ => message.extend_from_slice(&payload),
            }
            if fin {
                return String::from_utf8(message).map_err(|_| "a non-UTF-8 message".into());
            }
        }
    }
}

async fn write_frame(stream: &mut TcpStream, opcode: u8, payload: &[u8]) -> std::io::Result<()> {
    let mut frame = Vec::with_capacity(payload.len() + 14);
    frame.push(0x80 | opcode);
    let len = payload.len();
    if len < 126 {
        frame.push(0x80 | len as u8);
    } else if len <= u16::MAX as usize {
        frame.push(0x80 | 126);
        frame.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        frame.push(0x80 | 127);
        frame.extend_from_slice(&(len as u64).to_be_bytes());
    }
    let mask: [u8; 4] = rand::random();
    frame.extend_from_slice(&mask);
    frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    stream.write_all(&frame).await
}

/// Reads an HTTP/1.x head (up to the blank line) and returns it with whatever followed.
async fn read_head(stream: &mut TcpStream) -> Result<(String, Vec<u8>), String> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = stream.read(&mut chunk).await.map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("the browser closed the connection".into());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = buf.split_off(end + 4);
            return Ok((String::from_utf8_lossy(&buf).into_owned(), rest));
        }
        if buf.len() > 64 * 1024 {
            return Err("an oversized HTTP head from the browser".into());
        }
    }
}

async fn http_get(addr: &str, path: &str) -> Result<String, String> {
    let mut s = TcpStream::connect(addr)
        .await
        .map_err(|e| format!("{addr}: {e}"))?;
    s.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .await
    .map_err(|e| e.to_string())?;
    let (head, mut body) = read_head(&mut s).await?;
    if !head.starts_with("HTTP/1.1 200") && !head.starts_with("HTTP/1.0 200") {
        return Err(format!("GET {path}: {}", head.lines().next().unwrap_or("")));
    }
    let len = head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.eq_ignore_ascii_case("content-length")
            .then(|| v.trim().parse::<usize>().ok())?
    });
    let mut chunk = [0u8; 4096];
    while len.is_none_or(|l| body.len() < l) {
        let n = s.read(&mut chunk).await.map_err(|e| e.to_string())?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
        if body.len() > 1 << 20 {
            return Err("oversized /json/version".into());
        }
    }
    Ok(String::from_utf8_lossy(&body).into_owned())
}

async fn handshake(addr: &str, path: &str) -> Result<TcpStream, String> {
    use base64::Engine;
    let mut s = TcpStream::connect(addr)
        .await
        .map_err(|e| format!("{addr}: {e}"))?;
    let _ = s.set_nodelay(true);
    let key = base64::engine::general_purpose::STANDARD.encode(rand::random::<[u8; 16]>());
    let req = format!(
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
    );
    s.write_all(req.as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    let (head, rest) = read_head(&mut s).await?;
    if !head.starts_with("HTTP/1.1 101") {
        return Err(format!(
            "WebSocket upgrade refused: {}",
            head.lines().next().unwrap_or("")
        ));
    }
    if !rest.is_empty() {
        // The browser never speaks first on a new connection.
        return Err("unexpected bytes after the WebSocket handshake".into());
    }
    Ok(s)
}
