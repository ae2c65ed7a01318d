//! What happens after an attempt: delivered, retry later, give up, or stop calling the endpoint.

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::sender::DeliveryOutcome;

/// Delays before the 2nd, 3rd, … attempt (docs/WEBHOOKS.md, Delivery): 5 s, 5 min, 30 min, 2 h,
/// 5 h, 10 h, 10 h. After the attempt that follows the last delay fails, the event is exhausted:
/// 8 attempts in all.
pub const RETRY_DELAYS: [Duration; 7] = [
    Duration::from_secs(5),
    Duration::from_secs(5 * 60),
    Duration::from_secs(30 * 60),
    Duration::from_secs(2 * 3600),
    Duration::from_secs(5 * 3600),
    Duration::from_secs(10 * 3600),
    Duration::from_secs(10 * 3600),
];

/// The longest `retry-after` honoured; a larger one is capped, so an endpoint cannot park an
/// event forever.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(24 * 3600);

/// The decision after one attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextStep {
    /// Done.
    Delivered,
    /// Try again at this time.
    RetryAt(DateTime<Utc>),
    /// No attempts left.
    Exhausted,
    /// The endpoint answered 410: disable it, and give the event up.
    DisableEndpoint,
}

/// Decides the next step after attempt number `attempt` (1-based) ended with `outcome` at `at`.
/// `jitter` in `0.0..1.0` spreads retries by up to ±10 % so a recovering endpoint is not hit by
/// every event at once; a `retry-after` longer than the schedule wins (capped).
pub fn next_step(
    attempt: u32,
    outcome: &DeliveryOutcome,
    at: DateTime<Utc>,
    jitter: f64,
) -> NextStep {
    let retry_after = match outcome {
        DeliveryOutcome::Delivered { .. } => return NextStep::Delivered,
        DeliveryOutcome::Gone => return NextStep::DisableEndpoint,
        DeliveryOutcome::Failed { retry_after, .. } => *retry_after,
        DeliveryOutcome::Refused { .. } => None,
    };
    let index = usize::try_from(attempt.saturating_sub(1)).unwrap_or(usize::MAX);
    let Some(base) = RETRY_DELAYS.get(index) else {
        return NextStep::Exhausted;
    };
    let factor = 0.9 + 0.2 * jitter.clamp(0.0, 1.0);
    let scheduled = base.mul_f64(factor);
    let delay = match retry_after {
        Some(asked) => scheduled.max(asked.min(MAX_RETRY_AFTER)),
        None => scheduled,
    };
    let delay = chrono::Duration::from_std(delay).unwrap_or(chrono::Duration::MAX);
    NextStep::RetryAt(
        at.checked_add_signed(delay)
            .unwrap_or(DateTime::<Utc>::MAX_UTC),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at() -> DateTime<Utc> {
        DateTime::from_timestamp(1_700_000_000, 0).unwrap_or_default()
    }

    fn failed(retry_after: Option<u64>) -> DeliveryOutcome {
        DeliveryOutcome::Failed {
            status: Some(500),
            retry_after: retry_after.map(Duration::from_secs),
            error: String::new(),
        }
    }

    fn delay(step: NextStep) -> i64 {
        match step {
            NextStep::RetryAt(when) => (when - at()).num_milliseconds(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn follows_the_documented_schedule_then_gives_up() {
        let expected_ms = [
            5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000,
        ];
        for (attempt, ms) in (1..=7).zip(expected_ms) {
            assert_eq!(
                delay(next_step(attempt, &failed(None), at(), 0.5)),
                ms,
                "attempt {attempt}"
            );
        }
        assert_eq!(next_step(8, &failed(None), at(), 0.5), NextStep::Exhausted);
        assert_eq!(
            next_step(u32::MAX, &failed(None), at(), 0.5),
            NextStep::Exhausted
        );
    }

    #[test]
    fn jitter_spreads_by_ten_percent_at_most() {
        assert_eq!(delay(next_step(1, &failed(None), at(), 0.0)), 4_500);
        assert_eq!(delay(next_step(1, &failed(None), at(), 1.0)), 5_500);
        assert_eq!(delay(next_step(1, &failed(None), at(), 7.0)), 5_500);
    }

    #[test]
    fn retry_after_is_honoured_when_longer_and_capped() {
        assert_eq!(delay(next_step(1, &failed(Some(120)), at(), 0.5)), 120_000);
        assert_eq!(delay(next_step(2, &failed(Some(1)), at(), 0.5)), 300_000);
        assert_eq!(
            delay(next_step(1, &failed(Some(10 * 86_400)), at(), 0.5)),
            86_400_000
        );
    }

    #[test]
    fn success_gone_and_refusal() {
        let delivered = DeliveryOutcome::Delivered { status: 204 };
        assert_eq!(next_step(3, &delivered, at(), 0.5), NextStep::Delivered);
        assert_eq!(
            next_step(1, &DeliveryOutcome::Gone, at(), 0.5),
            NextStep::DisableEndpoint
        );
        let refused = DeliveryOutcome::Refused {
            reason: "loopback".to_owned(),
        };
        assert_eq!(delay(next_step(1, &refused, at(), 0.5)), 5_000);
    }
}
