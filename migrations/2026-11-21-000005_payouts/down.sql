DROP INDEX ledger_entries_payout;
DROP INDEX ledger_entries_seq;
ALTER TABLE ledger_entries DROP COLUMN seq;
DROP TABLE payouts;
