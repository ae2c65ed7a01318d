-- Which references of $2 the subaccount $1 has already given a payout, through the partial
-- unique index on references (payouts_reference_unique, whose `reference IS NOT NULL` the
-- strict `= ANY` implies in any plan), on Citus: `=` routes it to the subaccount's shard.
--
-- $1  uuid    the subaccount
-- $2  text[]  the references of the set's payouts
SELECT reference FROM payouts WHERE subaccount_id = $1 AND reference = ANY($2::text[])
