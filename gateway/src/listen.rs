//! The listener under covo's HTTP surfaces (the dashboard, MCP over HTTP): bounded, and hard
//! to starve from the network without a token.
//!
//! - At most `max_connections` connections are held at once, well below the process's
//!   file-descriptor budget ([`crate::fds`]).
//! - When a new connection arrives at the limit, the connection that has waited longest
//!   without a request in flight (an idle keep-alive, a slowloris, a socket that never sent a
//!   byte) is closed to make room. A connection serving a request or an event stream is never
//!   evicted, so a flood of idle sockets cannot keep a legitimate client out.
//! - A connection with no request in flight is closed after `idle`, and one whose next
//!   request's headers have started but not finished is closed `header_read` after their first
//!   byte.
//!
//! Whether a request is in flight is known from [`track`], the middleware every router served
//! here carries: it marks the connection busy from the request's start until its response
//! body is finished or dropped.

use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, Request};
use axum::middleware::Next;
use axum::response::Response;
use futures_util::task::AtomicWaker;
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, Sleep};

/// How long a request's headers may take to arrive, from their first byte.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a connection may stay open with no request in flight.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// A listener's bounds.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Connections held at once.
    pub max_connections: usize,
    /// See [`HEADER_READ_TIMEOUT`].
    pub header_read: Duration,
    /// See [`IDLE_TIMEOUT`].
    pub idle: Duration,
}

impl Limits {
    /// `max_connections` with the default timeouts.
    pub fn new(max_connections: usize) -> Limits {
        Limits {
            max_connections: max_connections.max(1),
            header_read: HEADER_READ_TIMEOUT,
            idle: IDLE_TIMEOUT,
        }
    }
}

/// One open connection's state, shared by the connection and the requests it serves.
struct Tag {
    seq: u64,
    addr: SocketAddr,
    /// Requests in flight (their response bodies not yet finished).
    busy: AtomicUsize,
    /// Requests begun on it so far.
    begun: AtomicU64,
    /// When it last had no request in flight.
    idle_since: Mutex<Instant>,
    evicted: AtomicBool,
    /// The reader's task, woken on eviction and when the connection turns idle.
    waker: AtomicWaker,
}

impl Tag {
    fn idle_since(&self) -> Instant {
        *self.idle_since.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The connections a listener holds, by acceptance order.
struct Open {
    conns: Mutex<BTreeMap<u64, Arc<Tag>>>,
    slots: Arc<Semaphore>,
}

impl Open {
    /// Closes the connection idle the longest, if any is idle. True when one was.
    fn evict_idlest(&self) -> bool {
        let conns = self.conns.lock().unwrap_or_else(|p| p.into_inner());
        let idlest = conns
            .values()
            .filter(|t| t.busy.load(Ordering::Acquire) == 0 && !t.evicted.load(Ordering::Acquire))
            .min_by_key(|t| t.idle_since());
        match idlest {
            Some(t) => {
                tracing::debug!(peer = %t.addr, "closing an idle connection to make room");
                t.evicted.store(true, Ordering::Release);
                t.waker.wake();
                true
            }
            None => false,
        }
    }
}

/// A TCP listener with [`Limits`]; serve it with
/// `axum::serve(listener, router.layer(from_fn(track)).into_make_service_with_connect_info::<Peer>())`.
pub struct Limited {
    inner: TcpListener,
    limits: Limits,
    open: Arc<Open>,
    next: u64,
}

impl Limited {
    /// Wraps a bound listener.
    pub fn new(inner: TcpListener, limits: Limits) -> Self {
        Limited {
            inner,
            open: Arc::new(Open {
                conns: Mutex::new(BTreeMap::new()),
                slots: Arc::new(Semaphore::new(limits.max_connections.max(1))),
            }),
            limits,
            next: 0,
        }
    }
}

/// A connection holding its slot until it is dropped.
pub struct Conn {
    io: TcpStream,
    tag: Arc<Tag>,
    open: Arc<Open>,
    limits: Limits,
    timer: Pin<Box<Sleep>>,
    /// `tag.begun` when the reader last looked.
    seen: u64,
    /// When the first byte of a request not yet begun arrived.
    partial_since: Option<Instant>,
    _slot: OwnedSemaphorePermit,
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.open
            .conns
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.tag.seq);
    }
}

