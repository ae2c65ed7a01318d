-- A set's writes as one statement, on plain PostgreSQL (a decided set, or one written whole in
-- three round trips), for the subaccount $46:
--
-- - the payouts and their ledger entries;
-- - the requests' keys marked committed with their answers (as mark_keys_committed.sql);
-- - the events with their sequence numbers. When the subaccount has no enabled postback URL
--   they are given up as they are written: exhausted, with a skipped attempt whose error is
--   $56, as the delivery claim would give them up at once (a new event is due as it is
--   written). That spares each one an update of its row and a claim;
-- - each currency's sum held (as hold_sums.sql), each balance row locked first in currency
--   order, as decide.rs locks them. One update of several rows locks them in the order its plan
--   meets them, which follows where their latest versions lie, so two sets of the same
--   currencies written at once could otherwise each hold the row the other waits for;
-- - the requests it admits: their nonces recorded and their keys inserted, completed with
--   their answers. A nonce or key there already (committed, or written by a transaction this
--   statement waited for) is left alone and shows in the counts.
--
-- It answers how many rows each part touched (SetWritten). The foreign keys of the entries,
-- events and attempts are checked as the statement ends, when its payouts and events are
-- written.
--
-- The rows (params.rs, SetParams::bind binds them in this order):
--
-- $1–$24   payouts, as insert_payouts.sql's $1–$24 (id, subaccount_id, receiver_id,
--          account_id, asset, amount, fee, fee_template_id, fee_group_id, fee_fixed,
--          fee_percentage, fee_min_amount, reference, note, status, batch_id,
--          provider_reference, duplicate, created_at, updated_at, submitted_at,
--          receiver_is_invalid, failure_reason, return_code)
-- $25–$32  ledger entries, as insert_entries.sql's $1–$8 (id, subaccount_id, asset, kind,
--          available_delta, pending_delta, payout_id, created_at)
-- $33–$36  keys marked committed, as mark_keys_committed.sql's $2–$5 (key, lease, answer
--          status, answer body)
-- $37–$42  events: id uuid[], subaccount_id uuid[], object_id uuid[], event_type text[],
--          payload jsonb[], created_at timestamptz[]
-- $43–$45  each currency's hold, as hold_sums.sql's $2–$4 (currency, sum, latest time)
-- $46      uuid: the subaccount
-- $47–$49  admitted nonces: api_key_id uuid[], nonce int8[], seen_at timestamptz[]
-- $50–$55  admitted keys: idempotency_key text[], request_hash bytea[], created_at
--          timestamptz[], expires_at timestamptz[], response_status int2[], response_body
--          bytea[]
-- $56      text: the error of a skipped attempt (no enabled postback URL)
WITH written_payouts AS (INSERT INTO payouts (id, subaccount_id, receiver_id, account_id,
    asset, amount, fee, fee_template_id, fee_group_id, fee_fixed, fee_percentage, fee_min_amount, reference, note,
    status, batch_id, provider_reference, duplicate, created_at, updated_at, submitted_at,
    receiver_is_invalid, failure_reason, return_code)
  SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::uuid[], $5::text[], $6::int8[],
    $7::int8[], $8::uuid[], $9::uuid[], $10::int8[], $11::int4[], $12::int8[], $13::text[],
    $14::text[], $15::int2[], $16::uuid[], $17::text[], $18::bool[], $19::timestamptz[],
    $20::timestamptz[], $21::timestamptz[], $22::bool[], $23::text[], $24::text[])
  RETURNING 1),
written_entries AS (
  INSERT INTO ledger_entries
    (id, subaccount_id, asset, kind, available_delta, pending_delta, payout_id, created_at)
  SELECT id, subaccount_id, asset, kind, available_delta, pending_delta, payout_id, created_at
  FROM unnest($25::uuid[], $26::uuid[], $27::text[], $28::text[], $29::int8[], $30::int8[],
    $31::uuid[], $32::timestamptz[]) WITH ORDINALITY
    AS e(id, subaccount_id, asset, kind, available_delta, pending_delta, payout_id, created_at,
      n)
  ORDER BY n
  RETURNING 1),
marked_keys AS (
  UPDATE idempotency_keys i SET committed = true,
    state = CASE WHEN k.status IS NULL THEN i.state ELSE 'completed' END,
    response_status = k.status, response_body = k.body,
    locked_until = CASE WHEN k.status IS NULL THEN i.locked_until END
  FROM unnest($33::text[], $34::timestamptz[], $35::int2[], $36::bytea[])
    AS k(idempotency_key, lease, status, body)
  WHERE i.subaccount_id = $46 AND i.idempotency_key = ANY($33::text[])
    AND i.idempotency_key = k.idempotency_key AND i.locked_until = k.lease
    AND i.state = 'in_progress'
  RETURNING 1),
