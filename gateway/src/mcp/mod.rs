//! covo as an MCP server (feature `mcp`): `covo mcp` over stdio and, with `[mcp] bind`,
//! `covo run` over streamable HTTP. Built on the official SDK, `rmcp`, with its
//! `ServerHandler` written by hand (no macros, no derived schemas: the tools' schemas are the
//! catalog's).
//!
//! Every MCP tool call enters the one pipeline (`Runtime::call`) as `Via::Mcp` with a
//! [`Session`](crate::exec::Session) whose approver is the MCP client's user: a destructive
//! call listed in `[mcp] approve` runs, any other is confirmed through MCP elicitation when
//! the client declared it, and refused (naming `[mcp] approve`) when it did not.
//!
//! Bounds: a request is at most [`MAX_REQUEST_BYTES`] (stdio lines and HTTP bodies), at most
//! [`MAX_CALLS`] tool calls run at once (more are refused as `busy`; a call waiting for its
//! user's confirmation holds one of its session's [`WAITING_PER_SESSION`] slots and one of the
//! gateway's [`MAX_WAITING`] instead of a running slot), HTTP serves at most
//! [`MAX_SESSIONS`] sessions (idle ones close after [`SESSION_IDLE`]), a session subscribes to
//! at most [`MAX_SUBSCRIPTIONS`] resources, and an elicitation waits at most [`ELICIT_WAIT`].

pub mod http;
mod server;

pub use http::{check_bind, check_origins, serve_http, HttpError};
pub use server::{CovoMcp, McpUserIo, Shared};

use crate::config::McpConfig;
use covo_core::plan::Selection;
use std::time::Duration;

/// The largest request accepted, in bytes: one stdio line or one HTTP body.
pub const MAX_REQUEST_BYTES: usize = 1 << 20;
/// Tool calls running at once, over all sessions; one more is refused as `busy`.
pub const MAX_CALLS: usize = 4;
/// Destructive calls one session may have waiting for its user's confirmation. A waiting call
/// gives its [`MAX_CALLS`] slot back, so a client that never answers holds only these.
pub const WAITING_PER_SESSION: usize = 2;
/// Calls waiting for confirmation over all sessions (each parks a thread of the blocking pool,
/// `daemon::BLOCKING_THREADS`).
pub const MAX_WAITING: usize = 8;
/// HTTP sessions held at once; a new one beyond it is refused with 503.
pub const MAX_SESSIONS: usize = 16;
/// An HTTP session unused this long is closed.
pub const SESSION_IDLE: Duration = Duration::from_secs(300);
/// Resources one session may subscribe to.
pub const MAX_SUBSCRIPTIONS: usize = 32;
/// How long a destructive call waits for the client's user to answer an elicitation.
pub const ELICIT_WAIT: Duration = Duration::from_secs(120);
/// `covo mcp` runs a call on its own thread, without the hop to the blocking pool, when its
/// tool's recent calls all took less than this (and nothing else is running, and the call
/// cannot ask for confirmation: `server::CovoMcp::runs_inline`).
pub const INLINE_BELOW: Duration = Duration::from_millis(1);
/// How often subscribed readings are checked for a change.
pub const POLL: Duration = Duration::from_millis(500);

/// The profile MCP clients get: `--profile`, else `[mcp] profile`, else `edge`.
pub fn profile(cli: Option<String>, cfg: &McpConfig) -> String {
    cli.or_else(|| cfg.profile.clone())
        .unwrap_or_else(|| "edge".into())
}

/// The toolsets listed to MCP clients: `--toolset`, else `[mcp] toolset`, else the `gateway`
/// platform's defaults.
pub fn selection(cli: Vec<String>, cfg: &McpConfig) -> Selection {
    if !cli.is_empty() {
        Selection::Toolsets(cli)
    } else if !cfg.toolset.is_empty() {
        Selection::Toolsets(cfg.toolset.clone())
    } else {
        Selection::Platform("gateway".into())
    }
}

