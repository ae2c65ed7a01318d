-- E-mail uniqueness by the application's Unicode-aware normalisation: PostgreSQL's lower()
-- follows the database collation and, under the C locale, folds only ASCII ('JOSÉ' stays 'josÉ').
ALTER TABLE receivers ADD COLUMN email_normalized text;
UPDATE receivers SET email_normalized = lower(email);
ALTER TABLE receivers ALTER COLUMN email_normalized SET NOT NULL;
DROP INDEX receivers_email_unique;
CREATE UNIQUE INDEX receivers_email_unique ON receivers (subaccount_id, email_normalized);

-- The last event sequence of each object. Incrementing this row serialises concurrent events
-- of one object, so two of them can never compute the same sequence.
CREATE TABLE outbox_sequences (
    object_id uuid PRIMARY KEY,
    subaccount_id uuid NOT NULL,
    last_sequence integer NOT NULL
);
INSERT INTO outbox_sequences (object_id, subaccount_id, last_sequence)
SELECT object_id, min(subaccount_id::text)::uuid, max(sequence) FROM outbox_events GROUP BY object_id;
