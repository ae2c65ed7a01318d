-- The bank's and partner's documents are kept (not a foreign file's, which is another rail's),
-- so that an operator can read both documents of an anomaly.
ALTER TABLE inbound_files ADD COLUMN bytes bytea;

-- altered: a document under a name the rail gives each document once (an Interac report_id)
-- with other content than the document first read under it (original_id): its lines are
-- anomalies and nothing of it is applied.
-- contract: the outcome check only widens (altered is added); the previous release never writes it.
ALTER TABLE inbound_files ADD COLUMN original_id uuid REFERENCES inbound_files (id);
ALTER TABLE inbound_files DROP CONSTRAINT inbound_files_outcome_check,
    ADD CONSTRAINT inbound_files_outcome_check
        CHECK (outcome IN ('read', 'foreign', 'unreadable', 'altered'));

-- anomaly: the line contradicts what happened (a rejection of a settled payout, a settlement of
-- a rejected one, a return on a rail without returns, a line of an altered document); nothing
-- of it was applied. contradicts: the applied line it contradicts. The previous release's name
-- for it, conflicting, stays allowed (and is read as anomaly), so that release keeps recording
-- its lines during a rolling upgrade; rows are not renamed.
-- contract: the resolution check only widens (anomaly is added); the previous release still writes conflicting, which stays allowed.
ALTER TABLE bank_reports DROP CONSTRAINT bank_reports_resolution_check,
    ADD CONSTRAINT bank_reports_resolution_check
        CHECK (resolution IN ('applied', 'repeated', 'unmatched', 'noted', 'anomaly',
                              'conflicting'));
ALTER TABLE bank_reports ADD COLUMN contradicts uuid REFERENCES bank_reports (id);

-- What decided a file: its newest applied line about the whole file (a payout's own lines are
-- found by bank_reports_payout).
CREATE INDEX bank_reports_file_lines ON bank_reports (rail_file_id, created_at DESC)
    WHERE payout_id IS NULL;
