//! Where the peer's HTTP clients may connect: `web_fetch` (any URL the model names) and the
//! API-backed tools (`web_search`, the OpenAI-compatible media tools, embeddings), whose
//! configured endpoint may redirect.
//!
//! The peer may sit inside a network the model must not reach through it: loopback, private
//! ranges, link-local (the cloud metadata service at 169.254.169.254), unique-local, CGNAT,
//! multicast and the like are refused unless the host is allowed (`web_fetch`'s `allow_hosts`;
//! for an API tool, its configured endpoint's own host). A host name is resolved here and every
//! address it resolves to is checked; the client then connects only to those checked addresses
//! (no second lookup that could rebind). Redirects are followed by hand, each hop checked the
//! same way, at most [`MAX_REDIRECTS`] of them.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};
use std::time::Instant;

use covo_core::error::ToolError;

/// Redirects followed at most; each hop is checked like the first URL.
pub(super) const MAX_REDIRECTS: usize = 5;

/// Hosts allowed whatever they resolve to, as written: names lower case without a trailing
/// dot, and address literals.
#[derive(Debug, Clone, Default)]
pub(super) struct Allow {
    names: Vec<String>,
    ips: Vec<IpAddr>,
}

impl Allow {
    /// From host entries (`allow_hosts`, or an endpoint's host).
    pub(super) fn new<S: AsRef<str>>(entries: impl IntoIterator<Item = S>) -> Allow {
        let mut allow = Allow::default();
        for entry in entries {
            let h = normal_host(entry.as_ref());
            match h.parse::<IpAddr>() {
                Ok(ip) => allow.ips.push(ip),
                Err(_) => allow.names.push(h),
            }
        }
        allow
    }

    /// Only `url`'s own host.
    pub(super) fn host_of(url: &reqwest::Url) -> Allow {
        Allow::new(url.host_str())
    }

    /// Whether `url`'s host, as written, is allowed.
    pub(super) fn allows(&self, url: &reqwest::Url) -> bool {
        match host_of(url) {
            Some(Host::Ip(ip)) => self.ips.contains(&ip),
            Some(Host::Name(n)) => self.names.contains(&normal_host(&n)),
            None => false,
        }
    }
}

/// Why `ip` must not be fetched (what kind of address it is), or `None` for a public address.
/// IPv4-mapped (`::ffff:a.b.c.d`) and NAT64 (`64:ff9b::a.b.c.d`) IPv6 addresses are judged by
/// the IPv4 address inside; the deprecated IPv4-compatible `::a.b.c.d` is always refused.
pub(super) fn forbidden(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => forbidden_v4(v4),
        IpAddr::V6(v6) => forbidden_v6(v6),
    }
}

fn forbidden_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, ..] = ip.octets();
    Some(match (a, b) {
        (0, _) => "unspecified",
        (127, _) => "loopback",
        (10, _) | (172, 16..=31) | (192, 168) => "private",
        (169, 254) => "link-local",
        (100, 64..=127) => "shared (CGNAT)",
        (224..=239, _) => "multicast",
        _ if ip == Ipv4Addr::BROADCAST => "broadcast",
        (240..=255, _) => "reserved",
        _ => return None,
    })
}

fn forbidden_v6(ip: Ipv6Addr) -> Option<&'static str> {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return forbidden_v4(v4);
    }
    if ip.is_unspecified() {
        return Some("unspecified");
    }
    if ip.is_loopback() {
        return Some("loopback");
    }
    let seg = ip.segments();
    let [a, b] = seg[6].to_be_bytes();
    let [c, d] = seg[7].to_be_bytes();
    let inside = Ipv4Addr::new(a, b, c, d);
    if seg[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return forbidden_v4(inside);
    }
    if seg[..6] == [0; 6] {
        // The deprecated IPv4-compatible form: never a public destination.
        return Some(forbidden_v4(inside).unwrap_or("IPv4-compatible"));
    }
    Some(match seg[0] {
        0xfe80..=0xfebf => "link-local",
        0xfec0..=0xfeff => "site-local",
        0xfc00..=0xfdff => "unique-local",
        0xff00..=0xffff => "multicast",
        _ => return None,
    })
}

