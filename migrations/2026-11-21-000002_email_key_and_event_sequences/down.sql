DROP TABLE outbox_sequences;
DROP INDEX receivers_email_unique;
CREATE UNIQUE INDEX receivers_email_unique ON receivers (subaccount_id, lower(email));
ALTER TABLE receivers DROP COLUMN email_normalized;
