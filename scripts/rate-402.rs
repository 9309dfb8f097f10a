//! An open-loop load generator for one URL, for `scripts/bench-402.sh`'s latency-at-a-rate phase.
//!
//!     rate-402 HOST:PORT PATH RATE CONNECTIONS SECONDS
//!
//! CONNECTIONS kept-alive connections each send a plain GET on a fixed schedule, so that together
//! they offer RATE requests a second for SECONDS. Latency is counted from when a request was due,
//! not from when it was sent (wrk2's correction for coordinated omission): a slow answer delays
//! the requests queued behind it on its connection, and they count the delay. wrk measures at
//! saturation, where with C connections always busy the mean latency is C / throughput whatever
//! the server does (Little's law); a fixed offered rate shows the latency a client sees at a
//! given load. The first second is a warm-up and is not counted.
//!
//! std only (bench-402.sh builds it with rustc, as minimal-402.rs), one thread per connection:
//! a blocked thread woken by the kernel is the cheapest and most punctual sender on a small
//! machine (an async generator adds its own timer wheel's millisecond to every due time). The
//! threads ask for 1 µs timer slack so that sleeping until a due time overshoots by microseconds.
//!
//! Prints one line: `<achieved req/s> <p50 ms> <p99 ms> <p99.9 ms> <max ms> <errors> <send lag
//! p99 ms>`. Errors: an answer that is not 402, a broken or closed connection (reopened), a
//! request not answered within 5 s, or one still unsent when the run gives up (5 s after its
//! end); every request due counts in the latency figures, an error with the time it took to
//! fail (an unsent one: until the give-up). The achieved rate counts the answers received by the
//! end of the run, so a server that falls behind shows it even if it catches up later. The
//! send lag is how late the generator itself sent (included in the latency; when it is large
//! the figures describe this machine, not the server).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// A request not answered in this long counts as an error and its connection is reopened.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(5);
/// Not counted: connections opening, caches and the server's threads warming up.
const WARM_UP: Duration = Duration::from_secs(1);

extern "C" {
    fn prctl(option: i32, arg2: u64, arg3: u64, arg4: u64, arg5: u64) -> i32;
}
const PR_SET_TIMERSLACK: i32 = 29;

