-- Reference script of `cargo xtask bench cutoff`: the accounts a bank's or partner's code fails.
-- The accounts of the payouts that failed with `receiver_is_invalid` (the returns whose code means
-- a wrong account, cutoff_returned.sql; the partner's INVALID_RECIPIENT, cutoff_rejected.sql)
-- become `failed` with an accountUpdate event each (PayoutReaction, AccountStore).
-- Each event joins its sequence to its object's row by primary key (see cutoff_generated.sql).
-- Run by the harness after cutoff_returned.sql in the same rolled-back transaction, on the rails
-- that return or reject payouts; part of the `returned` step's reference (file rails) or the
-- `settled` step's (`cad/digital`). Variables (psql -v): batches (a uuid[] literal).
WITH closed AS (
    UPDATE receiver_accounts a SET status = 'failed', updated_at = now()
    FROM payouts p
    WHERE p.batch_id = ANY (:'batches'::uuid[]) AND p.status = 6 AND p.receiver_is_invalid
      AND a.id = p.account_id AND a.subaccount_id = p.subaccount_id AND a.status <> 'failed'
    RETURNING a.id, a.subaccount_id, a.receiver_id, a.method, a.asset),
 seq AS (
    INSERT INTO outbox_sequences (object_id, subaccount_id, last_sequence)
    SELECT id, subaccount_id, 1 FROM closed
    ON CONFLICT ON CONSTRAINT outbox_sequences_pkey
        DO UPDATE SET last_sequence = outbox_sequences.last_sequence + 1
    RETURNING object_id, last_sequence AS n)
INSERT INTO outbox_events (id, subaccount_id, object_id, sequence, event_type, payload, created_at,
    next_attempt_at)
SELECT gen_random_uuid(), c.subaccount_id, c.id, s.n, 'accountUpdate',
    jsonb_build_object('event', 'accountUpdate', 'event_id', gen_random_uuid()::text,
        'receiver_account_id', c.id::text, 'receiver_id', c.receiver_id::text,
        'method', c.method, 'currency', c.asset, 'status', 'failed',
        'subaccount_id', c.subaccount_id::text, 'subccount_id', c.subaccount_id::text,
        'sequence', s.n, 'timestamp', (extract(epoch FROM now()) * 1000)::bigint),
    now(), now()
FROM seq s JOIN receiver_accounts c ON c.id = s.object_id;
