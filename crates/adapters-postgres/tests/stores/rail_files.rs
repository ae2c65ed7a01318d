//! `RailFileStore`: a file is stored with its items before it is sent, a batch never has two
//! files of one method and part nor a payout in two of its files, states only move forward and
//! only from where they are, and file numbers are handed out once each.

use std::collections::BTreeSet;

use chrono::NaiveDate;
use diesel::sql_types::{Array, SmallInt, Timestamptz, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use domain::account::PayoutMethod;
use domain::ids::{BatchId, PayoutId, RailFileId, SubaccountId};
use domain::payout::PayoutStatus;
use domain::rail::file::{RailFile, RailFileItem, RailFileState};
use domain::rail::ports::{AnsweredPayout, RailFileStore};
use uuid::Uuid;

use crate::accounts::{ach, insert, new_receiver};
use crate::support::{Fixture, at};

const T0: i64 = 1_700_000_000_123_456;
const SECOND: i64 = 1_000_000;

/// A closed batch of `subaccount` with `n` payouts to one ACH account (rows written directly:
/// the file store only needs them to exist).
pub(crate) async fn batch_with_payouts(
    fx: &Fixture,
    subaccount: SubaccountId,
    n: usize,
) -> (BatchId, Vec<PayoutId>) {
    let owner = new_receiver(fx, subaccount, &format!("{}@example.com", Uuid::new_v4())).await;
    let account = ach(&owner, "011000015", "123456789", "checking", T0);
    insert(fx, &account).await.expect("insert account");
    let batch = Uuid::new_v4();
    let mut conn = fx.raw().await;
    diesel::sql_query(
        "INSERT INTO batches (id, subaccount_id, asset, status, batch_run_time, created_at, \
         updated_at) VALUES ($1, $2, 'USD', 'in_progress', $3, $3, $3)",
    )
    .bind::<SqlUuid, _>(batch)
    .bind::<SqlUuid, _>(subaccount.as_uuid())
    .bind::<Timestamptz, _>(at(T0))
    .execute(&mut conn)
    .await
    .expect("insert batch");
    let mut payouts = Vec::new();
    for _ in 0..n {
        let id = Uuid::new_v4();
        diesel::sql_query(
            "INSERT INTO payouts (id, subaccount_id, receiver_id, account_id, asset, amount, fee, \
             status, batch_id, duplicate, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, 'USD', 1000, 0, 2, $5, false, $6, $6)",
        )
        .bind::<SqlUuid, _>(id)
        .bind::<SqlUuid, _>(subaccount.as_uuid())
        .bind::<SqlUuid, _>(owner.id.as_uuid())
        .bind::<SqlUuid, _>(account.id.as_uuid())
        .bind::<SqlUuid, _>(batch)
        .bind::<Timestamptz, _>(at(T0))
        .execute(&mut conn)
        .await
        .expect("insert payout");
        payouts.push(PayoutId::from_uuid(id));
    }
    (BatchId::from_uuid(batch), payouts)
}

pub(crate) fn file_of(
    subaccount: SubaccountId,
    batch: BatchId,
    payouts: &[PayoutId],
    bytes: &[u8],
) -> RailFile {
    RailFile {
        id: RailFileId::from_uuid(Uuid::new_v4()),
        batch_id: batch,
        subaccount_id: subaccount,
        method: PayoutMethod::Ach,
        part: 1,
        name: RailFile::name_for("PAYOUTD", batch, PayoutMethod::Ach, 1, "ach"),
        sha256: RailFile::digest(bytes),
        bytes: bytes.to_vec(),
        state: RailFileState::Generated,
        effective_date: NaiveDate::from_ymd_opt(2026, 11, 26).unwrap(),
        items: payouts
            .iter()
            .enumerate()
            .map(|(i, p)| RailFileItem {
                payout_id: *p,
                reference: format!("09100001{:07}", i + 1),
            })
            .collect(),
        reason: None,
        created_at: at(T0),
        uploaded_at: None,
        answered_at: None,
    }
}

#[tokio::test]
async fn a_connection_that_carried_a_large_file_is_closed_not_pooled() {
    // The driver keeps its buffers as large as the largest message a connection carried: a
    // connection that stored or read a file over 1 MiB is closed after use, a small file's
    // goes back to the pool.
    let fx = Fixture::new().await;
    let sub = fx.subaccount("large files").await.id;
    let (small_batch, small_payouts) = batch_with_payouts(&fx, sub, 1).await;
    let (large_batch, large_payouts) = batch_with_payouts(&fx, sub, 1).await;
    let pooled = || fx.store.pool().status().size;
    fx.store
        .insert_file(file_of(sub, small_batch, &small_payouts, b"101 small"))
        .await
        .unwrap();
    let before = pooled();
    assert!(before > 0);
    let large = vec![b'6'; 2 << 20];
    fx.store
        .insert_file(file_of(sub, large_batch, &large_payouts, &large))
        .await
        .unwrap();
    assert_eq!(
        pooled(),
        before - 1,
        "the connection that stored it is closed"
    );
    let found = fx
        .store
        .find_file(large_batch, PayoutMethod::Ach, 1)
        .await
        .unwrap();
    assert_eq!(found.map(|f| f.bytes.len()), Some(large.len()));
    assert_eq!(pooled(), before - 1, "and so is the one that read it");
    // Refused (its payout is in part 1 already), its bytes sent all the same: closed too.
    let mut twin = file_of(sub, large_batch, &large_payouts, &large);
    twin.part = 2;
    twin.name = RailFile::name_for("PAYOUTD", large_batch, PayoutMethod::Ach, 2, "ach");
    let refused = fx.store.insert_file(twin).await.unwrap_err();
    assert!(refused.to_string().contains("already in file"), "{refused}");
    assert_eq!(
        pooled(),
        before - 1,
        "the connection that sent a refused file is closed"
    );
    fx.store
        .find_file(small_batch, PayoutMethod::Ach, 1)
        .await
        .unwrap();
    assert_eq!(
        pooled(),
        before,
        "a small file's connection stays in the pool"
    );
}

#[tokio::test]
async fn a_stored_file_comes_back_with_its_bytes_and_items_in_order() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("files").await.id;
    let (batch, payouts) = batch_with_payouts(&fx, sub, 3).await;
    let file = file_of(sub, batch, &payouts, b"101 NACHA bytes\n");

    let stored = fx.store.insert_file(file.clone()).await.unwrap();
    assert_eq!(stored, file);

    let found = fx
        .store
        .find_file(batch, PayoutMethod::Ach, 1)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found, file);
    assert_eq!(
        fx.store.get_file(file.id).await.unwrap(),
        Some(file.clone())
    );
    assert_eq!(
        found.reference_of(payouts[2]),
        Some("091000010000003"),
        "items keep their order and references"
    );

    // Another method of the same batch has no file; nor has an unknown id.
    assert_eq!(
        fx.store
            .find_file(batch, PayoutMethod::Sepa, 1)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        fx.store
            .get_file(RailFileId::from_uuid(Uuid::new_v4()))
            .await
            .unwrap(),
        None
    );
}

