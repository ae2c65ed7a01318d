-- Receiver accounts (docs/API.md, Receiver accounts). Field values are stored only encrypted
-- (data_ciphertext, AEAD bound to the row id). Each matchable field also has a keyed fingerprint
-- (HMAC-SHA256 under a key derived from the master key), so verify and duplicate detection are
-- index lookups and never decrypt or scan.
CREATE TABLE receiver_accounts (
    id uuid PRIMARY KEY,
    subaccount_id uuid NOT NULL REFERENCES subaccounts (id),
    receiver_id uuid NOT NULL REFERENCES receivers (id),
    method text NOT NULL,
    asset text NOT NULL,
    status text NOT NULL CHECK (status IN ('pending', 'completed', 'failed')),
    confirm_status text NOT NULL CHECK (confirm_status IN ('unconfirmed', 'confirmed')),
    data_ciphertext bytea NOT NULL,
    -- Fingerprint of the method and all its matchable values: one per distinct set of details.
    details_fingerprint bytea NOT NULL,
    fp_bsb bytea,
    fp_account_number bytea,
    fp_routing_number bytea,
    fp_account_type bytea,
    fp_iban bytea,
    fp_bic bytea,
    fp_recipient bytea,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL
);
CREATE UNIQUE INDEX receiver_accounts_details_unique ON receiver_accounts (receiver_id, details_fingerprint);
CREATE INDEX receiver_accounts_by_receiver ON receiver_accounts (receiver_id, created_at, id);
-- Verify: the oldest account of the subaccount with a given value, one index per field.
CREATE INDEX receiver_accounts_fp_bsb ON receiver_accounts (subaccount_id, fp_bsb, created_at, id)
    WHERE fp_bsb IS NOT NULL;
CREATE INDEX receiver_accounts_fp_account_number ON receiver_accounts (subaccount_id, fp_account_number, created_at, id)
    WHERE fp_account_number IS NOT NULL;
CREATE INDEX receiver_accounts_fp_routing_number ON receiver_accounts (subaccount_id, fp_routing_number, created_at, id)
    WHERE fp_routing_number IS NOT NULL;
CREATE INDEX receiver_accounts_fp_account_type ON receiver_accounts (subaccount_id, fp_account_type, created_at, id)
    WHERE fp_account_type IS NOT NULL;
CREATE INDEX receiver_accounts_fp_iban ON receiver_accounts (subaccount_id, fp_iban, created_at, id)
    WHERE fp_iban IS NOT NULL;
CREATE INDEX receiver_accounts_fp_bic ON receiver_accounts (subaccount_id, fp_bic, created_at, id)
    WHERE fp_bic IS NOT NULL;
CREATE INDEX receiver_accounts_fp_recipient ON receiver_accounts (subaccount_id, fp_recipient, created_at, id)
    WHERE fp_recipient IS NOT NULL;

-- Confirmation links: only the SHA-256 of each token is stored.
CREATE TABLE account_confirmations (
    token_hash bytea PRIMARY KEY,
    account_id uuid NOT NULL REFERENCES receiver_accounts (id),
    subaccount_id uuid NOT NULL,
    expires_at timestamptz NOT NULL,
    used_at timestamptz,
    created_at timestamptz NOT NULL
);
CREATE INDEX account_confirmations_account ON account_confirmations (account_id);
