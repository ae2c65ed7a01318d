//! Structured logs with `tracing`: JSON lines when stderr is not a terminal, human-readable
//! otherwise. `RUST_LOG` takes `tracing_subscriber` target directives (default `info`). When it
//! enables `debug` or `trace` for any target, each span is also logged as it closes, with the
//! time it took (`time.busy`, `time.idle`): the store and use-case spans (`debug`) then show
//! where a request spent its time. At `info` nothing more is logged.
//!
//! **Connection errors.** actix answers a request it cannot parse (bad framing, both
//! `Content-Length` and `Transfer-Encoding`, an oversized head) with a bare 400 or 431 before
//! any handler runs, and logs the closed connection at ERROR (`actix_http::h1`). An
//! unauthenticated client could fill the error log that way, so those events are **counted**
//! (`payoutd_http_connection_errors_total`) instead of written, and the housekeeping job logs
//! one WARN line a minute with how many there were. Naming `actix_http` in `RUST_LOG` writes
//! them again.

use std::io::IsTerminal;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};

use tracing::Subscriber;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::fmt::format::FmtSpan;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;

/// The target of actix's HTTP/1 connection handling.
const ACTIX_H1: &str = "actix_http::h1";

static CONNECTION_ERRORS: AtomicU64 = AtomicU64::new(0);

/// Connections actix closed on an error (see the module docs), since the process started.
pub fn connection_errors() -> u64 {
    CONNECTION_ERRORS.load(Ordering::Relaxed)
}

/// Counts the events it is given (the ERROR events of [`ACTIX_H1`]).
struct CountConnectionErrors;

impl<S: Subscriber> Layer<S> for CountConnectionErrors {
    fn on_event(&self, _event: &tracing::Event<'_>, _ctx: Context<'_, S>) {
        CONNECTION_ERRORS.fetch_add(1, Ordering::Relaxed);
    }
}

/// What is written: `RUST_LOG`'s directives (default `info`), without actix's connection
/// errors unless `RUST_LOG` names `actix_http`.
fn written(rust_log: Option<&str>) -> Targets {
    let filter = rust_log
        .and_then(|raw| Targets::from_str(raw).ok())
        .unwrap_or_else(|| Targets::new().with_default(tracing::Level::INFO));
    if rust_log.is_some_and(|raw| raw.contains("actix_http")) {
        filter
    } else {
        filter.with_target(ACTIX_H1, LevelFilter::OFF)
    }
}

/// The subscriber: the written log to `writer` and the count of actix's connection errors.
pub fn subscriber<W>(rust_log: Option<&str>, writer: W, json: bool) -> impl Subscriber + Send + Sync
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let filter = written(rust_log);
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
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(writer)
        .with_span_events(span_events);
    let fmt = if json {
        fmt.json().flatten_event(true).boxed()
    } else {
        fmt.boxed()
    };
    tracing_subscriber::registry()
        .with(fmt.with_filter(filter))
        .with(
            CountConnectionErrors
                .with_filter(Targets::new().with_target(ACTIX_H1, tracing::Level::ERROR)),
        )
}

/// Installs the global subscriber, writing to stderr (stdout is for command output).
pub fn init() {
    let rust_log = std::env::var("RUST_LOG").ok();
    let json = !std::io::stderr().is_terminal();
    // Already installed (e.g. twice in tests): keep the first.
    drop(subscriber(rust_log.as_deref(), std::io::stderr, json).try_init());
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    use super::*;

    #[derive(Clone, Default)]
    struct Capture(Arc<Mutex<Vec<u8>>>);

    impl Write for Capture {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'a> MakeWriter<'a> for Capture {
        type Writer = Capture;
        fn make_writer(&'a self) -> Self::Writer {
            self.clone()
        }
    }

    fn captured(capture: &Capture) -> String {
        String::from_utf8(capture.0.lock().unwrap().clone()).unwrap()
    }

    #[test]
    fn actix_connection_errors_are_counted_not_written_unless_asked_for() {
        let capture = Capture::default();
        let before = connection_errors();
        tracing::subscriber::with_default(subscriber(None, capture.clone(), true), || {
            for _ in 0..3 {
                tracing::error!(target: "actix_http::h1::dispatcher", "stream error: parse error");
            }
            tracing::error!(target: "app_actix::http", "a real failure");
        });
        let text = captured(&capture);
        assert!(!text.contains("stream error"), "{text}");
        assert!(text.contains("a real failure"), "{text}");
        assert!(connection_errors() >= before + 3);

        let asked = Capture::default();
        tracing::subscriber::with_default(
            subscriber(Some("info,actix_http=error"), asked.clone(), false),
            || tracing::error!(target: "actix_http::h1::dispatcher", "stream error: parse error"),
        );
        assert!(captured(&asked).contains("stream error"));
    }
}
