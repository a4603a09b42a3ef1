//! Keeping secrets out of messages, logs and the store.
//!
//! URLs carry secrets in their userinfo (`https://user:token@host/`) and their query
//! (`?key=…`). Anything that prints or stores a URL — an error for the model, a log line, an
//! audit row — shows it through [`redact_url`]: scheme, host, port and path stay, the userinfo and
//! every query value become `***`. `reqwest::Error`'s own `Display` names the request's URL in
//! full, so HTTP errors are shown through [`http_error`] instead.

/// What replaces a secret.
pub const MASK: &str = "***";

/// A new approval id: 128 bits from the system's random source, as 32 hex digits. Never
/// reused, across restarts too, so an answer to an approval that has ended (a button or a page
/// from before a restart) can never reach a newer one.
pub fn approval_id() -> String {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 16];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .expect("the system's random source works");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What precedes a Telegram pairing code in covo's log: `covo telegram pair CODE`.
pub const PAIRING_HINT: &str = "covo telegram pair ";

/// `line` with every pairing code after [`PAIRING_HINT`] masked: log lines a tool hands out
/// (`log_tail`) must not let anyone who can call a tool pair themselves.
pub fn mask_pairing_codes(line: &str) -> std::borrow::Cow<'_, str> {
    if !line.contains(PAIRING_HINT) {
        return std::borrow::Cow::Borrowed(line);
    }
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(i) = rest.find(PAIRING_HINT) {
        let after = i + PAIRING_HINT.len();
        out.push_str(&rest[..after]);
        let tail = &rest[after..];
        let code_len = tail.find(char::is_whitespace).unwrap_or(tail.len());
        if code_len > 0 {
            out.push_str(MASK);
        }
        rest = &tail[code_len..];
    }
    out.push_str(rest);
    std::borrow::Cow::Owned(out)
}

/// The fewest characters a dashboard or MCP token may have; a shorter one is refused at start.
pub const MIN_TOKEN_CHARS: usize = 16;

/// The length of `token` in characters when it is shorter than [`MIN_TOKEN_CHARS`].
pub fn short_token(token: Option<&str>) -> Option<usize> {
    token
        .map(|t| t.chars().count())
        .filter(|&n| n < MIN_TOKEN_CHARS)
}

/// How long a wrong token waits before its answer, on every listener that takes one (the
/// dashboard's login form, bearer header and cookie; the MCP endpoint's bearer header).
pub const WRONG_TOKEN_DELAY: std::time::Duration = std::time::Duration::from_millis(250);

/// Wrong tokens a listener answers at once, across all its clients: further guesses queue
/// behind them, so guessing runs at most 16 a second however many connections ask. One client
/// address has one answer in flight at a time (`listen::Guesses`), so it guesses at most 4 a
/// second and does not hold up another address's mistyped token. Requests with the right token
/// never wait for this.
pub const WRONG_TOKENS_AT_ONCE: usize = 4;

