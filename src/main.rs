//! The `paycall` command: serve, check, routes, markdown.

use clap::{Parser, Subcommand, ValueEnum};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use paycall::{config, server};

// The allocator (issue 19: memory must come back after a burst; scripts/bench-memory.sh has the
// figures). glibc's malloc keeps freed memory in its arenas; jemalloc with a background thread
// purges dirty pages after `dirty_decay_ms` even while the process is idle, and
// `muzzy_decay_ms:0` returns them with MADV_DONTNEED at once (MADV_FREE pages would still count
// in RSS until the kernel wants them).
#[cfg(all(feature = "jemalloc", not(feature = "mimalloc")))]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options, read before `main` (tikv-jemalloc-sys prefixes its symbols on Linux).
#[cfg(all(feature = "jemalloc", not(feature = "mimalloc")))]
#[allow(non_upper_case_globals)]
#[export_name = "_rjem_malloc_conf"]
pub static malloc_conf: Option<&'static libc::c_char> =
    Some(unsafe { &*c"background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0".as_ptr() });

#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "paycall",
    version,
    about = "Pay-per-call web and market functions for agents (x402 v2)"
)]
struct Cli {
    /// Path of routes.yaml (pipelines/ is read from the same folder).
    #[arg(long, global = true, default_value = "routes.yaml")]
    config: PathBuf,
    /// Log format.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Clone, Copy, ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the routes (the default).
    Serve,
    /// Validate routes.yaml and pipelines/ without serving; exit 1 with located errors.
    Check {
        /// Also list the registered stages.
        #[arg(long)]
        stages: bool,
    },
    /// Print the catalogue: path, methods, price, pipeline.
    Routes,
    /// Ask the running server to reload routes.yaml and pipelines/ (POST /reload on its admin
    /// listener; SIGHUP does the same). Exit 1 when the new files are refused.
    Reload,
    /// The payment ledger: totals per day, route and network, pending and failed settlements,
    /// recent payments.
    Ledger {
        /// How far back: 7d, 12h, 30m, or a date like 2026-11-01 (UTC).
        #[arg(long, default_value = "30d")]
        since: String,
        /// Only this route (its path, e.g. /api/http).
        #[arg(long)]
        route: Option<String>,
        /// How many recent payments to list.
        #[arg(long, default_value_t = 20)]
        recent: usize,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Write each paid route's reference page (docs/routes/<name>.md) from routes.yaml,
    /// pipelines/ and the stages; with --check, only list the pages that differ (exit 1).
    Docs {
        /// Folder of the pages.
        #[arg(long, default_value = "docs/routes")]
        out: PathBuf,
        /// Compare instead of writing.
        #[arg(long)]
        check: bool,
    },
    /// Print what /api/fetch's transform makes of a page (a file path or an http(s) URL). With
    /// --out, convert many files or folders in one process: one DIR/<name>.md per input.
    Markdown {
        /// A file path or URL; with --out, any number of files and folders.
        #[arg(required = true)]
        sources: Vec<String>,
        /// Batch mode: write each input's markdown under this folder.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Batch mode: worker threads (default: one per core).
        #[arg(long)]
        jobs: Option<usize>,
    },
}

/// Logs go to stderr through a writer thread (see Cargo.toml's tracing-appender); the returned
/// guard flushes what is queued when dropped, so keep it until the process ends.
fn init_logs(format: LogFormat) -> tracing_appender::non_blocking::WorkerGuard {
    let filter = tracing_subscriber::EnvFilter::try_from_env("PAYCALL_LOG")
        // hyper's per-connection errors (a client hanging up mid-request) are not ours to report
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,warp::server=off"));
    let (writer, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .lossy(false)
        .thread_name("paycall-log")
        .finish(std::io::stderr());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer);
    match format {
        LogFormat::Json => builder.json().flatten_event(true).init(),
        LogFormat::Text => builder.init(),
    }
    guard
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let _logs = init_logs(cli.log_format);
    let command = cli.command.unwrap_or(Command::Serve);
    if !matches!(command, Command::Serve) {
        restore_sigpipe();
    }
    match command {
        Command::Check { stages } => check(&cli.config, stages),
        Command::Routes => routes(&cli.config),
        Command::Reload => reload(&cli.config),
        Command::Serve => serve(&cli.config),
        Command::Docs { out, check } => docs(&cli.config, &out, check),
        Command::Markdown { sources, out, jobs } => match (out, sources.as_slice()) {
            (Some(out), _) => markdown_batch(&sources, &out, jobs),
            (None, [source]) => markdown(&cli.config, source),
            (None, _) => {
                eprintln!("paycall markdown: several sources need --out DIR");
                ExitCode::from(2)
            }
        },
        Command::Ledger {
            since,
            route,
            recent,
            json,
        } => ledger(&cli.config, &since, route, recent, json),
    }
}

/// A single-threaded runtime for a one-shot command, or the exit code after saying why not.
/// The one-shot commands print to stdout like any Unix tool, so `paycall routes | head` must end
/// quietly when the reader goes away. Rust ignores SIGPIPE, which turns that into a panic inside
/// `println!`; the default action (exit) is what a pipeline expects. The server keeps SIGPIPE
/// ignored: a client hanging up must never end it.
fn restore_sigpipe() {
    // SAFETY: called once at startup, before any thread is spawned; SIG_DFL is a valid handler.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn current_thread() -> Result<tokio::runtime::Runtime, ExitCode> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            eprintln!("paycall: cannot start the runtime: {e}");
            ExitCode::from(1)
        })
}

