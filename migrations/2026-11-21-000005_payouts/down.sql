DROP INDEX ledger_entries_payout;
DROP TABLE payouts;
