//! A short-lived cache of active credentials in front of a [`CredentialStore`].
//!
//! Looking the API key up costs every authenticated request a database round trip, as much as
//! the work a simple `GET` asks for. A credential found is kept for `ttl` (a second by default)
//! and served from memory meanwhile; nonces still go to the store every time, so replay
//! protection is unchanged. A revocation or a change of the subaccount's signature requirement
//! is announced to every instance (the store's change notifications, recorded on the
//! process's [`CredentialChanges`]): an entry fetched before a change is not served again. The
//! `ttl` bounds the delay only when an announcement is lost (the listener reconnecting). Keys
//! that do not exist are never kept, so requests with made-up keys cannot fill the cache: it
//! holds at most the keys that exist, and at most [`MAX_ENTRIES`] of them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};

use super::{Credential, NonceDurability, NonceOutcome};
use crate::auth::ports::CredentialStore;
use crate::error::PortError;
use crate::ids::{ApiKeyId, SubaccountId};
use crate::ports::Clock;

/// Most credentials kept at once. Past it, expired entries are dropped, and if that is not
/// enough, all of them (the next requests look their keys up again).
pub const MAX_ENTRIES: usize = 10_000;

/// The credential changes a process heard of (revocations, signature requirements): shared by
/// every [`CachedCredentials`] of the process, so one announcement reaches every worker's cache.
/// A change is kept for the caches' `ttl` only: an entry older than that is stale anyway.
#[derive(Debug)]
pub struct CredentialChanges {
    retention: Duration,
    state: Mutex<ChangeState>,
}

#[derive(Debug, Default)]
struct ChangeState {
    /// The last change of each key.
    keys: HashMap<String, DateTime<Utc>>,
    /// The last change of every key at once (a subaccount-wide change, a lost announcement).
    all: Option<DateTime<Utc>>,
}

