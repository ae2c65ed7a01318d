DROP INDEX rail_file_items_reference;
DROP TABLE bank_reports;
DROP TABLE inbound_files;
ALTER TABLE payouts DROP COLUMN return_code;
