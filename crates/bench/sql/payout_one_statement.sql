-- pgbench reference script (run by `cargo xtask bench api`, case post-payout, beside
-- post_payout.sql): the whole durable effect of one `POST /api/payout/single` (nonce,
-- idempotency record with its stored answer, payout row, two ledger entries, event with its
-- sequence, guarded hold) as ONE statement: one round trip, one commit. Same tables, indexes and
-- rows as post_payout.sql, which runs the same work the way payoutd does. It is what the
-- database can do for a payout, not what payoutd runs: the verdict asks payoutd to reach it.
-- Variables as in post_payout.sql: keyid, sub, tag, receivers.
\set i random(0, :receivers - 1)
\set r random(1, 9000000000000000000)
\set nonce random(1000000000000, 9000000000000000000)
\set amount random(100, 99999)
WITH
 n AS (INSERT INTO request_nonces (api_key_id, nonce, subaccount_id, seen_at) VALUES ((:keyid)::uuid, :nonce, (:sub)::uuid, now()) ON CONFLICT DO NOTHING RETURNING 1),
 a AS (SELECT ra.id, ra.receiver_id, ra.asset FROM receiver_accounts ra JOIN receivers rc ON rc.id = ra.receiver_id
       WHERE ra.id = md5(:tag || 'a' || :i)::uuid AND ra.subaccount_id = (:sub)::uuid AND rc.subaccount_id = (:sub)::uuid FOR SHARE),
 f AS (SELECT ft.id, ft.group_id, ft.fixed, ft.percentage, ft.min_amount,
              greatest(ft.fixed + ((:amount)::bigint * ft.percentage + 500000) / 1000000, ft.min_amount) AS fee
       FROM fee_templates ft, a WHERE ft.subaccount_id = (:sub)::uuid AND ft.asset = a.asset),
 bt AS (SELECT b.id, b.batch_run_time FROM batches b, a WHERE b.subaccount_id = (:sub)::uuid AND b.asset = a.asset AND b.status = 'open' LIMIT 1 FOR SHARE),
 d AS (SELECT EXISTS (SELECT 1 FROM payouts p, a WHERE p.subaccount_id = (:sub)::uuid AND p.account_id = a.id AND p.amount = (:amount)::bigint AND p.asset = a.asset AND p.created_at >= now() - interval '24 hours') AS dup),
 hold AS (UPDATE balances bl SET available = bl.available - ((:amount)::bigint + f.fee), pending = bl.pending + ((:amount)::bigint + f.fee), updated_at = now()
          FROM a, f WHERE bl.subaccount_id = (:sub)::uuid AND bl.asset = a.asset AND bl.available >= (:amount)::bigint + f.fee RETURNING 1),
 p AS (INSERT INTO payouts (id, subaccount_id, receiver_id, account_id, asset, amount, fee, fee_template_id, fee_group_id, fee_fixed, fee_percentage, fee_min_amount, reference, note, status, batch_id, provider_reference, duplicate, created_at, updated_at, submitted_at, receiver_is_invalid, failure_reason)
       SELECT md5('np' || :r)::uuid, (:sub)::uuid, a.receiver_id, a.id, a.asset, (:amount)::bigint, f.fee, f.id, f.group_id, f.fixed, f.percentage, f.min_amount, 'PGB1-' || :r, 'bench', 1, bt.id, '', d.dup, now(), now(), NULL, false, NULL
       FROM a, f, bt, d, hold RETURNING id, asset, fee, batch_id),
 l AS (INSERT INTO ledger_entries (id, subaccount_id, asset, kind, available_delta, pending_delta, payout_id, created_at)
       SELECT md5('nh' || :r)::uuid, (:sub)::uuid, p.asset, 'payout_hold', -(:amount::bigint), :amount::bigint, p.id, now() FROM p
       UNION ALL SELECT md5('nf' || :r)::uuid, (:sub)::uuid, p.asset, 'fee_hold', -p.fee, p.fee, p.id, now() FROM p),
 k AS (INSERT INTO idempotency_keys (subaccount_id, idempotency_key, request_hash, state, response_status, response_body, created_at, expires_at, locked_until, committed)
       SELECT (:sub)::uuid, 'pgb1-' || :r, decode(md5(:r::text) || md5(:nonce::text), 'hex'), 'completed', 200,
              convert_to('{"message":"Payout created successfully","payload":{"payout_id":"' || p.id || '"}}', 'UTF8'), now(), now() + interval '24 hours', NULL, true FROM p),
 s AS (INSERT INTO outbox_sequences (object_id, subaccount_id, last_sequence) SELECT p.id, (:sub)::uuid, 1 FROM p RETURNING last_sequence AS n)
INSERT INTO outbox_events (id, subaccount_id, object_id, sequence, event_type, payload, created_at, next_attempt_at)
SELECT md5('ne' || :r)::uuid, (:sub)::uuid, p.id, s.n, 'payoutCreated',
       jsonb_build_object('event', 'payoutCreated', 'event_id', md5('ne' || :r)::uuid::text, 'payout_id', p.id::text, 'amount', :amount::bigint, 'currency', p.asset, 'batch_id', p.batch_id::text, 'receiver_id', (SELECT receiver_id FROM a)::text, 'reference', 'PGB1-' || :r, 'status', 'pending', 'subaccount_id', (:sub)::uuid::text, 'subccount_id', (:sub)::uuid::text, 'sequence', s.n, 'timestamp', (extract(epoch FROM now()) * 1000)::bigint),
       now(), now() + interval '10 years'
FROM p, s;
