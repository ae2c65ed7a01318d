-- Bank report lines of kind `returned` read at or after $1, by method (`bank_reports` is a
-- reference table on Citus: this runs on one node).
SELECT method,
       count(*) AS count,
       coalesce(sum(amount), 0)::int8 AS amount
FROM bank_reports
WHERE kind = 'returned' AND created_at >= $1
GROUP BY method
ORDER BY method
