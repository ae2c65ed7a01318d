-- The open batches and their payouts, by asset. `batches_due` holds the open batches; each
-- one's payouts are read through `payouts_batch (batch_id, status)`. The join is on the
-- distribution column too, so on Citus each shard counts its own and the coordinator adds
-- them up.
SELECT b.asset AS asset,
       count(DISTINCT b.id) AS batches,
       count(p.id) AS payouts
FROM batches b
LEFT JOIN payouts p ON p.subaccount_id = b.subaccount_id AND p.batch_id = b.id
WHERE b.status = 'open'
GROUP BY b.asset
ORDER BY b.asset
