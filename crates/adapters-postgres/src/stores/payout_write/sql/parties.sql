-- The receiver and account of each account of $2 that is the subaccount $1's, locked
-- FOR SHARE as a single payout locks them: on Citus, where comparing the subaccount with `=`
-- (on both tables: `ra.subaccount_id = $1` is implied by the receiver's, and said so that
-- Citus routes the lock to one shard) sends the statement to the subaccount's shard.
--
-- $1  uuid    the subaccount
-- $2  uuid[]  the accounts of the set's payouts
SELECT ra.id AS account_id, r.id AS receiver_id, r.status AS receiver_status, r.kyc_status,
  ra.status AS account_status, ra.confirm_status
FROM receivers r JOIN receiver_accounts ra ON ra.receiver_id = r.id
WHERE r.subaccount_id = $1 AND ra.id = ANY($2::uuid[]) AND ra.subaccount_id = $1
FOR SHARE