/// The bearer token: `$COVO_MCP_TOKEN`, else `[mcp] token`. An empty value is no token.
pub fn token(cfg: &McpConfig) -> Option<String> {
    std::env::var("COVO_MCP_TOKEN")
        .ok()
        .or_else(|| cfg.token.clone())
        .filter(|t| !t.is_empty())
}

/// Why the stdio server stopped with an error.
#[derive(Debug, thiserror::Error)]
#[error("MCP over stdio: {0}")]
pub struct StdioError(String);

/// Serves one MCP client on stdin/stdout until it closes them. Logs go to stderr only.
///
/// When both are pipes or sockets (how MCP clients start a server), they are read and written
/// on the runtime's own thread, through epoll. tokio's `stdin()`/`stdout()` hand every read
/// and write to a blocking-pool thread instead: two more thread switches each way on every
/// call. Anything else (a terminal, a file) is served through those.
pub async fn serve_stdio(shared: std::sync::Arc<Shared>) -> Result<(), StdioError> {
    use rmcp::ServiceExt as _;
    // Boxed either way: rmcp's service is built for one transport type, not two.
    let (read, write): (Reader, Writer) = polled_stdio().unwrap_or_else(|| {
        let (stdin, stdout) = rmcp::transport::io::stdio();
        (Box::new(stdin), Box::new(stdout))
    });
    let transport = rmcp::transport::async_rw::AsyncRwTransport::new_server(read, write)
        .with_max_line_length(MAX_REQUEST_BYTES);
    let running = CovoMcp::on_stdio(shared)
        .serve(transport)
        .await
        .map_err(|e| StdioError(e.to_string()))?;
    // The handshake is done: start-up's code need not stay mapped (`trim`). `covo mcp` serves
    // one client, whose calls map back only what they run.
    let _ = crate::trim::release_code();
    running
        .waiting()
        .await
        .map_err(|e| StdioError(e.to_string()))?;
    Ok(())
}

type Reader = Box<dyn tokio::io::AsyncRead + Send + Unpin>;
type Writer = Box<dyn tokio::io::AsyncWrite + Send + Unpin>;

/// stdin and stdout, non-blocking and registered with the runtime, when both are pipes or Unix
/// sockets (Node starts its children on socket pairs); `None`, with both left blocking,
/// otherwise. Each is a duplicate of fd 0 or 1: the O_NONBLOCK set on it belongs to the open
/// pipe or socket, which `covo mcp` uses for the protocol only (its logs go to stderr). tokio's
/// pipe types only read and write the fd, which serves a socket as well as a pipe.
fn polled_stdio() -> Option<(Reader, Writer)> {
    use rustix::fs::FileType;
    use std::os::fd::{AsFd, BorrowedFd};
    use tokio::net::unix::pipe;
    let stream = |fd: BorrowedFd<'_>| {
        let t = FileType::from_raw_mode(rustix::fs::fstat(fd).ok()?.st_mode);
        matches!(t, FileType::Fifo | FileType::Socket)
            .then(|| fd.try_clone_to_owned().ok())
            .flatten()
    };
    // Both are checked before either is changed.
    let input = stream(std::io::stdin().as_fd())?;
    let output = stream(std::io::stdout().as_fd())?;
    let polled = (|| {
        rustix::io::ioctl_fionbio(&input, true).ok()?;
        rustix::io::ioctl_fionbio(&output, true).ok()?;
        let read = pipe::Receiver::from_owned_fd_unchecked(input.try_clone().ok()?).ok()?;
        let write = pipe::Sender::from_owned_fd_unchecked(output.try_clone().ok()?).ok()?;
        Some((Box::new(read) as Reader, Box::new(write) as Writer))
    })();
    if polled.is_none() {
        for fd in [&input, &output] {
            let _ = rustix::io::ioctl_fionbio(fd, false);
        }
    }
    polled
}
