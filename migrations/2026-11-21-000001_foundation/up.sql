-- Foundation: subaccounts, credentials, nonces, receivers, balances and ledger, fee templates,
-- the transactional outbox and idempotency records. Every table carries subaccount_id so the
-- schema can be distributed by it (docs/OPERATIONS.md, the Citus plan).

CREATE TABLE subaccounts (
    id uuid PRIMARY KEY,
    merchant_id uuid NOT NULL,
    name text NOT NULL,
    title text NOT NULL DEFAULT '',
    first_name text NOT NULL DEFAULT '',
    last_name text NOT NULL DEFAULT '',
    email text NOT NULL DEFAULT '',
    dob date,
    provider_status text NOT NULL DEFAULT 'ACCEPTED',
    business_name text NOT NULL DEFAULT '',
    business_or_individual text NOT NULL DEFAULT 'B',
    support_email text NOT NULL DEFAULT '',
    mobile_dialcode text NOT NULL DEFAULT '',
    mobile text NOT NULL DEFAULT '',
    home_phone_dialcode text NOT NULL DEFAULT '',
    home_telephone text NOT NULL DEFAULT '',
    address text NOT NULL DEFAULT '',
    suburb text NOT NULL DEFAULT '',
    state text NOT NULL DEFAULT '',
    country text NOT NULL DEFAULT '',
    postcode text NOT NULL DEFAULT '',
    has_passed_kyc text NOT NULL DEFAULT 'N/A',
    kyc_status text NOT NULL DEFAULT 'pending',
    postback_url text,
    -- AEAD ciphertext (nonce || sealed) of the webhook signing secret.
    webhook_secret bytea,
    sms_provider text NOT NULL DEFAULT '',
    email_provider text NOT NULL DEFAULT '',
    require_signature_v2 boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL
);

CREATE TABLE api_keys (
    id uuid PRIMARY KEY,
    subaccount_id uuid NOT NULL REFERENCES subaccounts (id),
    api_key text NOT NULL UNIQUE,
    -- AEAD ciphertext (nonce || sealed) of the API secret; never stored in plain text.
    secret_ciphertext bytea NOT NULL,
    created_at timestamptz NOT NULL,
    revoked_at timestamptz
);
CREATE INDEX api_keys_subaccount ON api_keys (subaccount_id);

-- POST nonces accepted once per key across all instances (docs/API.md, Authentication).
CREATE TABLE request_nonces (
    api_key_id uuid NOT NULL,
    nonce bigint NOT NULL,
    subaccount_id uuid NOT NULL,
    seen_at timestamptz NOT NULL,
    PRIMARY KEY (api_key_id, nonce)
);
CREATE INDEX request_nonces_seen_at ON request_nonces (seen_at);

CREATE TABLE receivers (
    id uuid PRIMARY KEY,
    subaccount_id uuid NOT NULL REFERENCES subaccounts (id),
    first_name text NOT NULL,
    middle_name text NOT NULL DEFAULT '',
    last_name text NOT NULL,
    email text NOT NULL,
    gender text CHECK (gender IN ('M', 'F')),
    dob date NOT NULL,
    dialcode text NOT NULL,
    phone text NOT NULL,
    address text NOT NULL,
    address2 text NOT NULL DEFAULT '',
    city text NOT NULL,
    state text NOT NULL,
    country text NOT NULL,
    postcode text NOT NULL,
    reference text,
    applicant_id text NOT NULL,
    status smallint NOT NULL CHECK (status BETWEEN 0 AND 4),
    kyc_status smallint NOT NULL CHECK (kyc_status BETWEEN 0 AND 2),
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL
);
CREATE UNIQUE INDEX receivers_email_unique ON receivers (subaccount_id, lower(email));
CREATE UNIQUE INDEX receivers_reference_unique ON receivers (subaccount_id, reference)
    WHERE reference IS NOT NULL;
CREATE INDEX receivers_page ON receivers (subaccount_id, created_at DESC, id DESC);

CREATE TABLE balances (
    subaccount_id uuid NOT NULL REFERENCES subaccounts (id),
    asset text NOT NULL,
    available bigint NOT NULL DEFAULT 0 CHECK (available >= 0),
    pending bigint NOT NULL DEFAULT 0 CHECK (pending >= 0),
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (subaccount_id, asset)
);

-- Append-only: every movement of a balance, so a balance always equals the sum of its entries.
CREATE TABLE ledger_entries (
    id uuid PRIMARY KEY,
    subaccount_id uuid NOT NULL REFERENCES subaccounts (id),
    asset text NOT NULL,
    kind text NOT NULL,
    available_delta bigint NOT NULL,
    pending_delta bigint NOT NULL,
    payout_id uuid,
    created_at timestamptz NOT NULL
);
CREATE INDEX ledger_entries_balance ON ledger_entries (subaccount_id, asset);

CREATE FUNCTION refuse_ledger_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'ledger_entries is append-only';
END;
$$;
CREATE TRIGGER ledger_entries_append_only
    BEFORE UPDATE OR DELETE ON ledger_entries
    FOR EACH ROW EXECUTE FUNCTION refuse_ledger_change();

CREATE TABLE fee_templates (
    subaccount_id uuid NOT NULL REFERENCES subaccounts (id),
    asset text NOT NULL,
    id uuid NOT NULL,
    group_id uuid NOT NULL,
    fixed bigint NOT NULL CHECK (fixed >= 0),
    -- ten-thousandths of a percent: 1.25 % is 12500.
    percentage integer NOT NULL CHECK (percentage BETWEEN 0 AND 1000000),
    min_amount bigint NOT NULL CHECK (min_amount >= 0),
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (subaccount_id, asset)
);

-- Transactional outbox: written in the same transaction as the change each event describes.
CREATE TABLE outbox_events (
    id uuid PRIMARY KEY,
    subaccount_id uuid NOT NULL,
    object_id uuid NOT NULL,
    sequence integer NOT NULL,
    event_type text NOT NULL,
    payload jsonb NOT NULL,
    created_at timestamptz NOT NULL,
    status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'exhausted')),
    attempts integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL,
    delivered_at timestamptz,
    UNIQUE (object_id, sequence)
);
CREATE INDEX outbox_events_due ON outbox_events (next_attempt_at) WHERE status = 'pending';
CREATE INDEX outbox_events_subaccount ON outbox_events (subaccount_id, created_at);

-- Idempotency records (docs/API.md, Idempotency keys): the first response to a key, stored for 24
-- hours.
CREATE TABLE idempotency_keys (
    subaccount_id uuid NOT NULL,
    idempotency_key text NOT NULL,
    request_hash bytea NOT NULL,
    state text NOT NULL CHECK (state IN ('in_progress', 'completed')),
    response_status smallint,
    response_body bytea,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (subaccount_id, idempotency_key)
);
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);
