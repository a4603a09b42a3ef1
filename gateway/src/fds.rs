//! The process's file-descriptor budget (`RLIMIT_NOFILE`). `covo run` raises its soft limit to
//! the hard one at start (a distribution's default soft limit is often 1,024), and every
//! listener holds far fewer connections than the budget (`listen.rs`), so a flood of
//! sockets can never leave covo unable to open its database, a serial port or a file.

use rustix::process::{getrlimit, setrlimit, Resource};

/// Descriptors kept for everything but network connections (the store, buses, serial ports,
/// the broker, the model's HTTP client, files the tools open).
pub const RESERVE: u64 = 256;

/// The soft and hard limits on open files now (`None`: unlimited).
pub fn budget() -> (Option<u64>, Option<u64>) {
    let l = getrlimit(Resource::Nofile);
    (l.current, l.maximum)
}

/// Raises the soft limit to the hard one where allowed; the soft limit after.
pub fn raise() -> Option<u64> {
    let l = getrlimit(Resource::Nofile);
    if l.current != l.maximum {
        let mut new = l;
        new.current = l.maximum;
        if let Err(e) = setrlimit(Resource::Nofile, new) {
            tracing::debug!(error = %e, "cannot raise the open-file limit");
        }
    }
    budget().0
}

/// The most connections all listeners together may hold under a soft limit of `soft`.
pub fn connection_budget(soft: Option<u64>) -> usize {
    match soft {
        Some(n) => usize::try_from(n.saturating_sub(RESERVE) / 2).unwrap_or(usize::MAX),
        None => usize::MAX,
    }
}

/// `covo doctor`'s line: the budget and what the listeners may take of it.
pub fn describe(listeners: &[(&str, usize)]) -> String {
    let (soft, hard) = budget();
    let n = |v: Option<u64>| v.map_or("unlimited".to_string(), |v| v.to_string());
    let held: Vec<String> = listeners
        .iter()
        .map(|(name, max)| format!("{name} at most {max}"))
        .collect();
    let mut s = format!(
        "open files: {} (hard limit {}; covo run raises the first to the second)",
        n(soft),
        n(hard)
    );
    if !held.is_empty() {
        s.push_str(&format!("; connections: {}", held.join(", ")));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raising_reaches_the_hard_limit_and_the_budget_leaves_a_reserve() {
        let soft = raise();
        assert_eq!(soft, budget().1);
        assert_eq!(connection_budget(Some(1024)), 384);
        assert_eq!(connection_budget(Some(100)), 0);
        assert_eq!(connection_budget(None), usize::MAX);
        assert!(describe(&[("dashboard", 48)]).contains("dashboard at most 48"));
    }
}
