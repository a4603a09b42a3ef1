//! The `covo` command line. It lives in the library and `main.rs` only calls [`main`], so the
//! integration tests and benches can reach every part of it.
//!
//! Exit codes: 0 success, 1 a tool error (printed as `{"error": {..}}`) or a fatal error,
//! 2 a usage or configuration error (including toolset cycles).

use crate::config::Config;
use crate::error::CallError;
use crate::exec::Session;
use crate::runtime::{AutoApprove, NoApprover, Runtime, Via};
use crate::spec::ToolSpec;
use clap::{Args as ClapArgs, Parser, Subcommand};
use covo_core::plan::{render, Format, Selection};
use covo_core::toolset::Toolsets;
use serde_json::{json, Value};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "covo",
    version = VERSION,
    long_version = LONG_VERSION,
    about = "An LLM agent gateway for Linux boards"
)]
struct Cli {
    /// Configuration file (default: $COVO_CONFIG, then ./covo.toml).
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

pub mod chat;
pub mod doctor;
pub mod fleet;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod run;

#[derive(Subcommand)]
enum StoreCmd {
    /// Print the database's size, each pruned table's rows, time span and limits (JSON).
    Stats,
    /// Prune every table to its `[store]` limits now, in small batches; print what went.
    Prune,
}

#[derive(Subcommand)]
enum FleetCmd {
    /// Call TOOL on every online gateway that serves it (or on each --gateway), through each
    /// one's own pipeline and policy, at most --parallel at once; one result per gateway.
    /// Exits 1 when any failed.
    Call {
        /// A gateway to call (repeatable; default: every online gateway serving TOOL).
        #[arg(long = "gateway", value_name = "ID")]
        gateways: Vec<String>,
        /// One JSON line per gateway.
        #[arg(long)]
        json: bool,
        /// The deadline shared by all the calls (ms); a gateway whose turn comes with less than
        /// a quarter of it (at most 1 s) left is not asked (`not_sent`).
        #[arg(long, value_name = "MS", default_value_t = 10_000)]
        timeout_ms: u64,
        /// Gateways asked at once (1 to 128). A gateway that does not answer holds its place
        /// until the deadline, so more places let the others through.
        #[arg(long, value_name = "N", default_value_t = 64,
              value_parser = clap::value_parser!(u16).range(1..=128))]
        parallel: u16,
        /// The tool.
        tool: String,
        /// Its arguments as JSON (default `{}`).
        args: Option<String>,
    },
}

#[derive(Subcommand)]
enum TelegramCmd {
    /// Let in the Telegram user who was given this one-time code (printed in `covo run`'s log
    /// when they wrote to the bot).
    Pair {
        /// The code from the log.
        code: String,
    },
    /// Let in a Telegram user by id (the number the log shows beside their code), with or
    /// without a code: strangers cannot lock the owner out of pairing.
    Allow {
        /// The user's numeric id.
        id: i64,
    },
}