#[derive(Default)]
struct Tally {
    /// Latency from due time to the whole answer read, µs.
    latency_us: Vec<u32>,
    /// Send time minus due time, µs.
    lag_us: Vec<u32>,
    errors: u64,
    /// 402s and other answers received by the end of the run.
    answered_in_time: u64,
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 6 {
        eprintln!("usage: rate-402 HOST:PORT PATH RATE CONNECTIONS SECONDS");
        std::process::exit(2);
    }
    let addr = args[1].clone();
    let path = args[2].clone();
    let num = |i: usize| -> f64 {
        args[i].parse().unwrap_or_else(|_| {
            eprintln!("rate-402: {} is not a number", args[i]);
            std::process::exit(2)
        })
    };
    let (rate, connections, seconds) = (num(3), num(4) as usize, num(5));
    if !(rate.is_finite() && seconds.is_finite())
        || rate <= 0.0
        || connections == 0
        || seconds <= WARM_UP.as_secs_f64()
    {
        eprintln!("rate-402: RATE > 0, CONNECTIONS > 0 and SECONDS > 1 are needed");
        std::process::exit(2);
    }
    let request =
        format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: rate-402\r\nAccept: */*\r\n\r\n");
    // Every connection starts on the same instant; connection i's k-th request is due at
    // (k * connections + i) / rate, so the offered load is even across the second.
    let start = Instant::now() + Duration::from_millis(200);
    let end = start + Duration::from_secs_f64(seconds);
    let threads: Vec<_> = (0..connections)
        .map(|i| {
            let (addr, request) = (addr.clone(), request.clone());
            std::thread::spawn(move || {
                // SAFETY: prctl(PR_SET_TIMERSLACK) only sets this thread's timer slack.
                unsafe { prctl(PR_SET_TIMERSLACK, 1_000, 0, 0, 0) };
                let interval = Duration::from_secs_f64(connections as f64 / rate);
                let first = start + Duration::from_secs_f64(i as f64 / rate);
                run_connection(&addr, request.as_bytes(), first, interval, start, end)
            })
        })
        .collect();
    let mut all = Tally::default();
    for t in threads {
        let t = t.join().expect("a connection thread panicked");
        all.latency_us.extend(t.latency_us);
        all.lag_us.extend(t.lag_us);
        all.errors += t.errors;
        all.answered_in_time += t.answered_in_time;
    }
    all.latency_us.sort_unstable();
    all.lag_us.sort_unstable();
    let counted = seconds - WARM_UP.as_secs_f64();
    println!(
        "{:.0} {:.3} {:.3} {:.3} {:.3} {} {:.3}",
        all.answered_in_time as f64 / counted,
        percentile_ms(&all.latency_us, 50.0),
        percentile_ms(&all.latency_us, 99.0),
        percentile_ms(&all.latency_us, 99.9),
        percentile_ms(&all.latency_us, 100.0),
        all.errors,
        percentile_ms(&all.lag_us, 99.0),
    );
}

fn percentile_ms(sorted_us: &[u32], p: f64) -> f64 {
    if sorted_us.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * sorted_us.len() as f64).ceil() as usize;
    sorted_us[rank.clamp(1, sorted_us.len()) - 1] as f64 / 1000.0
}

fn connect(addr: &str) -> Option<TcpStream> {
    let to: std::net::SocketAddr = addr.parse().ok()?;
    let s = TcpStream::connect_timeout(&to, ANSWER_TIMEOUT).ok()?;
    s.set_nodelay(true).ok()?;
    s.set_read_timeout(Some(ANSWER_TIMEOUT)).ok()?;
    Some(s)
}

fn run_connection(
    addr: &str,
    request: &[u8],
    first: Instant,
    interval: Duration,
    start: Instant,
    end: Instant,
) -> Tally {
    let mut tally = Tally::default();
    let mut stream = connect(addr);
    let mut buf = vec![0u8; 64 * 1024];
    let mut due = first;
    // A server that cannot keep up leaves the due times behind the clock: give up 5 s after the
    // end (what is still unsent then is counted below).
    let give_up = end + ANSWER_TIMEOUT;
    while due < end && Instant::now() < give_up {
        let now = Instant::now();
        if due > now {
            std::thread::sleep(due - now);
        }
        let sent = Instant::now();
        let outcome = match stream.as_mut() {
            Some(s) => exchange(s, request, &mut buf),
            None => Err(()),
        };
        let done = Instant::now();
        let counted = due >= start + WARM_UP;
        if counted {
            tally.latency_us.push(micros(done - due));
            tally.lag_us.push(micros(sent.saturating_duration_since(due)));
        }
        match outcome {
            Ok(status) => {
                if counted && status != 402 {
                    tally.errors += 1;
                }
                if counted && done <= end {
                    tally.answered_in_time += 1;
                }
            }
            Err(()) => {
                if counted {
                    tally.errors += 1;
                }
                stream = connect(addr);
            }
        }
        due += interval;
    }
    // Requests due in the run but never sent (the server fell too far behind): errors, with
    // the time they had waited when the run gave up.
    while due < end {
        if due >= start + WARM_UP {
            tally.errors += 1;
            tally.latency_us.push(micros(give_up.saturating_duration_since(due)));
        }
        due += interval;
    }
    tally
}

fn micros(d: Duration) -> u32 {
    d.as_micros().min(u32::MAX as u128) as u32
}

/// Writes one request and reads its whole answer (head, then Content-Length bytes); the status.
fn exchange(s: &mut TcpStream, request: &[u8], buf: &mut [u8]) -> Result<u16, ()> {
    s.write_all(request).map_err(|_| ())?;
    let mut have = 0;
    loop {
        let n = s.read(&mut buf[have..]).map_err(|_| ())?;
        if n == 0 {
            return Err(());
        }
        have += n;
        if let Some(head_end) = find(&buf[..have], b"\r\n\r\n") {
            let head = std::str::from_utf8(&buf[..head_end]).map_err(|_| ())?;
            let status: u16 = head
                .split(' ')
                .nth(1)
                .and_then(|c| c.parse().ok())
                .ok_or(())?;
            let length: usize = head
                .lines()
                .find_map(|l| {
                    let (name, value) = l.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse().ok())?
                })
                .ok_or(())?;
            let mut left = (head_end + 4 + length).saturating_sub(have);
            while left > 0 {
                let room = left.min(buf.len());
                let n = s.read(&mut buf[..room]).map_err(|_| ())?;
                if n == 0 {
                    return Err(());
                }
                left -= n;
            }
            return Ok(status);
        }
        if have == buf.len() {
            return Err(());
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}
