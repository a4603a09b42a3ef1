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
    match polled_stdio() {
        Some((stdin, stdout)) => {
            tracing::debug!("MCP on stdio: polled by the runtime");
            serve_on(shared, stdin, stdout).await
        }
        None => {
            tracing::debug!("MCP on stdio: through tokio's blocking stdio");
            let (stdin, stdout) = rmcp::transport::io::stdio();
            serve_on(shared, stdin, stdout).await
        }
    }
}

async fn serve_on<R, W>(shared: std::sync::Arc<Shared>, read: R, write: W) -> Result<(), StdioError>
where
    R: tokio::io::AsyncRead + Send + Unpin + 'static,
    W: tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    use rmcp::ServiceExt as _;
    let transport = rmcp::transport::async_rw::AsyncRwTransport::new_server(read, write)
        .with_max_line_length(MAX_REQUEST_BYTES);
    let running = CovoMcp::new(shared)
        .serve(transport)
        .await
        .map_err(|e| StdioError(e.to_string()))?;
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
/// otherwise. Each is a duplicate of fd 0 or 1: the O_NONBLOCK it sets belongs to the open pipe
/// or socket, which `covo mcp` uses for the protocol only (its logs go to stderr).
fn polled_stdio() -> Option<(Reader, Writer)> {
    use std::os::fd::AsFd;
    use std::os::unix::fs::FileTypeExt;
    let kind = |fd: std::os::fd::BorrowedFd<'_>| {
        let file = std::fs::File::from(fd.try_clone_to_owned().ok()?);
        let t = file.metadata().ok()?.file_type();
        (t.is_fifo() || t.is_socket()).then_some((file, t.is_socket()))
    };
    // Both are checked before either is changed.
    let (input, in_socket) = kind(std::io::stdin().as_fd())?;
    let (output, out_socket) = kind(std::io::stdout().as_fd())?;
    use tokio::net::unix::pipe;
    // The duplicate kept of stdout's end gives its blocking mode back if stdin fails.
    let (write, out_fd): (Writer, _) = if out_socket {
        let s = socket(output)?;
        let fd = s.as_fd().try_clone_to_owned().ok();
        (Box::new(s), fd)
    } else {
        let s = pipe::Sender::from_file(output).ok()?;
        let fd = s.as_fd().try_clone_to_owned().ok();
        (Box::new(s), fd)
    };
    let read: Option<Reader> = if in_socket {
        socket(input).map(|s| Box::new(s) as Reader)
    } else {
        pipe::Receiver::from_file(input)
            .ok()
            .map(|r| Box::new(r) as Reader)
    };
    match read {
        Some(read) => Some((read, write)),
        None => {
            // stdout is served blocking after all, as stdin will be.
            drop(write);
            if let Some(fd) = out_fd {
                let _ = rustix::io::ioctl_fionbio(&fd, false);
            }
            None
        }
    }
}

fn socket(file: std::fs::File) -> Option<tokio::net::UnixStream> {
    let s = std::os::unix::net::UnixStream::from(std::os::fd::OwnedFd::from(file));
    s.set_nonblocking(true).ok()?;
    tokio::net::UnixStream::from_std(s).ok()
}
