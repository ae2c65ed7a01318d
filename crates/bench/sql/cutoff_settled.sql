-- Reference script of `cargo xtask bench cutoff`, step "settled" (the bank's answer to every
-- payout `successful`): the rows payoutd writes for it, in set statements. Every payout of the
-- batches moves `in_progress` → `successful` with its hold posted (payout_post and fee_post
-- ledger entries, the balance's pending reduced) and one payoutUpdated event
-- (BatchRunner::settle, PayoutStore::apply_transition); then each batch is finished (`settled`,
-- the amount paid) with a batchUpdate event (BatchStore::finish_batch).
-- Each payout's event joins its sequence to the payout's row by primary key (see
-- cutoff_generated.sql).
-- Run by the harness after cutoff_in_progress.sql in the same rolled-back transaction.
-- Variables (psql -v): batches (a uuid[] literal).
WITH paid AS (
    UPDATE payouts p SET status = 4, updated_at = now()
    WHERE p.batch_id = ANY (:'batches'::uuid[]) AND p.status = 3
    RETURNING p.id, p.subaccount_id, p.batch_id, p.amount, p.fee, p.asset, p.receiver_id,
        p.account_id, p.reference),
 entries AS (
    INSERT INTO ledger_entries (id, subaccount_id, asset, kind, available_delta, pending_delta,
        payout_id, created_at)
    SELECT gen_random_uuid(), subaccount_id, asset, 'payout_post', 0, -amount, id, now() FROM paid
    UNION ALL
    SELECT gen_random_uuid(), subaccount_id, asset, 'fee_post', 0, -fee, id, now() FROM paid
    WHERE fee > 0),
 totals AS (
    SELECT subaccount_id, asset, sum(amount + fee) AS total FROM paid
    GROUP BY subaccount_id, asset),
 posted AS (
    UPDATE balances b SET pending = b.pending - t.total, updated_at = now()
    FROM totals t WHERE b.subaccount_id = t.subaccount_id AND b.asset = t.asset
        AND b.pending >= t.total
    RETURNING b.asset),
 seq AS (
    INSERT INTO outbox_sequences (object_id, subaccount_id, last_sequence)
    SELECT id, subaccount_id, 1 FROM paid
    ON CONFLICT ON CONSTRAINT outbox_sequences_pkey
        DO UPDATE SET last_sequence = outbox_sequences.last_sequence + 1
    RETURNING object_id, last_sequence AS n)
INSERT INTO outbox_events (id, subaccount_id, object_id, sequence, event_type, payload, created_at,
    next_attempt_at)
SELECT gen_random_uuid(), m.subaccount_id, m.id, s.n, 'payoutUpdated',
    jsonb_build_object('event', 'payoutUpdated', 'event_id', gen_random_uuid()::text,
        'payout_id', m.id::text, 'amount', m.amount, 'currency', m.asset,
        'batch_id', m.batch_id::text, 'batch_run_time', NULL,
        'receiver_account_id', m.account_id::text, 'receiver_id', m.receiver_id::text,
        'reference', m.reference, 'status', 'successful', 'subaccount_id', m.subaccount_id::text,
        'subccount_id', m.subaccount_id::text, 'sequence', s.n,
        'timestamp', (extract(epoch FROM now()) * 1000)::bigint),
    now(), now()
FROM seq s JOIN payouts m ON m.id = s.object_id;

WITH finished AS (
    UPDATE batches b SET status = 'settled', process_amount = b.amount, updated_at = now()
    WHERE b.id = ANY (:'batches'::uuid[]) AND b.status = 'in_progress'
      AND NOT EXISTS (SELECT 1 FROM payouts p WHERE p.batch_id = b.id AND p.status = 3)
    RETURNING b.id, b.subaccount_id, b.asset, b.amount, b.total_tx, b.batch_run_time,
        b.created_at),
 seq AS (
    INSERT INTO outbox_sequences (object_id, subaccount_id, last_sequence)
    SELECT id, subaccount_id, 1 FROM finished
    ON CONFLICT ON CONSTRAINT outbox_sequences_pkey
        DO UPDATE SET last_sequence = outbox_sequences.last_sequence + 1
    RETURNING object_id, last_sequence AS n)
INSERT INTO outbox_events (id, subaccount_id, object_id, sequence, event_type, payload, created_at,
    next_attempt_at)
SELECT gen_random_uuid(), c.subaccount_id, c.id, s.n, 'batchUpdate',
    jsonb_build_object('event', 'batchUpdate', 'event_id', gen_random_uuid()::text,
        'batch_id', c.id::text, 'batch_reference', 'BATCH_' || c.id, 'status', 'settled',
        'amount', c.amount, 'currency', c.asset,
        'batch_run_time', (extract(epoch FROM c.batch_run_time) * 1000)::bigint,
        'process_amount', c.amount, 'total_failed', 0, 'total_tx', c.total_tx,
        'created_at', ((extract(epoch FROM c.created_at) * 1000)::bigint)::text,
        'subaccount_id', c.subaccount_id::text, 'subccount_id', c.subaccount_id::text,
        'sequence', s.n, 'timestamp', (extract(epoch FROM now()) * 1000)::bigint),
    now(), now()
FROM finished c JOIN seq s ON s.object_id = c.id;
