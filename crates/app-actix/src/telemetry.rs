//! Structured logs with `tracing`: JSON lines when stderr is not a terminal, human-readable
//! otherwise. `RUST_LOG` takes `tracing_subscriber` target directives (default `info`). When it
//! enables `debug` or `trace` for any target, each span is also logged as it closes, with the
//! time it took (`time.busy`, `time.idle`): the store and use-case spans (`debug`) then show
//! where a request spent its time. At `info` nothing more is logged.
//!
//! **Events anyone can cause, counted not written** ([`Counted`]). A client without any
//! credential can cause some events as often as it likes; a log line for each would let it fill
//! the log. Those events are **counted** instead, shown in `/metrics`, and the housekeeping job
//! logs one WARN line a minute per kind with how many there were:
//!
//! - connection errors: actix answers a request it cannot parse (bad framing, both
//!   `Content-Length` and `Transfer-Encoding`, an oversized head) with a bare 400 or 431 before
//!   any handler runs, and logs the closed connection at ERROR (`actix_http::h1`); those events
//!   are counted (`payoutd_http_connection_errors_total`) instead of written. Naming
//!   `actix_http` in `RUST_LOG` writes them again;
//! - partner callbacks refused before their signature is verified (no or a malformed signature
//!   header, a stale one, a body too long, too many at once, a signature that does not match):
//!   `payoutd_rail_callback_refusals_total{reason}`.

use std::io::IsTerminal;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};

use strum::VariantArray;

use tracing::Subscriber;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::fmt::format::FmtSpan;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;

/// The target of actix's HTTP/1 connection handling.
const ACTIX_H1: &str = "actix_http::h1";

/// Why a partner callback was refused before its signature was verified: what anyone can
/// send, so counted rather than logged (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, VariantArray)]
pub enum CallbackRefusal {
    /// No `X-Partner-Signature` header.
    Unsigned,
    /// A signature header that is not `t=<seconds>,v1=<hex>`.
    MalformedSignature,
    /// A signature dated further from payoutd's clock than the tolerance, either way.
    StaleSignature,
    /// A body longer than a callback may be.
    TooLarge,
    /// More callback bodies held (being read or applied) than the cap allows.
    Busy,
    /// A signature that does not match the body.
    BadSignature,
}

impl CallbackRefusal {
    /// Every reason.
    pub const ALL: &'static [CallbackRefusal] = Self::VARIANTS;

    /// Its name: the `reason` label and the word in the log line.
    pub const fn as_str(self) -> &'static str {
        match self {
            CallbackRefusal::Unsigned => "unsigned",
            CallbackRefusal::MalformedSignature => "malformed_signature",
            CallbackRefusal::StaleSignature => "stale_signature",
            CallbackRefusal::TooLarge => "too_large",
            CallbackRefusal::Busy => "busy",
            CallbackRefusal::BadSignature => "bad_signature",
        }
    }

    const fn index(self) -> usize {
        match self {
            CallbackRefusal::Unsigned => 0,
            CallbackRefusal::MalformedSignature => 1,
            CallbackRefusal::StaleSignature => 2,
            CallbackRefusal::TooLarge => 3,
            CallbackRefusal::Busy => 4,
            CallbackRefusal::BadSignature => 5,
        }
    }
}

/// An event counted instead of written (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Counted {
    /// A connection actix closed on a malformed request or a connection error.
    ConnectionError,
    /// A partner callback refused before its signature was verified.
    Callback(CallbackRefusal),
}

const CALLBACK_REFUSALS: usize = CallbackRefusal::ALL.len();

static CONNECTION_ERRORS: AtomicU64 = AtomicU64::new(0);
static CALLBACKS_REFUSED: [AtomicU64; CALLBACK_REFUSALS] =
    [const { AtomicU64::new(0) }; CALLBACK_REFUSALS];

