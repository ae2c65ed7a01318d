//! The file rail's parts: a batch split at its format's limits, each part written, stored and
//! sent once, whatever crashes between them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

/// The ACH rail with files of at most `max_items` payouts and `max_total` cents.
fn ach_within(w: &World, max_items: usize, max_total: Option<i64>) -> FileRail {
    let limits = FileLimits {
        max_items,
        max_total,
        max_parts: 99,
    };
    rail_within(
        w,
        PayoutMethod::Ach,
        at(0),
        Settlement::OnEffectiveDate,
        limits,
    )
}

/// A world of `n` payouts of 1,000, 2,000, … cents, created in that order.
fn world_of(n: u128) -> World {
    let mut w = world();
    w.payouts = (1..=n)
        .map(|k| {
            let payout = PayoutBuilder::new()
                .id(PayoutId::from_uuid(Uuid::from_u128(1_000_000 - k)))
                .account(ReceiverAccountId::from_uuid(Uuid::from_u128(200_000 + k)))
                .asset(Asset::Usd)
                .amount(i64::try_from(k).unwrap() * 1_000)
                .status(PayoutStatus::InProgress)
                .batch(w.batch.id)
                .created_at(at(i64::try_from(k).unwrap()))
                .build();
            let account = account_of(&payout, PayoutMethod::Ach, &format!("1234567{k:02}"));
            (payout, account)
        })
        .collect();
    w
}

/// The stored files by part, each in the drop with its stored bytes; every payout in exactly
/// one of them, in creation order.
fn the_bank_has_each_part_once(w: &World) -> Vec<RailFile> {
    let mut files = w.files.files.lock().unwrap().clone();
    files.sort_by_key(|f| f.part);
    let drop = w.drop.files.lock().unwrap().clone();
    assert_eq!(drop.len(), files.len(), "one drop file per stored file");
    for (n, file) in files.iter().enumerate() {
        assert_eq!(file.part as usize, n + 1);
        assert_eq!(drop.get(&file.name), Some(&file.bytes), "{}", file.name);
        assert_eq!(file.state, RailFileState::Uploaded);
    }
    assert_eq!(
        w.drop.writes.load(Ordering::SeqCst),
        files.len(),
        "each sent once"
    );
    let filed: Vec<PayoutId> = files
        .iter()
        .flat_map(|f| f.items.iter().map(|i| i.payout_id))
        .collect();
    let mut expected: Vec<&Payout> = w.payouts.iter().map(|(p, _)| p).collect();
    expected.sort_by_key(|p| (p.created_at, p.id));
    assert_eq!(
        filed,
        expected.iter().map(|p| p.id).collect::<Vec<_>>(),
        "every payout once, in creation order"
    );
    files
}

#[tokio::test]
async fn a_batch_at_the_file_limit_is_one_file_and_one_over_is_two() {
    // Exactly the limit: one file, named as ever.
    let w = world_of(3);
    ach_within(&w, 3, None)
        .submit_payouts(&w.batch, &w.pairs())
        .await
        .unwrap();
    let files = the_bank_has_each_part_once(&w);
    assert_eq!(files.len(), 1);
    assert_eq!(
        files[0].name,
        format!("PAYOUTD-{}-usd-ach.txt", w.batch.id.as_uuid().simple())
    );

    // One over: two files, the second named as part 2, each with its own file number.
    let w = world_of(4);
    let receipts = ach_within(&w, 3, None)
        .submit_payouts(&w.batch, &w.pairs())
        .await
        .unwrap();
    let files = the_bank_has_each_part_once(&w);
    assert_eq!(
        files.iter().map(|f| f.items.len()).collect::<Vec<_>>(),
        [3, 1]
    );
    assert_eq!(
        files[1].name,
        format!("PAYOUTD-{}-usd-ach-2.txt", w.batch.id.as_uuid().simple())
    );
    assert!(
        files[1]
            .bytes
            .starts_with(format!("{} part 2 #2", w.batch.id).as_bytes())
    );
    assert_eq!(w.writer.calls.load(Ordering::SeqCst), 2);
    // Every payout's receipt is its reference in its own file (file #2's for the fourth).
    assert_eq!(receipts.len(), 4);
    for receipt in &receipts {
        let file = files
            .iter()
            .find(|f| f.reference_of(receipt.payout_id).is_some())
            .unwrap();
        assert_eq!(
            file.reference_of(receipt.payout_id),
            Some(receipt.provider_reference.as_str())
        );
    }
    let last = w
        .payouts
        .iter()
        .map(|(p, _)| p)
        .max_by_key(|p| p.created_at)
        .unwrap();
    let of_last = receipts.iter().find(|r| r.payout_id == last.id).unwrap();
    assert_eq!(of_last.provider_reference, "T0020001");
}

#[tokio::test]
async fn a_batch_at_the_file_total_is_one_file_and_one_cent_over_is_two() {
    // 1,000 + 2,000 + 3,000 cents.
    let w = world_of(3);
    ach_within(&w, 100, Some(6_000))
        .submit_payouts(&w.batch, &w.pairs())
        .await
        .unwrap();
    assert_eq!(the_bank_has_each_part_once(&w).len(), 1);

    let w = world_of(3);
    ach_within(&w, 100, Some(5_999))
        .submit_payouts(&w.batch, &w.pairs())
        .await
        .unwrap();
    let files = the_bank_has_each_part_once(&w);
    assert_eq!(
        files.iter().map(|f| f.items.len()).collect::<Vec<_>>(),
        [2, 1]
    );
}

