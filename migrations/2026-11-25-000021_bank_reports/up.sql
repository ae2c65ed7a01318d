-- A bank's code when it refused or returned a payout (NACHA R-code, ISO 20022 reason); the
-- meaning is in failure_reason.
ALTER TABLE payouts ADD COLUMN return_code text;

-- Every file read from a rail's inbound directory, once per (method, name, content): a file
-- seen again is not read again.
CREATE TABLE inbound_files (
    id uuid PRIMARY KEY,
    method text NOT NULL,
    name text NOT NULL,
    sha256 bytea NOT NULL CHECK (length(sha256) = 32),
    -- read: a report in the rail's format; foreign: not the rail's format (left alone);
    -- unreadable: the rail's format, but broken (see detail).
    outcome text NOT NULL CHECK (outcome IN ('read', 'foreign', 'unreadable')),
    detail text,
    received_at timestamptz NOT NULL,
    CONSTRAINT inbound_files_once UNIQUE (method, name, sha256)
);

CREATE INDEX inbound_files_listing ON inbound_files (received_at DESC, id DESC);

-- What each inbound file said, line by line, and what payoutd did with it.
CREATE TABLE bank_reports (
    id uuid PRIMARY KEY,
    inbound_file_id uuid NOT NULL REFERENCES inbound_files (id),
    position integer NOT NULL CHECK (position >= 0),
    method text NOT NULL,
    -- file_accepted, file_settled, file_rejected (about a whole file); settled, rejected,
    -- returned, notice (about one payment, by its reference).
    kind text NOT NULL CHECK (kind IN ('file_accepted', 'file_settled', 'file_rejected',
                                       'settled', 'rejected', 'returned', 'notice')),
    reference text NOT NULL,
    code text,
    reason text,
    account_invalid boolean NOT NULL DEFAULT false,
    amount bigint,
    -- What it matched: the payout (and its subaccount) or the file.
    subaccount_id uuid REFERENCES subaccounts (id),
    payout_id uuid REFERENCES payouts (id),
    rail_file_id uuid REFERENCES rail_files (id),
    -- applied: it changed the payout or file; repeated: it was already so (never applied
    -- twice); unmatched: no payout or file of ours has that reference; noted: recorded only
    -- (notifications of change, dishonored returns); conflicting: it contradicts what
    -- happened (a settlement of a failed payout).
    resolution text NOT NULL CHECK (resolution IN ('applied', 'repeated', 'unmatched', 'noted',
                                                   'conflicting')),
    created_at timestamptz NOT NULL,
    CONSTRAINT bank_reports_position UNIQUE (inbound_file_id, position)
);

CREATE INDEX bank_reports_by_resolution ON bank_reports (resolution, created_at DESC, id DESC);
CREATE INDEX bank_reports_payout ON bank_reports (payout_id) WHERE payout_id IS NOT NULL;

-- Returns and notices name a payment by its reference in the file it was sent in.
CREATE INDEX rail_file_items_reference ON rail_file_items (reference);