fn load_app(path: &Path) -> Result<server::App, ExitCode> {
    let cfg = config::load(path).map_err(|e| {
        eprintln!("{e}");
        eprintln!("paycall: {} problem(s) in the configuration", e.0.len());
        ExitCode::from(1)
    })?;
    let services = server::services::build(&cfg).map_err(|e| {
        eprintln!("paycall: {e}");
        ExitCode::from(1)
    })?;
    server::build_app(cfg, services).map_err(|e| {
        eprintln!("{e}");
        eprintln!("paycall: {} problem(s) in the configuration", e.0.len());
        ExitCode::from(1)
    })
}

fn check(path: &Path, list_stages: bool) -> ExitCode {
    let app = match load_app(path) {
        Ok(a) => a,
        Err(c) => return c,
    };
    if list_stages {
        for f in paycall::stages::REGISTRY {
            println!("{:<16} {}", f.name, f.doc);
        }
    }
    println!(
        "ok: {} routes, {} pipelines, {} payment options",
        app.routes.len(),
        app.config.pipelines.len(),
        app.config.payment.accepts.len()
    );
    for why in app
        .routes
        .iter()
        .filter_map(|r| r.demo_withdrawn.as_deref())
    {
        eprintln!("paycall: warning: {why}");
    }
    let networks = check_networks(&app);
    match check_ledger(&app.config.ledger) {
        Ok(line) => println!("{line}"),
        Err(line) => {
            eprintln!("paycall: {line}");
            return ExitCode::from(1);
        }
    }
    networks
}