admitted_nonces AS (
  INSERT INTO request_nonces (api_key_id, nonce, subaccount_id, seen_at)
  SELECT n.api_key_id, n.nonce, $46, n.seen_at
  FROM unnest($47::uuid[], $48::int8[], $49::timestamptz[]) AS n(api_key_id, nonce, seen_at)
  ON CONFLICT DO NOTHING RETURNING 1),
admitted_keys AS (
  INSERT INTO idempotency_keys (subaccount_id, idempotency_key, request_hash, state,
    response_status, response_body, created_at, expires_at, locked_until, committed)
  SELECT $46, k.idempotency_key, k.request_hash, 'completed', k.status, k.body, k.at,
    k.expires_at, NULL, true
  FROM unnest($50::text[], $51::bytea[], $52::timestamptz[], $53::timestamptz[],
    $54::int2[], $55::bytea[])
    AS k(idempotency_key, request_hash, at, expires_at, status, body)
  ON CONFLICT DO NOTHING RETURNING 1),
input AS (
  SELECT * FROM unnest($37::uuid[], $38::uuid[], $39::uuid[], $40::text[], $41::jsonb[],
    $42::timestamptz[]) WITH ORDINALITY
    AS i(id, subaccount_id, object_id, event_type, payload, created_at, n)),
wanted AS (
  SELECT object_id, (array_agg(subaccount_id))[1] AS subaccount_id, count(*)::int AS k
  FROM input GROUP BY object_id),
seq AS (
  INSERT INTO outbox_sequences (object_id, subaccount_id, last_sequence)
  SELECT object_id, subaccount_id, k FROM wanted ORDER BY object_id
  ON CONFLICT ON CONSTRAINT outbox_sequences_pkey DO UPDATE
    SET last_sequence = outbox_sequences.last_sequence + EXCLUDED.last_sequence
  RETURNING object_id, last_sequence),
numbered AS (
  SELECT i.*, s.last_sequence - w.k
      + row_number() OVER (PARTITION BY i.object_id ORDER BY i.n)::int AS sequence
  FROM input i JOIN wanted w USING (object_id) JOIN seq s USING (object_id)),
delivery AS MATERIALIZED (
  SELECT coalesce((
    SELECT s.postback_url IS NOT NULL AND w.disabled_at IS NULL
    FROM subaccounts s LEFT JOIN webhook_endpoints w ON w.subaccount_id = s.id
    WHERE s.id = $46), true) AS deliverable),
written_events AS (
  INSERT INTO outbox_events (id, subaccount_id, object_id, sequence, event_type, payload,
    created_at, next_attempt_at, status, attempts, last_error)
  SELECT n.id, n.subaccount_id, n.object_id, n.sequence, n.event_type,
    n.payload || jsonb_build_object('sequence', n.sequence), n.created_at, n.created_at,
    CASE WHEN d.deliverable THEN 'pending' ELSE 'exhausted' END,
    CASE WHEN d.deliverable THEN 0 ELSE 1 END,
    CASE WHEN d.deliverable THEN NULL ELSE $56 END
  FROM numbered n CROSS JOIN delivery d ORDER BY n.n
  RETURNING id, subaccount_id, created_at, status),
skipped_attempts AS (
  INSERT INTO webhook_attempts (event_id, attempt, subaccount_id, attempted_at, outcome,
    status_code, latency_ms, error)
  SELECT id, 1, subaccount_id, created_at, 'skipped', NULL, 0, $56
  FROM written_events WHERE status = 'exhausted'),
balances_in_order AS (
  SELECT asset FROM balances WHERE subaccount_id = $46 AND asset = ANY($43::text[])
  ORDER BY asset FOR NO KEY UPDATE),
held AS (
  UPDATE balances b SET available = b.available - h.total, pending = b.pending + h.total,
    updated_at = h.at
  FROM unnest($43::text[], $44::int8[], $45::timestamptz[]) AS h(asset, total, at),
    balances_in_order o
  WHERE b.subaccount_id = $46 AND b.asset = h.asset AND o.asset = h.asset
    AND b.available >= h.total
  RETURNING 1)
-- end of writes (the text from written_payouts to here is the same in write_set.sql and
-- write_set_at_once.sql: a unit test compares them)
SELECT (SELECT count(*) FROM written_payouts) AS payouts,
  (SELECT count(*) FROM written_entries) AS entries,
  (SELECT count(*) FROM marked_keys) AS keys,
  (SELECT count(*) FROM admitted_nonces) AS nonces,
  (SELECT count(*) FROM admitted_keys) AS admitted_keys,
  (SELECT count(*) FROM written_events) AS events,
  (SELECT count(*) FROM held) AS balances