/// Whether `given` is `token`, compared in time that depends only on their lengths (no exit at
/// the first byte that differs): every listener's token check (the dashboard, MCP over HTTP,
/// covo-peer's fleet page).
pub fn same_token(given: &[u8], token: &[u8]) -> bool {
    given.len() == token.len()
        && given
            .iter()
            .zip(token)
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// The token an `Authorization` header's value carries (`Bearer <token>`), trimmed.
pub fn bearer(authorization: &str) -> Option<&str> {
    authorization.strip_prefix("Bearer ").map(str::trim)
}

/// Whether a `Host` header's value names this machine's loopback (`localhost`, `127.0.0.1`,
/// `[::1]`, with or without a port): a listener without a token serves only those. A web page
/// elsewhere whose name an attacker points at 127.0.0.1 (DNS rebinding) sends its own name.
pub fn loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(h, _)| h),
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// `url` with its userinfo and every query value (and any fragment) replaced by `***`; scheme,
/// host, port and path are kept. A query parameter without `=` is taken for a value. Works on any
/// text shaped like a URL, without parsing it strictly, so a malformed URL is redacted too.
pub fn redact_url(url: &str) -> String {
    let (before_fragment, fragment) = match url.split_once('#') {
        Some((b, f)) => (b, Some(f)),
        None => (url, None),
    };
    let (before_query, query) = match before_fragment.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (before_fragment, None),
    };
    let mut out = String::with_capacity(url.len());
    let rest = match before_query.find("://") {
        Some(i) => {
            out.push_str(&before_query[..i + 3]);
            &before_query[i + 3..]
        }
        None => before_query,
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    match authority.rfind('@') {
        Some(i) => {
            out.push_str(MASK);
            out.push_str(&authority[i..]);
        }
        None => out.push_str(authority),
    }
    let segments: Vec<&str> = path
        .split('/')
        .map(|seg| if looks_secret(seg) { MASK } else { seg })
        .collect();
    out.push_str(&segments.join("/"));
    if let Some(q) = query {
        out.push('?');
        let params: Vec<String> = q
            .split('&')
            .map(|p| match p.split_once('=') {
                Some((k, _)) => format!("{k}={MASK}"),
                None if p.is_empty() => String::new(),
                None => MASK.to_string(),
            })
            .collect();
        out.push_str(&params.join("&"));
    }
    if fragment.is_some() {
        out.push('#');
        out.push_str(MASK);
    }
    out
}

/// Whether a URL path segment looks like a token rather than a name: 16 characters or more of
/// the kinds tokens are made of, with a digit among them (`XyZ12…` in a Slack or Discord
/// webhook path, a Home Assistant webhook id, `bot123:AA…`), where names (`v1`, `services`,
/// `chat`, `completions`) are short or have no digit.
fn looks_secret(seg: &str) -> bool {
    seg.len() >= 16
        && seg.bytes().any(|b| b.is_ascii_digit())
        && seg.bytes().all(|b| {
            b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':' | b'~' | b'=')
        })
}

/// Only where `url` points: scheme, host and port, and `/…` when it has a path. For endpoints
/// whose whole path may be the secret (webhooks: Slack's `/services/T…/B…/token`, Discord's
/// `/api/webhooks/ID/token`), so that an error or a log line about one shows nothing else.
pub fn redact_endpoint(url: &str) -> String {
    let (scheme, rest) = match url.find("://") {
        Some(i) => (&url[..i + 3], &url[i + 3..]),
        None => ("", url),
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..end];
    let host = authority
        .rfind('@')
        .map_or(authority, |i| &authority[i + 1..]);
    let more = if rest[end..].trim_start_matches('/').is_empty() {
        ""
    } else {
        "/…"
    };
    format!("{scheme}{host}{more}")
}

/// `text` with every URL in it (`scheme://…` up to a space, a quote or a bracket) passed through
/// [`redact_url`].
pub fn redact_urls_in(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let scheme_start = rest[..i]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
            .map_or(0, |j| j + 1);
        let after = &rest[i + 3..];
        let len = after
            .find(|c: char| {
                c.is_whitespace()
                    || matches!(
                        c,
                        '"' | '\'' | '`' | '<' | '>' | '(' | ')' | '[' | ']' | '{' | '}' | '\\'
                    )
            })
            .unwrap_or(after.len());
        let end = i + 3 + len;
        out.push_str(&rest[..scheme_start]);
        out.push_str(&redact_url(&rest[scheme_start..end]));
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// `text` from the far side (a provider's or a proxy's error body) with every credential in it
/// masked: each of `known` (the API key covo sent; ignored when shorter than 8 characters), and
/// whatever follows `Bearer `, `Basic `, `x-api-key:` or `api-key:` / `api_key=` (a proxy
/// that quotes the request's headers back), up to the next space, quote or comma.
pub fn mask_credentials(text: &str, known: &[&str]) -> String {
    let mut out = text.to_string();
    for k in known.iter().filter(|k| k.len() >= 8) {
        out = out.replace(*k, MASK);
    }
    const MARKERS: [&str; 6] = [
        "bearer ",
        "basic ",
        "x-api-key:",
        "api-key:",
        "api_key=",
        "api-key=",
    ];
    let lower = out.to_ascii_lowercase();
    let mut masked = String::with_capacity(out.len());
    let mut i = 0;
    while i < out.len() {
        let hit = MARKERS
            .iter()
            .filter_map(|m| lower[i..].find(m).map(|at| (i + at, m.len())))
            .min();
        let Some((at, len)) = hit else {
            break;
        };
        let start = at + len;
        let value_start = start + (out[start..].len() - out[start..].trim_start().len());
        let end = out[value_start..]
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | ',' | '}' | ']' | ';'))
            .map_or(out.len(), |e| value_start + e);
        masked.push_str(&out[i..value_start]);
        if end > value_start {
            masked.push_str(MASK);
        }
        i = end;
    }
    masked.push_str(&out[i.min(out.len())..]);
    masked
}