impl axum::serve::Listener for Limited {
    type Io = Conn;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Conn, SocketAddr) {
        loop {
            let (io, addr) = match self.inner.accept().await {
                Ok(c) => c,
                // Out of descriptors and the like: wait a little rather than spin.
                Err(e) => {
                    tracing::warn!(error = %e, "cannot accept a connection");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            let slot = match self.open.slots.clone().try_acquire_owned() {
                Ok(s) => s,
                Err(_) => {
                    // Full: make room by closing the idlest connection; with none idle, the
                    // newcomer waits for a request to finish.
                    self.open.evict_idlest();
                    let Ok(s) = self.open.slots.clone().acquire_owned().await else {
                        continue; // never closed
                    };
                    s
                }
            };
            if let Err(e) = io.set_nodelay(true) {
                tracing::debug!(error = %e, "cannot set TCP_NODELAY");
            }
            let now = Instant::now();
            self.next += 1;
            let tag = Arc::new(Tag {
                seq: self.next,
                addr,
                busy: AtomicUsize::new(0),
                begun: AtomicU64::new(0),
                idle_since: Mutex::new(now),
                evicted: AtomicBool::new(false),
                waker: AtomicWaker::new(),
            });
            self.open
                .conns
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(tag.seq, tag.clone());
            let conn = Conn {
                io,
                tag,
                open: self.open.clone(),
                limits: self.limits,
                timer: Box::pin(tokio::time::sleep_until(now + self.limits.idle)),
                seen: 0,
                partial_since: None,
                _slot: slot,
            };
            return (conn, addr);
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }
}

/// The connection a request came on: its peer address, and its busy mark ([`track`]).
#[derive(Clone)]
pub struct Peer(Arc<Tag>);

impl Peer {
    /// The client's address.
    pub fn addr(&self) -> SocketAddr {
        self.0.addr
    }
}

impl axum::extract::connect_info::Connected<axum::serve::IncomingStream<'_, Limited>> for Peer {
    fn connect_info(stream: axum::serve::IncomingStream<'_, Limited>) -> Self {
        Peer(stream.io().tag.clone())
    }
}

/// The client address a request came from, if it came through a [`Limited`] listener.
pub fn client_ip(ext: &axum::http::Extensions) -> Option<IpAddr> {
    ext.get::<ConnectInfo<Peer>>()
        .map(|ConnectInfo(p)| p.addr().ip())
}

/// What a wrong token costs, per client address: each address has one wrong-token answer in
/// flight at a time, each taking `secrets::WRONG_TOKEN_DELAY`, so one address guesses at most
/// 4 times a second however many connections it opens, and its guesses never queue another
/// address's answers; `secrets::WRONG_TOKENS_AT_ONCE` answers at once across all addresses
/// bound the total. An address has an entry only while one of its answers waits, so the map
/// is bounded by the listener's connections.
pub struct Guesses {
    per_addr: Mutex<HashMap<IpAddr, Arc<Semaphore>>>,
    all: Semaphore,
}

impl Default for Guesses {
    fn default() -> Self {
        Guesses {
            per_addr: Mutex::new(HashMap::new()),
            all: Semaphore::new(crate::secrets::WRONG_TOKENS_AT_ONCE),
        }
    }
}

impl Guesses {
    /// Waits out a wrong token from `addr` (`None`: a request not from a listener).
    pub async fn wrong(&self, addr: Option<IpAddr>) {
        let lock = || self.per_addr.lock().unwrap_or_else(|p| p.into_inner());
        let own = addr.map(|ip| {
            lock()
                .entry(ip)
                .or_insert_with(|| Arc::new(Semaphore::new(1)))
                .clone()
        });
        {
            let _one = match &own {
                Some(s) => s.acquire().await.ok(),
                None => None,
            };
            let _any = self.all.acquire().await;
            tokio::time::sleep(crate::secrets::WRONG_TOKEN_DELAY).await;
        }
        if let (Some(ip), Some(own)) = (addr, own) {
            let mut m = lock();
            // The map's and ours: nobody else waits for this address.
            if Arc::strong_count(&own) == 2 {
                m.remove(&ip);
            }
        }
    }

    /// Addresses with an answer waiting.
    pub fn waiting(&self) -> usize {
        self.per_addr
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .len()
    }
}

/// A request in flight on a connection; dropped when its response body is done.
struct Busy(Arc<Tag>);

impl Drop for Busy {
    fn drop(&mut self) {
        if self.0.busy.fetch_sub(1, Ordering::AcqRel) == 1 {
            *self.0.idle_since.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now();
            // The reader may be parked without its idle timer armed.
            self.0.waker.wake();
        }
    }
}

/// Middleware: marks the request's connection busy until its response body ends, so it is
/// neither timed out nor evicted meanwhile. Requests that did not come through [`Limited`]
/// (tests calling the router directly) pass untouched.
pub async fn track(req: Request, next: Next) -> Response {
    let busy = req
        .extensions()
        .get::<ConnectInfo<Peer>>()
        .map(|ConnectInfo(p)| {
            p.0.busy.fetch_add(1, Ordering::AcqRel);
            p.0.begun.fetch_add(1, Ordering::AcqRel);
            Busy(p.0.clone())
        });
    let res = next.run(req).await;
    match busy {
        Some(busy) => res.map(|inner| Body::new(Guarded { inner, _busy: busy })),
        None => res,
    }
}

/// A response body holding its connection's busy mark.
struct Guarded {
    inner: Body,
    _busy: Busy,
}

impl http_body::Body for Guarded {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

impl AsyncRead for Conn {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if let Some(e) = self.evicted(cx) {
            return Poll::Ready(Err(e));
        }
        let this = &mut *self;
        let idle = this.tag.busy.load(Ordering::Acquire) == 0;
        if idle {
            let begun = this.tag.begun.load(Ordering::Acquire);
            if begun != this.seen {
                this.seen = begun;
                this.partial_since = None;
            }
            let mut deadline = this.tag.idle_since() + this.limits.idle;
            if let Some(first) = this.partial_since {
                deadline = deadline.min(first + this.limits.header_read);
            }
            if this.timer.deadline() != deadline {
                this.timer.as_mut().reset(deadline);
            }
            if this.timer.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "no complete request in time",
                )));
            }
        }
        let before = buf.filled().len();
        let r = Pin::new(&mut this.io).poll_read(cx, buf);
        if idle
            && this.partial_since.is_none()
            && matches!(r, Poll::Ready(Ok(())))
            && buf.filled().len() > before
        {
            this.partial_since = Some(Instant::now());
        }
        r
    }
}

