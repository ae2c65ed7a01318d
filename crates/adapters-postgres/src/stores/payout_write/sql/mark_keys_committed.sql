-- The requests' idempotency keys marked committed where their claims still hold, each
-- completed with its answer when it has one (the set form of the marking a single payout's
-- event statement does). The subaccount is one value, not a column of the set, so on Citus the
-- statement goes to that subaccount's shard alone.
--
-- `i.idempotency_key = ANY($2)` repeats the join's condition so that both columns of the
-- primary key bound the scan of idempotency_keys in any plan. Without it, the generic plan
-- PostgreSQL settled on while the table was small read every key of the subaccount (a bitmap
-- scan on `subaccount_id = $1` alone) and matched them to the set afterwards: 2.4 ms per group,
-- growing with the subaccount's keys, against 0.1 ms.
--
-- $1  uuid           the subaccount
-- $2  text[]         the keys
-- $3  timestamptz[]  each claim's lease (a key whose lease changed is no longer its request's)
-- $4  int2[]         each answer's HTTP status, null where it does not render
-- $5  bytea[]        each answer's body, null where it does not render
UPDATE idempotency_keys i SET committed = true,
  state = CASE WHEN k.status IS NULL THEN i.state ELSE 'completed' END,
  response_status = k.status, response_body = k.body,
  locked_until = CASE WHEN k.status IS NULL THEN i.locked_until END
FROM unnest($2::text[], $3::timestamptz[], $4::int2[], $5::bytea[])
  AS k(idempotency_key, lease, status, body)
WHERE i.subaccount_id = $1 AND i.idempotency_key = ANY($2::text[])
  AND i.idempotency_key = k.idempotency_key AND i.locked_until = k.lease
  AND i.state = 'in_progress'