/// `paycall check`'s per-network verdict (payment::readiness): each offer printed; a refusal
/// under `payment.unsupported_network: refuse` exits 1.
fn check_networks(app: &server::App) -> ExitCode {
    let Some(fac) = app
        .services
        .get::<paycall::x402::facilitators::Facilitators>()
    else {
        return ExitCode::SUCCESS;
    };
    let rt = match current_thread() {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    let checks = rt.block_on(paycall::payment::readiness::check(&app.config, &fac));
    for c in &checks {
        let state = if c.problem.is_some() {
            "CANNOT BE PAID"
        } else if c.warning.is_some() {
            "not verified"
        } else {
            "ready"
        };
        println!(
            "network {} ({}): {state} (facilitator: {}{}{})",
            c.network,
            c.name,
            c.facilitator,
            c.fee_payer
                .as_deref()
                .map(|f| format!(", feePayer {f}"))
                .unwrap_or_default(),
            c.token_account
                .map(|t| format!(", payTo token account: {t}"))
                .unwrap_or_default(),
        );
    }
    match paycall::payment::readiness::verdict(&checks, app.config.payment.unsupported_network) {
        Ok(warnings) => {
            for w in warnings {
                eprintln!("paycall: warning: {w}");
            }
            ExitCode::SUCCESS
        }
        Err(refusal) => {
            eprintln!("paycall: {refusal}");
            ExitCode::from(1)
        }
    }
}

/// Whether the ledger is reachable and at this version's schema, without creating anything.
fn check_ledger(settings: &paycall::payment::ledger::LedgerSettings) -> Result<String, String> {
    use paycall::payment::ledger::{connect, model::SCHEMA_VERSION, LedgerUrl};
    let shown = settings.url.display();
    if let LedgerUrl::Sqlite(p) = &settings.url {
        if !p.exists() && p.as_os_str() != paycall::payment::ledger::sqlite::MEMORY {
            return Ok(format!(
                "ledger: {shown} does not exist yet; it is created (schema {SCHEMA_VERSION}) at the first start"
            ));
        }
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    rt.block_on(async {
        let store = connect(&settings.url).map_err(|e| format!("ledger {shown}: {e}"))?;
        match store.schema_version().await {
            Ok(Some(v)) if v == SCHEMA_VERSION => Ok(format!("ledger: {shown} reachable, schema {v} (current)")),
            Ok(Some(v)) if v < SCHEMA_VERSION => Ok(format!(
                "ledger: {shown} reachable, schema {v}; the next start migrates it to {SCHEMA_VERSION}"
            )),
            Ok(Some(v)) => Err(format!(
                "ledger {shown} has schema {v}, newer than this paycall's {SCHEMA_VERSION}: upgrade paycall"
            )),
            Ok(None) => Ok(format!(
                "ledger: {shown} reachable, empty; the first start creates schema {SCHEMA_VERSION}"
            )),
            Err(e) => Err(format!("ledger {shown}: {e}")),
        }
    })
}

fn ledger(path: &Path, since: &str, route: Option<String>, recent: usize, json: bool) -> ExitCode {
    use paycall::payment::ledger::{connect, now_ms, report, ReportQuery};
    let cfg = match config::load(path) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(1);
        }
    };
    let since_ms = match report::parse_since(since, now_ms()) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("paycall ledger: {e}");
            return ExitCode::from(2);
        }
    };
    let shown = cfg.ledger.url.display();
    if let paycall::payment::ledger::LedgerUrl::Sqlite(p) = &cfg.ledger.url {
        if !p.exists() && p.as_os_str() != paycall::payment::ledger::sqlite::MEMORY {
            println!("ledger {shown} does not exist yet: nothing was sold");
            return ExitCode::SUCCESS;
        }
    }
    let rt = match current_thread() {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    let rows = rt.block_on(async {
        let store = connect(&cfg.ledger.url)?;
        if store.schema_version().await?.is_none() {
            return Ok(Vec::new());
        }
        store.report(&ReportQuery { since_ms, route }).await
    });
    let rows = match rows {
        Ok(r) => r,
        Err(e) => {
            eprintln!("paycall ledger: {shown}: {e}");
            return ExitCode::from(1);
        }
    };
    let decimals = |network: &str| {
        cfg.payment
            .accepts
            .iter()
            .find(|a| a.network == network)
            .map(|a| a.decimals)
            .unwrap_or(6)
    };
    let summary = report::summarise(&rows, recent);
    if json {
        println!("{}", report::to_json(&summary, &decimals));
    } else {
        println!("ledger {shown}, since {}", report::day(since_ms));
        print!("{}", report::to_text(&summary, &decimals));
    }
    ExitCode::SUCCESS
}

/// `paycall reload`: POST /reload on the admin listener named by the config (or
/// PAYCALL_ADMIN_LISTEN when the file itself is what is broken), print the report.
fn reload(path: &Path) -> ExitCode {
    let admin = match config::load(path) {
        Ok(c) => c.service.admin_listen,
        Err(_) => Some(
            std::env::var("PAYCALL_ADMIN_LISTEN")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| "127.0.0.1:9402".parse().expect("static addr")),
        ),
    };
    let Some(admin) = admin else {
        eprintln!("paycall reload: the admin listener is off; send SIGHUP to the server instead");
        return ExitCode::from(1);
    };
    let rt = match current_thread() {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    paycall::net::install_crypto_provider();
    let answer = rt.block_on(async {
        let client = reqwest::Client::builder()
            .no_proxy()
            .timeout(std::time::Duration::from_secs(60))
            .build()
            .map_err(|e| e.to_string())?;
        let r = client
            .post(format!("http://{admin}/reload"))
            .send()
            .await
            .map_err(|e| format!("no paycall admin listener at {admin}: {e}"))?;
        let ok = r.status().is_success();
        let body = r.text().await.map_err(|e| e.to_string())?;
        Ok::<_, String>((ok, body))
    });
    match answer {
        Ok((ok, body)) => {
            let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
            if ok {
                println!(
                    "reloaded: {} routes, config {} loaded {}",
                    v["routes"], v["config"]["hash"], v["config"]["loadedAt"]
                );
                for s in v["restartNeeded"].as_array().into_iter().flatten() {
                    println!("needs a restart to apply: {}", s.as_str().unwrap_or(""));
                }
                ExitCode::SUCCESS
            } else {
                eprintln!("paycall reload: refused; the running configuration stays");
                for e in v["errors"].as_array().into_iter().flatten() {
                    eprintln!("{}", e.as_str().unwrap_or(""));
                }
                if v.is_null() {
                    eprintln!("{body}");
                }
                ExitCode::from(1)
            }
        }
        Err(e) => {
            eprintln!("paycall reload: {e}");
            ExitCode::from(1)
        }
    }
}

