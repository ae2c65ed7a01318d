//! The subaccount use cases: read the caller's subaccount and its balance.

use std::sync::Arc;

use crate::auth::Caller;
use crate::codes::ErrorCode;
use crate::error::PortError;
use crate::money::Asset;
use crate::subaccount::ports::SubaccountStore;
use crate::subaccount::{Balance, Subaccount};
use crate::validation::ValidationErrors;

/// Why a subaccount or balance could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SubaccountQueryError {
    /// Rejected: `SUBA101` (missing or not the caller's), `SUBA303`, `SUBA304`.
    #[error(transparent)]
    Invalid(ValidationErrors),
    /// Infrastructure failure.
    #[error(transparent)]
    Port(#[from] PortError),
}

/// Reads subaccounts and balances, only the caller's own.
pub struct SubaccountService {
    store: Arc<dyn SubaccountStore>,
}

fn rejected(code: ErrorCode, field: &'static str) -> SubaccountQueryError {
    let mut errors = ValidationErrors::default();
    errors.push(code, field);
    SubaccountQueryError::Invalid(errors)
}

impl SubaccountService {
    /// Wires the service to its store.
    pub fn new(store: Arc<dyn SubaccountStore>) -> Self {
        Self { store }
    }

    /// The caller's subaccount. Another subaccount's id answers exactly like a missing one.
    #[tracing::instrument(level = "debug", skip_all, fields(subaccount = %caller.subaccount_id))]
    pub async fn get(
        &self,
        caller: &Caller,
        raw_id: &str,
    ) -> Result<Subaccount, SubaccountQueryError> {
        if !caller.owns(raw_id) {
            return Err(rejected(ErrorCode::Suba101, "subaccount_id"));
        }
        self.store
            .find_subaccount(caller.subaccount_id)
            .await?
            .ok_or_else(|| rejected(ErrorCode::Suba101, "subaccount_id"))
    }

    /// The caller's balance in `asset` (case-insensitive; zero when there was no activity).
    #[tracing::instrument(level = "debug", skip_all, fields(subaccount = %caller.subaccount_id))]
    pub async fn balance(
        &self,
        caller: &Caller,
        raw_id: &str,
        raw_asset: Option<&str>,
    ) -> Result<Balance, SubaccountQueryError> {
        let mut errors = ValidationErrors::default();
        if !caller.owns(raw_id) {
            errors.push(ErrorCode::Suba101, "subaccount_id");
        }
        let asset = match raw_asset.map(str::trim) {
            None | Some("") => {
                errors.push(ErrorCode::Suba303, "asset");
                None
            }
            Some(raw) => {
                let asset = Asset::parse(raw);
                if asset.is_none() {
                    errors.push(ErrorCode::Suba304, "asset");
                }
                asset
            }
        };
        errors
            .into_result()
            .map_err(SubaccountQueryError::Invalid)?;
        let Some(asset) = asset else {
            return Err(rejected(ErrorCode::Suba304, "asset"));
        };
        Ok(self.store.balance(caller.subaccount_id, asset).await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builders::SubaccountBuilder;
    use crate::ids::{ApiKeyId, SubaccountId};
    use crate::subaccount::ports::MockSubaccountStore;
    use uuid::Uuid;

    fn caller() -> Caller {
        Caller {
            subaccount_id: SubaccountId::from_uuid(Uuid::from_u128(1)),
            api_key_id: ApiKeyId::from_uuid(Uuid::from_u128(9)),
        }
    }

    fn codes(result: Result<Balance, SubaccountQueryError>) -> Vec<ErrorCode> {
        match result {
            Err(SubaccountQueryError::Invalid(e)) => e.0.into_iter().map(|e| e.code).collect(),
            _ => Vec::new(),
        }
    }

    #[tokio::test]
    async fn balance_reads_the_callers_asset_upper_cased() {
        let mut store = MockSubaccountStore::new();
        store
            .expect_balance()
            .withf(|sub, asset| *sub == caller().subaccount_id && *asset == Asset::Aud)
            .times(1)
            .returning(|_, asset| {
                Ok(Balance {
                    asset,
                    available: 5,
                    pending: 2,
                })
            });
        let service = SubaccountService::new(Arc::new(store));
        let own = caller().subaccount_id.to_string();
        let balance = service.balance(&caller(), &own, Some("aud")).await;
        assert_eq!(
            balance.ok(),
            Some(Balance {
                asset: Asset::Aud,
                available: 5,
                pending: 2
            })
        );
    }

    #[tokio::test]
    async fn get_answers_the_callers_own_subaccount_and_a_missing_one_as_unknown() {
        let mut store = MockSubaccountStore::new();
        store
            .expect_find_subaccount()
            .withf(|sub| *sub == caller().subaccount_id)
            .times(1)
            .returning(|sub| Ok(Some(SubaccountBuilder::new().id(sub).build())));
        let service = SubaccountService::new(Arc::new(store));
        let own = caller().subaccount_id.to_string();
        let found = service.get(&caller(), &own).await.ok();
        assert_eq!(
            found,
            Some(SubaccountBuilder::new().id(caller().subaccount_id).build())
        );

        let mut store = MockSubaccountStore::new();
        store
            .expect_find_subaccount()
            .times(1)
            .returning(|_| Ok(None));
        let service = SubaccountService::new(Arc::new(store));
        assert!(matches!(
            service.get(&caller(), &own).await,
            Err(SubaccountQueryError::Invalid(e)) if e.0.iter().map(|e| e.code).eq([ErrorCode::Suba101])
        ));
    }

    #[tokio::test]
    async fn foreign_ids_and_bad_assets_never_reach_the_store() {
        let mut store = MockSubaccountStore::new();
        store.expect_balance().never();
        store.expect_find_subaccount().never();
        let service = SubaccountService::new(Arc::new(store));
        let own = caller().subaccount_id.to_string();
        let other = Uuid::from_u128(2).to_string();
        assert_eq!(
            codes(service.balance(&caller(), &other, Some("AUD")).await),
            [ErrorCode::Suba101]
        );
        assert_eq!(
            codes(service.balance(&caller(), &own, None).await),
            [ErrorCode::Suba303]
        );
        assert_eq!(
            codes(service.balance(&caller(), &own, Some("GBP")).await),
            [ErrorCode::Suba304]
        );
        assert_eq!(
            codes(service.balance(&caller(), "junk", Some("x")).await),
            [ErrorCode::Suba101, ErrorCode::Suba304]
        );
        assert!(matches!(
            service.get(&caller(), &other).await,
            Err(SubaccountQueryError::Invalid(_))
        ));
    }
}