/// An HTTP client error as text for people, logs and the model: its message and its causes
/// (`error sending request: client error (Connect): tcp connect error: Connection refused`),
/// without the URL that `reqwest::Error`'s `Display` would add; any URL a cause names is
/// redacted. Callers name the endpoint themselves, through [`redact_url`].
pub fn http_error(e: reqwest::Error) -> String {
    let e = e.without_url();
    let mut text = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(cause) = source {
        let s = cause.to_string();
        if !text.ends_with(&s) {
            text.push_str(": ");
            text.push_str(&s);
        }
        source = cause.source();
    }
    redact_urls_in(&text)
}

#[cfg(test)]
mod tests {

    #[test]
    fn tokens_compare_whole_and_bearer_headers_give_theirs() {
        use super::{bearer, same_token};
        assert!(same_token(b"abc", b"abc"));
        assert!(!same_token(b"abc", b"abd") && !same_token(b"abd", b"abc"));
        assert!(!same_token(b"abc", b"abcd") && !same_token(b"abcd", b"abc"));
        assert!(!same_token(b"", b"abc") && same_token(b"", b""));
        assert_eq!(bearer("Bearer s3cret-token "), Some("s3cret-token"));
        assert_eq!(bearer("bearer s3cret"), None);
        assert_eq!(bearer("Basic dXNlcjpwYXNz"), None);
    }

    #[test]
    fn only_loopback_hosts_are_loopback() {
        use super::loopback_host;
        for h in [
            "localhost:8090",
            "127.0.0.1:8090",
            "127.1.2.3",
            "[::1]:8090",
            "[::1]",
            "127.0.0.1",
            "LOCALHOST",
        ] {
            assert!(loopback_host(h), "{h}");
        }
        for h in [
            "evil.example:8090",
            "localhost.evil.example",
            "10.0.0.1:80",
            "192.168.1.10:8080",
            "",
            "[::2]:1",
            "[fe80::1]:80",
            "::1",
        ] {
            assert!(!loopback_host(h), "{h}");
        }
    }

    #[test]
    fn pairing_codes_are_masked_wherever_they_stand() {
        let line = "x: run: covo telegram pair K7QMW2XP  (valid), or covo telegram pair AB";
        assert_eq!(
            mask_pairing_codes(line),
            "x: run: covo telegram pair ***  (valid), or covo telegram pair ***"
        );
        assert_eq!(
            mask_pairing_codes("covo telegram pair "),
            "covo telegram pair "
        );
        assert!(matches!(
            mask_pairing_codes("nothing here"),
            std::borrow::Cow::Borrowed(_)
        ));
    }
    use super::*;

    #[test]
    fn credentials_quoted_back_are_masked() {
        let key = "sk-live-0123456789abcdef";
        let body = format!(
            "bad request; headers were Authorization: Bearer {key}, X-Api-Key: {key}; \
             basic auth: Basic dXNlcjpwYXNz and {{\"api_key=\": 1}} and the raw key {key}"
        );
        let m = mask_credentials(&body, &[key]);
        assert!(!m.contains(key) && !m.contains("dXNlcjpwYXNz"), "{m}");
        assert!(m.contains("Authorization: Bearer ***,"), "{m}");
        assert!(m.contains("the raw key ***"), "{m}");
        // A key quoted without a marker, in a different case of the marker, and text with none.
        assert_eq!(mask_credentials("BEARER abc.def.ghi", &[]), "BEARER ***");
        assert_eq!(
            mask_credentials("model not found", &[key]),
            "model not found"
        );
        // A short configured key is not masked everywhere it happens to appear.
        assert_eq!(mask_credentials("a b c", &["b"]), "a b c");
        // Non-ASCII text around markers stays intact.
        assert_eq!(mask_credentials("é Bearer ü", &[]), "é Bearer ***");
    }

