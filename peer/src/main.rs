//! `covo-peer`: serves the cloud tools (`runs = "peer"`) to gateways over MQTT.

use anyhow::Context;
use clap::Parser;
use covo::config::Config;
use covo_peer::backends::Backends;
use covo_peer::config::PeerConfig;
use covo_peer::fleet::Fleet;
use covo_peer::fleet_page;
use covo_peer::server::{PeerServer, ServerOptions};
use std::path::PathBuf;
use std::process::ExitCode;

/// covo's cloud peer: runs web, media, code and sub-agent tools for gateways over MQTT.
#[derive(Parser, Debug)]
#[command(name = "covo-peer", version)]
struct Cli {
    /// The configuration file (default `$COVO_CONFIG`, then `./covo.toml`). The peer reads
    /// `[mqtt]`, `[llm]` and `[peer]`.
    #[arg(long, global = true)]
    config: Option<PathBuf>,
}

fn main() -> ExitCode {
    covo::logging::init();
    let cli = Cli::parse();
    match run(&cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("covo-peer: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: &Cli) -> anyhow::Result<ExitCode> {
    let config = Config::load(cli.config.as_deref())?;
    let peer = PeerConfig::from_config(&config)?;
    let opts = ServerOptions::from_config(&config, &peer);
    // The fleet page: its bind and token are checked, and its socket bound, before anything
    // connects, so a bad `[peer] fleet_bind` is a startup error.
    let page = match &peer.fleet_bind {
        Some(bind) => {
            let token = fleet_page::token(peer.fleet_token.as_deref(), &|k| std::env::var(k).ok());
            let addr = fleet_page::check_bind(bind, token.as_deref())?;
            let listener = fleet_page::bind(addr)?;
            let local = listener.local_addr().unwrap_or(addr);
            Some((listener, local, token, Fleet::shared(&opts.prefix)))
        }
        None => None,
    };
    // The peer's own model, from its `[llm]` and `COVO_LLM_*`, serves test_generate and the
    // sub-agents; without one those tools are not advertised.
    let model = Backends::model_from_config(&config, &|k| std::env::var(k).ok());
    let backends = Backends::for_peer(&config, &peer, model);
    let tools = backends.tools();
    eprintln!(
        "covo-peer '{}' on {} serving {} tool(s): {}",
        opts.id,
        opts.url,
        tools.len(),
        tools.join(", ")
    );
    let fleet = page.as_ref().map(|(_, _, _, fleet)| fleet.clone());
    let server = PeerServer::start_with_fleet(&opts, std::sync::Arc::new(backends), fleet)
        .map_err(anyhow::Error::msg)
        .context("cannot start the peer")?;
    // Ctrl-C or SIGTERM: publish `offline`, drain, DISCONNECT (the broker sends no Will).
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(async {
            if let Some((listener, local, token, fleet)) = page {
                eprintln!("covo-peer: fleet page on http://{local}/");
                tokio::spawn(fleet_page::serve(listener, fleet, token));
            }
            let mut term =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = async {
                    match term.as_mut() {
                        Some(t) => { t.recv().await; }
                        None => std::future::pending::<()>().await,
                    }
                } => {}
            }
        });
    eprintln!("covo-peer: stopping");
    server.shutdown();
    Ok(ExitCode::SUCCESS)
}