impl Conn {
    /// An evicted connection fails its writes too: one stuck writing to a client that does not
    /// read would otherwise keep its slot.
    fn evicted(&self, cx: &mut Context<'_>) -> Option<io::Error> {
        self.tag.waker.register(cx.waker());
        self.tag.evicted.load(Ordering::Acquire).then(|| {
            io::Error::new(
                io::ErrorKind::ConnectionAborted,
                "closed to make room for a new connection",
            )
        })
    }
}

impl AsyncWrite for Conn {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if let Some(e) = self.evicted(cx) {
            return Poll::Ready(Err(e));
        }
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
        if let Some(e) = self.evicted(cx) {
            return Poll::Ready(Err(e));
        }
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::routing::get;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A server on loopback with `limits`: `/` answers "ok", `/slow` takes 1.5 s.
    async fn serve(limits: Limits) -> SocketAddr {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let app = axum::Router::new()
            .route("/", get(|| async { "ok" }))
            .route(
                "/slow",
                get(|| async {
                    tokio::time::sleep(Duration::from_millis(1500)).await;
                    "slow"
                }),
            )
            .route("/big", get(|| async { vec![b'x'; 16 << 20] }))
            .layer(axum::middleware::from_fn(track));
        tokio::spawn(async move {
            axum::serve(
                Limited::new(l, limits),
                app.into_make_service_with_connect_info::<Peer>(),
            )
            .await
            .unwrap();
        });
        addr
    }