    #[test]
    fn an_endpoint_shows_only_where_it_points() {
        assert_eq!(
            redact_endpoint("https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXXXXXXXXXXXXXX"),
            "https://hooks.slack.com/…"
        );
        assert_eq!(
            redact_endpoint("http://u:p@127.0.0.1:8080?key=s3cret#frag"),
            "http://127.0.0.1:8080/…"
        );
        assert_eq!(
            redact_endpoint("https://example.com/"),
            "https://example.com"
        );
        assert_eq!(
            redact_endpoint("https://example.com"),
            "https://example.com"
        );
    }

    #[test]
    fn path_segments_that_look_like_tokens_are_masked() {
        assert_eq!(
            redact_url(
                "https://discord.com/api/webhooks/123456789012345678/AbCdEf-123_xyzXYZ0987654321"
            ),
            "https://discord.com/api/webhooks/***/***"
        );
        assert_eq!(
            redact_url(
                "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXX1"
            ),
            "https://hooks.slack.com/services/T00000000/B00000000/***"
        );
        assert_eq!(
            redact_url("https://api.telegram.org/bot123456:AAH-abcdefghijklmnop/getMe"),
            "https://api.telegram.org/***/getMe"
        );
        // Names stay.
        assert_eq!(
            redact_url("http://127.0.0.1:8080/v1/chat/completions"),
            "http://127.0.0.1:8080/v1/chat/completions"
        );
    }

    #[test]
    fn userinfo_and_query_values_are_masked_and_the_rest_is_kept() {
        assert_eq!(
            redact_url("https://user:tok@hooks.example.com:8443/a/b?key=s3cret&room=ops&flag"),
            "https://***@hooks.example.com:8443/a/b?key=***&room=***&***"
        );
        assert_eq!(
            redact_url("http://token@127.0.0.1/x#frag"),
            "http://***@127.0.0.1/x#***"
        );
        assert_eq!(
            redact_url("https://api.openai.com/v1"),
            "https://api.openai.com/v1"
        );
        assert_eq!(redact_url("http://h/p?"), "http://h/p?");
        // An `@` in the path is not userinfo; a password holding `@` is masked whole.
        assert_eq!(redact_url("http://h/a@b"), "http://h/a@b");
        assert_eq!(redact_url("http://u:p@ss@h/"), "http://***@h/");
        assert_eq!(redact_url("u:p@h:1/p?k=v"), "***@h:1/p?k=***");
    }

    #[test]
    fn urls_inside_text_are_redacted_where_they_stand() {
        assert_eq!(
            redact_urls_in(
                "error sending request for url (http://u:tok@127.0.0.1:9/h?key=v): refused"
            ),
            "error sending request for url (http://***@127.0.0.1:9/h?key=***): refused"
        );
        assert_eq!(
            redact_urls_in(r#"{"error":"https://a:b@x/y?t=1 and wss://z/?q=2"}"#),
            r#"{"error":"https://***@x/y?t=*** and wss://z/?q=***"}"#
        );
        assert_eq!(redact_urls_in("no url here"), "no url here");
    }

    #[test]
    fn an_http_error_names_no_url() {
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let _ = rustls::crypto::ring::default_provider().install_default();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let e = rt
            .block_on(
                reqwest::Client::new()
                    .get(format!("http://u:tok@127.0.0.1:{port}/p?key=secretvalue"))
                    .send(),
            )
            .unwrap_err();
        let text = http_error(e);
        assert!(
            !text.contains("tok") && !text.contains("secretvalue"),
            "{text}"
        );
        assert!(text.contains("error sending request"), "{text}");
    }
}
