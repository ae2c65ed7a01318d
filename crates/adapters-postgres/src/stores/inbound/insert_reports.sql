-- A document's report lines, all in one statement whatever their number (one array per
-- column; `bank_reports` is a reference table on Citus).
--
-- $1  uuid     inbound_file_id      $9  text[]         reason
-- $2  text     method               $10 bool[]         account_invalid
-- $3  uuid[]   id                   $11 int8[]         amount
-- $4  int4[]   position             $12 uuid[]         subaccount_id
-- $5  text[]   kind                 $13 uuid[]         payout_id
-- $6  text[]   reference            $14 uuid[]         rail_file_id
-- $7  text[]   resolution           $15 uuid[]         contradicts
-- $8  text[]   code                 $16 timestamptz[]  created_at
INSERT INTO bank_reports (id, inbound_file_id, position, method, kind, reference, code, reason,
  account_invalid, amount, subaccount_id, payout_id, rail_file_id, resolution, contradicts,
  created_at)
SELECT l.id, $1::uuid, l.position, $2::text, l.kind, l.reference, l.code, l.reason, l.account_invalid,
  l.amount, l.subaccount_id, l.payout_id, l.rail_file_id, l.resolution, l.contradicts,
  l.created_at
FROM unnest($3::uuid[], $4::int4[], $5::text[], $6::text[], $7::text[], $8::text[],
  $9::text[], $10::bool[], $11::int8[], $12::uuid[], $13::uuid[], $14::uuid[], $15::uuid[],
  $16::timestamptz[])
  AS l(id, position, kind, reference, resolution, code, reason, account_invalid, amount,
    subaccount_id, payout_id, rail_file_id, contradicts, created_at)
