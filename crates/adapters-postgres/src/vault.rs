//! Encryption at rest (AES-256-GCM via `ring`) and keyed fingerprints (HMAC-SHA256), under the
//! current master key and, while a rotation is under way, a previous one accepted for reading.
//!
//! Both keys of a master key are derived with HKDF under distinct labels, and so is its key id
//! (4 bytes that name the master key without revealing it). Ciphertexts are
//! `0xA5 || key id (4 bytes) || nonce (12 bytes) || sealed data || tag`, and carry associated
//! data binding them to their row, so a ciphertext copied onto another row fails to open.
//! Ciphertexts written before key ids existed are `nonce || sealed data || tag`; they still
//! open, with whichever configured key made them. Fingerprints are plain HMACs (their columns
//! are looked up by equality): a row's fingerprints are made by the key that sealed its
//! ciphertext, and lookups ask for the fingerprint under every configured key
//! ([`Vault::fingerprints`]).

use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::hkdf::{HKDF_SHA256, KeyType, Salt};
use ring::rand::{SecureRandom, SystemRandom};

use domain::masking::Secret;

/// The first byte of a ciphertext that names its key.
const MARKER: u8 = 0xA5;

/// Length of a key id.
pub const KEY_ID_LEN: usize = 4;

/// Length of the header (`MARKER || key id`) of a ciphertext that names its key.
pub const HEADER_LEN: usize = 1 + KEY_ID_LEN;

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
    /// The previous master key is the current one.
    #[error("the previous master key is the same as the current one")]
    SameKey,
}

/// The keys derived from one master key.
struct Keys {
    id: [u8; KEY_ID_LEN],
    aead: LessSafeKey,
    fingerprint: ring::hmac::Key,
}

impl Keys {
    fn new(master_key: &Secret<[u8; 32]>) -> Result<Self, VaultError> {
        let aead_key = derive(master_key.expose(), b"aead")?;
        let fingerprint_key = derive(master_key.expose(), b"fingerprint")?;
        let unbound = UnboundKey::new(&AES_256_GCM, &aead_key).map_err(|_| VaultError::Derive)?;
        Ok(Self {
            id: key_id(master_key)?,
            aead: LessSafeKey::new(unbound),
            fingerprint: ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &fingerprint_key),
        })
    }

    fn header(&self) -> [u8; HEADER_LEN] {
        let mut header = [MARKER; HEADER_LEN];
        header[1..].copy_from_slice(&self.id);
        header
    }

    /// Opens `nonce || data || tag`.
    fn open(&self, sealed: &[u8], context: &[u8]) -> Result<Vec<u8>, VaultError> {
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

    fn fingerprint(&self, label: &str, value: &str) -> Vec<u8> {
        let mut ctx = ring::hmac::Context::with_key(&self.fingerprint);
        ctx.update(label.as_bytes());
        ctx.update(&[0]);
        ctx.update(value.as_bytes());
        ctx.sign().as_ref().to_vec()
    }
}

/// Holds the derived keys: the current master key's, and the previous one's while configured.
pub struct Vault {
    current: Keys,
    previous: Option<Keys>,
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

/// The id of a master key, as its ciphertexts carry it: 4 bytes derived from the key (so they
/// say which key it is without saying anything about the key).
pub fn key_id(master_key: &Secret<[u8; 32]>) -> Result<[u8; KEY_ID_LEN], VaultError> {
    let derived = derive(master_key.expose(), b"key-id")?;
    let mut id = [0u8; KEY_ID_LEN];
    id.copy_from_slice(&derived[..KEY_ID_LEN]);
    Ok(id)
}

impl Vault {
    /// Derives the encryption and fingerprint keys from the 32-byte master key.
    pub fn new(master_key: &Secret<[u8; 32]>) -> Result<Self, VaultError> {
        Ok(Self {
            current: Keys::new(master_key)?,
            previous: None,
            rng: SystemRandom::new(),
        })
    }

