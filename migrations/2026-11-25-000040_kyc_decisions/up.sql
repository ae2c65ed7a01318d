-- The audit trail of operators' KYC decisions (`payoutd admin kyc`), each written in the
-- transaction that applies the decision. A receiver's KYC is decided once, so it has at most
-- one operator decision.
CREATE TABLE kyc_decisions (
    id uuid PRIMARY KEY,
    receiver_id uuid NOT NULL REFERENCES receivers (id),
    subaccount_id uuid NOT NULL REFERENCES subaccounts (id),
    decision text NOT NULL CHECK (decision IN ('completed', 'failed')),
    reason text CHECK (reason IS NULL OR length(reason) BETWEEN 1 AND 500),
    decided_by text NOT NULL CHECK (length(decided_by) BETWEEN 1 AND 100),
    decided_at timestamptz NOT NULL,
    CONSTRAINT kyc_decisions_one_per_receiver UNIQUE (receiver_id)
);

-- A subaccount's decisions, newest first.
CREATE INDEX kyc_decisions_by_subaccount ON kyc_decisions (subaccount_id, decided_at DESC);
