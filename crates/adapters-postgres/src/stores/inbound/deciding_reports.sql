-- The line that decided each (payout, file) asked, as `deciding_report` finds one: the newest
-- applied line naming the payout, or settling or rejecting the whole file (without a payout,
-- also accepting it); the payout's own line when both are as new. One row per query that has
-- one, numbered from 1 in the order asked (`bank_reports` is a reference table on Citus: this
-- runs on one node). Each side reads one row by its partial index (`bank_reports_payout`,
-- `bank_reports_file_lines`).
--
-- $1  uuid[]  payout (null: the whole file)
-- $2  uuid[]  file
SELECT q.n AS query, d.id, d.kind
FROM unnest($1::uuid[], $2::uuid[]) WITH ORDINALITY AS q(payout_id, rail_file_id, n)
CROSS JOIN LATERAL (
  SELECT c.id, c.kind
  FROM (
    (SELECT r.id, r.kind, r.created_at, 0 AS own
     FROM bank_reports r
     WHERE r.payout_id IS NULL AND r.rail_file_id = q.rail_file_id
       AND r.resolution = 'applied'
       AND (r.kind IN ('file_settled', 'file_rejected')
            OR (r.kind = 'file_accepted' AND q.payout_id IS NULL))
     ORDER BY r.created_at DESC, r.position DESC
     LIMIT 1)
    UNION ALL
    (SELECT r.id, r.kind, r.created_at, 1 AS own
     FROM bank_reports r
     WHERE r.payout_id = q.payout_id AND r.resolution = 'applied'
     ORDER BY r.created_at DESC, r.position DESC
     LIMIT 1)
  ) c
  ORDER BY c.created_at DESC, c.own DESC
  LIMIT 1
) d