    /// A vault that seals and fingerprints with `current`, and also opens what `previous` sealed
    /// (and looks up its fingerprints) when it is given. Refuses `previous == current`.
    pub fn with_previous(
        current: &Secret<[u8; 32]>,
        previous: Option<&Secret<[u8; 32]>>,
    ) -> Result<Self, VaultError> {
        let mut vault = Self::new(current)?;
        if let Some(previous) = previous {
            if previous.expose() == current.expose() {
                return Err(VaultError::SameKey);
            }
            vault.previous = Some(Keys::new(previous)?);
        }
        Ok(vault)
    }

    /// Whether a previous key is configured.
    pub fn has_previous(&self) -> bool {
        self.previous.is_some()
    }

    /// The current master key's id.
    pub fn current_key_id(&self) -> [u8; KEY_ID_LEN] {
        self.current.id
    }

    /// The first bytes of every ciphertext the current key seals: a ciphertext starting
    /// otherwise was sealed by another key (or before key ids existed).
    pub fn current_header(&self) -> [u8; HEADER_LEN] {
        self.current.header()
    }

    /// Whether `sealed` names the current key.
    pub fn is_current(&self, sealed: &[u8]) -> bool {
        sealed.starts_with(&self.current.header())
    }

    /// Encrypts `plaintext` with the current key, bound to `context` (e.g. the row id).
    pub fn seal(&self, plaintext: &[u8], context: &[u8]) -> Result<Vec<u8>, VaultError> {
        let mut nonce = [0u8; NONCE_LEN];
        self.rng.fill(&mut nonce).map_err(|_| VaultError::Random)?;
        let mut data = plaintext.to_vec();
        self.current
            .aead
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(context),
                &mut data,
            )
            .map_err(|_| VaultError::Random)?;
        let mut out = Vec::with_capacity(HEADER_LEN + NONCE_LEN + data.len());
        out.extend_from_slice(&self.current.header());
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&data);
        Ok(out)
    }

    /// The configured keys, current first.
    fn keys(&self) -> impl Iterator<Item = &Keys> {
        std::iter::once(&self.current).chain(self.previous.as_ref())
    }

    /// Decrypts what [`Vault::seal`] produced with the same `context`, under the current or the
    /// previous key, and what was sealed before key ids existed.
    pub fn open(&self, sealed: &[u8], context: &[u8]) -> Result<Vec<u8>, VaultError> {
        if let Some((header, rest)) = sealed.split_first_chunk::<HEADER_LEN>()
            && let Some(keys) = self.keys().find(|k| *header == k.header())
            && let Ok(plain) = keys.open(rest, context)
        {
            return Ok(plain);
        }
        // Without a known key id: sealed before key ids (its random nonce may even begin like
        // a header, hence also after a failed attempt above).
        self.keys()
            .find_map(|keys| keys.open(sealed, context).ok())
            .ok_or(VaultError::Open)
    }

    /// Opens a sealed UTF-8 secret.
    pub fn open_secret(&self, sealed: &[u8], context: &[u8]) -> Result<Secret<String>, VaultError> {
        let plain = self.open(sealed, context)?;
        String::from_utf8(plain)
            .map(Secret::new)
            .map_err(|_| VaultError::Open)
    }

    /// A keyed fingerprint of `value` under the current key, for indexed equality lookups
    /// without decryption; what new rows store.
    pub fn fingerprint(&self, label: &str, value: &str) -> Vec<u8> {
        self.current.fingerprint(label, value)
    }

    /// The fingerprints of `value` under every configured key, current first: a lookup matches
    /// any of them, so it finds rows not yet rotated to the current key.
    pub fn fingerprints(&self, label: &str, value: &str) -> Vec<Vec<u8>> {
        self.keys().map(|k| k.fingerprint(label, value)).collect()
    }

    /// The fingerprint of `value` under the previous key, when one is configured.
    pub fn previous_fingerprint(&self, label: &str, value: &str) -> Option<Vec<u8>> {
        self.previous.as_ref().map(|k| k.fingerprint(label, value))
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

    fn rotating(current: u8, previous: u8) -> Vault {
        match Vault::with_previous(
            &Secret::new([current; 32]),
            Some(&Secret::new([previous; 32])),
        ) {
            Ok(v) => v,
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn ciphertexts_name_their_key() {
        let sealed = vault(1).seal(b"x", b"c").unwrap_or_default();
        assert!(vault(1).is_current(&sealed));
        assert!(!vault(2).is_current(&sealed));
        assert_eq!(
            sealed.get(..HEADER_LEN),
            Some(&vault(1).current_header()[..])
        );
        assert_ne!(vault(1).current_key_id(), vault(2).current_key_id());
    }

    #[test]
    fn a_previous_key_opens_its_ciphertexts_and_the_current_one_seals() {
        let old = vault(1).seal(b"old secret", b"row").unwrap_or_default();
        let both = rotating(2, 1);
        assert_eq!(
            both.open(&old, b"row").ok().as_deref(),
            Some(&b"old secret"[..])
        );
        assert!(both.open(&old, b"other row").is_err());
        let new = both.seal(b"new secret", b"row").unwrap_or_default();
        assert!(both.is_current(&new) && !both.is_current(&old));
        assert_eq!(
            vault(2).open(&new, b"row").ok().as_deref(),
            Some(&b"new secret"[..])
        );
        assert!(vault(1).open(&new, b"row").is_err());
        // Without the previous key, what it sealed no longer opens.
        assert!(vault(2).open(&old, b"row").is_err());
        assert!(both.has_previous() && !vault(2).has_previous());
    }

    #[test]
    fn ciphertexts_from_before_key_ids_open_under_either_key() {
        // The old format is the new one without its header.
        let legacy = |byte: u8| {
            let sealed = vault(byte).seal(b"legacy", b"row").unwrap_or_default();
            sealed.get(HEADER_LEN..).unwrap_or_default().to_vec()
        };
        assert_eq!(
            vault(1).open(&legacy(1), b"row").ok().as_deref(),
            Some(&b"legacy"[..])
        );
        let both = rotating(2, 1);
        assert_eq!(
            both.open(&legacy(1), b"row").ok().as_deref(),
            Some(&b"legacy"[..])
        );
        assert_eq!(
            both.open(&legacy(2), b"row").ok().as_deref(),
            Some(&b"legacy"[..])
        );
        assert!(!both.is_current(&legacy(2)));
        assert!(vault(3).open(&legacy(1), b"row").is_err());
        // A header alone, or a header of a known key over garbage, does not open.
        let header = vault(1).current_header();
        assert!(vault(1).open(&header, b"row").is_err());
        assert!(
            vault(1)
                .open(&[&header[..], &[0; 40]].concat(), b"row")
                .is_err()
        );
    }

    #[test]
    fn the_previous_key_must_differ_from_the_current_one() {
        let key = Secret::new([7; 32]);
        assert!(matches!(
            Vault::with_previous(&key, Some(&Secret::new([7; 32]))),
            Err(VaultError::SameKey)
        ));
        assert!(Vault::with_previous(&key, None).is_ok_and(|v| !v.has_previous()));
    }

    #[test]
    fn lookups_ask_for_the_fingerprint_under_every_key() {
        let both = rotating(2, 1);
        assert_eq!(
            both.fingerprint("bsb", "1"),
            vault(2).fingerprint("bsb", "1")
        );
        assert_eq!(
            both.fingerprints("bsb", "1"),
            vec![
                vault(2).fingerprint("bsb", "1"),
                vault(1).fingerprint("bsb", "1")
            ]
        );
        assert_eq!(
            both.previous_fingerprint("bsb", "1"),
            Some(vault(1).fingerprint("bsb", "1"))
        );
        assert_eq!(vault(2).fingerprints("bsb", "1").len(), 1);
        assert_eq!(vault(2).previous_fingerprint("bsb", "1"), None);
    }
}
