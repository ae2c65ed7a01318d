//! Rate limiting per API key (docs/API.md, Conventions): a token bucket (GCRA, by the `governor`
//! crate) of `PAYOUT_RATE_LIMIT_PER_SEC` requests per second with bursts of
//! `PAYOUT_RATE_LIMIT_BURST`. Requests are counted once authenticated, so nobody can spend another
//! key's budget by sending its key id with bad signatures. The buckets live in each process: behind
//! a load balancer each instance grants the full rate (see docs/OPERATIONS.md).

use std::num::NonZeroU32;
use std::time::Duration;

use domain::ids::ApiKeyId;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

/// The buckets of every API key seen.
pub struct ApiKeyLimiter {
    limiter: DefaultKeyedRateLimiter<ApiKeyId>,
    clock: DefaultClock,
}

impl ApiKeyLimiter {
    /// `per_second` requests per second per key, with bursts of `burst`.
    pub fn new(per_second: NonZeroU32, burst: NonZeroU32) -> Self {
        let clock = DefaultClock::default();
        let quota = Quota::per_second(per_second).allow_burst(burst);
        Self {
            limiter: RateLimiter::keyed(quota),
            clock,
        }
    }

    /// Takes one request from `key`'s bucket; `Err` with how long until one is available.
    pub fn check(&self, key: ApiKeyId) -> Result<(), Duration> {
        self.limiter
            .check_key(&key)
            .map_err(|not_until| not_until.wait_time_from(self.clock.now()))
    }

    /// Forgets buckets that are full again (housekeeping; keeps memory bounded by active keys).
    pub fn forget_idle(&self) {
        self.limiter.retain_recent();
        self.limiter.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    #[test]
    fn a_burst_is_granted_then_the_rate_and_keys_are_independent() {
        let (Some(rate), Some(burst)) = (NonZeroU32::new(1), NonZeroU32::new(3)) else {
            unreachable!()
        };
        let limiter = ApiKeyLimiter::new(rate, burst);
        let a = ApiKeyId::from_uuid(Uuid::from_u128(1));
        let b = ApiKeyId::from_uuid(Uuid::from_u128(2));
        for _ in 0..3 {
            assert!(limiter.check(a).is_ok());
        }
        let Err(wait) = limiter.check(a) else {
            panic!("the burst is spent");
        };
        assert!(
            wait > Duration::ZERO && wait <= Duration::from_secs(1),
            "{wait:?}"
        );
        assert!(limiter.check(b).is_ok(), "another key has its own bucket");
    }
}
