-- Webhook delivery (docs/WEBHOOKS.md, Delivery): claims with a lease, every attempt recorded, and
-- each subaccount's endpoint state (signing secrets, the previous one during a rotation, disabled
-- after a 410) in its own row.
ALTER TABLE outbox_events ADD COLUMN claimed_until timestamptz;
ALTER TABLE outbox_events ADD COLUMN last_error text;

-- A resend starts the retry schedule again (attempt numbers restart), so attempts have their own key.
CREATE TABLE webhook_attempts (
    id bigserial PRIMARY KEY,
    event_id uuid NOT NULL REFERENCES outbox_events (id),
    attempt integer NOT NULL,
    subaccount_id uuid NOT NULL,
    attempted_at timestamptz NOT NULL,
    outcome text NOT NULL CHECK (outcome IN ('delivered', 'failed', 'gone', 'refused', 'skipped')),
    status_code smallint,
    latency_ms integer NOT NULL,
    error text
);
CREATE INDEX webhook_attempts_event ON webhook_attempts (event_id, attempted_at);
CREATE INDEX webhook_attempts_subaccount ON webhook_attempts (subaccount_id, attempted_at);

-- Secrets are AEAD ciphertexts bound to the subaccount ("webhook:" || subaccount id).
CREATE TABLE webhook_endpoints (
    subaccount_id uuid PRIMARY KEY REFERENCES subaccounts (id),
    secret bytea NOT NULL,
    previous_secret bytea,
    previous_until timestamptz,
    disabled_at timestamptz,
    updated_at timestamptz NOT NULL
);
INSERT INTO webhook_endpoints (subaccount_id, secret, updated_at)
SELECT id, webhook_secret, updated_at FROM subaccounts WHERE webhook_secret IS NOT NULL;
ALTER TABLE subaccounts DROP COLUMN webhook_secret;
