//! The dashboard's listener: at most a fixed number of connections open at once (more wait,
//! unaccepted, in the kernel's backlog until one closes), each with TCP_NODELAY (a live event is
//! a small write, which Nagle's algorithm would hold until the browser's delayed ACK).

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// A TCP listener that holds at most `slots` connections.
pub struct Limited {
    inner: TcpListener,
    slots: Arc<Semaphore>,
}

impl Limited {
    /// Accepts at most `max` connections at once.
    pub fn new(inner: TcpListener, max: usize) -> Self {
        Limited {
            inner,
            slots: Arc::new(Semaphore::new(max.max(1))),
        }
    }
}

/// A connection holding its slot until it is dropped.
pub struct Conn {
    io: TcpStream,
    _slot: OwnedSemaphorePermit,
}

impl axum::serve::Listener for Limited {
    type Io = Conn;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Conn, std::net::SocketAddr) {
        loop {
            // The semaphore is never closed.
            let Ok(slot) = self.slots.clone().acquire_owned().await else {
                std::future::pending::<()>().await;
                continue;
            };
            match self.inner.accept().await {
                Ok((io, addr)) => {
                    if let Err(e) = io.set_nodelay(true) {
                        tracing::debug!(error = %e, "cannot set TCP_NODELAY");
                    }
                    return (Conn { io, _slot: slot }, addr);
                }
                // Out of descriptors and the like: wait a little rather than spin.
                Err(e) => {
                    tracing::warn!(error = %e, "the dashboard cannot accept a connection");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    }

    fn local_addr(&self) -> io::Result<std::net::SocketAddr> {
        self.inner.local_addr()
    }
}

impl AsyncRead for Conn {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl AsyncWrite for Conn {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}
