-- Subaccounts with a webhook URL and events written at or after $1 that are being retried after
-- a failed attempt (`pending` with one attempt or more) or were given up (`exhausted`), newest
-- first, at most $2. (A subaccount without a URL has its events given up at once, by design.) Grouped by the distribution column, so on Citus each shard answers for its subaccounts
-- whole; `webhook_endpoints` is colocated. The join to the subaccounts lets the planner read
-- each subaccount's window through `outbox_events_subaccount (subaccount_id, created_at)`.
SELECT e.subaccount_id AS subaccount_id,
       s.name AS name,
       count(*) FILTER (WHERE e.status = 'pending') AS retrying,
       count(*) FILTER (WHERE e.status = 'exhausted') AS exhausted,
       max(e.created_at) AS latest,
       (array_agg(e.last_error ORDER BY e.created_at DESC))[1] AS last_error,
       max(w.disabled_at) AS disabled_at
FROM subaccounts s
JOIN outbox_events e ON e.subaccount_id = s.id
LEFT JOIN webhook_endpoints w ON w.subaccount_id = e.subaccount_id
WHERE s.postback_url IS NOT NULL
  AND e.created_at >= $1
  AND (e.status = 'exhausted' OR (e.status = 'pending' AND e.attempts > 0))
GROUP BY e.subaccount_id, s.name
ORDER BY latest DESC, e.subaccount_id
LIMIT $2
