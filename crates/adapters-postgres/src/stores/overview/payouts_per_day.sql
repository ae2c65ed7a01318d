-- Payouts created in [$1, $2), by UTC day of creation and current status. Joined to the
-- subaccounts (a small table, a reference table on Citus) so that the planner may read each
-- subaccount's window through `payouts_page (subaccount_id, created_at DESC, id DESC)` instead
-- of scanning `payouts`; either way every payout of the window is read (no index is kept for
-- this page: one would cost every payout write). On Citus each shard counts its own, the
-- coordinator adds them up.
SELECT (p.created_at AT TIME ZONE 'UTC')::date AS day,
       p.status AS status,
       count(*) AS count
FROM subaccounts s
JOIN payouts p ON p.subaccount_id = s.id
WHERE p.created_at >= $1 AND p.created_at < $2
GROUP BY 1, 2
ORDER BY 1, 2
