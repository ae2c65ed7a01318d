-- Confirmation requests queued for sending, written in the account's transaction, so a failure
-- to send never loses the account or its link. `recipient_ciphertext` (e-mail, phone, name) and
-- `link_ciphertext` (the confirmation URL, which carries the token) are sealed by the vault
-- with the row's id as associated data; `masked_details` holds only masked values.
CREATE TABLE notifications (
    id uuid PRIMARY KEY,
    subaccount_id uuid NOT NULL REFERENCES subaccounts (id),
    account_id uuid NOT NULL REFERENCES receiver_accounts (id),
    channel text NOT NULL CHECK (channel IN ('email')),
    recipient_ciphertext bytea NOT NULL,
    link_ciphertext bytea NOT NULL,
    masked_details jsonb NOT NULL,
    status text NOT NULL CHECK (status IN ('pending', 'sent', 'failed')),
    attempts integer NOT NULL CHECK (attempts >= 0),
    -- Pending: when the next attempt is due, or until when the current attempt's claim lasts.
    next_attempt_at timestamptz,
    last_error text,
    created_at timestamptz NOT NULL,
    sent_at timestamptz,
    updated_at timestamptz NOT NULL,
    CHECK ((status = 'pending') = (next_attempt_at IS NOT NULL)),
    CHECK ((status = 'sent') = (sent_at IS NOT NULL))
);

-- The retry job's claim: due pending rows, oldest due first.
CREATE INDEX notifications_due ON notifications (next_attempt_at) WHERE status = 'pending';
-- `admin notifications [--status S]`: newest first, optionally by status.
CREATE INDEX notifications_listing ON notifications (created_at DESC, id DESC);
CREATE INDEX notifications_by_status ON notifications (status, created_at DESC, id DESC);
CREATE INDEX notifications_account ON notifications (account_id);
