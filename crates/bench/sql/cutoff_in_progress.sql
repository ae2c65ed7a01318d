-- Reference script of `cargo xtask bench cutoff`, step "in_progress" (after "generated": every
-- payout `in_progress` with its reference in the file): the rows payoutd writes once the file is
-- in the drop, in set statements. The files become `uploaded` (RailFileStore::move_file); the
-- batches `in_progress` with a batchUpdate event each, and every payout gets its reference in
-- the file as its provider_reference (BatchStore::record_submission).
-- Run by the harness after cutoff_generated.sql in the same rolled-back transaction. Variables
-- (psql -v): batches (a uuid[] literal), method (the route).
UPDATE rail_files SET state = 'uploaded', uploaded_at = now()
WHERE batch_id = ANY (:'batches'::uuid[]) AND method = :'method' AND state = 'generated';

WITH submitted AS (
    UPDATE batches SET status = 'in_progress', claimed_until = NULL, updated_at = now()
    WHERE id = ANY (:'batches'::uuid[]) AND status = 'queue'
    RETURNING id, subaccount_id, asset, amount, total_tx, batch_run_time, created_at),
 seq AS (
    INSERT INTO outbox_sequences (object_id, subaccount_id, last_sequence)
    SELECT id, subaccount_id, 1 FROM submitted
    ON CONFLICT ON CONSTRAINT outbox_sequences_pkey
        DO UPDATE SET last_sequence = outbox_sequences.last_sequence + 1
    RETURNING object_id, last_sequence AS n)
INSERT INTO outbox_events (id, subaccount_id, object_id, sequence, event_type, payload, created_at,
    next_attempt_at)
SELECT gen_random_uuid(), c.subaccount_id, c.id, s.n, 'batchUpdate',
    jsonb_build_object('event', 'batchUpdate', 'event_id', gen_random_uuid()::text,
        'batch_id', c.id::text, 'batch_reference', 'BATCH_' || c.id, 'status', 'in_progress',
        'amount', c.amount, 'currency', c.asset,
        'batch_run_time', (extract(epoch FROM c.batch_run_time) * 1000)::bigint,
        'process_amount', 0, 'total_failed', 0, 'total_tx', c.total_tx,
        'created_at', ((extract(epoch FROM c.created_at) * 1000)::bigint)::text,
        'subaccount_id', c.subaccount_id::text, 'subccount_id', c.subaccount_id::text,
        'sequence', s.n, 'timestamp', (extract(epoch FROM now()) * 1000)::bigint),
    now(), now()
FROM submitted c JOIN seq s ON s.object_id = c.id;

UPDATE payouts p SET provider_reference = i.reference
FROM rail_file_items i JOIN rail_files f ON f.id = i.file_id
WHERE f.batch_id = ANY (:'batches'::uuid[]) AND f.method = :'method'
  AND p.id = i.payout_id AND p.batch_id = f.batch_id AND p.subaccount_id = f.subaccount_id;
