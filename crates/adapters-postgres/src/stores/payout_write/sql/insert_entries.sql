-- Ledger entries appended in the order given (their seq follows it), one per position of the
-- arrays (the same insert is part of write_set.sql and write_set_at_once.sql).
--
-- $1  uuid[]         id                  $5  int8[]         available_delta
-- $2  uuid[]         subaccount_id       $6  int8[]         pending_delta
-- $3  text[]         asset               $7  uuid[]         payout_id
-- $4  text[]         kind                $8  timestamptz[]  created_at
INSERT INTO ledger_entries
  (id, subaccount_id, asset, kind, available_delta, pending_delta, payout_id, created_at)
SELECT id, subaccount_id, asset, kind, available_delta, pending_delta, payout_id, created_at
FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::int8[], $6::int8[],
  $7::uuid[], $8::timestamptz[]) WITH ORDINALITY
  AS e(id, subaccount_id, asset, kind, available_delta, pending_delta, payout_id, created_at, n)
ORDER BY n
