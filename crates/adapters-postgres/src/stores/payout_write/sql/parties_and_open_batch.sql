-- What a set written whole in three round trips reads first, in one statement, on plain
-- PostgreSQL: its parties as parties_by_key.sql reads and locks them, and the open batch of its
-- one currency locked FOR SHARE as open_batch.sql locks it ('open' in the text, so that the
-- generic plan uses the partial index batches_open). One row per party, each carrying the
-- batch (or one row of nulls but the batch, when no party is the subaccount's): a statement
-- fewer per group than reading them apart.
--
-- $1  uuid    the subaccount
-- $2  uuid[]  the accounts of the set's payouts
-- $3  text    the currency whose open batch the payouts join
WITH parties AS (SELECT ra.id AS account_id, r.id AS receiver_id,
    r.status AS receiver_status, r.kyc_status,
    ra.status AS account_status, ra.confirm_status
  FROM receivers r JOIN receiver_accounts ra ON ra.receiver_id = r.id
  WHERE r.subaccount_id IS NOT DISTINCT FROM $1 AND ra.id = ANY($2::uuid[])
    AND ra.subaccount_id IS NOT DISTINCT FROM $1
  FOR SHARE),
open_batch AS (
  SELECT id, batch_run_time FROM batches
  WHERE subaccount_id = $1 AND asset = $3 AND status = 'open' FOR SHARE)
SELECT p.account_id, p.receiver_id, p.receiver_status, p.kyc_status, p.account_status,
  p.confirm_status, b.id AS batch_id, b.batch_run_time
FROM (VALUES (1)) AS one (n) LEFT JOIN parties p ON true LEFT JOIN open_batch b ON true
