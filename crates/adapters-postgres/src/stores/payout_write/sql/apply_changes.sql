-- A set of payouts moved, each only from the status it must still have; the row count says
-- how many moved.
--
-- $1  uuid[]         id                  $6  uuid[]         batch_id
-- $2  uuid[]         subaccount_id       $7  timestamptz[]  submitted_at
-- $3  int2[]         expected status     $8  bool[]         receiver_is_invalid
-- $4  int2[]         new status          $9  text[]         failure_reason
-- $5  timestamptz[]  updated_at          $10 text[]         return_code
UPDATE payouts p SET status = i.status, updated_at = i.updated_at, batch_id = i.batch_id,
  submitted_at = i.submitted_at, receiver_is_invalid = i.receiver_is_invalid,
  failure_reason = i.failure_reason, return_code = i.return_code
FROM unnest($1::uuid[], $2::uuid[], $3::int2[], $4::int2[], $5::timestamptz[], $6::uuid[],
  $7::timestamptz[], $8::bool[], $9::text[], $10::text[])
  AS i(id, subaccount_id, expected, status, updated_at, batch_id, submitted_at,
    receiver_is_invalid, failure_reason, return_code)
WHERE p.id = i.id AND p.subaccount_id = i.subaccount_id AND p.status = i.expected
