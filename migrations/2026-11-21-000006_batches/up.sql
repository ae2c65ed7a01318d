-- Batches and the payout rail (docs/ARCHITECTURE.md, Money). A payout that becomes `pending` joins
-- the open batch of its (subaccount, asset), creating it when there is none; a background job
-- closes due batches, submits their payouts to the rail and records the rail's results.
CREATE TABLE batches (
    id uuid PRIMARY KEY,
    subaccount_id uuid NOT NULL REFERENCES subaccounts (id),
    asset text NOT NULL,
    status text NOT NULL CHECK (status IN ('open', 'queue', 'in_progress', 'settled', 'failed', 'cancelled')),
    batch_run_time timestamptz NOT NULL,
    -- Fixed when the batch closes: the payouts submitted and their amounts.
    total_tx integer NOT NULL DEFAULT 0,
    amount bigint NOT NULL DEFAULT 0,
    -- Grows as the rail reports: what was paid, and how many failed.
    process_amount bigint NOT NULL DEFAULT 0,
    total_failed integer NOT NULL DEFAULT 0,
    -- The lease of the job instance submitting a `queue` batch; also identifies its claim.
    claimed_until timestamptz,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL
);
-- At most one open batch per (subaccount, asset): concurrent joiners converge on it.
CREATE UNIQUE INDEX batches_open ON batches (subaccount_id, asset) WHERE status = 'open';
CREATE INDEX batches_due ON batches (batch_run_time) WHERE status = 'open';
CREATE INDEX batches_queue ON batches (claimed_until) WHERE status = 'queue';
CREATE INDEX batches_in_progress ON batches (updated_at) WHERE status = 'in_progress';

ALTER TABLE payouts
    ADD CONSTRAINT payouts_batch FOREIGN KEY (batch_id) REFERENCES batches (id),
    -- When its batch submitted it to the rail.
    ADD COLUMN submitted_at timestamptz,
    -- What the rail reported when it failed the payout.
    ADD COLUMN receiver_is_invalid boolean NOT NULL DEFAULT false,
    ADD COLUMN failure_reason text;
CREATE INDEX payouts_batch ON payouts (batch_id, status) WHERE batch_id IS NOT NULL;
CREATE INDEX payouts_waiting ON payouts (receiver_id, status) WHERE status IN (0, 2);

-- Idempotency keys (docs/API.md, Idempotency keys). A request claims its key with a lease; the
-- business transaction marks the key `committed` in the same transaction as its write, and the
-- response is stored after it. A claim whose lease ran out without a commit may be taken over by a
-- retry.
ALTER TABLE idempotency_keys
    ADD COLUMN locked_until timestamptz,
    ADD COLUMN committed boolean NOT NULL DEFAULT false;
