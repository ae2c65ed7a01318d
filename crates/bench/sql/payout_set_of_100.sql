-- pgbench reference script (run by `cargo xtask bench api`, case bulk-payout): 100 payouts of
-- one subaccount in ONE statement and one commit, what the database can do for a
-- `POST /api/payout/bulk` of 100 items (or for 100 concurrent single requests grouped by the
-- server). Per payout the same rows as payout_one_statement.sql (payout, two ledger entries,
-- idempotency record, event with its sequence; one nonce per request), the guarded hold taken
-- once per currency for the set. Variables, passed by the bench: keyid, sub, tag, receivers.
\set r random(1, 2000000000)
\set nonce random(1000000000000, 9000000000000000000)
WITH
 n AS (INSERT INTO request_nonces (api_key_id, nonce, subaccount_id, seen_at) VALUES ((:keyid)::uuid, :nonce, (:sub)::uuid, now()) ON CONFLICT DO NOTHING RETURNING 1),
 req AS (SELECT g, md5(:tag || 'a' || ((:r::bigint + g * 7919) % :receivers))::uuid AS aid, (100 + (:r::bigint + g * 104729) % 99900)::bigint AS amount,
                md5('np' || :r || '-' || g)::uuid AS pid FROM generate_series(1, 100) g),
 a AS (SELECT req.*, ra.receiver_id, ra.asset FROM req JOIN receiver_accounts ra ON ra.id = req.aid AND ra.subaccount_id = (:sub)::uuid
       JOIN receivers rc ON rc.id = ra.receiver_id AND rc.subaccount_id = (:sub)::uuid),
 f AS (SELECT a.*, ft.id AS ft_id, ft.group_id, ft.fixed, ft.percentage, ft.min_amount,
              greatest(ft.fixed + (a.amount * ft.percentage + 500000) / 1000000, ft.min_amount) AS fee
       FROM a JOIN fee_templates ft ON ft.subaccount_id = (:sub)::uuid AND ft.asset = a.asset),
 tot AS (SELECT asset, sum(amount + fee) AS total FROM f GROUP BY asset),
 hold AS (UPDATE balances bl SET available = bl.available - tot.total, pending = bl.pending + tot.total, updated_at = now()
          FROM tot WHERE bl.subaccount_id = (:sub)::uuid AND bl.asset = tot.asset AND bl.available >= tot.total RETURNING bl.asset),
 bt AS (SELECT DISTINCT ON (b.asset) b.asset, b.id FROM batches b WHERE b.subaccount_id = (:sub)::uuid AND b.status = 'open'),
 p AS (INSERT INTO payouts (id, subaccount_id, receiver_id, account_id, asset, amount, fee, fee_template_id, fee_group_id, fee_fixed, fee_percentage, fee_min_amount, reference, note, status, batch_id, provider_reference, duplicate, created_at, updated_at, submitted_at, receiver_is_invalid, failure_reason)
       SELECT f.pid, (:sub)::uuid, f.receiver_id, f.aid, f.asset, f.amount, f.fee, f.ft_id, f.group_id, f.fixed, f.percentage, f.min_amount, 'PGS-' || :r || '-' || f.g, 'bench', 1, bt.id, '', false, now(), now(), NULL, false, NULL
       FROM f JOIN hold ON hold.asset = f.asset LEFT JOIN bt ON bt.asset = f.asset RETURNING id, asset, amount, fee, batch_id, receiver_id, account_id, reference),
 l AS (INSERT INTO ledger_entries (id, subaccount_id, asset, kind, available_delta, pending_delta, payout_id, created_at)
       SELECT md5('nh' || p.id::text)::uuid, (:sub)::uuid, p.asset, 'payout_hold', -p.amount, p.amount, p.id, now() FROM p
       UNION ALL SELECT md5('nf' || p.id::text)::uuid, (:sub)::uuid, p.asset, 'fee_hold', -p.fee, p.fee, p.id, now() FROM p),
 k AS (INSERT INTO idempotency_keys (subaccount_id, idempotency_key, request_hash, state, response_status, response_body, created_at, expires_at, locked_until, committed)
       SELECT (:sub)::uuid, 'pgs-' || p.id, decode(md5(p.id::text) || md5(:nonce::text), 'hex'), 'completed', 200,
              convert_to('{"message":"Payout created successfully","payload":{"payout_id":"' || p.id || '"}}', 'UTF8'), now(), now() + interval '24 hours', NULL, true FROM p),
 s AS (INSERT INTO outbox_sequences (object_id, subaccount_id, last_sequence) SELECT p.id, (:sub)::uuid, 1 FROM p RETURNING object_id, last_sequence AS n)
INSERT INTO outbox_events (id, subaccount_id, object_id, sequence, event_type, payload, created_at, next_attempt_at)
SELECT md5('ne' || p.id::text)::uuid, (:sub)::uuid, p.id, s.n, 'payoutCreated',
       jsonb_build_object('event', 'payoutCreated', 'event_id', md5('ne' || p.id::text)::uuid::text, 'payout_id', p.id::text, 'amount', p.amount, 'currency', p.asset, 'batch_id', p.batch_id::text, 'receiver_id', p.receiver_id::text, 'receiver_account_id', p.account_id::text, 'reference', p.reference, 'status', 'pending', 'subaccount_id', (:sub)::text, 'subccount_id', (:sub)::text, 'sequence', s.n, 'timestamp', (extract(epoch FROM now()) * 1000)::bigint),
       now(), now() + interval '10 years'
FROM p JOIN s ON s.object_id = p.id;
