DROP INDEX bank_reports_file_lines;
ALTER TABLE bank_reports DROP COLUMN contradicts;
UPDATE bank_reports SET resolution = 'conflicting' WHERE resolution = 'anomaly';
ALTER TABLE bank_reports DROP CONSTRAINT bank_reports_resolution_check,
    ADD CONSTRAINT bank_reports_resolution_check
        CHECK (resolution IN ('applied', 'repeated', 'unmatched', 'noted', 'conflicting'));
DELETE FROM bank_reports
    WHERE inbound_file_id IN (SELECT id FROM inbound_files WHERE outcome = 'altered');
DELETE FROM inbound_files WHERE outcome = 'altered';
ALTER TABLE inbound_files DROP CONSTRAINT inbound_files_outcome_check,
    ADD CONSTRAINT inbound_files_outcome_check
        CHECK (outcome IN ('read', 'foreign', 'unreadable'));
ALTER TABLE inbound_files DROP COLUMN original_id;
ALTER TABLE inbound_files DROP COLUMN bytes;
