//! The `paycall` command: serve, check, routes, markdown.

use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use paycall::{config, server};

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
    /// Print what /api/fetch's transform makes of a page (a file path or an http(s) URL).
    Markdown {
        /// File path or URL.
        source: String,
    },
}

fn init_logs(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("PAYCALL_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Json => builder.json().flatten_event(true).init(),
        LogFormat::Text => builder.init(),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logs(cli.log_format);
    let command = cli.command.unwrap_or(Command::Serve);
    match command {
        Command::Check { stages } => check(&cli.config, stages),
        Command::Routes => routes(&cli.config),
        Command::Serve => serve(&cli.config),
        Command::Markdown { source } => markdown(&cli.config, &source),
    }
}

fn load_app(path: &PathBuf) -> Result<server::App, ExitCode> {
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

fn check(path: &PathBuf, list_stages: bool) -> ExitCode {
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
    ExitCode::SUCCESS
}

fn routes(path: &PathBuf) -> ExitCode {
    let app = match load_app(path) {
        Ok(a) => a,
        Err(c) => return c,
    };
    println!(
        "{:<22} {:<10} {:>8} {:>8}  {}",
        "PATH", "METHODS", "USD", "ATOMIC", "PIPELINE"
    );
    for r in &app.routes {
        let methods: Vec<&str> = r.spec.methods.iter().map(|m| m.as_str()).collect();
        let (usd, atomic) = match &r.spec.price {
            Some(p) => (p.usd.clone(), p.atomic.first().cloned().unwrap_or_default()),
            None => ("free".into(), "-".into()),
        };
        println!(
            "{:<22} {:<10} {:>8} {:>8}  {}",
            r.spec.path,
            methods.join(","),
            usd,
            atomic,
            r.spec.pipeline
        );
    }
    ExitCode::SUCCESS
}

fn serve(path: &PathBuf) -> ExitCode {
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
        let addr = app.config.service.listen;
        let listener = match tokio::net::TcpListener::bind(addr).await {
            Ok(l) => l,
            Err(e) => {
                eprintln!("paycall: cannot listen on {addr}: {e} (set PAYCALL_LISTEN or service.listen)");
                return ExitCode::from(1);
            }
        };
        let local = listener.local_addr().map(|a| a.to_string()).unwrap_or_default();
        tracing::info!(listen = %local, routes = app.routes.len(), base_url = %app.config.service.base_url, "paycall serving");
        server::serve(app, listener, server::shutdown_signal()).await;
        tracing::info!("paycall stopped");
        ExitCode::SUCCESS
    })
}

fn markdown(_path: &PathBuf, source: &str) -> ExitCode {
    eprintln!("paycall markdown {source}: not built yet");
    ExitCode::from(2)
}
