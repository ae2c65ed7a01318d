ALTER TABLE idempotency_keys DROP COLUMN locked_until, DROP COLUMN committed;
DROP INDEX payouts_waiting;
DROP INDEX payouts_batch;
ALTER TABLE payouts
    DROP CONSTRAINT payouts_batch,
    DROP COLUMN submitted_at,
    DROP COLUMN receiver_is_invalid,
    DROP COLUMN failure_reason;
DROP TABLE batches;