#[tokio::test]
async fn a_batch_never_has_two_files_of_a_method_and_part() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("files").await.id;
    let (batch, payouts) = batch_with_payouts(&fx, sub, 2).await;
    let first = file_of(sub, batch, &payouts, b"first");
    fx.store.insert_file(first.clone()).await.unwrap();

    // A second runner wrote the batch's file again (other id, other bytes): it gets the first.
    let second = file_of(sub, batch, &payouts, b"second");
    let got = fx.store.insert_file(second.clone()).await.unwrap();
    assert_eq!(got, first);
    let n = fx
        .count_where(
            "SELECT count(*) AS n FROM rail_files WHERE batch_id = $1",
            batch.as_uuid(),
        )
        .await;
    assert_eq!(n, 1);
    let items = fx
        .count_where(
            "SELECT count(*) AS n FROM rail_file_items WHERE file_id = $1",
            second.id.as_uuid(),
        )
        .await;
    assert_eq!(items, 0, "the losing file's items are not stored");
}

/// Part `part` of a batch's ACH files, with `payouts`.
fn part_of(
    subaccount: SubaccountId,
    batch: BatchId,
    part: u32,
    payouts: &[PayoutId],
    bytes: &[u8],
) -> RailFile {
    RailFile {
        part,
        name: RailFile::name_for("PAYOUTD", batch, PayoutMethod::Ach, part, "ach"),
        ..file_of(subaccount, batch, payouts, bytes)
    }
}

