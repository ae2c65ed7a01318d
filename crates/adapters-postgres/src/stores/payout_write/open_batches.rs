//! The open-batch cache: the batch the last set of each subaccount and currency joined, so that
//! the next can be written in one round trip (`at_once`).

use std::collections::{BTreeSet, HashMap};
use std::sync::{Mutex, MutexGuard, PoisonError};

use chrono::{DateTime, Utc};
use domain::payout::PayoutStatus;
use uuid::Uuid;

use super::{Joined, Planned};

/// What a set written at once ([`write_whole_at_once`]) expects to find: the open batch of
/// each currency whose payouts join one (some start `pending`), in currency order, as
/// (currency code, batch, run time).
#[derive(Debug)]
pub(crate) struct Expected {
    pub(crate) batches: Vec<OpenBatch>,
}

/// A currency's open batch: (currency code, batch, run time).
pub(crate) type OpenBatch = (&'static str, Uuid, DateTime<Utc>);

/// The open batch that the last set written whole of each subaccount and currency joined, so
/// that the next can be written in one round trip ([`write_whole_at_once`], which checks that
/// each batch is still the open one). Shared by a store's clones. It holds at most
/// [`OpenBatches::MOST`] subaccounts and currencies, and starts afresh when full.
#[derive(Debug, Default)]
pub(crate) struct OpenBatches(Mutex<BatchesByCurrency>);

/// Each subaccount and currency's open batch, by (subaccount, currency code).
type BatchesByCurrency = HashMap<(Uuid, &'static str), (Uuid, DateTime<Utc>)>;

impl OpenBatches {
    const MOST: usize = 10_000;

    fn lock(&self) -> MutexGuard<'_, BatchesByCurrency> {
        // Inserts and removals only: a poisoned lock still holds a consistent map.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What `written` (payouts of `subaccount`) expects when written at once, or `None` when it
    /// cannot be: it is empty, or the open batch of a currency some of its payouts join
    /// (starting `pending`) is not known.
    pub(crate) fn expected(&self, subaccount: Uuid, written: &[Planned<'_>]) -> Option<Expected> {
        if written.is_empty() {
            return None;
        }
        let joining: BTreeSet<&'static str> = written
            .iter()
            .filter(|p| p.payout.status == PayoutStatus::Pending)
            .map(|p| p.payout.asset.code())
            .collect();
        let known = self.lock();
        let batches = joining
            .into_iter()
            .map(|asset| {
                let (id, run_time) = known.get(&(subaccount, asset))?;
                Some((asset, *id, *run_time))
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Expected { batches })
    }

    /// Records the batches the payouts of `written` (of `subaccount`, in the batches of
    /// `joined`) joined, one per currency.
    pub(crate) fn remember(&self, subaccount: Uuid, written: &[Planned<'_>], joined: &[Joined]) {
        let mut batches = self.lock();
        for (p, batch) in written.iter().zip(joined) {
            let Some(batch) = batch else { continue };
            let key = (subaccount, p.payout.asset.code());
            if batches.len() >= Self::MOST && !batches.contains_key(&key) {
                batches.clear();
            }
            batches.insert(key, *batch);
        }
    }

    /// Forgets the batches of `subaccount` in the currencies of `expected`.
    pub(crate) fn forget(&self, subaccount: Uuid, expected: &[OpenBatch]) {
        let mut batches = self.lock();
        for (asset, _, _) in expected {
            batches.remove(&(subaccount, *asset));
        }
    }
}
