-- The accounts a set of payout failures fails (`receiver_is_invalid`), each only where it is not
-- failed already; returns the ids of those it failed (their `accountUpdate` is written, the
-- others' not). Each account once in the arrays.
--
-- $1  uuid[]         account id
-- $2  uuid[]         subaccount_id
-- $3  timestamptz[]  updated_at
-- $4  text           the failed status
UPDATE receiver_accounts a SET status = $4, updated_at = f.updated_at
FROM unnest($1::uuid[], $2::uuid[], $3::timestamptz[]) AS f(id, subaccount_id, updated_at)
WHERE a.id = f.id AND a.subaccount_id = f.subaccount_id AND a.status <> $4
RETURNING a.id
