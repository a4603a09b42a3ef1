//! `covo chat`: the interactive terminal chat, and `covo chat -m` for one-shot use.

use crate::agent::{self, scheduler, Agent, Observer, Outcome, ToolResult, TurnReport};
use crate::exec::Session;
use crate::llm::{ChatModel, HttpModel, Provider, ToolCall, Usage};
use crate::runtime::{Runtime, Via};
use covo_core::plan::{render, Format};
use serde_json::Value;
use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Options of `covo chat`.
pub struct ChatOptions {
    /// One-shot message.
    pub message: Option<String>,
    /// Continue this conversation id instead of starting a new one.
    pub session: Option<String>,
}

/// Resolves the configured model, if any. A broken provider setup is reported, not fatal:
/// chat still starts so the board can be explored by hand.
pub fn model(rt: &Runtime) -> Option<Arc<dyn ChatModel>> {
    let env = |k: &str| std::env::var(k).ok();
    let provider = Provider::resolve(&rt.config().llm, &env)?;
    client(provider)
}

fn client(provider: Provider) -> Option<Arc<dyn ChatModel>> {
    match HttpModel::new(provider) {
        Ok(m) => Some(Arc::new(m)),
        Err(e) => {
            eprintln!("covo: cannot set up the model client: {e}");
            None
        }
    }
}

/// Runs `covo chat`.
pub fn run(rt: Runtime, opts: ChatOptions) -> anyhow::Result<ExitCode> {
    let rt = Arc::new(rt);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let model = model(&rt).or_else(|| runtime.block_on(local_model(&rt)));
    let session = match opts.session {
        Some(id) => Session::new(id, "cli"),
        None => agent::new_session(&rt, "cli", "chat"),
    };
    let mut agent = Agent::new(rt.clone(), model, session);
    match opts.message {
        Some(m) => Ok(runtime.block_on(one_shot(&mut agent, &m))),
        None => runtime.block_on(interactive(agent)),
    }
}

/// With no model configured: a model server on this machine (Ollama, llama.cpp), if one
/// answers with a model loaded. Says what it found and what it uses.
async fn local_model(rt: &Runtime) -> Option<Arc<dyn ChatModel>> {
    let found = crate::llm::local::discover(&crate::llm::local::addrs()).await;
    let server = found.iter().find(|f| !f.models.is_empty())?;
    let model = server.models[0].clone();
    eprintln!(
        "covo: no model is configured; found {server}, using '{model}' (set [llm] or {} to choose)",
        server.settings()
    );
    let mut cfg = rt.config().llm.clone();
    (cfg.base_url, cfg.model) = (Some(server.base_url.clone()), Some(model));
    let env = |k: &str| std::env::var(k).ok();
    client(Provider::resolve(&cfg, &env)?)
}

/// Shows tool activity on stderr and, interactively, streams the answer to stdout.
struct Terminal {
    stream: bool,
    at_line_start: bool,
}

impl Observer for Terminal {
    fn on_text(&mut self, delta: &str) {
        if self.stream {
            print!("{delta}");
            let _ = std::io::stdout().flush();
            self.at_line_start = delta.ends_with('\n');
        }
    }

    fn on_tool_call(&mut self, call: &ToolCall) {
        if !self.at_line_start && self.stream {
            println!();
            self.at_line_start = true;
        }
        eprintln!("  ⚙ {} {}", call.name, one_line(&call.arguments, 100));
    }

    fn on_tool_result(&mut self, _call: &ToolCall, r: &ToolResult) {
        if r.is_error {
            let v = agent::result_json(r);
            let kind = v["error"]["kind"].as_str().unwrap_or("error");
            let msg = v["error"]["message"].as_str().unwrap_or(&r.content);
            eprintln!("  ✗ {kind}: {}", one_line(msg, 160));
        } else {
            eprintln!("  ✓ {}", one_line(&r.content, 160));
        }
    }

    fn on_note(&mut self, note: &str) {
        eprintln!("  ! {note}");
    }
}

fn one_line(s: &str, max: usize) -> String {
    let flat: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        flat
    } else {
        format!("{}…", flat.chars().take(max).collect::<String>())
    }
}

/// A token that Ctrl-C cancels for as long as the returned guard lives.
fn cancel_on_ctrl_c() -> (CancellationToken, tokio::task::JoinHandle<()>) {
    let token = CancellationToken::new();
    let t = token.clone();
    let task = tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            t.cancel();
        }
    });
    (token, task)
}

