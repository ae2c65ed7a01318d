//! Encryption at rest (AES-256-GCM via `ring`) and keyed fingerprints (HMAC-SHA256).
//!
//! Both keys are derived with HKDF from the master key (`PAYOUT_MASTER_KEY`), under distinct
//! labels. Ciphertexts are `nonce (12 bytes) || sealed data || tag`, and carry associated data
//! binding them to their row, so a ciphertext copied onto another row fails to open.

use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::hkdf::{HKDF_SHA256, KeyType, Salt};
use ring::rand::{SecureRandom, SystemRandom};

use domain::masking::Secret;

/// Why sealing or opening failed. Carries no data.
#[derive(Debug, thiserror::Error)]
pub enum VaultError {
    /// The random source failed.
    #[error("random source failed")]
    Random,
    /// Wrong key, tampered ciphertext or wrong associated data.
    #[error("ciphertext could not be opened")]
    Open,
    /// Key derivation failed.
    #[error("key derivation failed")]
    Derive,
}

/// Holds the derived keys.
pub struct Vault {
    aead: LessSafeKey,
    fingerprint: ring::hmac::Key,
    rng: SystemRandom,
}

struct Len(usize);

impl KeyType for Len {
    fn len(&self) -> usize {
        self.0
    }
}

fn derive(master: &[u8; 32], label: &[u8]) -> Result<[u8; 32], VaultError> {
    let prk = Salt::new(HKDF_SHA256, b"payoutd vault v1").extract(master);
    let info = [label];
    let okm = prk.expand(&info, Len(32)).map_err(|_| VaultError::Derive)?;
    let mut out = [0u8; 32];
    okm.fill(&mut out).map_err(|_| VaultError::Derive)?;
    Ok(out)
}

/// A 32-byte key for another purpose (e.g. sealing cursors), derived from the master key under
/// `label`; independent of the vault's own keys.
pub fn derive_key(master_key: &Secret<[u8; 32]>, label: &[u8]) -> Result<[u8; 32], VaultError> {
    derive(master_key.expose(), &[b"app:".as_slice(), label].concat())
}

impl Vault {
    /// Derives the encryption and fingerprint keys from the 32-byte master key.
    pub fn new(master_key: &Secret<[u8; 32]>) -> Result<Self, VaultError> {
        let aead_key = derive(master_key.expose(), b"aead")?;
        let fingerprint_key = derive(master_key.expose(), b"fingerprint")?;
        let unbound = UnboundKey::new(&AES_256_GCM, &aead_key).map_err(|_| VaultError::Derive)?;
        Ok(Self {
            aead: LessSafeKey::new(unbound),
            fingerprint: ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &fingerprint_key),
            rng: SystemRandom::new(),
        })
    }

    /// Encrypts `plaintext`, bound to `context` (e.g. the row id).
    pub fn seal(&self, plaintext: &[u8], context: &[u8]) -> Result<Vec<u8>, VaultError> {
        let mut nonce = [0u8; NONCE_LEN];
        self.rng.fill(&mut nonce).map_err(|_| VaultError::Random)?;
        let mut data = plaintext.to_vec();
        self.aead
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(context),
                &mut data,
            )
            .map_err(|_| VaultError::Random)?;
        let mut out = Vec::with_capacity(NONCE_LEN + data.len());
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&data);
        Ok(out)
    }

    /// Decrypts what [`Vault::seal`] produced with the same `context`.
    pub fn open(&self, sealed: &[u8], context: &[u8]) -> Result<Vec<u8>, VaultError> {
        if sealed.len() < NONCE_LEN {
            return Err(VaultError::Open);
        }
        let (nonce, data) = sealed.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| VaultError::Open)?;
        let mut data = data.to_vec();
        let plain = self
            .aead
            .open_in_place(nonce, Aad::from(context), &mut data)
            .map_err(|_| VaultError::Open)?;
        Ok(plain.to_vec())
    }

    /// Opens a sealed UTF-8 secret.
    pub fn open_secret(&self, sealed: &[u8], context: &[u8]) -> Result<Secret<String>, VaultError> {
        let plain = self.open(sealed, context)?;
        String::from_utf8(plain)
            .map(Secret::new)
            .map_err(|_| VaultError::Open)
    }

    /// A keyed fingerprint of `value` for indexed equality lookups without decryption.
    pub fn fingerprint(&self, label: &str, value: &str) -> Vec<u8> {
        let mut ctx = ring::hmac::Context::with_key(&self.fingerprint);
        ctx.update(label.as_bytes());
        ctx.update(&[0]);
        ctx.update(value.as_bytes());
        ctx.sign().as_ref().to_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vault(byte: u8) -> Vault {
        match Vault::new(&Secret::new([byte; 32])) {
            Ok(v) => v,
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn seals_and_opens_with_the_same_key_and_context_only() {
        let v = vault(1);
        let sealed = v.seal(b"sk_secret", b"row-1").unwrap_or_default();
        assert!(!sealed.windows(9).any(|w| w == b"sk_secret"));
        assert_eq!(
            v.open(&sealed, b"row-1").ok().as_deref(),
            Some(&b"sk_secret"[..])
        );
        assert!(v.open(&sealed, b"row-2").is_err());
        assert!(vault(2).open(&sealed, b"row-1").is_err());
        let mut tampered = sealed.clone();
        if let Some(last) = tampered.last_mut() {
            *last ^= 1;
        }
        assert!(v.open(&tampered, b"row-1").is_err());
        assert!(v.open(&[1, 2, 3], b"row-1").is_err());
    }

    #[test]
    fn same_plaintext_seals_differently_each_time() {
        let v = vault(1);
        assert_ne!(
            v.seal(b"x", b"c").unwrap_or_default(),
            v.seal(b"x", b"c").unwrap_or_default()
        );
    }

    #[test]
    fn fingerprints_are_keyed_and_labelled() {
        let v = vault(1);
        assert_eq!(
            v.fingerprint("bsb", "012002"),
            v.fingerprint("bsb", "012002")
        );
        assert_ne!(
            v.fingerprint("bsb", "012002"),
            v.fingerprint("iban", "012002")
        );
        assert_ne!(
            v.fingerprint("bsb", "012002"),
            vault(2).fingerprint("bsb", "012002")
        );
    }
}
