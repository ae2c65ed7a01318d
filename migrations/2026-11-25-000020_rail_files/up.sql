-- Bank files of the production rails (one per closed batch and payout method), stored before
-- they are sent, with each payout's reference in them.
CREATE TABLE rail_files (
    id uuid PRIMARY KEY,
    subaccount_id uuid NOT NULL REFERENCES subaccounts (id),
    batch_id uuid NOT NULL REFERENCES batches (id),
    method text NOT NULL,
    name text NOT NULL UNIQUE,
    sha256 bytea NOT NULL CHECK (length(sha256) = 32),
    bytes bytea NOT NULL,
    state text NOT NULL CHECK (state IN ('generated', 'uploaded', 'acknowledged', 'rejected')),
    effective_date date NOT NULL,
    reason text,
    created_at timestamptz NOT NULL,
    uploaded_at timestamptz,
    answered_at timestamptz,
    CONSTRAINT rail_files_one_per_batch_and_method UNIQUE (batch_id, method)
);

-- `admin rail-files [--state S]`: newest first, optionally by state.
CREATE INDEX rail_files_listing ON rail_files (created_at DESC, id DESC);
CREATE INDEX rail_files_by_state ON rail_files (state, created_at DESC, id DESC);

CREATE TABLE rail_file_items (
    file_id uuid NOT NULL REFERENCES rail_files (id),
    position integer NOT NULL CHECK (position >= 0),
    subaccount_id uuid NOT NULL REFERENCES subaccounts (id),
    payout_id uuid NOT NULL REFERENCES payouts (id),
    reference text NOT NULL,
    PRIMARY KEY (file_id, position),
    CONSTRAINT rail_file_items_reference_unique UNIQUE (file_id, reference),
    CONSTRAINT rail_file_items_payout_once UNIQUE (file_id, payout_id)
);

-- A payout's file (results, returns).
CREATE INDEX rail_file_items_payout ON rail_file_items (payout_id);

-- File numbers per method: per day (day set) or over all time (day = 0001-01-01). Global, not
-- per subaccount: the bank counts the originator's files.
CREATE TABLE rail_file_numbers (
    method text NOT NULL,
    day date NOT NULL,
    last integer NOT NULL CHECK (last > 0),
    PRIMARY KEY (method, day)
);
