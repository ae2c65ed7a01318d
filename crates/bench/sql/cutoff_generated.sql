-- Reference script of `cargo xtask bench cutoff`, step "generated" (the cut-off to every
-- batch's file stored): the rows payoutd writes for it, in set statements. The batches the
-- cut-off closes go to `queue` with their counts and amounts (BatchStore::close_due_batch);
-- their payouts move `pending` → `in_progress` with one payoutUpdated event each (its sequence
-- upserted), plus one batchUpdate event per batch; the day's file numbers are taken; each batch
-- gets its file row, whose bytes are built from every payout with its account (the sealed
-- data) and its receiver (the payee's name), one line per payout, and one item per payout
-- with its reference (FileRail::generate, RailFileStore::insert_file).
-- Each payout's event joins its sequence to the payout's row by primary key (its columns that
-- the statement does not change): a join of two data-modifying CTEs is planned on their
-- estimates, one row each here, and a nested loop over both is quadratic in the payouts.
-- The harness runs it with psql inside a transaction it rolls back, before the cut-off, on the
-- bench database itself. Variables (psql -v): batches (a uuid[] literal: the batches the cut-off
-- closes), method (the route, e.g. usd/ach).
WITH moved AS (
    UPDATE payouts p SET status = 3, submitted_at = now(), updated_at = now()
    WHERE p.batch_id = ANY (:'batches'::uuid[]) AND p.status = 1
    RETURNING p.id, p.subaccount_id, p.batch_id, p.amount, p.asset, p.receiver_id, p.account_id,
        p.reference),
 totals AS (SELECT batch_id, count(*) AS n, sum(amount) AS amount FROM moved GROUP BY batch_id),
 closed AS (
    UPDATE batches b SET status = 'queue', total_tx = t.n, amount = t.amount,
        claimed_until = now() + interval '5 minutes', updated_at = now()
    FROM totals t WHERE b.id = t.batch_id
    RETURNING b.id, b.subaccount_id, b.asset, b.amount, b.total_tx, b.batch_run_time, b.created_at),
 objects AS (SELECT id, subaccount_id FROM moved UNION ALL SELECT id, subaccount_id FROM closed),
 seq AS (
    INSERT INTO outbox_sequences (object_id, subaccount_id, last_sequence)
    SELECT id, subaccount_id, 1 FROM objects
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
        'reference', m.reference, 'status', 'in_progress', 'subaccount_id', m.subaccount_id::text,
        'subccount_id', m.subaccount_id::text, 'sequence', s.n,
        'timestamp', (extract(epoch FROM now()) * 1000)::bigint),
    now(), now()
FROM seq s JOIN payouts m ON m.id = s.object_id
UNION ALL
SELECT gen_random_uuid(), c.subaccount_id, c.id, s.n, 'batchUpdate',
    jsonb_build_object('event', 'batchUpdate', 'event_id', gen_random_uuid()::text,
        'batch_id', c.id::text, 'batch_reference', 'BATCH_' || c.id, 'status', 'queue',
        'amount', c.amount, 'currency', c.asset,
        'batch_run_time', (extract(epoch FROM c.batch_run_time) * 1000)::bigint,
        'process_amount', 0, 'total_failed', 0, 'total_tx', c.total_tx,
        'created_at', ((extract(epoch FROM c.created_at) * 1000)::bigint)::text,
        'subaccount_id', c.subaccount_id::text, 'subccount_id', c.subaccount_id::text,
        'sequence', s.n, 'timestamp', (extract(epoch FROM now()) * 1000)::bigint),
    now(), now()
FROM closed c JOIN seq s ON s.object_id = c.id;

INSERT INTO rail_file_numbers (method, day, last)
VALUES (:'method', current_date, cardinality(:'batches'::uuid[]))
ON CONFLICT (method, day) DO UPDATE SET last = rail_file_numbers.last + EXCLUDED.last;

WITH lines AS (
    SELECT p.batch_id, p.subaccount_id,
        left(r.first_name || ' ' || r.last_name || ' ' || p.amount || ' '
            || encode(a.data_ciphertext, 'hex'), 188) AS line,
        row_number() OVER (PARTITION BY p.batch_id ORDER BY p.created_at, p.id) AS position
    FROM payouts p
    JOIN receiver_accounts a ON a.id = p.account_id AND a.subaccount_id = p.subaccount_id
    JOIN receivers r ON r.id = p.receiver_id AND r.subaccount_id = p.subaccount_id
    WHERE p.batch_id = ANY (:'batches'::uuid[]) AND p.status = 3),
 files AS (
    SELECT batch_id, subaccount_id,
        convert_to(string_agg(line, E'\n' ORDER BY position), 'UTF8') AS bytes
    FROM lines GROUP BY batch_id, subaccount_id)
INSERT INTO rail_files (id, subaccount_id, batch_id, method, name, sha256, bytes, state,
    effective_date, created_at)
SELECT md5('reference-file' || f.batch_id)::uuid, f.subaccount_id, f.batch_id, :'method',
    'REFERENCE-' || f.batch_id || '-' || replace(:'method', '/', '-'), sha256(f.bytes), f.bytes,
    'generated', current_date, now()
FROM files f;

INSERT INTO rail_file_items (file_id, position, subaccount_id, payout_id, reference)
SELECT md5('reference-file' || p.batch_id)::uuid,
    row_number() OVER (PARTITION BY p.batch_id ORDER BY p.created_at, p.id) - 1, p.subaccount_id,
    p.id,
    '02100002' || lpad((row_number() OVER (PARTITION BY p.batch_id ORDER BY p.created_at, p.id))::text, 7, '0')
FROM payouts p
WHERE p.batch_id = ANY (:'batches'::uuid[]) AND p.status = 3;
