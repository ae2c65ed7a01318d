-- taken_references.sql on plain PostgreSQL, comparing the subaccount as parties_by_key.sql
-- does: the generic plan finds the references through payouts_reference_unique, which leads
-- with the reference, never by scanning the subaccount's payouts.
--
-- $1  uuid    the subaccount
-- $2  text[]  the references of the set's payouts
SELECT reference FROM payouts
WHERE subaccount_id IS NOT DISTINCT FROM $1 AND reference = ANY($2::text[])
