//! Subaccounts as operators read them (the console): a list with each one's balances, and one
//! subaccount's profile (balances, fee templates, API keys, webhook endpoint). Read-only: the
//! changes are [`crate::admin::AdminService`]'s, shared with `payoutd admin`.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::error::PortError;
use crate::ids::SubaccountId;
use crate::paging::Position;
use crate::subaccount::{Balance, FeeTemplate, Subaccount};

/// The longest name filter (a subaccount's name is at most 255 characters).
pub const MAX_NAME_FILTER_CHARS: usize = 255;

/// One subaccount in the list.
#[derive(Debug, Clone, PartialEq)]
pub struct SubaccountListing {
    /// The subaccount.
    pub subaccount: Subaccount,
    /// Its balances, one per asset it has held (an asset never funded is absent).
    pub balances: Vec<Balance>,
}

/// One API key, without its secret (which is stored only encrypted and never shown again).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiKeyListing {
    /// The public key (`x-api-key`).
    pub api_key: String,
    /// When it was issued.
    pub created_at: DateTime<Utc>,
    /// When it was revoked; `None` while it works.
    pub revoked_at: Option<DateTime<Utc>>,
}

/// A subaccount's webhook endpoint as the delivery worker sees it (no secret).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookEndpointState {
    /// When the previous secret stops signing deliveries (during a rotation's overlap).
    pub previous_until: Option<DateTime<Utc>>,
    /// When deliveries stopped because the endpoint answered 410 Gone (until a new URL).
    pub disabled_at: Option<DateTime<Utc>>,
    /// When the URL or a secret last changed.
    pub updated_at: DateTime<Utc>,
}

/// Everything an operator reads about one subaccount.
#[derive(Debug, Clone, PartialEq)]
pub struct SubaccountProfile {
    /// The subaccount (its `postback_url` is the webhook URL).
    pub subaccount: Subaccount,
    /// Its balances, by asset.
    pub balances: Vec<Balance>,
    /// Its fee templates, by asset.
    pub fees: Vec<FeeTemplate>,
    /// Its API keys, newest first, revoked ones included.
    pub keys: Vec<ApiKeyListing>,
    /// Its webhook endpoint, when a URL and secret were set.
    pub webhook: Option<WebhookEndpointState>,
}

/// Subaccounts as operators read them, across merchants.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait SubaccountDirectory: Send + Sync {
    /// Up to `limit` subaccounts whose name contains `name` (case-insensitively, taken
    /// literally: `%` and `_` are not wildcards), newest first (`created_at` desc, `id` desc),
    /// strictly after `after`, each with its balances.
    ///
    /// # Errors
    /// `PortError` when the store cannot be read.
    async fn list_subaccounts(
        &self,
        name: Option<String>,
        after: Option<Position>,
        limit: u32,
    ) -> Result<Vec<SubaccountListing>, PortError>;

    /// The profile of subaccount `id`, or `Ok(None)` when there is none.
    ///
    /// # Errors
    /// `PortError` when the store cannot be read.
    async fn subaccount_profile(
        &self,
        id: SubaccountId,
    ) -> Result<Option<SubaccountProfile>, PortError>;
}

/// Why a directory read gave nothing to show.
#[derive(Debug, thiserror::Error)]
pub enum DirectoryError {
    /// No subaccount has that id (or it is not an id).
    #[error("no subaccount has this id")]
    NotFound,
    /// The request cannot be read (said in words for the operator).
    #[error("{0}")]
    Invalid(String),
    /// The store failed.
    #[error(transparent)]
    Port(#[from] PortError),
}

/// The subaccount pages' reads: the one place that pages and filters the list.
#[derive(Clone)]
pub struct Subaccounts {
    store: std::sync::Arc<dyn SubaccountDirectory>,
}

impl Subaccounts {
    /// Over `store`.
    pub fn new(store: std::sync::Arc<dyn SubaccountDirectory>) -> Self {
        Self { store }
    }