async fn run_turn(agent: &mut Agent, line: &str, stream: bool) -> TurnReport {
    let (token, guard) = cancel_on_ctrl_c();
    let mut obs = Terminal {
        stream,
        at_line_start: true,
    };
    let report = agent.turn(line, &token, &mut obs).await;
    guard.abort();
    if stream && !obs.at_line_start {
        println!();
    }
    report
}

async fn one_shot(agent: &mut Agent, message: &str) -> ExitCode {
    if agent.model().is_none() {
        eprintln!("covo: {}", agent::NO_MODEL);
        return ExitCode::from(2);
    }
    let report = run_turn(agent, message, false).await;
    match report.outcome {
        Outcome::Answer(a) => {
            println!("{a}");
            ExitCode::SUCCESS
        }
        Outcome::StepBudget { steps } => {
            eprintln!(
                "covo: stopped after {steps} model calls (the step budget) without a final answer"
            );
            ExitCode::from(1)
        }
        Outcome::Cancelled => {
            eprintln!("covo: cancelled");
            ExitCode::from(130)
        }
        Outcome::Failed(e) => {
            eprintln!("covo: {e}");
            ExitCode::from(1)
        }
    }
}

/// Reads lines on a thread of its own (rustyline blocks), one line per request, so stdin is free
/// for approval prompts while a turn runs.
fn input_thread(
    history: std::path::PathBuf,
) -> (
    std::sync::mpsc::SyncSender<()>,
    mpsc::Receiver<Option<String>>,
) {
    // One line is read per request, so one slot is all either channel ever holds.
    let (want_tx, want_rx) = std::sync::mpsc::sync_channel::<()>(1);
    let (line_tx, line_rx) = mpsc::channel(1);
    std::thread::spawn(move || {
        let mut ed = match rustyline::DefaultEditor::new() {
            Ok(e) => e,
            Err(e) => {
                eprintln!("covo: no line editor: {e}");
                let _ = line_tx.blocking_send(None);
                return;
            }
        };
        let _ = ed.load_history(&history);
        while want_rx.recv().is_ok() {
            let line = loop {
                match ed.readline("› ") {
                    Ok(l) => break Some(l),
                    Err(rustyline::error::ReadlineError::Interrupted) => {
                        eprintln!("(Ctrl-D or /quit leaves; Ctrl-C during an answer stops it)");
                    }
                    Err(_) => break None,
                }
            };
            if let Some(l) = &line {
                if !l.trim().is_empty() {
                    let _ = ed.add_history_entry(l.as_str());
                    let _ = ed.save_history(&history);
                }
            }
            let done = line.is_none();
            if line_tx.blocking_send(line).is_err() || done {
                return;
            }
        }
    });
    (want_tx, line_rx)
}

