-- A set written whole in one round trip, on plain PostgreSQL: write_set.sql's writes, after
-- the reads that otherwise open its transaction, checking itself instead of answering counts,
-- so that it can be sent together with the transaction's BEGIN and COMMIT (at_once.rs):
--
-- - the parties of the payouts (the accounts of $4) locked as parties_by_key.sql locks them,
--   and each payout checked against them as decide.rs's Parties::as_planned checks it: its
--   account still its receiver's ($3), both still payable (the receiver's status none of $57,
--   the account's not $58), and the status it was planned with ($15) still the one a new
--   payout to them starts in ($59, indexed by whether the KYC is $60 and the account $61);
-- - the open batch of each currency of $62 (those whose payouts start pending; none when no
--   payout does), locked FOR SHARE in currency order as open_batch.sql locks it, still the
--   batch of $63 that runs at the time of $64 (the same position), which the payouts, their
--   events and their answers were given ($62 holds each currency once and batches_open allows
--   one open batch per currency, so every one matches exactly when as many rows match as $62
--   has);
-- - then every count write_set.sql answers, checked, the balances' last, so their rows are
--   locked for the shortest time.
--
-- The first check that fails raises `payout set refused: <why>` (the function
-- payout_set_refused), which aborts the transaction: the COMMIT sent after it then rolls it
-- back, and nothing of the set is written. "the open batch is not the one expected" makes the
-- writer forget the batches it remembered (at_once.rs, OTHER_BATCH).
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
-- $57      int2[]: the receiver statuses that may not be paid   } the rule of
-- $58      text: the account status that may not be paid         } decide.rs's
-- $59      int2[]: the status a new payout starts in, indexed    } party_status
--          by 1 + 2 * (KYC completed) + (account confirmed)      } (at_once.rs,
-- $60      int2: the completed KYC status                        } PartyRule)
-- $61      text: the confirmed confirmation status               }
-- $62      text[]: the currencies whose open batch the payouts join, in order
-- $63      uuid[]: the open batch each is expected to be
-- $64      timestamptz[]: the run time each is expected to have
WITH parties AS MATERIALIZED (SELECT ra.id AS account_id, r.id AS receiver_id,
    r.status AS receiver_status, r.kyc_status,
    ra.status AS account_status, ra.confirm_status
  FROM receivers r JOIN receiver_accounts ra ON ra.receiver_id = r.id
  WHERE r.subaccount_id IS NOT DISTINCT FROM $46 AND ra.id = ANY($4::uuid[])
    AND ra.subaccount_id IS NOT DISTINCT FROM $46
  FOR SHARE),
as_planned AS MATERIALIZED (
  SELECT count(*) AS n
  FROM unnest($4::uuid[], $3::uuid[], $15::int2[]) AS w(account_id, receiver_id, status)
  JOIN parties p ON p.account_id = w.account_id AND p.receiver_id = w.receiver_id
  WHERE p.receiver_status <> ALL ($57::int2[]) AND p.account_status <> $58::text
    AND w.status = ($59::int2[])[1 + 2 * (p.kyc_status = $60::int2)::int
      + (p.confirm_status = $61::text)::int]),
joined_batches AS MATERIALIZED (
  SELECT asset, id, batch_run_time FROM batches
  WHERE subaccount_id = $46 AND asset = ANY($62::text[]) AND status = 'open'
  ORDER BY asset FOR SHARE),
as_expected AS MATERIALIZED (
  SELECT count(*) AS n FROM joined_batches j
  JOIN unnest($62::text[], $63::uuid[], $64::timestamptz[]) AS e(asset, id, run_time)
    ON j.asset = e.asset AND j.id = e.id AND j.batch_run_time = e.run_time),
written_payouts AS (INSERT INTO payouts (id, subaccount_id, receiver_id, account_id,
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
SELECT CASE
  WHEN (SELECT n FROM as_planned) <> cardinality($4::uuid[])
    THEN payout_set_refused('a party changed since it was planned')
  WHEN (SELECT n FROM as_expected) <> cardinality($62::text[])
    THEN payout_set_refused('the open batch is not the one expected')
  WHEN (SELECT count(*) FROM marked_keys) <> cardinality($33::text[])
    THEN payout_set_refused('an idempotency key is no longer its request''s')
  WHEN (SELECT count(*) FROM admitted_nonces) <> cardinality($47::uuid[])
      OR (SELECT count(*) FROM admitted_keys) <> cardinality($50::text[])
    THEN payout_set_refused('a request could not be admitted')
  WHEN (SELECT count(*) FROM written_payouts) <> cardinality($1::uuid[])
      OR (SELECT count(*) FROM written_entries) <> cardinality($25::uuid[])
      OR (SELECT count(*) FROM written_events) <> cardinality($37::uuid[])
    THEN payout_set_refused('a part wrote fewer rows than it must')
  WHEN (SELECT count(*) FROM held) <> cardinality($43::text[])
    THEN payout_set_refused('the balance does not cover the set')
  ELSE 0 END AS refused