    async fn get_path(addr: SocketAddr, path: &str) -> String {
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(
            format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await
        .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        out
    }

    /// Reads until the peer closes; when it did.
    async fn closed_at(mut s: TcpStream) -> Instant {
        let mut b = [0u8; 256];
        loop {
            match s.read(&mut b).await {
                Ok(0) | Err(_) => return Instant::now(),
                Ok(_) => {}
            }
        }
    }

    #[tokio::test]
    async fn idle_sockets_make_room_and_a_newcomer_is_served() {
        let addr = serve(Limits::new(8)).await;
        // Three times the limit of sockets that never send a byte, then slowloris sockets.
        let mut idle = Vec::new();
        for _ in 0..24 {
            idle.push(TcpStream::connect(addr).await.unwrap());
        }
        for _ in 0..8 {
            let mut s = TcpStream::connect(addr).await.unwrap();
            s.write_all(b"GET / HTT").await.unwrap();
            idle.push(s);
        }
        let r = tokio::time::timeout(Duration::from_secs(20), get_path(addr, "/"))
            .await
            .expect("a newcomer is served while idle sockets fill the listener");
        assert!(r.starts_with("HTTP/1.1 200") && r.ends_with("ok"), "{r}");
        // The oldest were closed to make room.
        let first = idle.remove(0);
        let t = Instant::now();
        assert!(closed_at(first).await - t < Duration::from_secs(5));
    }

    #[tokio::test]
    async fn a_client_that_never_reads_its_answer_gives_way() {
        let addr = serve(Limits::new(1)).await;
        // Asks for 16 MiB and never reads: the server finishes the body and is left writing.
        let mut stuck = TcpStream::connect(addr).await.unwrap();
        stuck
            .write_all(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(500)).await;
        let r = tokio::time::timeout(Duration::from_secs(20), get_path(addr, "/"))
            .await
            .expect("the newcomer was kept out by a client that does not read");
        assert!(r.ends_with("ok"), "{r}");
        drop(stuck);
    }

    #[tokio::test]
    async fn a_request_in_flight_is_never_evicted() {
        let addr = serve(Limits::new(2)).await;
        let slow = tokio::spawn(get_path(addr, "/slow"));
        tokio::time::sleep(Duration::from_millis(300)).await;
        // Newcomers churn through the other slot; the slow request still completes.
        for _ in 0..10 {
            let _s = TcpStream::connect(addr).await.unwrap();
        }
        let r = get_path(addr, "/").await;
        assert!(r.ends_with("ok"), "{r}");
        let r = slow.await.unwrap();
        assert!(r.ends_with("slow"), "{r}");
    }

    #[tokio::test]
    async fn idle_and_slow_headers_time_out_and_keep_alive_counts_from_the_last_answer() {
        let limits = Limits {
            max_connections: 8,
            header_read: Duration::from_millis(600),
            idle: Duration::from_millis(1500),
        };
        let addr = serve(limits).await;
        // Silent: closed after `idle`.
        let silent = TcpStream::connect(addr).await.unwrap();
        let opened = Instant::now();
        // Headers at one byte per 100 ms: closed `header_read` after the first byte, although
        // bytes keep coming.
        let mut slow = TcpStream::connect(addr).await.unwrap();
        let t = Instant::now();
        let slowloris = tokio::spawn(async move {
            for b in b"GET / HTTP/1.1\r\nHost: x\r\nX-Padding: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" {
                if slow.write_all(&[*b]).await.is_err() {
                    return t.elapsed();
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            t.elapsed()
        });
        // A keep-alive client: one answer, then silence; closed `idle` after that answer.
        let mut ka = TcpStream::connect(addr).await.unwrap();
        tokio::time::sleep(Duration::from_millis(1000)).await;
        ka.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let mut b = [0u8; 512];
        let n = ka.read(&mut b).await.unwrap();
        assert!(String::from_utf8_lossy(&b[..n]).starts_with("HTTP/1.1 200"));
        let answered = Instant::now();

        let s = closed_at(silent).await - opened;
        assert!(
            s >= Duration::from_millis(1400) && s < Duration::from_secs(6),
            "{s:?}"
        );
        let l = slowloris.await.unwrap();
        assert!(l < Duration::from_millis(4000), "slow headers lasted {l:?}");
        let k = closed_at(ka).await - answered;
        assert!(
            k >= Duration::from_millis(1400),
            "closed {k:?} after its answer"
        );
    }

    #[tokio::test]
    async fn guesses_queue_per_address_and_leave_no_entry_behind() {
        let g = Arc::new(Guesses::default());
        let a = Some(IpAddr::from([10, 0, 0, 1]));
        let b = Some(IpAddr::from([10, 0, 0, 2]));
        let t = Instant::now();
        let from_a: Vec<_> = (0..3)
            .map(|_| {
                let g = g.clone();
                tokio::spawn(async move { g.wrong(a).await })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(g.waiting(), 1);
        g.wrong(b).await;
        let b_took = t.elapsed();
        for h in from_a {
            h.await.unwrap();
        }
        let a_took = t.elapsed();
        let d = crate::secrets::WRONG_TOKEN_DELAY;
        assert!(b_took < d * 2, "b waited behind a: {b_took:?}");
        assert!(a_took >= d * 3, "a's three guesses took {a_took:?}");
        assert_eq!(g.waiting(), 0, "entries left behind");
    }
}
