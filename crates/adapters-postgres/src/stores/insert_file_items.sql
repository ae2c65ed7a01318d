-- A stored bank file's items, one row per payout, in one statement whatever the file's size
-- (a multi-row VALUES would need five parameters a row, and PostgreSQL takes at most 65,535).
-- $1 the file, $2 its subaccount, then the items' positions, payouts and references.
INSERT INTO rail_file_items (file_id, position, subaccount_id, payout_id, reference)
SELECT $1, item.position, $2, item.payout_id, item.reference
FROM unnest($3::integer[], $4::uuid[], $5::text[]) AS item (position, payout_id, reference)