async fn interactive(mut agent: Agent) -> anyhow::Result<ExitCode> {
    let rt = agent.runtime().clone();
    let call = rt.model_call(agent.session());
    match agent.model() {
        Some(m) => eprintln!(
            "covo chat · {} · profile {} · {} tools visible · conversation {} · /help",
            m.describe(),
            rt.owned().profile,
            call.tools.len(),
            agent.session().id
        ),
        None => eprintln!(
            "covo chat · profile {} · conversation {}\n{}",
            rt.owned().profile,
            agent.session().id,
            agent::NO_MODEL
        ),
    }
    let _ = std::fs::create_dir_all(rt.home());
    let (want, mut lines) = input_thread(rt.home().join("chat_history"));
    let poll = Duration::from_secs(rt.config().agent.schedule_poll_secs.unwrap_or(15).max(1));
    let mut ticker = tokio::time::interval(poll);
    let mut usage_log: Vec<(usize, Usage)> = Vec::new();
    let sampled = Arc::new(std::sync::Mutex::new(std::collections::HashMap::new()));
    // Microcontroller events feed the watches on their own thread (stopped when this returns).
    let _mcu_events = crate::watch::McuWatcher::spawn(rt.clone());
    let _ = want.try_send(()); // full means a line is already asked for
    loop {
        tokio::select! {
            line = lines.recv() => {
                let Some(Some(line)) = line else { break };
                let line = line.trim().to_string();
                if line.is_empty() {
                    let _ = want.try_send(()); // full means a line is already asked for
                    continue;
                }
                if let Some(cmd) = line.strip_prefix('/') {
                    if slash(&mut agent, cmd, &usage_log) == Flow::Quit {
                        break;
                    }
                } else if agent.model().is_none() {
                    eprintln!("no model is configured (see the start-up message); /help lists what works without one");
                } else {
                    let r = run_turn(&mut agent, &line, true).await;
                    usage_log.push((r.steps, r.usage));
                    match r.outcome {
                        Outcome::Answer(_) => {}
                        Outcome::StepBudget { steps } => eprintln!("  ! stopped after {steps} model calls (step budget)"),
                        Outcome::Cancelled => eprintln!("  ! cancelled"),
                        Outcome::Failed(e) => eprintln!("  ! {e}"),
                    }
                }
                let _ = want.try_send(()); // full means a line is already asked for
            }
            _ = ticker.tick() => {
                run_due(&rt, agent.model().cloned()).await;
                let (rt2, sampled) = (rt.clone(), sampled.clone());
                let _ = tokio::task::spawn_blocking(move || {
                    let mut last = sampled.lock().unwrap_or_else(|p| p.into_inner());
                    for line in crate::tools::readings::sample_due(rt2.as_ref(), &mut last) {
                        tracing::debug!(%line, "sampled");
                    }
                })
                .await;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn run_due(rt: &Arc<Runtime>, model: Option<Arc<dyn ChatModel>>) {
    match scheduler::claim_due(rt, chrono::Utc::now()) {
        Ok(jobs) => {
            for job in jobs {
                scheduler::run_job(rt, model.clone(), &job).await;
            }
        }
        Err(e) => tracing::warn!(error = %e, "could not check schedules"),
    }
}

#[derive(PartialEq, Eq)]
enum Flow {
    Continue,
    Quit,
}

const HELP: &str = "/tools            what the model sees this turn
/search QUERY     rank the tools you own
/describe TOOL    a tool's full definition
/call TOOL {json} call a tool through the pipeline
/usage            tokens used per turn
/new              start a new conversation
/history          this conversation's stored turns
/quit             leave (or Ctrl-D)";

fn slash(agent: &mut Agent, cmd: &str, usage_log: &[(usize, Usage)]) -> Flow {
    let rt = agent.runtime().clone();
    let (name, rest) = cmd
        .split_once(' ')
        .map(|(a, b)| (a, b.trim()))
        .unwrap_or((cmd, ""));
    match name {
        "help" | "?" => println!("{HELP}"),
        "quit" | "exit" | "q" => return Flow::Quit,
        "tools" => {
            let call = rt.model_call(agent.session());
            for n in &call.notes {
                println!("! {n}");
            }
            let payload = render(&call.tools, Format::Openai).to_string();
            println!(
                "{} tools visible ({} bytes of payload):",
                call.tools.len(),
                payload.len()
            );
            for t in call.tools {
                println!("  {:<20} {}", t.name, t.summary());
            }
        }
        "search" => {
            for h in rt.search_index().search(rest, 10) {
                let av = rt.availability(h.tool);
                let mark = if av.available { " " } else { "-" };
                println!(
                    "{mark}{:>7.3}  {:<20} {}",
                    h.score,
                    h.tool.name,
                    h.tool.summary()
                );
            }
        }
        "describe" => match rt.lookup(rest) {
            Ok(d) => {
                let v = crate::tools::discovery::describe(d, rt.availability(d));
                println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
            }
            Err(e) => println!("{}", e.to_json()),
        },
        "call" => {
            let (tool, args) = rest
                .split_once(' ')
                .map(|(a, b)| (a, b.trim()))
                .unwrap_or((rest, "{}"));
            match rt.call_raw(agent.session(), Via::Direct, tool, args) {
                Ok(v) => println!("{}", pretty(&v)),
                Err(crate::error::CallError::Respond(e)) => println!("{}", pretty(&e.to_json())),
                Err(crate::error::CallError::Fatal(e)) => println!("fatal: {e}"),
            }
        }
        "usage" => {
            let mut total = Usage::default();
            for (i, (steps, u)) in usage_log.iter().enumerate() {
                println!(
                    "turn {:>3}: {:>6} in  {:>6} out  ({steps} model call{})",
                    i + 1,
                    u.input_tokens,
                    u.output_tokens,
                    if *steps == 1 { "" } else { "s" }
                );
                total += *u;
            }
            println!(
                "total:    {:>6} in  {:>6} out",
                total.input_tokens, total.output_tokens
            );
        }
        "new" => {
            let s = agent::new_session(&rt, "cli", "chat");
            println!("new conversation {}", s.id);
            agent.reset(s);
        }
        "history" => match rt.store().and_then(|s| s.turns(&agent.session().id)) {
            Ok(turns) => {
                for t in turns {
                    println!("{:>3} {:<9} {}", t.seq, t.role, one_line(&t.content, 200));
                }
            }
            Err(e) => println!("cannot read the history: {e}"),
        },
        other => println!("unknown command /{other}; /help lists them"),
    }
    Flow::Continue
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
}
