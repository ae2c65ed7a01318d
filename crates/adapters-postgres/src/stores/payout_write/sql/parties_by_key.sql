-- parties.sql on plain PostgreSQL: the subaccount compared with IS NOT DISTINCT FROM (the same
-- as `=` for these non-null columns), which no index serves. A generic plan estimates "the rows
-- of this subaccount" as the average subaccount's; for a merchant much larger than the average,
-- a scan of all its receivers by an index on subaccount_id then looked cheaper than a lookup per
-- key, and read thousands of rows to find a handful. In this form the accounts are found by
-- primary key whatever the subaccount's size.
--
-- $1  uuid    the subaccount
-- $2  uuid[]  the accounts of the set's payouts
SELECT ra.id AS account_id, r.id AS receiver_id, r.status AS receiver_status, r.kyc_status,
  ra.status AS account_status, ra.confirm_status
FROM receivers r JOIN receiver_accounts ra ON ra.receiver_id = r.id
WHERE r.subaccount_id IS NOT DISTINCT FROM $1 AND ra.id = ANY($2::uuid[])
  AND ra.subaccount_id IS NOT DISTINCT FROM $1
FOR SHARE
