-- Payouts (docs/API.md, Payouts). Creating one moves amount + fee from available to pending with
-- one conditional update on balances, appends its ledger entries and inserts the row, in one
-- transaction.
CREATE TABLE payouts (
    id uuid PRIMARY KEY,
    subaccount_id uuid NOT NULL REFERENCES subaccounts (id),
    receiver_id uuid NOT NULL REFERENCES receivers (id),
    account_id uuid NOT NULL REFERENCES receiver_accounts (id),
    asset text NOT NULL,
    amount bigint NOT NULL CHECK (amount > 0),
    fee bigint NOT NULL CHECK (fee >= 0),
    -- The fee template applied, as it was then (templates change later).
    fee_template_id uuid,
    fee_group_id uuid,
    fee_fixed bigint,
    fee_percentage integer,
    fee_min_amount bigint,
    reference text,
    note text NOT NULL DEFAULT '',
    status smallint NOT NULL CHECK (status BETWEEN 0 AND 7),
    batch_id uuid,
    provider_reference text NOT NULL DEFAULT '',
    duplicate boolean NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL
);
CREATE UNIQUE INDEX payouts_reference_unique ON payouts (subaccount_id, reference) WHERE reference IS NOT NULL;
CREATE INDEX payouts_page ON payouts (subaccount_id, created_at DESC, id DESC);
CREATE INDEX payouts_similar ON payouts (subaccount_id, account_id, amount, created_at);
-- The ledger's own append order: entries written in one transaction share a timestamp.
ALTER TABLE ledger_entries ADD COLUMN seq bigserial;
CREATE UNIQUE INDEX ledger_entries_seq ON ledger_entries (seq);
CREATE INDEX ledger_entries_payout ON ledger_entries (payout_id, seq) WHERE payout_id IS NOT NULL;