/// The catalogue from routes.yaml alone: no payTo needed (nothing is paid here), columns sized
/// to their longest cell.
fn routes(path: &Path) -> ExitCode {
    let cfg = match config::load_catalogue(path) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            eprintln!("paycall: {} problem(s) in the configuration", e.0.len());
            return ExitCode::from(1);
        }
    };
    let mut rows = vec![[
        "PATH".to_string(),
        "METHODS".into(),
        "USD".into(),
        "ATOMIC".into(),
        "PIPELINE".into(),
    ]];
    for r in &cfg.routes {
        let methods: Vec<&str> = r.methods.iter().map(|m| m.as_str()).collect();
        let (usd, atomic) = match &r.price {
            Some(p) => (p.usd.clone(), p.atomic.first().cloned().unwrap_or_default()),
            None => ("free".into(), "-".into()),
        };
        rows.push([
            r.path.clone(),
            methods.join(","),
            usd,
            atomic,
            r.pipeline.clone(),
        ]);
    }
    let widths: Vec<usize> = (0..5)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    for r in &rows {
        let line: Vec<String> = r
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        println!("{}", line.join("  ").trim_end());
    }
    ExitCode::SUCCESS
}

fn docs(path: &Path, out: &Path, check: bool) -> ExitCode {
    let app = match server::reference::docs_app(path) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(1);
        }
    };
    let mut stale = 0;
    for (name, text) in server::reference::pages(&app) {
        let file = out.join(&name);
        let same = std::fs::read_to_string(&file).is_ok_and(|old| old == text);
        if same {
            continue;
        }
        stale += 1;
        if check {
            println!("out of date: {}", file.display());
        } else if let Err(e) =
            std::fs::create_dir_all(out).and_then(|_| std::fs::write(&file, text))
        {
            eprintln!("paycall docs: cannot write {}: {e}", file.display());
            return ExitCode::from(1);
        } else {
            println!("wrote {}", file.display());
        }
    }
    if check && stale > 0 {
        eprintln!("paycall docs: {stale} page(s) out of date; run `paycall docs`");
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

fn serve(path: &Path) -> ExitCode {
    let app = match load_app(path) {
        Ok(a) => Arc::new(a),
        Err(c) => return c,
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("paycall: cannot start the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    rt.block_on(async move {
        if let Some(ledger) = app.services.get::<paycall::payment::ledger::Ledger>() {
            match ledger.open().await {
                Ok(store) => tracing::info!(ledger = %ledger.settings.url.display(), kind = store.kind(), instance = %ledger.owner(), "payment ledger open"),
                Err(e) => {
                    eprintln!("paycall: {e}");
                    eprintln!("paycall: fix ledger.url in routes.yaml or PAYCALL_LEDGER_URL (the default sqlite://paycall.db needs no setup)");
                    return ExitCode::from(1);
                }
            }
        }
        // Every offer we advertise must be payable (payment::readiness).
        if let Some(fac) = app.services.get::<paycall::x402::facilitators::Facilitators>() {
            let checks = paycall::payment::readiness::check(&app.config, &fac).await;
            let rule = app.config.payment.unsupported_network;
            match paycall::payment::readiness::verdict(&checks, rule) {
                Ok(warnings) => {
                    for w in warnings {
                        tracing::warn!("{w}");
                    }
                }
                Err(refusal) => {
                    eprintln!("paycall: {refusal}");
                    return ExitCode::from(1);
                }
            }
            if let Some(r) = app.services.get::<paycall::payment::readiness::Readiness>() {
                r.record(checks, rule);
            }
        }
        let addr = app.config.service.listen;
        let listener = match tokio::net::TcpListener::bind(addr).await {
            Ok(l) => l,
            Err(e) => {
                eprintln!("paycall: cannot listen on {addr}: {e} (set PAYCALL_LISTEN or service.listen)");
                return ExitCode::from(1);
            }
        };
        let admin = match app.config.service.admin_listen {
            Some(a) => match tokio::net::TcpListener::bind(a).await {
                Ok(l) => {
                    tracing::info!(admin = %a, "admin listener (/metrics, /config, /reload)");
                    Some(l)
                }
                Err(e) => {
                    eprintln!("paycall: cannot listen on {a} for the admin listener: {e} (set PAYCALL_ADMIN_LISTEN or service.admin_listen, or `off`)");
                    return ExitCode::from(1);
                }
            },
            None => None,
        };
        let local = listener.local_addr().map(|a| a.to_string()).unwrap_or_default();
        tracing::info!(listen = %local, routes = app.routes.len(), base_url = %app.config.service.base_url, config = %app.stamp.hash, "paycall serving");
        let live = paycall::ops::reload::Live::new(
            app,
            Some(paycall::ops::reload::Live::file_loader(path.to_path_buf())),
        );
        #[cfg(unix)]
        {
            let live = live.clone();
            tokio::spawn(async move {
                use tokio::signal::unix::{signal, SignalKind};
                let Ok(mut hup) = signal(SignalKind::hangup()) else {
                    return;
                };
                while hup.recv().await.is_some() {
                    tracing::info!("SIGHUP: reloading the configuration");
                    live.reload().await;
                }
            });
        }
        server::serve_live(live, listener, admin, server::shutdown_signal()).await;
        tracing::info!("paycall stopped");
        ExitCode::SUCCESS
    })
}

/// Reads a file or fetches a URL (through the same guard as the service, so private targets are
/// refused unless PAYCALL_ALLOW_CIDRS allows them) and prints /api/fetch's markdown of it.
fn markdown(path: &Path, source: &str) -> ExitCode {
    use paycall::doc::batch::{self, Converted};
    let converted = if source.starts_with("http://") || source.starts_with("https://") {
        let allow = match config::load(path) {
            Ok(c) => c.guard.allow_cidrs,
            Err(_) => std::env::var("PAYCALL_ALLOW_CIDRS")
                .unwrap_or_default()
                .split(',')
                .filter_map(|s| config::parse_cidr(s).ok())
                .collect(),
        };
        let rt = match current_thread() {
            Ok(rt) => rt,
            Err(code) => return code,
        };
        let fetched = rt.block_on(async {
            let guard = std::sync::Arc::new(paycall::net::Guard::new(allow));
            let url = guard.parse_target(source).map_err(|e| e.to_string())?;
            let client = paycall::net::GuardedClient::new(
                guard,
                std::sync::Arc::new(paycall::net::SystemResolver),
                concat!("paycall/", env!("CARGO_PKG_VERSION")),
            )
            .map_err(|e| e.to_string())?;
            let mut req = paycall::net::FetchRequest::get(url);
            req.max_bytes = 2_000_000;
            client.fetch(req).await.map_err(|e| e.to_string())
        });
        match fetched {
            Ok(r) => {
                let ct = r
                    .headers
                    .get("content-type")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("");
                let deadline = std::time::Instant::now() + batch::PAGE_DEADLINE;
                batch::convert(&r.body, ct, Some(&r.final_url), deadline)
            }
            Err(e) => Err(e),
        }
    } else {
        // The file's name tells its kind (.md, .json, .txt, else HTML; .gz unpacked).
        batch::convert_file(Path::new(source))
    };
    // The same decoding, node budget and extraction as the route (doc::batch::convert).
    match converted {
        Ok(Converted::Page(doc)) => {
            if let Some(t) = &doc.title {
                eprintln!("title: {t}");
            }
            println!("{}", doc.markdown);
            ExitCode::SUCCESS
        }
        Ok(Converted::Text(out)) => {
            println!("{out}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("paycall markdown: {e}");
            ExitCode::from(1)
        }
    }
}

/// `paycall markdown --out DIR <files and folders>…`: one process, all cores, one output per
/// input (doc::batch); failures are listed and make the exit code 1.
fn markdown_batch(sources: &[String], out: &Path, jobs: Option<usize>) -> ExitCode {
    use paycall::doc::batch;
    if let Some(url) = sources.iter().find(|s| s.contains("://")) {
        eprintln!("paycall markdown: --out takes files and folders, not URLs ({url})");
        return ExitCode::from(2);
    }
    let sources: Vec<PathBuf> = sources.iter().map(PathBuf::from).collect();
    let plan = match batch::plan(&sources, out) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("paycall markdown: {e}");
            return ExitCode::from(2);
        }
    };
    let workers =
        jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let report = batch::run(&plan, workers);
    for (input, e) in &report.failed {
        eprintln!("paycall markdown: {}: {e}", input.display());
    }
    eprintln!("{}", report.summary(workers));
    if report.failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