#[tokio::test]
async fn a_batch_has_one_file_per_part_each_payout_in_one_of_them() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("files").await.id;
    let (batch, payouts) = batch_with_payouts(&fx, sub, 5).await;
    let first = part_of(sub, batch, 1, &payouts[..3], b"part 1");
    let second = part_of(sub, batch, 2, &payouts[3..], b"part 2");
    // Stored second part first: find_files gives them by part all the same.
    assert_eq!(fx.store.insert_file(second.clone()).await.unwrap(), second);
    assert_eq!(fx.store.insert_file(first.clone()).await.unwrap(), first);
    assert_eq!(
        fx.store.find_files(batch, PayoutMethod::Ach).await.unwrap(),
        vec![first.clone(), second.clone()]
    );
    assert_eq!(
        fx.store
            .find_file(batch, PayoutMethod::Ach, 2)
            .await
            .unwrap(),
        Some(second.clone())
    );
    assert_eq!(
        fx.store
            .find_file(batch, PayoutMethod::Ach, 3)
            .await
            .unwrap(),
        None
    );
    assert!(
        fx.store
            .find_files(batch, PayoutMethod::Sepa)
            .await
            .unwrap()
            .is_empty()
    );
    // Each is listed, and each payout's file is its own part.
    let listed = fx.store.list_files(None, None, 10).await.unwrap();
    assert_eq!(listed.len(), 2);
    assert!(
        listed
            .iter()
            .any(|f| f.part == 2 && f.name == second.name && f.payouts == 2)
    );

    // A runner that wrote part 2 again (other bytes) gets the stored one.
    let again = part_of(sub, batch, 2, &payouts[3..], b"part 2 again");
    assert_eq!(fx.store.insert_file(again.clone()).await.unwrap(), second);
    // A third part with a payout of part 1 is refused and nothing of it is stored.
    let overlapping = part_of(sub, batch, 3, &payouts[2..3], b"part 3");
    let refused = fx.store.insert_file(overlapping.clone()).await.unwrap_err();
    assert!(
        refused.to_string().contains(&first.name),
        "names the file that has it: {refused}"
    );
    let n = fx
        .count_where(
            "SELECT count(*) AS n FROM rail_files WHERE batch_id = $1",
            batch.as_uuid(),
        )
        .await;
    assert_eq!(n, 2);
    // The part is a positive number, one per batch and method.
    let mut conn = fx.raw().await;
    let zero = diesel::sql_query("UPDATE rail_files SET part = 0 WHERE id = $1")
        .bind::<SqlUuid, _>(first.id.as_uuid())
        .execute(&mut conn)
        .await;
    assert!(zero.is_err());
    let same = diesel::sql_query("UPDATE rail_files SET part = 1 WHERE id = $1")
        .bind::<SqlUuid, _>(second.id.as_uuid())
        .execute(&mut conn)
        .await;
    assert!(same.is_err());
}

#[tokio::test]
async fn concurrent_inserts_of_a_batch_file_store_exactly_one() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("files").await.id;
    let (batch, payouts) = batch_with_payouts(&fx, sub, 4).await;
    let tasks: Vec<_> = (0..6)
        .map(|i| {
            let store = fx.store.clone();
            let file = file_of(sub, batch, &payouts, format!("runner {i}").as_bytes());
            tokio::spawn(async move { store.insert_file(file.clone()).await.unwrap() })
        })
        .collect();
    let mut winners = BTreeSet::new();
    for task in tasks {
        winners.insert(task.await.unwrap().id);
    }
    assert_eq!(winners.len(), 1, "every runner sees the same file");
    let n = fx
        .count_where(
            "SELECT count(*) AS n FROM rail_file_items WHERE file_id IN \
             (SELECT id FROM rail_files WHERE batch_id = $1)",
            batch.as_uuid(),
        )
        .await;
    assert_eq!(n, 4);
}

