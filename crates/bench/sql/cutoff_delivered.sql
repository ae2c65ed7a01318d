-- Reference script of `cargo xtask bench cutoff`, step "delivered" (every event of the run
-- delivered to the webhook receiver): the rows payoutd's delivery writes for them, in set
-- statements: every pending event of the subaccounts claimed (its lease), then marked
-- delivered with one webhook_attempts row each (DeliveryStore's claim and record). The HTTP
-- requests themselves are not in it: the delivery scenario measures those.
-- Run by the harness after cutoff_returned.sql in the same rolled-back transaction, so the
-- events of the other steps' references are among those delivered. Variables (psql -v):
-- subaccounts (a uuid[] literal).
UPDATE outbox_events SET claimed_until = now() + interval '30 seconds'
WHERE status = 'pending' AND subaccount_id = ANY (:'subaccounts'::uuid[]);

WITH delivered AS (
    UPDATE outbox_events SET status = 'delivered', attempts = attempts + 1, delivered_at = now(),
        claimed_until = NULL
    WHERE status = 'pending' AND subaccount_id = ANY (:'subaccounts'::uuid[])
    RETURNING id, subaccount_id)
INSERT INTO webhook_attempts (event_id, attempt, subaccount_id, attempted_at, outcome,
    status_code, latency_ms)
SELECT id, 1, subaccount_id, now(), 'delivered', 200, 1 FROM delivered;
