-- Reference script of `cargo xtask bench cutoff`, step "returned" (a return file of a tenth of
-- the payouts to every return applied): the rows payoutd writes for it, in set statements. The
-- returned payouts (those whose reference `INV-<j>` has j divisible by 10, the ones the harness
-- returns) are found by their references in the files (rail_file_items), move `successful` →
-- `failed` with the bank's code and reason, get their amount back in available (a
-- payout_return ledger entry, the balance credited, the fee kept) and two events each
-- (payoutUpdated, payoutFailure), marked `receiver_is_invalid` where the code means a wrong
-- account (j divisible by 20: R03 on NACHA), whose accounts cutoff_accounts_failed.sql fails;
-- the inbound file is stored with its bytes and one bank_reports line per return
-- (InboundProcessor::process, InboundStore::record_inbound).
-- Each event joins its sequence to its object's row by primary key (see cutoff_generated.sql).
-- Run by the harness after cutoff_settled.sql in the same rolled-back transaction. Variables
-- (psql -v): batches (a uuid[] literal), method (the route).
WITH returned AS (
    SELECT p.id, p.subaccount_id, p.amount, i.reference AS line_reference, i.file_id,
        split_part(p.reference, '-', 2)::bigint % 20 = 0 AS account_invalid
    FROM payouts p
    JOIN rail_file_items i ON i.payout_id = p.id AND i.subaccount_id = p.subaccount_id
    WHERE p.batch_id = ANY (:'batches'::uuid[]) AND p.status = 4
      AND split_part(p.reference, '-', 2)::bigint % 10 = 0),
 bytes AS (
    SELECT convert_to(string_agg(rpad('6' || line_reference || amount, 94) || E'\n'
        || rpad('799R03' || line_reference, 94), E'\n' ORDER BY line_reference), 'UTF8') AS b
    FROM returned)
INSERT INTO inbound_files (id, method, name, sha256, outcome, received_at, bytes)
SELECT md5('reference-returns')::uuid, :'method', 'REFERENCE-RETURNS', sha256(b), 'read', now(), b
FROM bytes;

WITH failed AS (
    UPDATE payouts p SET status = 6, updated_at = now(),
        receiver_is_invalid = split_part(p.reference, '-', 2)::bigint % 20 = 0,
        return_code = CASE WHEN split_part(p.reference, '-', 2)::bigint % 20 = 0 THEN 'R03'
                           ELSE 'R16' END,
        failure_reason = CASE WHEN split_part(p.reference, '-', 2)::bigint % 20 = 0
                              THEN 'No account/unable to locate account'
                              ELSE 'Account frozen' END
    FROM rail_file_items i
    WHERE i.payout_id = p.id AND i.subaccount_id = p.subaccount_id
      AND p.batch_id = ANY (:'batches'::uuid[]) AND p.status = 4
      AND split_part(p.reference, '-', 2)::bigint % 10 = 0
    RETURNING p.id, p.subaccount_id, p.batch_id, p.amount, p.asset, p.receiver_id, p.account_id,
        p.reference, p.return_code, p.failure_reason, p.receiver_is_invalid, i.reference AS line,
        i.file_id),
 entries AS (
    INSERT INTO ledger_entries (id, subaccount_id, asset, kind, available_delta, pending_delta,
        payout_id, created_at)
    SELECT gen_random_uuid(), subaccount_id, asset, 'payout_return', amount, 0, id, now()
    FROM failed),
 totals AS (
    SELECT subaccount_id, asset, sum(amount) AS total FROM failed GROUP BY subaccount_id, asset),
 credited AS (
    UPDATE balances b SET available = b.available + t.total, updated_at = now()
    FROM totals t WHERE b.subaccount_id = t.subaccount_id AND b.asset = t.asset
    RETURNING b.asset),
 reports AS (
    INSERT INTO bank_reports (id, inbound_file_id, position, method, kind, reference, code, reason,
        account_invalid, amount, subaccount_id, payout_id, rail_file_id, resolution, created_at)
    SELECT gen_random_uuid(), md5('reference-returns')::uuid,
        (row_number() OVER (ORDER BY line) - 1)::int, :'method', 'returned', line, return_code,
        failure_reason, receiver_is_invalid, amount, subaccount_id, id, file_id, 'applied', now()
    FROM failed),
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
        'return_code', CASE WHEN split_part(m.reference, '-', 2)::bigint % 20 = 0 THEN 'R03'
                            ELSE 'R16' END,
        'return_reason', CASE WHEN split_part(m.reference, '-', 2)::bigint % 20 = 0
                              THEN 'No account/unable to locate account'
                              ELSE 'Account frozen' END,
        'subaccount_id', m.subaccount_id::text,
        'subccount_id', m.subaccount_id::text, 'sequence', s.n - 2 + k.k,
        'timestamp', (extract(epoch FROM now()) * 1000)::bigint),
    now(), now()
FROM seq s JOIN payouts m ON m.id = s.object_id
CROSS JOIN (VALUES (1, 'payoutUpdated'), (2, 'payoutFailure')) AS k(k, kind);
