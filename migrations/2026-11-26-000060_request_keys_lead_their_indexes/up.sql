-- The set statements of a group commit or bulk request look rows up by the request's own keys
-- (`= ANY` over the set's idempotency keys or references) within one subaccount. A generic
-- plan estimates the rows of "this subaccount" as the average subaccount's, so with one large
-- merchant among many small ones an index that leads with `subaccount_id` looks cheap, and
-- PostgreSQL read every key (or reference) of the large merchant to find a handful. With the
-- request's key first, the primary key of idempotency_keys (that table's only index over
-- these columns) is searched by the keys themselves, whatever the plan assumes about the
-- subaccount; the references are read with a plan made for their subaccount, which then finds
-- them through the reordered index. Lookups of one key are unaffected: they bind both columns.
--
-- Both indexes are rebuilt, holding their table's write lock meanwhile.
--
-- contract: the key and its uniqueness stay the same, only the column order changes, under the same constraint and index names; the previous release binds both columns wherever it uses them (lookups, ON CONFLICT, the duplicate-reference error by index name), so it runs unchanged on the new order.
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_pkey,
    ADD CONSTRAINT idempotency_keys_pkey PRIMARY KEY (idempotency_key, subaccount_id);

DROP INDEX payouts_reference_unique;
CREATE UNIQUE INDEX payouts_reference_unique ON payouts (reference, subaccount_id)
    WHERE reference IS NOT NULL;