#[derive(Subcommand)]
enum Command {
    /// Chat with the agent in the terminal (or send one message with -m).
    Chat {
        /// Send this one message, print the final answer and exit.
        #[arg(short, long, value_name = "TEXT")]
        message: Option<String>,
        #[command(flatten)]
        profile: ProfileArg,
        /// The platform whose default toolsets the model sees (default: config, else gateway).
        #[arg(long, value_name = "X")]
        platform: Option<String>,
        /// Approve destructive tools without asking.
        #[arg(long)]
        yes: bool,
        /// Continue this conversation id.
        #[arg(long, value_name = "ID")]
        session: Option<String>,
    },
    /// Inspect and call tools.
    #[command(subcommand)]
    Tools(ToolsCmd),
    /// The cloud peer is its own binary, `covo-peer`; this only says so.
    #[command(hide = true)]
    Peer {
        /// Whatever followed `covo peer`.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        _rest: Vec<String>,
    },
    /// Run the gateway daemon: chat over MQTT, schedules, sensor sampling and telemetry (`[run]`).
    Run {
        #[command(flatten)]
        profile: ProfileArg,
    },
    /// Serve MCP over stdio: the tools of a profile (default `edge`) to an MCP client such as
    /// Claude Desktop (`[mcp]`). Logs go to stderr.
    #[cfg(feature = "mcp")]
    Mcp {
        /// The profile whose tools MCP clients may use (default: [mcp] profile, else `edge`).
        #[arg(long, value_name = "P")]
        profile: Option<String>,
        /// List these toolsets' tools (repeatable; default: [mcp] toolset, else the `gateway`
        /// platform's); the rest are found through tool_search.
        #[arg(long = "toolset", value_name = "T")]
        toolsets: Vec<String>,
    },
    /// The database: sizes and retention (`[store]`).
    #[command(subcommand)]
    Store(StoreCmd),
    /// Check this board's setup (interfaces, devices, groups, clock, space, broker, model);
    /// exits 1 when a check fails.
    Doctor {
        /// Root of the file system to check, for a mounted SD card image or tests.
        #[arg(long, value_name = "DIR", default_value = "/")]
        root: PathBuf,
        /// Skip the broker and model checks (no network).
        #[arg(long)]
        offline: bool,
    },
    /// The Telegram bot (`[telegram]`): let users in.
    #[command(subcommand)]
    Telegram(TelegramCmd),
    /// The gateways on the MQTT broker (`[mqtt]`), from their retained births and Wills: id,
    /// online or offline since when, software, board, tools served to the swarm.
    Fleet {
        #[command(subcommand)]
        call: Option<FleetCmd>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// Only the online gateways.
        #[arg(long)]
        online: bool,
        /// How long to wait for the retained statuses after connecting (ms).
        #[arg(long, value_name = "MS", default_value_t = 3000)]
        wait_ms: u64,
    },
    /// List toolsets, or print one toolset's resolved tool names.
    Toolsets {
        /// A toolset to resolve.
        name: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(ClapArgs, Clone)]
struct ProfileArg {
    /// The profile whose tools are owned (default: config, else `full`).
    #[arg(long, value_name = "P")]
    profile: Option<String>,
}

#[derive(ClapArgs, Clone)]
#[group(multiple = false)]
struct SelectArg {
    /// Show what this platform's default toolsets make visible.
    #[arg(long, value_name = "X")]
    platform: Option<String>,
    /// Show what these toolsets make visible (repeatable).
    #[arg(long = "toolset", value_name = "T")]
    toolsets: Vec<String>,
}

impl SelectArg {
    fn selection(&self) -> Option<Selection> {
        if let Some(p) = &self.platform {
            Some(Selection::Platform(p.clone()))
        } else if !self.toolsets.is_empty() {
            Some(Selection::Toolsets(self.toolsets.clone()))
        } else {
            None
        }
    }
}

#[derive(Subcommand)]
enum ToolsCmd {
    /// List tools: every owned tool, or those a platform/toolsets make visible.
    List {
        #[command(flatten)]
        profile: ProfileArg,
        #[command(flatten)]
        select: SelectArg,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Rank owned tools against a query (what `tool_search` does).
    Search {
        /// What you want to do.
        query: String,
        #[command(flatten)]
        profile: ProfileArg,
        /// How many results (1-20).
        #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u16).range(1..=20))]
        limit: u16,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show one tool's full definition.
    Describe {
        /// The tool.
        name: String,
        #[command(flatten)]
        profile: ProfileArg,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Call a tool through the dispatch pipeline and print its result as JSON.
    Call {
        /// The tool.
        name: String,
        /// Arguments as a JSON object (default `{}`).
        args: Option<String>,
        #[command(flatten)]
        profile: ProfileArg,
        /// Approve destructive tools without asking.
        #[arg(long)]
        yes: bool,
        /// The session (conversation) the call belongs to.
        #[arg(long, default_value = "cli")]
        session: String,
    },
    /// Print the exact `tools` array one model call would carry.
    Prompt {
        #[command(flatten)]
        profile: ProfileArg,
        #[command(flatten)]
        select: SelectArg,
        /// Wire format.
        #[arg(long, default_value_t = Format::Openai)]
        format: Format,
    },
}

/// The edge profile is the release profile with `panic = "abort"`.
#[cfg(panic = "abort")]
macro_rules! build_name {
    () => {
        "edge"
    };
}
#[cfg(not(panic = "abort"))]
macro_rules! build_name {
    () => {
        env!("COVO_PROFILE")
    };
}
#[cfg(panic = "abort")]
macro_rules! panic_strategy {
    () => {
        "abort"
    };
}
#[cfg(not(panic = "abort"))]
macro_rules! panic_strategy {
    () => {
        "unwind"
    };
}

/// `covo -V`: the crate version and the commit (`gateway/build.rs`).
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("COVO_GIT_DESCRIBE"),
    ")"
);

/// `covo --version`: also the target, the build (edge: static, aborts on a panic) and the
/// enabled cargo features, which is what a bug report from a board needs.
const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    "\ngit: ",
    env!("COVO_GIT_DESCRIBE"),
    "\ntarget: ",
    env!("COVO_TARGET"),
    "\nbuild: ",
    build_name!(),
    " (",
    env!("COVO_LINKING"),
    ", panic=",
    panic_strategy!(),
    ")",
    "\nfeatures: ",
    env!("COVO_FEATURES")
);

/// An error that exits with code 2 (usage or configuration).
#[derive(Debug)]
struct UsageError(String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// The `covo` binary's entry point.
pub fn main() -> ExitCode {
    crate::logging::init();
    let cli = Cli::parse();
    let result = run(cli);
    // Background processes this covo started (process_start) end with it.
    crate::tools::shell::end_all();
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("covo: {e:#}");
            if e.downcast_ref::<UsageError>().is_some() {
                ExitCode::from(2)
            } else {
                ExitCode::from(1)
            }
        }
    }
}

fn usage(e: impl std::fmt::Display) -> anyhow::Error {
    UsageError(e.to_string()).into()
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    if let Command::Peer { .. } = cli.command {
        return Err(usage(
            "the cloud peer is its own binary now, so the gateway on a board carries none of \
             its backends: run `covo-peer --config FILE` (build it with \
             `cargo build --release -p covo-peer`)",
        ));
    }
    if let Command::Doctor { root, offline } = &cli.command {
        // An invalid configuration is one of the failures doctor reports, not a usage error.
        return doctor::run(Config::load(cli.config.as_deref()), root, *offline);
    }
    let config = Config::load(cli.config.as_deref()).map_err(usage)?;
    match cli.command {
        Command::Doctor { .. } => unreachable!("answered before the config loads"),
        Command::Peer { .. } => unreachable!("answered before the config loads"),
        Command::Run { profile } => {
            // A daemon never prompts, even when started from a terminal: its callers are on
            // MQTT, not on this process's stdin. `[run] approve` is the only way to approve.
            let approver: Box<dyn crate::runtime::Approver> = if config.run.approve {
                Box::new(AutoApprove)
            } else {
                Box::new(DaemonDeclines)
            };
            let config_copy = config.clone();
            let mut opts = crate::tools::options(config);
            opts.profile = profile.profile.clone();
            opts.approver = approver;
            let rt = Runtime::new(opts).map_err(usage)?;
            #[cfg(feature = "mcp")]
            let mcp = mcp::for_run(&config_copy, &rt)?;
            #[cfg(not(feature = "mcp"))]
            let mcp = {
                let _ = config_copy;
                None
            };
            run::run(rt, mcp)
        }
        #[cfg(feature = "mcp")]
        Command::Mcp { profile, toolsets } => mcp::stdio(config, profile, toolsets),
        Command::Chat {
            message,
            profile,
            platform,
            yes,
            session,
        } => {
            let selection = platform.map(Selection::Platform);
            let rt = runtime_for(config, &profile, yes, selection)?;
            // Connect now rather than on the first peer tool, so the first plan already sees them.
            let _ = rt.peer_link();
            chat::run(rt, chat::ChatOptions { message, session })
        }
        Command::Toolsets { name, json } => toolsets(&config, name, json),
        Command::Tools(cmd) => tools(config, cmd),
        Command::Store(cmd) => store_cmd(&config, cmd),
        Command::Fleet {
            call,
            json,
            online,
            wait_ms,
        } => {
            let cfg = config.mqtt.as_ref().ok_or_else(|| {
                usage("covo fleet needs an [mqtt] section: the broker the gateways are on")
            })?;
            let link =
                crate::link::PeerLink::start_as(cfg, crate::link::Presence::None).map_err(usage)?;
            if !link.wait_synced(std::time::Duration::from_millis(wait_ms)) {
                eprintln!("covo fleet: the broker's retained statuses did not all arrive within {wait_ms} ms");
            }
            match call {
                None => fleet::list(&link, online, json),
                Some(FleetCmd::Call {
                    gateways,
                    json,
                    timeout_ms,
                    parallel,
                    tool,
                    args,
                }) => {
                    let args: Value = match args {
                        Some(a) => serde_json::from_str(&a)
                            .map_err(|e| usage(format!("ARGS is not JSON: {e}")))?,
                        None => json!({}),
                    };
                    fleet::call(
                        &link,
                        &gateways,
                        &tool,
                        args,
                        std::time::Duration::from_millis(timeout_ms),
                        parallel.into(),
                        json,
                    )
                }
            }
        }
        Command::Telegram(TelegramCmd::Pair { code }) => telegram_pair(&config, &code),
        Command::Telegram(TelegramCmd::Allow { id }) => {
            let store = crate::store::Store::open_in(&config.home_dir())?;
            store.telegram_allow(id, &format!("id {id}"))?;
            println!("allowed: Telegram user id {id} may now chat with this gateway");
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn telegram_pair(config: &Config, code: &str) -> anyhow::Result<ExitCode> {
    let store = crate::store::Store::open_in(&config.home_dir())?;
    match store.telegram_pair(code, chrono::Utc::now().timestamp())? {
        Some((user, name)) => {
            println!("paired: Telegram user {name} (id {user}) may now chat with this gateway");
            Ok(ExitCode::SUCCESS)
        }
        None => Err(usage(format!(
            "no pending pairing code '{code}' (codes are valid for an hour; the user gets a new \
             one by writing to the bot again)"
        ))),
    }
}

fn store_cmd(config: &Config, cmd: StoreCmd) -> anyhow::Result<ExitCode> {
    use crate::store::retention::{Limits, BATCH};
    let store = crate::store::Store::open_in(&config.home_dir())?;
    let limits = Limits::from_config(&config.store);
    let v = match cmd {
        StoreCmd::Stats => serde_json::to_value(store.stats(&limits)?)?,
        StoreCmd::Prune => {
            let pruned = store.prune_all(&limits, BATCH)?;
            serde_json::json!({"pruned": pruned, "stats": store.stats(&limits)?})
        }
    };
    println!("{}", serde_json::to_string_pretty(&v)?);
    Ok(ExitCode::SUCCESS)
}

fn runtime(config: Config, profile: &ProfileArg, yes: bool) -> anyhow::Result<Runtime> {
    runtime_for(config, profile, yes, None)
}

fn runtime_for(
    config: Config,
    profile: &ProfileArg,
    yes: bool,
    selection: Option<Selection>,
) -> anyhow::Result<Runtime> {
    let mut opts = crate::tools::options(config);
    opts.profile = profile.profile.clone();
    opts.selection = selection;
    opts.approver = if yes {
        Box::new(AutoApprove)
    } else if std::io::stdin().is_terminal() {
        Box::new(AskOnTerminal)
    } else {
        Box::new(NoApprover)
    };
    Runtime::new(opts).map_err(usage)
}

fn tools(config: Config, cmd: ToolsCmd) -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    match cmd {
        ToolsCmd::List {
            profile,
            select,
            json,
        } => {
            let rt = runtime(config, &profile, false)?;
            let listed: Vec<&'static ToolSpec> = match select.selection() {
                Some(sel) => rt.plan(&sel).map_err(usage)?.visible,
                None => rt.owned().tools.clone(),
            };
            if json {
                let rows: Vec<Value> = listed.iter().map(|t| list_row(&rt, t)).collect();
                writeln!(out, "{}", Value::Array(rows))?;
            } else {
                for s in listed {
                    let av = rt.availability(s);
                    let mark = if av.available { " " } else { "-" };
                    writeln!(
                        out,
                        "{mark} {:<22} {:<13} {:<11} {}",
                        s.name,
                        s.toolset,
                        s.effect.as_str(),
                        s.summary()
                    )?;
                }
            }
        }
        ToolsCmd::Search {
            query,
            profile,
            limit,
            json,
        } => {
            let rt = runtime(config, &profile, false)?;
            let hits = rt.search_index().search(&query, limit as usize);
            if json {
                let rows: Vec<Value> = hits
                    .iter()
                    .map(|h| {
                        let av = rt.availability(h.tool);
                        json!({
                            "name": h.tool.name,
                            "summary": h.tool.summary(),
                            "score": (h.score * 1000.0).round() / 1000.0,
                            "available": av.available,
                        })
                    })
                    .collect();
                writeln!(out, "{}", Value::Array(rows))?;
            } else {
                for h in hits {
                    writeln!(
                        out,
                        "{:>7.3}  {:<22} {}",
                        h.score,
                        h.tool.name,
                        h.tool.summary()
                    )?;
                }
            }
        }
        ToolsCmd::Describe {
            name,
            profile,
            json,
        } => {
            let rt = runtime(config, &profile, false)?;
            let def = match rt.lookup(&name) {
                Ok(d) => d,
                Err(e) => {
                    writeln!(out, "{}", e.to_json())?;
                    return Ok(ExitCode::from(1));
                }
            };
            let v = crate::tools::discovery::describe(def, rt.availability(def));
            if json {
                writeln!(out, "{v}")?;
            } else {
                writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
            }
        }
        ToolsCmd::Call {
            name,
            args,
            profile,
            yes,
            session,
        } => {
            let rt = runtime(config, &profile, yes)?;
            let session = Session::new(session, "cli");
            let args = args.unwrap_or_default();
            match rt.call_raw(&session, Via::Direct, &name, &args) {
                Ok(v) => writeln!(out, "{v}")?,
                Err(CallError::Respond(e)) => {
                    writeln!(out, "{}", e.to_json())?;
                    return Ok(ExitCode::from(1));
                }
                Err(CallError::Fatal(e)) => {
                    writeln!(
                        out,
                        "{}",
                        json!({"error": {"kind": "fatal", "message": e.to_string()}})
                    )?;
                    return Ok(ExitCode::from(1));
                }
            }
        }
        ToolsCmd::Prompt {
            profile,
            select,
            format,
        } => {
            let sel = select
                .selection()
                .unwrap_or_else(|| Selection::Platform(default_platform(&config)));
            let rt = runtime_for(config, &profile, false, Some(sel))?;
            // Exactly what the hooks give the next model call of the CLI session.
            let call = rt.model_call(&Session::new("cli", "cli"));
            for note in &call.notes {
                eprintln!("covo: {note}");
            }
            writeln!(out, "{}", render(&call.tools, format))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn default_platform(config: &Config) -> String {
    config.platform.clone().unwrap_or_else(|| "gateway".into())
}

fn list_row(rt: &Runtime, s: &ToolSpec) -> Value {
    let av = rt.availability(s);
    let mut row = json!({
        "name": s.name,
        "description": s.description,
        "toolset": s.toolset,
        "runs": s.runs,
        "effect": s.effect,
        "profiles": s.profiles.names(),
        "available": av.available,
    });
    if let Some(r) = av.reason {
        row["reason"] = json!(r);
    }
    row
}

fn toolsets(config: &Config, name: Option<String>, json: bool) -> anyhow::Result<ExitCode> {
    let catalog: Vec<&'static ToolSpec> = covo_core::catalog::all().collect();
    let ts = Toolsets::new(&catalog, &config.toolsets).map_err(usage)?;
    let mut out = std::io::stdout().lock();
    match name {
        Some(n) => {
            let tools = ts.resolve(&[&n]).map_err(usage)?;
            if json {
                writeln!(out, "{}", json!(tools))?;
            } else {
                for t in tools {
                    writeln!(out, "{t}")?;
                }
            }
        }
        None => {
            ts.validate().map_err(usage)?;
            if json {
                let rows: Vec<Value> = ts
                    .iter()
                    .map(|t| {
                        let resolved = ts.resolve(&[&t.name]).unwrap_or_default();
                        json!({
                            "name": t.name,
                            "kind": t.kind,
                            "includes": t.includes,
                            "tools": resolved,
                        })
                    })
                    .collect();
                writeln!(out, "{}", Value::Array(rows))?;
            } else {
                for t in ts.iter() {
                    let n = ts.resolve(&[&t.name]).map(|v| v.len()).unwrap_or(0);
                    let detail = if t.includes.is_empty() {
                        t.tools.join(", ")
                    } else {
                        format!("includes {}", t.includes.join(", "))
                    };
                    writeln!(
                        out,
                        "{:<13} {:<9} {:>3} tools  {detail}",
                        t.name,
                        format!("{:?}", t.kind).to_lowercase(),
                        n
                    )?;
                }
            }
        }
    }
    let _ = out.flush();
    Ok(ExitCode::SUCCESS)
}

/// Asks y/N on the terminal before a destructive tool runs.
struct AskOnTerminal;

/// `covo run` without `[run] approve`: destructive calls are declined, never asked about.
struct DaemonDeclines;

impl crate::runtime::Approver for DaemonDeclines {
    fn approve(&self, _: &ToolSpec, _: &Value) -> Result<(), String> {
        Err(
            "covo run never asks for approval; set [run] approve = true in covo.toml to let \
             it run destructive tools"
                .into(),
        )
    }
}

impl crate::runtime::Approver for AskOnTerminal {
    fn approve(&self, spec: &ToolSpec, args: &Value) -> Result<(), String> {
        eprint!(
            "covo: '{}' is destructive ({}). Run it with {args}? [y/N] ",
            spec.name,
            spec.summary()
        );
        let mut line = String::new();
        std::io::stdin()
            .read_line(&mut line)
            .map_err(|e| e.to_string())?;
        if matches!(line.trim(), "y" | "Y" | "yes") {
            Ok(())
        } else {
            Err("declined by the user".into())
        }
    }
}