#[tokio::test]
async fn states_move_only_forward_and_only_from_where_they_are() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("files").await.id;
    let (batch, payouts) = batch_with_payouts(&fx, sub, 1).await;
    let file = file_of(sub, batch, &payouts, b"bytes");
    fx.store.insert_file(file.clone()).await.unwrap();
    let up = at(T0 + 10 * SECOND);
    let ack = at(T0 + 20 * SECOND);

    // Acknowledged before uploaded: refused by the state machine.
    assert!(
        fx.store
            .move_file(
                file.id,
                RailFileState::Generated,
                RailFileState::Acknowledged,
                ack,
                None
            )
            .await
            .is_err()
    );
    // From a state it is not in: nothing changes.
    assert!(
        !fx.store
            .move_file(
                file.id,
                RailFileState::Uploaded,
                RailFileState::Rejected,
                ack,
                Some("R".into())
            )
            .await
            .unwrap()
    );
    assert!(
        fx.store
            .move_file(
                file.id,
                RailFileState::Generated,
                RailFileState::Uploaded,
                up,
                None
            )
            .await
            .unwrap()
    );
    // The second upload record is a no-op (a retried job).
    assert!(
        !fx.store
            .move_file(
                file.id,
                RailFileState::Generated,
                RailFileState::Uploaded,
                ack,
                None
            )
            .await
            .unwrap()
    );
    assert!(
        fx.store
            .move_file(
                file.id,
                RailFileState::Uploaded,
                RailFileState::Rejected,
                ack,
                Some("bad batch header".into())
            )
            .await
            .unwrap()
    );
    // Rejected is final: no acknowledgement may follow.
    assert!(
        !fx.store
            .move_file(
                file.id,
                RailFileState::Uploaded,
                RailFileState::Acknowledged,
                ack,
                None
            )
            .await
            .unwrap()
    );
    let got = fx.store.get_file(file.id).await.unwrap().unwrap();
    assert_eq!(got.state, RailFileState::Rejected);
    assert_eq!(got.uploaded_at, Some(up));
    assert_eq!(got.answered_at, Some(ack));
    assert_eq!(got.reason.as_deref(), Some("bad batch header"));
}

#[tokio::test]
async fn listings_are_newest_first_with_sizes_and_payout_counts() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("files").await.id;
    let mut ids = Vec::new();
    for (i, n) in [1usize, 3, 2].into_iter().enumerate() {
        let (batch, payouts) = batch_with_payouts(&fx, sub, n).await;
        let mut file = file_of(sub, batch, &payouts, &vec![b'x'; 10 * (i + 1)]);
        file.created_at = at(T0 + i64::try_from(i).unwrap() * SECOND);
        fx.store.insert_file(file.clone()).await.unwrap();
        ids.push(file.id);
    }
    fx.store
        .move_file(
            ids[1],
            RailFileState::Generated,
            RailFileState::Uploaded,
            at(T0 + 9 * SECOND),
            None,
        )
        .await
        .unwrap();

    let all = fx.store.list_files(None, None, 10).await.unwrap();
    assert_eq!(
        all.iter().map(|f| f.id).collect::<Vec<_>>(),
        vec![ids[2], ids[1], ids[0]]
    );
    assert_eq!(
        all.iter().map(|f| (f.size, f.payouts)).collect::<Vec<_>>(),
        vec![(30, 2), (20, 3), (10, 1)]
    );
    assert_eq!(fx.store.list_files(None, None, 2).await.unwrap().len(), 2);
    let uploaded = fx
        .store
        .list_files(Some(RailFileState::Uploaded), None, 10)
        .await
        .unwrap();
    assert_eq!(uploaded.len(), 1);
    assert_eq!(uploaded[0].id, ids[1]);
    assert_eq!(uploaded[0].state, RailFileState::Uploaded);

    // Keyset pages: each continues after the last file of the one before, filters kept.
    let mut paged = Vec::new();
    let mut before = None;
    loop {
        let page = fx.store.list_files(None, before, 1).await.unwrap();
        let Some(last) = page.last() else { break };
        before = Some(last.id);
        paged.push(last.id);
    }
    assert_eq!(paged, vec![ids[2], ids[1], ids[0]]);
    let older_uploaded = fx
        .store
        .list_files(Some(RailFileState::Uploaded), Some(ids[2]), 10)
        .await
        .unwrap();
    assert_eq!(
        older_uploaded.iter().map(|f| f.id).collect::<Vec<_>>(),
        vec![ids[1]]
    );
    let nowhere = RailFileId::from_uuid(Uuid::new_v4());
    assert!(
        fx.store
            .list_files(None, Some(nowhere), 10)
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn files_written_at_one_instant_page_by_id() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("same instant").await.id;
    for _ in 0..5 {
        let (batch, payouts) = batch_with_payouts(&fx, sub, 1).await;
        let mut file = file_of(sub, batch, &payouts, b"x");
        file.created_at = at(T0);
        fx.store.insert_file(file.clone()).await.unwrap();
    }
    let all: Vec<_> = fx
        .store
        .list_files(None, None, 10)
        .await
        .unwrap()
        .iter()
        .map(|f| f.id)
        .collect();
    let first = fx.store.list_files(None, None, 2).await.unwrap();
    let second = fx
        .store
        .list_files(None, Some(first[1].id), 2)
        .await
        .unwrap();
    let third = fx
        .store
        .list_files(None, Some(second[1].id), 2)
        .await
        .unwrap();
    let paged: Vec<_> = first
        .iter()
        .chain(&second)
        .chain(&third)
        .map(|f| f.id)
        .collect();
    assert_eq!(paged, all);
    assert_eq!(third.len(), 1);
}

