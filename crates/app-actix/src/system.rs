//! The real clock, randomness and password hashing.

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

/// Operator passwords hashed with argon2id (OWASP's parameters: 19 MiB, 2 passes, 1 lane) in
/// PHC strings, on tokio's blocking threads so a hash (tens of milliseconds, on purpose) never
/// holds an HTTP worker. Verifying against no hash works through a fixed hash of the same
/// cost, so an unknown account takes as long as a known one.
pub struct Argon2Passwords {
    ids: std::sync::Arc<dyn IdGenerator>,
    decoy: String,
}

/// OWASP's argon2id minimum: m = 19 MiB, t = 2, p = 1.
fn argon2() -> Result<argon2::Argon2<'static>, argon2::Error> {
    let params = argon2::Params::new(19 * 1024, 2, 1, None)?;
    Ok(argon2::Argon2::new(
        argon2::Algorithm::Argon2id,
        argon2::Version::V0x13,
        params,
    ))
}

fn hash_with(password: &[u8], salt: &[u8]) -> anyhow::Result<String> {
    use argon2::PasswordHasher as _;
    let hash = argon2()
        .map_err(|e| anyhow::anyhow!("argon2 parameters: {e}"))?
        .hash_password_with_salt(password, salt)
        .map_err(|e| anyhow::anyhow!("hashing a password: {e}"))?;
    Ok(hash.to_string())
}

impl Argon2Passwords {
    /// A hasher whose salts come from `ids` (computes the decoy hash once).
    ///
    /// # Errors
    /// When argon2 refuses its parameters (it does not).
    pub fn new(ids: std::sync::Arc<dyn IdGenerator>) -> anyhow::Result<Self> {
        let decoy = hash_with(b"payoutd decoy password", &ids.random_bytes()[..16])?;
        Ok(Self { ids, decoy })
    }
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, domain::PortError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| domain::PortError::Unknown(anyhow::anyhow!("password hashing task: {e}")))
}

#[async_trait::async_trait]
impl domain::operators::PasswordHasher for Argon2Passwords {
    async fn hash(
        &self,
        password: &domain::masking::Secret<String>,
    ) -> Result<domain::operators::PasswordHash, domain::PortError> {
        let salt = self.ids.random_bytes();
        let password = password.expose().clone();
        blocking(move || hash_with(password.as_bytes(), &salt[..16]))
            .await?
            .map(domain::operators::PasswordHash)
            .map_err(domain::PortError::Unknown)
    }

    async fn verify<'a>(
        &self,
        password: &domain::masking::Secret<String>,
        hash: Option<&'a domain::operators::PasswordHash>,
    ) -> Result<bool, domain::PortError> {
        use argon2::PasswordVerifier as _;
        let known = hash.is_some();
        let hash = hash.map_or_else(|| self.decoy.clone(), |h| h.0.clone());
        let password = password.expose().clone();
        blocking(move || {
            let Ok(argon2) = argon2() else {
                return false;
            };
            // Parameters come from the stored hash, so older hashes still verify.
            argon2
                .verify_password(password.as_bytes(), hash.as_str())
                .is_ok()
                && known
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::masking::Secret;
    use domain::operators::PasswordHasher as _;

    #[tokio::test]
    async fn hashes_are_salted_argon2id_and_verify_only_their_password() {
        let hasher = Argon2Passwords::new(std::sync::Arc::new(RandomIds::default()))
            .unwrap_or_else(|e| panic!("{e}"));
        let password = Secret::new("correct horse battery".to_owned());
        let a = hasher
            .hash(&password)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let b = hasher
            .hash(&password)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            a.0.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"),
            "{}",
            a.0
        );
        assert_ne!(a, b, "salted");
        assert!(hasher.verify(&password, Some(&a)).await.unwrap_or(false));
        let wrong = Secret::new("correct horse batterz".to_owned());
        assert!(!hasher.verify(&wrong, Some(&a)).await.unwrap_or(true));
        // No hash: the same work against the decoy, and never a match (not even its password).
        let decoy = Secret::new("payoutd decoy password".to_owned());
        assert!(!hasher.verify(&decoy, None).await.unwrap_or(true));
        let broken = domain::operators::PasswordHash("not a hash".to_owned());
        assert!(
            !hasher
                .verify(&password, Some(&broken))
                .await
                .unwrap_or(true)
        );
    }
}