impl CredentialChanges {
    /// A board that keeps each change for `retention` (the caches' `ttl`).
    pub fn new(retention: Duration) -> Self {
        Self {
            retention,
            state: Mutex::new(ChangeState::default()),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, ChangeState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `api_key`'s credential changed at `at` (it was revoked).
    pub fn key_changed(&self, api_key: &str, at: DateTime<Utc>) {
        let retention = self.retention;
        let mut state = self.state();
        state.keys.retain(|_, changed| at - *changed < retention);
        if state.keys.len() < MAX_ENTRIES {
            state.keys.insert(api_key.to_owned(), at);
        } else {
            // Too many to track one by one: every entry is refetched.
            state.keys.clear();
            state.all = Some(at);
        }
    }

    /// Every credential may have changed at `at` (a subaccount's signature requirement, or
    /// announcements that may have been missed).
    pub fn all_changed(&self, at: DateTime<Utc>) {
        let mut state = self.state();
        state.keys.clear();
        state.all = Some(at);
    }

    /// Whether `api_key`'s credential changed at or after `since`.
    pub fn changed_since(&self, api_key: &str, since: DateTime<Utc>) -> bool {
        let state = self.state();
        state.all.is_some_and(|all| all >= since)
            || state.keys.get(api_key).is_some_and(|at| *at >= since)
    }
}

/// [`CredentialStore`] that keeps found credentials for a while (see the module docs).
pub struct CachedCredentials {
    store: Arc<dyn CredentialStore>,
    clock: Arc<dyn Clock>,
    ttl: Duration,
    found: Mutex<HashMap<String, (Credential, DateTime<Utc>)>>,
    changes: Option<Arc<CredentialChanges>>,
}

impl CachedCredentials {
    /// Serves `store`'s credentials from memory for `ttl` after each lookup. A `ttl` of zero or
    /// less keeps nothing: every lookup reaches the store.
    pub fn new(store: Arc<dyn CredentialStore>, clock: Arc<dyn Clock>, ttl: Duration) -> Self {
        Self {
            store,
            clock,
            ttl,
            found: Mutex::new(HashMap::new()),
            changes: None,
        }
    }

    /// Does not serve an entry fetched before a change `changes` heard of.
    #[must_use]
    pub fn watching(mut self, changes: Arc<CredentialChanges>) -> Self {
        self.changes = Some(changes);
        self
    }

    /// How many credentials are kept now.
    pub fn len(&self) -> usize {
        self.entries().len()
    }

    /// Whether none is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Credential, DateTime<Utc>)>> {
        // The map stays consistent even if a holder panicked: every update is one call.
        self.found.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn fresh(&self, api_key: &str, now: DateTime<Utc>) -> Option<Credential> {
        let entries = self.entries();
        let (credential, fetched_at) = entries.get(api_key)?;
        let changed = self
            .changes
            .as_ref()
            .is_some_and(|changes| changes.changed_since(api_key, *fetched_at));
        (now - *fetched_at < self.ttl && !changed).then(|| credential.clone())
    }

    fn keep(&self, api_key: &str, credential: &Credential, now: DateTime<Utc>) {
        let mut entries = self.entries();
        if entries.len() >= MAX_ENTRIES && !entries.contains_key(api_key) {
            let ttl = self.ttl;
            entries.retain(|_, (_, fetched_at)| now - *fetched_at < ttl);
            if entries.len() >= MAX_ENTRIES {
                entries.clear();
            }
        }
        entries.insert(api_key.to_owned(), (credential.clone(), now));
    }
}

#[async_trait]
impl CredentialStore for CachedCredentials {
    async fn find_credential(&self, api_key: &str) -> Result<Option<Credential>, PortError> {
        if self.ttl <= Duration::zero() {
            return self.store.find_credential(api_key).await;
        }
        let now = self.clock.now();
        if let Some(credential) = self.fresh(api_key, now) {
            return Ok(Some(credential));
        }
        let found = self.store.find_credential(api_key).await?;
        match &found {
            Some(credential) => self.keep(api_key, credential, now),
            // Revoked (or never existed): forget it at once.
            None => {
                self.entries().remove(api_key);
            }
        }
        Ok(found)
    }

    async fn record_nonce(
        &self,
        api_key: ApiKeyId,
        subaccount: SubaccountId,
        nonce: i64,
        seen_at: DateTime<Utc>,
        durability: NonceDurability,
    ) -> Result<NonceOutcome, PortError> {
        self.store
            .record_nonce(api_key, subaccount, nonce, seen_at, durability)
            .await
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::atomic::{AtomicI64, Ordering};

    use super::*;
    use crate::auth::SignaturePolicy;
    use crate::auth::ports::MockCredentialStore;
    use crate::masking::Secret;

    /// A clock the test moves by hand.
    struct Manual(AtomicI64);

    impl Manual {
        fn at(ms: i64) -> Arc<Self> {
            Arc::new(Self(AtomicI64::new(ms)))
        }
        fn advance(&self, ms: i64) {
            self.0.fetch_add(ms, Ordering::SeqCst);
        }
    }

    impl Clock for Manual {
        fn now(&self) -> DateTime<Utc> {
            DateTime::from_timestamp_millis(self.0.load(Ordering::SeqCst)).unwrap()
        }
    }

    const T0: i64 = 1_700_000_000_000;

    fn credential(secret: &str) -> Credential {
        Credential {
            id: ApiKeyId::from_uuid(uuid::Uuid::from_u128(1)),
            subaccount_id: SubaccountId::from_uuid(uuid::Uuid::from_u128(2)),
            secret: Secret::new(secret.to_owned()),
            signature_policy: SignaturePolicy::AnyVersion,
        }
    }

    fn cache(store: MockCredentialStore, clock: &Arc<Manual>, ttl_ms: i64) -> CachedCredentials {
        CachedCredentials::new(
            Arc::new(store),
            clock.clone(),
            Duration::milliseconds(ttl_ms),
        )
    }

    /// A store that answers lookups in turn: `times` lookups with each secret (`None`: no
    /// such key), and nothing more.
    fn answering(answers: &[(usize, Option<&'static str>)]) -> MockCredentialStore {
        let mut store = MockCredentialStore::new();
        let mut calls = mockall::Sequence::new();
        for &(times, secret) in answers {
            store
                .expect_find_credential()
                .times(times)
                .in_sequence(&mut calls)
                .returning(move |_| Ok(secret.map(credential)));
        }
        store
    }

    #[tokio::test]
    async fn a_found_credential_is_served_from_memory_until_its_time_is_up() {
        let store = answering(&[(1, Some("first")), (1, Some("rotated"))]);
        let clock = Manual::at(T0);
        let cache = cache(store, &clock, 1_000);

        for _ in 0..3 {
            let found = cache.find_credential("key").await.unwrap().unwrap();
            assert_eq!(found.secret.expose(), "first");
            clock.advance(300);
        }
        // 900 ms after the lookup: still the kept one. At 1 000 ms: looked up again.
        clock.advance(100);
        let found = cache.find_credential("key").await.unwrap().unwrap();
        assert_eq!(found.secret.expose(), "rotated");
        assert_eq!(cache.len(), 1);
    }

    #[tokio::test]
    async fn an_announced_revocation_is_refused_at_once_by_every_cache_watching() {
        // Two workers' caches of one process, a minute of ttl: only the announcement can
        // make them look again.
        let clock = Manual::at(T0);
        let changes = Arc::new(CredentialChanges::new(Duration::minutes(1)));
        let first = cache(answering(&[(1, Some("s")), (1, None)]), &clock, 60_000)
            .watching(changes.clone());
        let second = cache(answering(&[(1, Some("s")), (1, None)]), &clock, 60_000)
            .watching(changes.clone());
        let other = cache(answering(&[(1, Some("o"))]), &clock, 60_000).watching(changes.clone());
        for cache in [&first, &second] {
            assert!(cache.find_credential("key").await.unwrap().is_some());
        }
        assert!(other.find_credential("other").await.unwrap().is_some());
        clock.advance(10);
        changes.key_changed("key", clock.now());
        clock.advance(1);
        for cache in [&first, &second] {
            assert!(cache.find_credential("key").await.unwrap().is_none());
        }
        // Another key is still served from memory (its store expects one lookup only).
        assert!(other.find_credential("other").await.unwrap().is_some());
    }

    #[tokio::test]
    async fn a_change_of_every_key_or_an_old_change_is_handled_as_it_should() {
        let clock = Manual::at(T0);
        let changes = Arc::new(CredentialChanges::new(Duration::seconds(1)));
        // A change heard before the lookup does not hide the credential fetched after it.
        changes.key_changed("key", clock.now());
        clock.advance(5);
        let cache = cache(
            answering(&[(1, Some("s")), (1, Some("v2"))]),
            &clock,
            60_000,
        )
        .watching(changes.clone());
        assert!(cache.find_credential("key").await.unwrap().is_some());
        clock.advance(5);
        assert_eq!(
            cache
                .find_credential("key")
                .await
                .unwrap()
                .unwrap()
                .secret
                .expose(),
            "s"
        );
        // Every key changed (a signature requirement, a lost announcement): looked up again.
        changes.all_changed(clock.now());
        clock.advance(1);
        assert_eq!(
            cache
                .find_credential("key")
                .await
                .unwrap()
                .unwrap()
                .secret
                .expose(),
            "v2"
        );
        assert!(!changes.changed_since("key", clock.now()));
    }

    #[tokio::test]
    async fn a_revoked_key_is_refused_once_its_time_is_up_and_forgotten() {
        let store = answering(&[(1, Some("s")), (2, None)]);
        let clock = Manual::at(T0);
        let cache = cache(store, &clock, 1_000);
        assert!(cache.find_credential("key").await.unwrap().is_some());
        clock.advance(1_000);
        assert!(cache.find_credential("key").await.unwrap().is_none());
        assert!(cache.is_empty());
        // Not kept as a miss either: the next request asks the store again.
        assert!(cache.find_credential("key").await.unwrap().is_none());
    }

    #[tokio::test]
    async fn unknown_keys_and_store_failures_are_not_kept() {
        let mut store = MockCredentialStore::new();
        store
            .expect_find_credential()
            .withf(|key| key == "made-up")
            .times(2)
            .returning(|_| Ok(None));
        store
            .expect_find_credential()
            .withf(|key| key == "down")
            .times(2)
            .returning(|_| Err(PortError::Unavailable(anyhow::anyhow!("database down"))));
        let clock = Manual::at(T0);
        let cache = cache(store, &clock, 60_000);
        for _ in 0..2 {
            assert!(cache.find_credential("made-up").await.unwrap().is_none());
            assert!(cache.find_credential("down").await.is_err());
        }
        assert!(cache.is_empty());
    }

    #[tokio::test]
    async fn a_zero_time_to_live_keeps_nothing() {
        let mut store = MockCredentialStore::new();
        store
            .expect_find_credential()
            .times(3)
            .returning(|_| Ok(Some(credential("s"))));
        let clock = Manual::at(T0);
        let cache = cache(store, &clock, 0);
        for _ in 0..3 {
            assert!(cache.find_credential("key").await.unwrap().is_some());
        }
        assert!(cache.is_empty());
    }

    #[tokio::test]
    async fn nonces_always_reach_the_store_with_their_durability() {
        let mut store = MockCredentialStore::new();
        for durability in [NonceDurability::Immediate, NonceDurability::WithNextCommit] {
            store
                .expect_record_nonce()
                .withf(move |_, _, nonce, _, d| *nonce == 42 && *d == durability)
                .times(1)
                .returning(|_, _, _, _, _| Ok(NonceOutcome::Fresh));
        }
        let clock = Manual::at(T0);
        let cache = cache(store, &clock, 60_000);
        let c = credential("s");
        for durability in [NonceDurability::Immediate, NonceDurability::WithNextCommit] {
            let outcome = cache
                .record_nonce(c.id, c.subaccount_id, 42, clock.now(), durability)
                .await
                .unwrap();
            assert_eq!(outcome, NonceOutcome::Fresh);
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_lookups_all_get_the_credential_and_leave_one_entry() {
        let mut store = MockCredentialStore::new();
        store
            .expect_find_credential()
            .withf(|key| key == "key")
            .returning(|_| Ok(Some(credential("s"))));
        let clock = Manual::at(T0);
        let cache = Arc::new(cache(store, &clock, 60_000));
        let lookups: Vec<_> = (0..64)
            .map(|_| {
                let cache = Arc::clone(&cache);
                tokio::spawn(async move { cache.find_credential("key").await })
            })
            .collect();
        for lookup in lookups {
            let found = lookup.await.unwrap().unwrap().unwrap();
            assert_eq!(found.secret.expose(), "s");
        }
        assert_eq!(cache.len(), 1);
    }

    #[tokio::test]
    async fn past_the_limit_expired_entries_go_first_then_all() {
        let mut store = MockCredentialStore::new();
        store
            .expect_find_credential()
            .returning(|_| Ok(Some(credential("s"))));
        let clock = Manual::at(T0);
        let cache = cache(store, &clock, 1_000);
        for i in 0..MAX_ENTRIES {
            cache.find_credential(&format!("old-{i}")).await.unwrap();
        }
        assert_eq!(cache.len(), MAX_ENTRIES);
        // The old ones have expired: adding one more drops them.
        clock.advance(1_000);
        cache.find_credential("new").await.unwrap();
        assert_eq!(cache.len(), 1);
        // All fresh and full: adding one more starts over.
        for i in 1..MAX_ENTRIES {
            cache.find_credential(&format!("fresh-{i}")).await.unwrap();
        }
        assert_eq!(cache.len(), MAX_ENTRIES);
        cache.find_credential("one-more").await.unwrap();
        assert_eq!(cache.len(), 1);
    }
}
