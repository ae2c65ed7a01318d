-- Reference script of `cargo xtask bench cutoff`, step "settled", for a rail whose partner
-- decides each payment in its final report (Interac, `cad/digital`): the rejected tenth. The
-- payouts the partner does not deposit (those whose reference `INV-<j>` has j divisible by 10,
-- the ones the harness gives a fate: `failed` INVALID_RECIPIENT for j divisible by 20, else
-- `declined`) move `in_progress` → `failed` with the partner's code and reason, their hold voided
-- (payout_void and fee_void ledger entries, the balance's pending back to available) and two
-- events each (payoutUpdated, payoutFailure), marked `receiver_is_invalid` for
-- INVALID_RECIPIENT (InboundProcessor::process, PayoutReaction). The reports' rows (one line per
-- payment) are cutoff_settled_report.sql's, the deposited nine tenths cutoff_settled.sql's, and
-- the accounts INVALID_RECIPIENT fails cutoff_accounts_failed.sql's.
-- Each event joins its sequence to its object's row by primary key (see cutoff_generated.sql).
-- Run by the harness after cutoff_in_progress.sql in the same rolled-back transaction, on those
-- rails only. Variables (psql -v): batches (a uuid[] literal).
WITH failed AS (
    UPDATE payouts p SET status = 6, updated_at = now(),
        receiver_is_invalid = split_part(p.reference, '-', 2)::bigint % 20 = 0,
        return_code = CASE WHEN split_part(p.reference, '-', 2)::bigint % 20 = 0
                           THEN 'INVALID_RECIPIENT' ELSE 'DECLINED' END,
        failure_reason = CASE WHEN split_part(p.reference, '-', 2)::bigint % 20 = 0
                              THEN 'the recipient''s e-mail address is not valid'
                              ELSE 'the recipient declined the transfer' END
    WHERE p.batch_id = ANY (:'batches'::uuid[]) AND p.status = 3
      AND split_part(p.reference, '-', 2)::bigint % 10 = 0
    RETURNING p.id, p.subaccount_id, p.batch_id, p.amount, p.fee, p.asset, p.receiver_id,
        p.account_id, p.reference, p.return_code, p.failure_reason, p.receiver_is_invalid),
 entries AS (
    INSERT INTO ledger_entries (id, subaccount_id, asset, kind, available_delta, pending_delta,
        payout_id, created_at)
    SELECT gen_random_uuid(), subaccount_id, asset, 'payout_void', amount, -amount, id, now()
    FROM failed
    UNION ALL
    SELECT gen_random_uuid(), subaccount_id, asset, 'fee_void', fee, -fee, id, now()
    FROM failed WHERE fee > 0),
 totals AS (
    SELECT subaccount_id, asset, sum(amount + fee) AS total FROM failed
    GROUP BY subaccount_id, asset),
 voided AS (
    UPDATE balances b SET available = b.available + t.total, pending = b.pending - t.total,
        updated_at = now()
    FROM totals t WHERE b.subaccount_id = t.subaccount_id AND b.asset = t.asset
        AND b.pending >= t.total
    RETURNING b.asset),
 seq AS (
    INSERT INTO outbox_sequences (object_id, subaccount_id, last_sequence)
    SELECT id, subaccount_id, 2 FROM failed
    ON CONFLICT ON CONSTRAINT outbox_sequences_pkey
        DO UPDATE SET last_sequence = outbox_sequences.last_sequence + 2
    RETURNING object_id, last_sequence AS n)
INSERT INTO outbox_events (id, subaccount_id, object_id, sequence, event_type, payload, created_at,
    next_attempt_at)
SELECT gen_random_uuid(), m.subaccount_id, m.id, s.n - 2 + k.k, k.kind,
    jsonb_build_object('event', k.kind, 'event_id', gen_random_uuid()::text,
        'payout_id', m.id::text, 'amount', m.amount, 'currency', m.asset,
        'batch_id', m.batch_id::text, 'batch_run_time', NULL,
        'receiver_account_id', m.account_id::text, 'receiver_id', m.receiver_id::text,
        'reference', m.reference, 'status', 'failed',
        'return_code', m.return_code, 'return_reason', m.failure_reason,
        'subaccount_id', m.subaccount_id::text,
        'subccount_id', m.subaccount_id::text, 'sequence', s.n - 2 + k.k,
        'timestamp', (extract(epoch FROM now()) * 1000)::bigint),
    now(), now()
FROM seq s JOIN payouts m ON m.id = s.object_id
CROSS JOIN (VALUES (1, 'payoutUpdated'), (2, 'payoutFailure')) AS k(k, kind);
