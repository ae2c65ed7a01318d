//! A set decided payout by payout: [`decide`] settles every payout's fate under the locks that
//! keep it true until the commit, in the order given: its parties checked (`FOR SHARE`, as a
//! single payout takes them), its reference against those already taken (by earlier payouts,
//! or earlier in the set), then its total against what its balance has left (each balance row
//! locked `FOR UPDATE` once, in currency order). `set_write::write_set` then writes the
//! accepted ones.

use std::collections::{HashMap, HashSet};

use diesel::prelude::*;
use diesel::sql_types::{Array, SmallInt, Text, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use domain::account::{AccountStatus, ConfirmStatus};
use domain::payout::initial_status;
use domain::payout::ports::InsertPayoutError;
use domain::payout::{Payout, PayoutStatus};
use domain::receiver::{KycStatus, ReceiverStatus};
use uuid::Uuid;

use super::Planned;
use super::set_transaction::SetPlans;
use super::statements;
use super::transitions::PayoutAbort;
use crate::cached::CachedExt;
use crate::errors::TxError;
use crate::schema::balances;

/// What [`decide`] settled for one payout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// To write.
    Write,
    /// Refused: what a single payout's insert would have answered.
    Refuse(Refusal),
}

/// Why a payout of a set is not written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    Stale,
    DuplicateReference,
    InsufficientBalance,
}

impl Refusal {
    /// The error a single payout's insert gives for it.
    pub(crate) fn error(self) -> InsertPayoutError {
        match self {
            Refusal::Stale => InsertPayoutError::Stale,
            Refusal::DuplicateReference => InsertPayoutError::DuplicateReference,
            Refusal::InsufficientBalance => InsertPayoutError::InsufficientBalance,
        }
    }
}

/// Settles each payout's fate, in the order given (see the module documentation), in a
/// transaction begun by [`in_set_transaction`] with the same `plans`. Every payout is of
/// `subaccount`.
pub(crate) async fn decide(
    conn: &mut AsyncPgConnection,
    subaccount: Uuid,
    set: &[Planned<'_>],
    plans: SetPlans,
) -> Result<Vec<Verdict>, PayoutAbort> {
    let on_citus = plans == SetPlans::AsChosen;
    let accounts: Vec<Uuid> = set.iter().map(|p| p.payout.account_id.as_uuid()).collect();
    let parties = lock_parties(conn, subaccount, &accounts, plans).await?;
    let references: Vec<&str> = set
        .iter()
        .filter_map(|p| p.payout.reference.as_deref())
        .collect();
    let mut taken: HashSet<String> = if references.is_empty() {
        HashSet::new()
    } else {
        diesel::sql_query(if on_citus {
            statements::TAKEN_REFERENCES
        } else {
            statements::TAKEN_REFERENCES_BY_KEY
        })
        .bind::<SqlUuid, _>(subaccount)
        .bind::<Array<Text>, _>(&references)
        .cached()
        .load::<TakenReference>(conn)
        .await?
        .into_iter()
        .map(|row| row.reference)
        .collect()
    };
    let mut assets: Vec<&str> = set.iter().map(|p| p.payout.asset.code()).collect();
    assets.sort_unstable();
    assets.dedup();
    // Locked in currency order, so two sets of the same subaccount never wait for each other
    // in a circle.
    let mut left: HashMap<String, i64> = balances::table
        .filter(balances::subaccount_id.eq(subaccount))
        .filter(balances::asset.eq_any(&assets))
        .order(balances::asset.asc())
        .select((balances::asset, balances::available))
        .for_update()
        .cached()
        .load::<(String, i64)>(conn)
        .await?
        .into_iter()
        .collect();
    Ok(set
        .iter()
        .map(|p| {
            let payout = p.payout;
            if !parties.as_planned(payout) {
                return Verdict::Refuse(Refusal::Stale);
            }
            if let Some(reference) = &payout.reference
                && taken.contains(reference)
            {
                return Verdict::Refuse(Refusal::DuplicateReference);
            }
            let total = payout.total();
            match left.get_mut(payout.asset.code()) {
                Some(available) if total <= *available => *available -= total,
                _ => return Verdict::Refuse(Refusal::InsufficientBalance),
            }
            if let Some(reference) = &payout.reference {
                taken.insert(reference.clone());
            }
            Verdict::Write
        })
        .collect())
}

/// The payouts of `set` that [`decide`] accepted (its `verdicts`, in the same order).
pub(crate) fn accepted<'a>(set: &[Planned<'a>], verdicts: &[Verdict]) -> Vec<Planned<'a>> {
    set.iter()
        .zip(verdicts)
        .filter(|(_, v)| **v == Verdict::Write)
        .map(|(p, _)| *p)
        .collect()
}

