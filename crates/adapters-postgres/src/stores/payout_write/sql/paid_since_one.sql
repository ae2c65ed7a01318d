-- paid_since.sql for one triple, with scalar parameters: PostgreSQL plans a prepared statement
-- with an array afresh on every call, and settles on the generic plan with scalars.
--
-- $1  uuid         the subaccount
-- $2  timestamptz  since when
-- $3  uuid         the account
-- $4  int8         the amount, minor units
-- $5  text         the currency
SELECT $3::uuid AS account_id, $4::int8 AS amount, $5::text AS asset
WHERE EXISTS (SELECT 1 FROM payouts p WHERE p.subaccount_id = $1
  AND p.account_id = $3 AND p.amount = $4 AND p.asset = $5 AND p.created_at >= $2)