#[tokio::test]
async fn a_payout_over_a_file_total_fails_the_submission_with_its_reason_and_writes_nothing() {
    let w = world_of(3);
    let Err(PortError::Unknown(why)) = ach_within(&w, 100, Some(2_999))
        .submit_payouts(&w.batch, &w.pairs())
        .await
    else {
        panic!("refused")
    };
    let why = why.to_string();
    assert!(
        why.contains("more than the 2999 one file may total"),
        "{why}"
    );
    assert!(w.files.files.lock().unwrap().is_empty());
    assert_eq!(w.writer.calls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_crash_after_storing_part_one_of_two_writes_only_part_two_on_the_retry() {
    let w = world_of(4);
    let rail = ach_within(&w, 3, None);
    // An earlier attempt stored part 1 (the first three payouts by creation) and died.
    let mut ordered = w.pairs();
    ordered.sort_by_key(|(p, _)| (p.created_at, p.id));
    let stored_first = rail.generate(&w.batch, 1, &ordered[..3]).await.unwrap();
    // The next attempt finds part 1, writes part 2 and dies before storing it.
    w.faults.arm(Fault::StoreFile);
    assert!(matches!(
        rail.submit_payouts(&w.batch, &w.pairs()).await,
        Err(PortError::Unavailable(_))
    ));
    assert_eq!(w.files.files.lock().unwrap().len(), 1, "part 1 only");
    assert!(
        w.drop.files.lock().unwrap().is_empty(),
        "nothing sent before all are stored"
    );
    ach_within(&w, 3, None)
        .submit_payouts(&w.batch, &w.pairs())
        .await
        .unwrap();
    let files = the_bank_has_each_part_once(&w);
    assert_eq!(files.len(), 2);
    assert_eq!(
        files[0].bytes, stored_first.bytes,
        "part 1 as stored, not rewritten"
    );
    assert_eq!(files[0].id, stored_first.id);
    // Part 1 once, part 2 once (the failed attempt wrote part 2 but could not store it).
    assert_eq!(w.writer.calls.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn a_crash_after_uploading_part_one_sends_only_part_two_on_the_retry() {
    let w = world_of(4);
    w.faults.arm(Fault::SecondUploadUnreachable);
    assert!(matches!(
        ach_within(&w, 3, None)
            .submit_payouts(&w.batch, &w.pairs())
            .await,
        Err(PortError::Unavailable(_))
    ));
    {
        let files = w.files.files.lock().unwrap();
        assert_eq!(files.len(), 2, "both parts stored before any upload");
        assert_eq!(
            files.iter().map(|f| f.state).collect::<Vec<_>>(),
            [RailFileState::Uploaded, RailFileState::Generated]
        );
    }
    assert_eq!(w.drop.files.lock().unwrap().len(), 1);
    let receipts = ach_within(&w, 3, None)
        .submit_payouts(&w.batch, &w.pairs())
        .await
        .unwrap();
    assert_eq!(receipts.len(), 4);
    assert_eq!(the_bank_has_each_part_once(&w).len(), 2);
    assert_eq!(
        w.writer.calls.load(Ordering::SeqCst),
        2,
        "each part written once"
    );
}

#[tokio::test]
async fn the_split_follows_creation_order_whatever_order_the_payouts_come_in() {
    let w = world_of(5);
    let mut reversed = w.pairs();
    reversed.reverse();
    ach_within(&w, 2, None)
        .submit_payouts(&w.batch, &reversed)
        .await
        .unwrap();
    // The same split as from creation order: a retry given another order finds every part.
    ach_within(&w, 2, None)
        .submit_payouts(&w.batch, &w.pairs())
        .await
        .unwrap();
    assert_eq!(the_bank_has_each_part_once(&w).len(), 3);
    assert_eq!(w.writer.calls.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn stored_parts_that_do_not_match_the_plan_are_an_error_not_a_second_file() {
    let w = world_of(4);
    ach_within(&w, 3, None)
        .submit_payouts(&w.batch, &w.pairs())
        .await
        .unwrap();
    // Limits that would plan other parts (a changed configuration): nothing is written.
    assert!(matches!(
        ach_within(&w, 2, None)
            .submit_payouts(&w.batch, &w.pairs())
            .await,
        Err(PortError::Unknown(_))
    ));
    // One part where two are stored.
    assert!(matches!(
        ach_within(&w, 4, None)
            .submit_payouts(&w.batch, &w.pairs())
            .await,
        Err(PortError::Unknown(_))
    ));
    assert_eq!(the_bank_has_each_part_once(&w).len(), 2);
}

#[tokio::test]
async fn a_files_receivers_are_read_a_few_thousand_payouts_at_a_time() {
    // One file of 2,501 payouts, each to its own receiver.
    let mut w = world_of(2_501);
    for (k, (payout, account)) in (0_u128..).zip(w.payouts.iter_mut()) {
        payout.receiver_id = ReceiverId::from_uuid(Uuid::from_u128(50_000 + k));
        account.receiver_id = payout.receiver_id;
    }
    let reads = Arc::new(Mutex::new(Vec::new()));
    let receivers = receivers_found(reads.clone());
    let rail = rail_reading(
        &w,
        PayoutMethod::Ach,
        at(0),
        Settlement::OnEffectiveDate,
        FileLimits::NONE,
        receivers,
    );
    rail.submit_payouts(&w.batch, &w.pairs()).await.unwrap();
    assert_eq!(*reads.lock().unwrap(), [RECEIVERS_READ_AT_ONCE, 1]);
    let files = the_bank_has_each_part_once(&w);
    assert_eq!(files.len(), 1);
    assert_eq!(files[0].items.len(), 2_501);
}
