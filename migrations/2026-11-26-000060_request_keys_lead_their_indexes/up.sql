-- The set statements of a group commit or bulk request look rows up by the request's own keys
-- (`= ANY` over the set's idempotency keys or references) within one subaccount. A generic
-- plan estimates the rows of "this subaccount" as the average subaccount's, so with one large
-- merchant among many small ones an index that leads with `subaccount_id` looks cheap, and
-- PostgreSQL read every key (or reference) of the large merchant to find a handful. With the
-- request's key first, the only index over these columns is searched by the keys themselves.
-- Lookups of one key are unaffected: they bind both columns.
--
-- Both indexes are rebuilt, holding their table's write lock meanwhile (seconds per million
-- rows on this project's benchmark machine).
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_pkey,
    ADD CONSTRAINT idempotency_keys_pkey PRIMARY KEY (idempotency_key, subaccount_id);

DROP INDEX payouts_reference_unique;
CREATE UNIQUE INDEX payouts_reference_unique ON payouts (reference, subaccount_id)
    WHERE reference IS NOT NULL;