#[tokio::test]
async fn a_file_of_more_items_than_a_statement_may_have_parameters_is_stored_whole() {
    // 20 000 items: as five parameters a row they would be 100 000, over PostgreSQL's 65 535.
    let fx = Fixture::new().await;
    let sub = fx.subaccount("big files").await.id;
    let (batch, first) = batch_with_payouts(&fx, sub, 1).await;
    #[derive(diesel::QueryableByName)]
    struct Id {
        #[diesel(sql_type = SqlUuid)]
        id: Uuid,
    }
    let copies: Vec<Id> = diesel::sql_query(
        "INSERT INTO payouts (id, subaccount_id, receiver_id, account_id, asset, amount, fee, \
         status, batch_id, duplicate, created_at, updated_at) \
         SELECT gen_random_uuid(), p.subaccount_id, p.receiver_id, p.account_id, p.asset, \
         p.amount, p.fee, p.status, p.batch_id, p.duplicate, p.created_at, p.updated_at \
         FROM payouts p, generate_series(1, 19999) WHERE p.id = $1 RETURNING id",
    )
    .bind::<SqlUuid, _>(first[0].as_uuid())
    .load(&mut fx.raw().await)
    .await
    .expect("copy payouts");
    let payouts: Vec<PayoutId> = first
        .into_iter()
        .chain(copies.into_iter().map(|c| PayoutId::from_uuid(c.id)))
        .collect();
    assert_eq!(payouts.len(), 20_000);
    let file = file_of(sub, batch, &payouts, b"a big file");
    fx.store.insert_file(file.clone()).await.unwrap();
    let found = fx
        .store
        .find_file(batch, PayoutMethod::Ach, 1)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found.items.len(), 20_000);
    assert_eq!(
        found, file,
        "every item, in its position, with its reference"
    );
}

/// Sets the payouts' status (by its code) directly.
async fn set_status(fx: &Fixture, payouts: &[PayoutId], status: PayoutStatus) {
    let ids: Vec<Uuid> = payouts.iter().map(|p| p.as_uuid()).collect();
    diesel::sql_query("UPDATE payouts SET status = $1 WHERE id = ANY($2)")
        .bind::<SmallInt, _>(i16::from(status.code()))
        .bind::<Array<SqlUuid>, _>(ids)
        .execute(&mut fx.raw().await)
        .await
        .expect("set status");
}

/// A batch of `n` payouts in progress in one ACH file of `state`, effective `day`.
async fn answered_batch(
    fx: &Fixture,
    sub: SubaccountId,
    n: usize,
    day: NaiveDate,
    state: RailFileState,
) -> (RailFile, Vec<PayoutId>) {
    let (batch, payouts) = batch_with_payouts(fx, sub, n).await;
    set_status(fx, &payouts, PayoutStatus::InProgress).await;
    let file = RailFile {
        effective_date: day,
        ..file_of(sub, batch, &payouts, batch.to_string().as_bytes())
    };
    fx.store.insert_file(file.clone()).await.unwrap();
    let mut now = RailFileState::Generated;
    for next in [RailFileState::Uploaded, state] {
        if next != now {
            let reason = (next == RailFileState::Rejected).then(|| "bad totals".to_owned());
            assert!(
                fx.store
                    .move_file(file.id, now, next, at(T0), reason)
                    .await
                    .unwrap()
            );
            now = next;
        }
    }
    (file, payouts)
}

