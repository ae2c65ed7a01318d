-- New payout rows, one per position of the arrays (statement by statement on Citus; the same
-- insert opens write_set.sql and write_set_at_once.sql).
--
-- $1  uuid[]         id                  $13 text[]         reference
-- $2  uuid[]         subaccount_id       $14 text[]         note
-- $3  uuid[]         receiver_id         $15 int2[]         status
-- $4  uuid[]         account_id          $16 uuid[]         batch_id
-- $5  text[]         asset               $17 text[]         provider_reference
-- $6  int8[]         amount              $18 bool[]         duplicate
-- $7  int8[]         fee                 $19 timestamptz[]  created_at
-- $8  uuid[]         fee_template_id     $20 timestamptz[]  updated_at
-- $9  uuid[]         fee_group_id        $21 timestamptz[]  submitted_at
-- $10 int8[]         fee_fixed           $22 bool[]         receiver_is_invalid
-- $11 int4[]         fee_percentage      $23 text[]         failure_reason
-- $12 int8[]         fee_min_amount      $24 text[]         return_code
INSERT INTO payouts (id, subaccount_id, receiver_id, account_id, asset, amount, fee,
  fee_template_id, fee_group_id, fee_fixed, fee_percentage, fee_min_amount, reference, note,
  status, batch_id, provider_reference, duplicate, created_at, updated_at, submitted_at,
  receiver_is_invalid, failure_reason, return_code)
SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::uuid[], $5::text[], $6::int8[],
  $7::int8[], $8::uuid[], $9::uuid[], $10::int8[], $11::int4[], $12::int8[], $13::text[],
  $14::text[], $15::int2[], $16::uuid[], $17::text[], $18::bool[], $19::timestamptz[],
  $20::timestamptz[], $21::timestamptz[], $22::bool[], $23::text[], $24::text[])
