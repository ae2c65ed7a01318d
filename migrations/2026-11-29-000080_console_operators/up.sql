-- The operator console: operators, their sessions, sign-in failures and the audit log. All are
-- global (no subaccount): reference tables on Citus.

-- The console's KYC queue: receivers of every subaccount still waiting for a decision, oldest
-- first (kyc_status 0 is pending).
CREATE INDEX receivers_kyc_pending ON receivers (created_at, id) WHERE kyc_status = 0;

-- People who sign in to the console. `totp_secret_ciphertext` is sealed by the vault with
-- `operator-totp:` + the id as associated data; `enrolment_token_hash` is the SHA-256 of the
-- one-time enrolment link's token, cleared when it is used.
CREATE TABLE operators (
    id uuid PRIMARY KEY,
    email text NOT NULL CHECK (length(email) BETWEEN 3 AND 320 AND email = lower(email)),
    role text NOT NULL CHECK (role IN ('viewer', 'operator', 'admin')),
    status text NOT NULL CHECK (status IN ('invited', 'active', 'disabled')),
    password_hash text,
    totp_secret_ciphertext bytea NOT NULL,
    last_totp_step bigint,
    enrolment_token_hash bytea CHECK (length(enrolment_token_hash) = 32),
    enrolment_expires_at timestamptz,
    created_at timestamptz NOT NULL,
    enrolled_at timestamptz,
    disabled_at timestamptz,
    CONSTRAINT operators_email_unique UNIQUE (email),
    CHECK ((status = 'invited') = (password_hash IS NULL)),
    CHECK ((enrolment_token_hash IS NULL) = (enrolment_expires_at IS NULL))
);

CREATE UNIQUE INDEX operators_enrolment ON operators (enrolment_token_hash)
    WHERE enrolment_token_hash IS NOT NULL;

-- Console sessions by the SHA-256 of their token (the cookie's value is never stored). A
-- session ends (ended_at) at sign-out, on timeout, or when its operator is disabled.
CREATE TABLE operator_sessions (
    token_hash bytea PRIMARY KEY CHECK (length(token_hash) = 32),
    operator_id uuid NOT NULL REFERENCES operators (id),
    created_at timestamptz NOT NULL,
    last_seen_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    ended_at timestamptz,
    client_address text
);

CREATE INDEX operator_sessions_live ON operator_sessions (operator_id) WHERE ended_at IS NULL;

-- Failed sign-ins per subject (`account:<e-mail>` or `address:<ip or /64>`) in the current
-- window.
CREATE TABLE login_failures (
    subject text PRIMARY KEY CHECK (length(subject) <= 400),
    failures integer NOT NULL CHECK (failures > 0),
    window_started_at timestamptz NOT NULL
);

-- Who changed what, from the console or `payoutd admin`. Append-only.
CREATE TABLE audit_log (
    id uuid PRIMARY KEY,
    at timestamptz NOT NULL,
    actor_kind text NOT NULL CHECK (actor_kind IN ('operator', 'cli')),
    actor_id uuid,
    actor_name text NOT NULL CHECK (length(actor_name) BETWEEN 1 AND 400),
    action text NOT NULL,
    object_kind text NOT NULL,
    object_id text NOT NULL,
    before jsonb,
    after jsonb,
    request_id text,
    client_address text,
    CHECK ((actor_kind = 'operator') = (actor_id IS NOT NULL))
);

CREATE INDEX audit_log_listing ON audit_log (at DESC, id DESC);
CREATE INDEX audit_log_by_object ON audit_log (object_id, at DESC, id DESC);

CREATE FUNCTION refuse_audit_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit_log is append-only';
END;
$$;

CREATE TRIGGER audit_log_append_only
    BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION refuse_audit_change();
