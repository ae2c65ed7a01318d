-- The (account, amount, currency) triples the subaccount paid since a time: the duplicate
-- warning of a planning read of several payouts.
--
-- $1  uuid         the subaccount
-- $2  timestamptz  since when
-- $3  uuid[]       the accounts
-- $4  int8[]       the amounts, minor units
-- $5  text[]       the currencies
SELECT DISTINCT q.account_id, q.amount, q.asset
FROM unnest($3::uuid[], $4::int8[], $5::text[]) AS q(account_id, amount, asset)
WHERE EXISTS (SELECT 1 FROM payouts p WHERE p.subaccount_id = $1
  AND p.account_id = q.account_id AND p.amount = q.amount AND p.asset = q.asset
  AND p.created_at >= $2)
