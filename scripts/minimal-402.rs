// The floor for scripts/bench-402.sh (MINIMAL=1): a std-only HTTP/1.1 responder that answers
// every request on a kept-alive connection with the bytes of a file — paycall's own 402,
// headers and body, captured by the script — one thread per connection, no parsing beyond the
// end of the request head. What it cannot reach with those bytes, no server can here.
//   rustc -O scripts/minimal-402.rs -o minimal-402 && ./minimal-402 response.bin 127.0.0.1:PORT
use std::io::{Read, Write};
use std::net::TcpListener;
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let resp = std::sync::Arc::new(std::fs::read(&args[1]).unwrap());
    let l = TcpListener::bind(&args[2]).unwrap();
    for s in l.incoming() {
        let mut s = s.unwrap();
        let resp = resp.clone();
        s.set_nodelay(true).ok();
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 16384];
            let mut have = 0usize;
            loop {
                match s.read(&mut buf[have..]) { Ok(0) | Err(_) => return, Ok(n) => have += n }
                loop {
                    let Some(end) = buf[..have].windows(4).position(|w| w == b"\r\n\r\n") else { break };
                    if s.write_all(&resp).is_err() { return; }
                    buf.copy_within(end + 4..have, 0);
                    have -= end + 4;
                }
            }
        });
    }
}