#[tokio::test]
async fn answered_payouts_are_the_waiting_payouts_of_files_with_an_answer_only() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("files").await.id;
    let other = fx.subaccount("other files").await.id;
    let day = NaiveDate::from_ymd_opt(2026, 11, 26).unwrap();
    let later = NaiveDate::from_ymd_opt(2026, 11, 30).unwrap();
    // Due: uploaded or acknowledged, effective on the day or before; one payout settled already.
    let (due, due_payouts) = answered_batch(&fx, sub, 3, day, RailFileState::Uploaded).await;
    set_status(&fx, &due_payouts[..1], PayoutStatus::Successful).await;
    let (acked, acked_payouts) = answered_batch(
        &fx,
        other,
        1,
        day.pred_opt().unwrap(),
        RailFileState::Acknowledged,
    )
    .await;
    // Waiting for a later date, however many, and a file not yet uploaded.
    answered_batch(&fx, sub, 4, later, RailFileState::Uploaded).await;
    let (batch, unsent) = batch_with_payouts(&fx, sub, 2).await;
    set_status(&fx, &unsent, PayoutStatus::InProgress).await;
    fx.store
        .insert_file(RailFile {
            effective_date: day,
            ..file_of(sub, batch, &unsent, b"generated")
        })
        .await
        .unwrap();
    // Rejected: whatever its date.
    let (rejected, rejected_payouts) =
        answered_batch(&fx, sub, 2, later, RailFileState::Rejected).await;

    let ids = |answered: &[AnsweredPayout]| -> BTreeSet<PayoutId> {
        answered.iter().map(|a| a.payout.id).collect()
    };
    let all = fx
        .store
        .answered_payouts(PayoutMethod::Ach, Some(day), 100)
        .await
        .unwrap();
    let expected: BTreeSet<PayoutId> = due_payouts[1..]
        .iter()
        .chain(&acked_payouts)
        .chain(&rejected_payouts)
        .copied()
        .collect();
    assert_eq!(ids(&all), expected);
    assert_eq!(all.len(), expected.len(), "each once");
    for answered in &all {
        assert_eq!(answered.payout.status, PayoutStatus::InProgress);
        let file = [&due, &acked, &rejected]
            .into_iter()
            .find(|f| f.reference_of(answered.payout.id).is_some())
            .unwrap();
        assert_eq!(answered.file, file.id);
        assert_eq!(answered.name, file.name);
    }
    let refused = all.iter().find(|a| a.file == rejected.id).unwrap();
    assert_eq!(refused.state, RailFileState::Rejected);
    assert_eq!(refused.reason.as_deref(), Some("bad totals"));

    // A method paid on confirmation: only the rejected file answers.
    let confirming = fx
        .store
        .answered_payouts(PayoutMethod::Ach, None, 100)
        .await
        .unwrap();
    assert_eq!(ids(&confirming), rejected_payouts.iter().copied().collect());
    // The limit, and other methods.
    assert_eq!(
        fx.store
            .answered_payouts(PayoutMethod::Ach, Some(day), 2)
            .await
            .unwrap()
            .len(),
        2
    );
    assert!(
        fx.store
            .answered_payouts(PayoutMethod::Ach, Some(day), 0)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        fx.store
            .answered_payouts(PayoutMethod::Sepa, Some(later), 100)
            .await
            .unwrap()
            .is_empty()
    );
    // Once the later date comes, its file answers too.
    assert_eq!(
        fx.store
            .answered_payouts(PayoutMethod::Ach, Some(later), 100)
            .await
            .unwrap()
            .len(),
        expected.len() + 4
    );
}

#[tokio::test]
async fn file_numbers_count_per_day_or_over_all_time_and_never_repeat() {
    let fx = Fixture::new().await;
    let day = NaiveDate::from_ymd_opt(2026, 11, 25).unwrap();
    let next_day = day.succ_opt().unwrap();
    let ach = PayoutMethod::Ach;
    assert_eq!(fx.store.next_file_number(ach, Some(day)).await.unwrap(), 1);
    assert_eq!(fx.store.next_file_number(ach, Some(day)).await.unwrap(), 2);
    assert_eq!(
        fx.store
            .next_file_number(ach, Some(next_day))
            .await
            .unwrap(),
        1
    );
    assert_eq!(fx.store.next_file_number(ach, None).await.unwrap(), 1);
    assert_eq!(
        fx.store
            .next_file_number(PayoutMethod::Sepa, Some(day))
            .await
            .unwrap(),
        1,
        "each method counts its own files"
    );

    let tasks: Vec<_> = (0..20)
        .map(|_| {
            let store = fx.store.clone();
            tokio::spawn(async move { store.next_file_number(ach, None).await.unwrap() })
        })
        .collect();
    let mut numbers = BTreeSet::new();
    for task in tasks {
        assert!(
            numbers.insert(task.await.unwrap()),
            "a number was handed out twice"
        );
    }
    assert_eq!(numbers, (2..=21).collect());
}
