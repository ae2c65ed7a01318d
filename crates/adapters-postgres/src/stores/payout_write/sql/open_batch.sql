-- The open batch of a subaccount in a currency, locked against closing. 'open' is written in
-- the text, not bound: only then can the generic plan of the prepared statement use the partial
-- index batches_open (WHERE status = 'open'); with the status bound, PostgreSQL planned the
-- statement afresh on every payout (0.08 ms).
--
-- $1  uuid  the subaccount
-- $2  text  the currency
SELECT id, batch_run_time FROM batches
WHERE subaccount_id = $1 AND asset = $2 AND status = 'open' FOR SHARE