/// Each locked account's receiver, the status a new payout to them starts in, and whether
/// they may be paid at all: what a planned payout is checked against.
pub(crate) struct Parties(HashMap<Uuid, (Uuid, PayoutStatus, bool)>);

impl Parties {
    pub(crate) fn of(rows: impl IntoIterator<Item = PartyRow>) -> Self {
        Self(
            rows.into_iter()
                .map(|row| {
                    let (status, payable) = party_status(
                        row.receiver_status,
                        row.kyc_status,
                        &row.account_status,
                        &row.confirm_status,
                    );
                    (row.account_id, (row.receiver_id, status, payable))
                })
                .collect(),
        )
    }

    /// Whether `payout`'s account is still its receiver's, both may still be paid, and a new
    /// payout to them still starts in the status it was planned with.
    pub(crate) fn as_planned(&self, payout: &Payout) -> bool {
        self.0
            .get(&payout.account_id.as_uuid())
            .is_some_and(|(receiver, status, payable)| {
                *receiver == payout.receiver_id.as_uuid() && *payable && *status == payout.status
            })
    }
}

/// Locks the parties of `accounts` (the subaccount's own only) `FOR SHARE`, as a single payout
/// locks them, and reads what [`Parties`] checks.
pub(crate) async fn lock_parties(
    mut conn: &AsyncPgConnection,
    subaccount: Uuid,
    accounts: &[Uuid],
    plans: SetPlans,
) -> Result<Parties, TxError> {
    let rows: Vec<PartyRow> = diesel::sql_query(match plans {
        SetPlans::AsChosen => statements::PARTIES,
        SetPlans::Generic => statements::PARTIES_BY_KEY,
    })
    .bind::<SqlUuid, _>(subaccount)
    .bind::<Array<SqlUuid>, _>(accounts)
    .cached()
    .load(&mut conn)
    .await?;
    Ok(Parties::of(rows))
}

#[derive(QueryableByName)]
pub(crate) struct PartyRow {
    #[diesel(sql_type = SqlUuid)]
    pub(crate) account_id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    pub(crate) receiver_id: Uuid,
    #[diesel(sql_type = SmallInt)]
    pub(crate) receiver_status: i16,
    #[diesel(sql_type = SmallInt)]
    pub(crate) kyc_status: i16,
    #[diesel(sql_type = Text)]
    pub(crate) account_status: String,
    #[diesel(sql_type = Text)]
    pub(crate) confirm_status: String,
}

#[derive(QueryableByName)]
struct TakenReference {
    #[diesel(sql_type = Text)]
    reference: String,
}

/// The statuses of a receiver that may not be paid.
pub(crate) const UNPAYABLE_RECEIVERS: [ReceiverStatus; 2] =
    [ReceiverStatus::Failed, ReceiverStatus::Inactive];

/// From the stored statuses of a payout's receiver (status, KYC) and account (status,
/// confirmation): the status a new payout to them starts in, and whether they may be paid at
/// all.
pub(crate) fn party_status(
    receiver_status: i16,
    kyc: i16,
    account_status: &str,
    confirm: &str,
) -> (PayoutStatus, bool) {
    let payable = !UNPAYABLE_RECEIVERS
        .iter()
        .any(|s| i16::from(s.code()) == receiver_status)
        && account_status != AccountStatus::Failed.as_str();
    let status = initial_status(
        kyc == i16::from(KycStatus::Completed.code()),
        confirm == ConfirmStatus::Confirmed.as_str(),
    );
    (status, payable)
}
