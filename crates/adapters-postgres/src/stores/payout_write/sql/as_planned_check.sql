-- Test only (at_once.rs): write_set_at_once.sql's check of a payout against its parties
-- (as_planned), over every combination of party statuses ($6–$9, numbered n) and every status
-- a payout could have been planned with ($10): the pairs it accepts.
--
-- $1–$5  the rule, as write_set_at_once.sql's $57–$61 (PartyRule)
-- $6     int2[]  receiver statuses      $8  text[]  account statuses
-- $7     int2[]  KYC statuses           $9  text[]  confirmation statuses
-- $10    int2[]  planned payout statuses
SELECT p.n, w.status
FROM unnest($6::int2[], $7::int2[], $8::text[], $9::text[]) WITH ORDINALITY
  AS p(receiver_status, kyc_status, account_status, confirm_status, n)
CROSS JOIN unnest($10::int2[]) AS w(status)
WHERE p.receiver_status <> ALL ($1::int2[]) AND p.account_status <> $2::text
  AND w.status = ($3::int2[])[1 + 2 * (p.kyc_status = $4::int2)::int
    + (p.confirm_status = $5::text)::int]
ORDER BY p.n, w.status