impl Counted {
    /// Every kind.
    pub const ALL: &'static [Counted] = &[
        Counted::ConnectionError,
        Counted::Callback(CallbackRefusal::Unsigned),
        Counted::Callback(CallbackRefusal::MalformedSignature),
        Counted::Callback(CallbackRefusal::StaleSignature),
        Counted::Callback(CallbackRefusal::TooLarge),
        Counted::Callback(CallbackRefusal::Busy),
        Counted::Callback(CallbackRefusal::BadSignature),
    ];

    fn counter(self) -> &'static AtomicU64 {
        match self {
            Counted::ConnectionError => &CONNECTION_ERRORS,
            Counted::Callback(reason) => &CALLBACKS_REFUSED[reason.index()],
        }
    }

    /// Counts one event.
    pub fn count(self) {
        self.counter().fetch_add(1, Ordering::Relaxed);
    }

    /// How many there were since the process started.
    pub fn total(self) -> u64 {
        self.counter().load(Ordering::Relaxed)
    }

    /// Logs, as one WARN line, how many there were since `last` (a total it returned before);
    /// returns the total now.
    pub fn log_since(self, last: u64) -> u64 {
        let total = self.total();
        let count = total.saturating_sub(last);
        if count == 0 {
            return total;
        }
        match self {
            Counted::ConnectionError => tracing::warn!(
                count,
                "connections closed on a malformed request or a connection error in the last minute"
            ),
            Counted::Callback(reason) => tracing::warn!(
                count,
                reason = reason.as_str(),
                "partner callbacks refused before their signature was verified in the last minute"
            ),
        }
        total
    }
}

/// Counts the events it is given (the ERROR events of [`ACTIX_H1`]).
struct CountConnectionErrors;

impl<S: Subscriber> Layer<S> for CountConnectionErrors {
    fn on_event(&self, _event: &tracing::Event<'_>, _ctx: Context<'_, S>) {
        Counted::ConnectionError.count();
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
        let before = Counted::ConnectionError.total();
        tracing::subscriber::with_default(subscriber(None, capture.clone(), true), || {
            for _ in 0..3 {
                tracing::error!(target: "actix_http::h1::dispatcher", "stream error: parse error");
            }
            tracing::error!(target: "app_actix::http", "a real failure");
        });
        let text = captured(&capture);
        assert!(!text.contains("stream error"), "{text}");
        assert!(text.contains("a real failure"), "{text}");
        assert!(Counted::ConnectionError.total() >= before + 3);

        let asked = Capture::default();
        tracing::subscriber::with_default(
            subscriber(Some("info,actix_http=error"), asked.clone(), false),
            || tracing::error!(target: "actix_http::h1::dispatcher", "stream error: parse error"),
        );
        assert!(captured(&asked).contains("stream error"));
    }

    #[test]
    fn every_kind_is_listed_once_with_its_own_counter() {
        for &reason in CallbackRefusal::ALL {
            assert_eq!(CallbackRefusal::ALL[reason.index()], reason);
            assert!(Counted::ALL.contains(&Counted::Callback(reason)));
        }
        assert_eq!(Counted::ALL.len(), CallbackRefusal::ALL.len() + 1);
        let before = Counted::Callback(CallbackRefusal::Busy).total();
        let others: Vec<u64> = Counted::ALL.iter().map(|kind| kind.total()).collect();
        Counted::Callback(CallbackRefusal::Busy).count();
        assert_eq!(Counted::Callback(CallbackRefusal::Busy).total(), before + 1);
        assert!(
            Counted::ALL
                .iter()
                .zip(others)
                .all(|(kind, was)| kind.total() >= was)
        );
    }

    #[test]
    fn a_flood_of_refused_callbacks_is_one_line_a_minute() {
        let capture = Capture::default();
        let kind = Counted::Callback(CallbackRefusal::Unsigned);
        tracing::subscriber::with_default(subscriber(None, capture.clone(), true), || {
            let last = kind.total();
            for _ in 0..1_000 {
                kind.count();
            }
            assert_eq!(captured(&capture), "", "counting writes nothing");
            // The housekeeping job's minute: one line with the count.
            let now = kind.log_since(last);
            assert!(now >= last + 1_000);
            assert_eq!(kind.log_since(now), now, "nothing new, nothing written");
        });
        let text = captured(&capture);
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(text.contains("\"reason\":\"unsigned\""), "{text}");
        assert!(text.contains("\"level\":\"WARN\""), "{text}");
    }
}
