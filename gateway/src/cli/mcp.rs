//! `covo mcp` (MCP over stdio) and `covo run`'s MCP endpoint (`[mcp] bind`, streamable HTTP).

use super::usage;
use crate::config::Config;
use crate::mcp::{self, McpUserIo, Shared};
use crate::runtime::{NoApprover, Runtime};
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The runtime MCP clients use: the MCP profile and toolsets, no terminal (stdin may be the
/// protocol), and no runtime approver (each session's is its client's user).
fn runtime(
    config: Config,
    profile: Option<String>,
    toolsets: Vec<String>,
    board: Option<Arc<crate::hardware::Board>>,
) -> anyhow::Result<Arc<Shared>> {
    let selection = mcp::selection(toolsets, &config.mcp);
    let approve = config.mcp.approve.clone();
    let mut opts = crate::tools::options(config.clone());
    opts.profile = Some(mcp::profile(profile, &config.mcp));
    opts.selection = Some(selection.clone());
    opts.approver = Box::new(NoApprover);
    opts.user_io = Box::new(McpUserIo);
    opts.board = board;
    let rt = Runtime::new(opts).map_err(usage)?;
    // The selection must resolve before a client connects.
    rt.plan(&selection).map_err(usage)?;
    Ok(Shared::new(Arc::new(rt), selection, approve))
}

/// `covo mcp`: serves one client on stdio until it disconnects.
pub fn stdio(
    config: Config,
    profile: Option<String>,
    toolsets: Vec<String>,
) -> anyhow::Result<ExitCode> {
    let shared = runtime(config, profile, toolsets, None)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .max_blocking_threads(mcp::MAX_CALLS + 4)
        .thread_keep_alive(std::time::Duration::from_secs(2))
        .build()?;
    rt.block_on(mcp::serve_stdio(shared))?;
    // A tool still running on the blocking pool does not hold the exit up.
    rt.shutdown_timeout(std::time::Duration::from_secs(1));
    Ok(ExitCode::SUCCESS)
}

/// `covo run`'s MCP endpoint, checked and ready to start on the daemon's loop.
pub struct Http {
    shared: Arc<Shared>,
    addr: SocketAddr,
    token: Option<String>,
    origins: Vec<String>,
}

/// The endpoint `[mcp] bind` asks for, or `None` when it is off. A non-loopback bind without a
/// token is a configuration error: `covo run` refuses to start.
pub fn for_run(config: &Config, daemon: &Runtime) -> anyhow::Result<Option<Http>> {
    let Some(bind) = config.mcp.bind.clone() else {
        return Ok(None);
    };
    let token = mcp::token(&config.mcp);
    let addr = mcp::check_bind(&bind, token.as_deref()).map_err(usage)?;
    let origins = mcp::check_origins(&config.mcp.allowed_origins).map_err(usage)?;
    // The daemon's board: the hardware is opened once per process.
    let shared = runtime(
        config.clone(),
        None,
        Vec::new(),
        Some(daemon.board().clone()),
    )?;
    Ok(Some(Http {
        shared,
        addr,
        token,
        origins,
    }))
}

impl Http {
    /// Binds and serves until `stop`.
    pub async fn start(self, stop: CancellationToken) -> anyhow::Result<()> {
        let (bound, _task) =
            mcp::serve_http(self.shared, self.addr, self.token, self.origins, stop).await?;
        eprintln!("covo run: MCP on http://{bound}/mcp");
        Ok(())
    }
}
