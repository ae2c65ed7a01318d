//! The real clock and randomness.

use chrono::{DateTime, Utc};
use domain::ports::{Clock, IdGenerator};
use ring::rand::{SecureRandom, SystemRandom};
use uuid::Uuid;

/// Wall-clock time.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// UUID v4 ids and bytes from the operating system's CSPRNG.
#[derive(Debug)]
pub struct RandomIds {
    rng: SystemRandom,
}

impl Default for RandomIds {
    fn default() -> Self {
        Self {
            rng: SystemRandom::new(),
        }
    }
}

impl IdGenerator for RandomIds {
    fn new_id(&self) -> Uuid {
        Uuid::new_v4()
    }

    fn random_bytes(&self) -> [u8; 32] {
        let mut bytes = [0u8; 32];
        // The OS random source does not fail on supported platforms; if it ever did, a v4 UUID
        // pair (also OS randomness, through getrandom) is the fallback rather than a panic.
        if self.rng.fill(&mut bytes).is_err() {
            bytes[..16].copy_from_slice(Uuid::new_v4().as_bytes());
            bytes[16..].copy_from_slice(Uuid::new_v4().as_bytes());
        }
        bytes
    }
}
