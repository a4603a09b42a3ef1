//! systemd's readiness and watchdog protocol (`sd_notify(3)`), for `covo run` as a
//! `Type=notify` service with `WatchdogSec=`: one datagram per message to the unix socket named by
//! `$NOTIFY_SOCKET` (a path, or `@name` in the abstract namespace). `READY=1` once the daemon
//! serves; `WATCHDOG=1` from the daemon's loop at half of `$WATCHDOG_USEC`, so a loop that hangs
//! stops the pings and systemd restarts the service. Without `$NOTIFY_SOCKET` (a terminal, a
//! test) every call does nothing.

use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::time::{Duration, Instant};

/// The messages to systemd, if it asked for them.
#[derive(Debug, Default)]
pub struct Notifier {
    target: Option<SocketAddr>,
    watchdog: Option<Duration>,
    last: Option<Instant>,
}

impl Notifier {
    /// From `$NOTIFY_SOCKET`, `$WATCHDOG_USEC` and `$WATCHDOG_PID`.
    pub fn from_env() -> Notifier {
        let var = |k: &str| std::env::var(k).ok();
        Notifier::new(
            var("NOTIFY_SOCKET").as_deref(),
            var("WATCHDOG_USEC").as_deref(),
            var("WATCHDOG_PID").as_deref(),
        )
    }

    /// From the variables' values. The watchdog is on only when its period parses and
    /// `WATCHDOG_PID`, if set, is this process.
    pub fn new(
        socket: Option<&str>,
        watchdog_usec: Option<&str>,
        watchdog_pid: Option<&str>,
    ) -> Notifier {
        let target = socket.and_then(|s| {
            let addr = if let Some(name) = s.strip_prefix('@') {
                use std::os::linux::net::SocketAddrExt;
                SocketAddr::from_abstract_name(name.as_bytes())
            } else {
                SocketAddr::from_pathname(s)
            };
            addr.map_err(|e| tracing::warn!(socket = s, error = %e, "NOTIFY_SOCKET is not usable"))
                .ok()
        });
        let ours = watchdog_pid.is_none_or(|p| p.trim().parse() == Ok(std::process::id()));
        let watchdog = watchdog_usec
            .and_then(|u| u.trim().parse::<u64>().ok())
            .filter(|u| *u > 0 && ours)
            .map(Duration::from_micros);
        Notifier {
            target,
            watchdog,
            last: None,
        }
    }

    /// The watchdog period systemd set, if any.
    pub fn watchdog_period(&self) -> Option<Duration> {
        self.watchdog.filter(|_| self.target.is_some())
    }

    fn send(&self, msg: &str) {
        let Some(addr) = &self.target else { return };
        if let Err(e) = UnixDatagram::unbound().and_then(|s| s.send_to_addr(msg.as_bytes(), addr)) {
            tracing::warn!(error = %e, msg, "sd_notify failed");
        }
    }

    /// The daemon serves.
    pub fn ready(&mut self) {
        self.send("READY=1\nSTATUS=serving");
        self.last = Some(Instant::now());
    }

    /// Call often (every second): pings the watchdog when half its period has passed.
    pub fn watchdog(&mut self) {
        let Some(period) = self.watchdog_period() else {
            return;
        };
        if self.last.is_none_or(|t| t.elapsed() >= period / 2) {
            self.send("WATCHDOG=1");
            self.last = Some(Instant::now());
        }
    }

    /// The daemon is shutting down.
    pub fn stopping(&self) {
        self.send("STOPPING=1");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recv(s: &UnixDatagram) -> Option<String> {
        let mut buf = [0u8; 256];
        s.recv(&mut buf)
            .ok()
            .map(|n| String::from_utf8_lossy(&buf[..n]).into_owned())
    }

    #[test]
    fn ready_and_watchdog_reach_a_path_socket_at_half_the_period() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notify");
        let sock = UnixDatagram::bind(&path).unwrap();
        sock.set_read_timeout(Some(Duration::from_millis(500)))
            .unwrap();
        let mut n = Notifier::new(path.to_str(), Some("200000"), None);
        assert_eq!(n.watchdog_period(), Some(Duration::from_millis(200)));
        n.ready();
        assert_eq!(recv(&sock).as_deref(), Some("READY=1\nSTATUS=serving"));
        n.watchdog(); // too early: the ready message counts as the last sign of life
        std::thread::sleep(Duration::from_millis(110));
        n.watchdog();
        assert_eq!(recv(&sock).as_deref(), Some("WATCHDOG=1"));
        n.watchdog(); // just pinged
        sock.set_nonblocking(true).unwrap();
        assert_eq!(recv(&sock), None, "one ping per half period");
        n.stopping();
        sock.set_nonblocking(false).unwrap();
        assert_eq!(recv(&sock).as_deref(), Some("STOPPING=1"));
    }

    #[test]
    fn an_abstract_socket_works_and_no_socket_is_silent() {
        use std::os::linux::net::SocketAddrExt;
        let name = format!("covo-test-{}", std::process::id());
        let sock =
            UnixDatagram::bind_addr(&SocketAddr::from_abstract_name(name.as_bytes()).unwrap())
                .unwrap();
        sock.set_read_timeout(Some(Duration::from_millis(500)))
            .unwrap();
        let mut n = Notifier::new(Some(&format!("@{name}")), None, None);
        n.ready();
        assert_eq!(recv(&sock).as_deref(), Some("READY=1\nSTATUS=serving"));
        assert_eq!(n.watchdog_period(), None);
        let mut off = Notifier::new(None, Some("1000000"), None);
        off.ready();
        off.watchdog();
        assert_eq!(off.watchdog_period(), None);
    }

    #[test]
    fn a_watchdog_for_another_pid_is_ignored() {
        let n = Notifier::new(Some("/run/x"), Some("1000000"), Some("1"));
        assert_eq!(n.watchdog_period(), None);
        let n = Notifier::new(
            Some("/run/x"),
            Some("1000000"),
            Some(&std::process::id().to_string()),
        );
        assert_eq!(n.watchdog_period(), Some(Duration::from_secs(1)));
    }
}
