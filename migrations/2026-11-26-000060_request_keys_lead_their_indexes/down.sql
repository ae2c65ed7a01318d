DROP INDEX payouts_reference_unique;
CREATE UNIQUE INDEX payouts_reference_unique ON payouts (subaccount_id, reference)
    WHERE reference IS NOT NULL;

ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_pkey,
    ADD CONSTRAINT idempotency_keys_pkey PRIMARY KEY (subaccount_id, idempotency_key);