/// A URL's host: an address literal or a name.
enum Host {
    Ip(IpAddr),
    Name(String),
}

/// The host of `url` (the URL parser already turned every IPv4 spelling into dotted decimal).
fn host_of(url: &reqwest::Url) -> Option<Host> {
    let h = url.host_str().filter(|h| !h.is_empty())?;
    let bare = h.trim_start_matches('[').trim_end_matches(']');
    Some(match bare.parse::<IpAddr>() {
        Ok(ip) => Host::Ip(ip),
        Err(_) => Host::Name(h.to_string()),
    })
}

/// An `allow_hosts` entry or a URL's host, compared as written: lower case, no trailing dot,
/// no IPv6 brackets.
fn normal_host(h: &str) -> String {
    h.trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .trim_end_matches('.')
        .to_ascii_lowercase()
}

/// The refusal of `host`, which is (or resolves to) `ip`, a `kind` address; `allow_in` names
/// the setting that could allow it.
fn refused(tool: &str, host: &str, ip: IpAddr, kind: &str, allow_in: &str) -> ToolError {
    let literal = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
        .is_ok();
    let what = if literal {
        format!("{host} is a {kind} address")
    } else {
        format!("{host} resolves to {ip}, a {kind} address")
    };
    ToolError::Failed {
        tool: tool.into(),
        message: format!("refused: {what}"),
        hint: Some(format!(
            "{tool} does not reach loopback, private, link-local or other internal addresses; \
             to allow this host, add it to {allow_in} in the peer's config, e.g. [\"{host}\"]"
        )),
    }
}

/// Checks where `url` would connect: `None` when the client may resolve it itself (an
/// allowed host, or an address literal that passed), else the host name and the checked
/// addresses it resolved to, the only ones the client may connect to.
pub(super) async fn check(
    tool: &str,
    allow: &Allow,
    url: &reqwest::Url,
    deadline: Instant,
    allow_in: &str,
) -> Result<Option<(String, Vec<SocketAddr>)>, ToolError> {
    if allow.allows(url) {
        return Ok(None);
    }
    let host = url.host_str().unwrap_or_default().to_string();
    let name = match host_of(url) {
        Some(Host::Ip(ip)) => {
            return forbidden(ip).map_or(Ok(None), |k| Err(refused(tool, &host, ip, k, allow_in)));
        }
        Some(Host::Name(n)) => n,
        None => return Err(ToolError::invalid(tool, "/url", "the URL has no host")),
    };
    let port = url.port_or_known_default().unwrap_or(80);
    let lookup = {
        let name = name.clone();
        tokio::task::spawn_blocking(move || {
            (name.as_str(), port)
                .to_socket_addrs()
                .map(|a| a.collect::<Vec<_>>())
        })
    };
    let wait = deadline.saturating_duration_since(Instant::now());
    let addrs = match tokio::time::timeout(wait, lookup).await {
        Err(_) => {
            return Err(ToolError::Failed {
                tool: tool.into(),
                message: format!("{host}: the name lookup timed out"),
                hint: Some("retry later or with a longer deadline".into()),
            })
        }
        Ok(Err(e)) => return Err(ToolError::failed(tool, format!("name lookup failed: {e}"))),
        Ok(Ok(Err(e))) => {
            return Err(ToolError::Failed {
                tool: tool.into(),
                message: format!("{host} does not resolve: {e}"),
                hint: Some("check the host name".into()),
            })
        }
        Ok(Ok(Ok(a))) => a,
    };
    if addrs.is_empty() {
        return Err(ToolError::Failed {
            tool: tool.into(),
            message: format!("{host} resolves to no address"),
            hint: Some("check the host name".into()),
        });
    }
    // Every address: the client may try any of them.
    for a in &addrs {
        if let Some(kind) = forbidden(a.ip()) {
            return Err(refused(tool, &host, a.ip(), kind, allow_in));
        }
    }
    Ok(Some((name, addrs)))
}
