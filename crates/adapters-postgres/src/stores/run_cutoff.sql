-- An operator's cut-off now (`payoutd admin run-cutoff`): every open batch of the currency $1
-- that holds a pending payout (status code $3) runs at $2, or keeps its earlier run time when
-- it was due already. The serving instances' batch job closes and files them at its next pass.
UPDATE batches AS b
   SET batch_run_time = LEAST(b.batch_run_time, $2)
 WHERE b.asset = $1
   AND b.status = 'open'
   AND EXISTS (
       SELECT 1
         FROM payouts AS p
        WHERE p.subaccount_id = b.subaccount_id
          AND p.batch_id = b.id
          AND p.status = $3
   )
RETURNING b.id
