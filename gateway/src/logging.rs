//! Logs for the binaries (`covo`, `covo-peer`): `tracing` to stderr, filtered by `$COVO_LOG`.
//!
//! `$COVO_LOG` takes `tracing` target directives without regexes: a level (`debug`), or
//! targets with levels (`covo=debug,rumqttc=warn,info`). Unset or unparsable means `warn`.
//! stdout stays clean for answers and JSON (and for MCP's stdio transport later). Colours only
//! when stderr is a terminal (and `$NO_COLOR` is unset): a pipe, a file or journald gets plain text.

use tracing::level_filters::LevelFilter;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// The filter `$COVO_LOG` (or `spec`) describes; `warn` when it does not parse.
pub fn filter(spec: Option<&str>) -> Targets {
    spec.and_then(|s| s.parse::<Targets>().ok())
        .unwrap_or_else(|| Targets::new().with_default(LevelFilter::WARN))
}

/// Whether log lines may carry ANSI colours: only on a terminal, and never with `$NO_COLOR`.
pub fn colour(is_terminal: bool, no_color: Option<&str>) -> bool {
    is_terminal && no_color.is_none_or(str::is_empty)
}

/// Installs the stderr logger once for this process (later calls do nothing).
pub fn init() {
    use std::io::IsTerminal;
    let spec = std::env::var("COVO_LOG").ok();
    let ansi = colour(
        std::io::stderr().is_terminal(),
        std::env::var("NO_COLOR").ok().as_deref(),
    );
    let _ = tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_ansi(ansi),
        )
        .with(filter(spec.as_deref()))
        .try_init();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_only_on_a_terminal_without_no_color() {
        assert!(colour(true, None));
        assert!(colour(true, Some("")));
        assert!(!colour(true, Some("1")));
        assert!(!colour(false, None));
    }

    #[test]
    fn covo_log_takes_levels_and_targets_and_falls_back_to_warn() {
        let f = filter(Some("covo=debug,rumqttc=error"));
        assert!(f.would_enable("covo::runtime", &tracing::Level::DEBUG));
        assert!(!f.would_enable("rumqttc::state", &tracing::Level::WARN));
        let f = filter(Some("info"));
        assert!(f.would_enable("anything", &tracing::Level::INFO));
        assert!(!f.would_enable("anything", &tracing::Level::DEBUG));
        for unset in [None, Some("=not a filter=")] {
            let f = filter(unset);
            assert!(f.would_enable("covo", &tracing::Level::WARN));
            assert!(!f.would_enable("covo", &tracing::Level::INFO));
        }
    }
}
