DROP TABLE account_confirmations;
DROP TABLE receiver_accounts;