    /// One page of subaccounts whose name contains `name` (blank: all): up to `limit` after
    /// `after` (a cursor a previous page gave), and the next page's cursor when there may be one.
    ///
    /// # Errors
    /// [`DirectoryError::Invalid`] for a cursor no page gave or a name filter over
    /// [`MAX_NAME_FILTER_CHARS`] (nothing is read); [`DirectoryError::Port`] when the store
    /// fails.
    pub async fn list(
        &self,
        name: Option<&str>,
        after: Option<&str>,
        limit: u32,
    ) -> Result<(Vec<SubaccountListing>, Option<String>), DirectoryError> {
        let name = name.map(str::trim).filter(|n| !n.is_empty());
        if name.is_some_and(|n| n.chars().count() > MAX_NAME_FILTER_CHARS) {
            return Err(DirectoryError::Invalid(format!(
                "A name filter is at most {MAX_NAME_FILTER_CHARS} characters."
            )));
        }
        let after = match after.map(str::trim).filter(|a| !a.is_empty()) {
            Some(raw) => Some(Position::decode(raw).ok_or_else(|| {
                DirectoryError::Invalid("This page link is not valid any more.".to_owned())
            })?),
            None => None,
        };
        let limit = limit.max(1);
        let mut rows = self
            .store
            .list_subaccounts(name.map(str::to_owned), after, limit.saturating_add(1))
            .await?;
        let more = rows.len() > limit as usize;
        rows.truncate(limit as usize);
        let next = more
            .then(|| {
                rows.last().map(|r| {
                    Position {
                        created_at: r.subaccount.created_at,
                        id: r.subaccount.id.as_uuid(),
                    }
                    .encode()
                })
            })
            .flatten();
        Ok((rows, next))
    }

    /// The profile of the subaccount whose id is `raw`.
    ///
    /// # Errors
    /// [`DirectoryError::NotFound`] when `raw` is not a subaccount id (nothing is read) or no
    /// subaccount has it; [`DirectoryError::Port`] when the store fails.
    pub async fn profile(&self, raw: &str) -> Result<SubaccountProfile, DirectoryError> {
        let id = SubaccountId::parse(raw.trim()).ok_or(DirectoryError::NotFound)?;
        self.store
            .subaccount_profile(id)
            .await?
            .ok_or(DirectoryError::NotFound)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builders::SubaccountBuilder;
    use std::sync::Arc;
    use uuid::Uuid;

    fn listing(n: u128) -> SubaccountListing {
        let subaccount = SubaccountBuilder::new()
            .id(SubaccountId::from_uuid(Uuid::from_u128(n)))
            .merchant(crate::ids::MerchantId::from_uuid(Uuid::from_u128(n)))
            .name(&format!("acme {n}"))
            .created_at(DateTime::from_timestamp(1_700_000_000 + n as i64, 0).unwrap_or_default())
            .build();
        SubaccountListing {
            subaccount,
            balances: Vec::new(),
        }
    }

    #[tokio::test]
    async fn a_page_overfetches_one_and_its_cursor_reads_back() {
        let mut store = MockSubaccountDirectory::new();
        store
            .expect_list_subaccounts()
            .withf(|name, after, limit| {
                name.as_deref() == Some("acme") && after.is_none() && *limit == 3
            })
            .times(1)
            .returning(|_, _, _| Ok(vec![listing(3), listing(2), listing(1)]));
        let directory = Subaccounts::new(Arc::new(store));
        let (rows, next) = directory
            .list(Some("  acme "), None, 2)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(rows.len(), 2);
        let next = next.unwrap_or_else(|| panic!("a next page"));
        let position = Position::decode(&next).unwrap_or_else(|| panic!("{next}"));
        assert_eq!(position.id, Uuid::from_u128(2));
    }

    #[tokio::test]
    async fn a_bad_cursor_or_a_long_filter_reads_nothing() {
        let mut store = MockSubaccountDirectory::new();
        store.expect_list_subaccounts().never();
        store.expect_subaccount_profile().never();
        let directory = Subaccounts::new(Arc::new(store));
        assert!(matches!(
            directory.list(None, Some("not-a-cursor"), 10).await,
            Err(DirectoryError::Invalid(_))
        ));
        let long = "x".repeat(MAX_NAME_FILTER_CHARS + 1);
        assert!(matches!(
            directory.list(Some(&long), None, 10).await,
            Err(DirectoryError::Invalid(_))
        ));
        assert!(matches!(
            directory.profile("../etc").await,
            Err(DirectoryError::NotFound)
        ));
    }

    #[tokio::test]
    async fn an_unknown_subaccount_is_not_found() {
        let mut store = MockSubaccountDirectory::new();
        store
            .expect_subaccount_profile()
            .times(1)
            .returning(|_| Ok(None));
        let directory = Subaccounts::new(Arc::new(store));
        assert!(matches!(
            directory
                .profile("00000000-0000-4000-8000-000000000001")
                .await,
            Err(DirectoryError::NotFound)
        ));
    }
}
