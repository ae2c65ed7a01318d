//! Structured logs with `tracing`: JSON lines when stderr is not a terminal, human-readable
//! otherwise. `RUST_LOG` takes `tracing_subscriber` target directives (default `info`). When it
//! enables `debug` or `trace` for any target, each span is also logged as it closes, with the
//! time it took (`time.busy`, `time.idle`): the store and use-case spans (`debug`) then show
//! where a request spent its time. At `info` nothing more is logged.

use std::io::IsTerminal;
use std::str::FromStr;

use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::fmt::format::FmtSpan;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// Installs the global subscriber, writing to stderr (stdout is for command output).
pub fn init() {
    let filter = std::env::var("RUST_LOG")
        .ok()
        .and_then(|raw| Targets::from_str(&raw).ok())
        .unwrap_or_else(|| Targets::new().with_default(tracing::Level::INFO));
    let most_verbose = filter
        .iter()
        .map(|(_, level)| level)
        .chain(filter.default_level())
        .max();
    let span_events = if most_verbose >= Some(LevelFilter::DEBUG) {
        FmtSpan::CLOSE
    } else {
        FmtSpan::NONE
    };
    let registry = tracing_subscriber::registry().with(filter);
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_span_events(span_events);
    let installed = if std::io::stderr().is_terminal() {
        registry.with(fmt).try_init()
    } else {
        registry.with(fmt.json().flatten_event(true)).try_init()
    };
    // Already installed (e.g. twice in tests): keep the first.
    drop(installed);
}
