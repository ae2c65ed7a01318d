-- Each currency's sum moved from available to pending, never below zero (a set's hold,
-- statement by statement on Citus). The row count says how many balances covered their sum.
--
-- $1  uuid           the subaccount
-- $2  text[]         the currencies
-- $3  int8[]         each currency's sum, minor units
-- $4  timestamptz[]  each currency's latest payout time (the balance's updated_at)
UPDATE balances b SET available = b.available - h.total, pending = b.pending + h.total,
  updated_at = h.at
FROM unnest($2::text[], $3::int8[], $4::timestamptz[]) AS h(asset, total, at)
WHERE b.subaccount_id = $1 AND b.asset = h.asset AND b.available >= h.total
