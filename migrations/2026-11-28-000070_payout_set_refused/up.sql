-- Raised by the statement that writes a set of new payouts in one round trip (a group commit's
-- set, or a payout alone): it is sent together with its transaction's BEGIN and COMMIT, so it
-- checks itself (parties as planned, the open batch it joins, its idempotency keys and
-- admissions, the rows written, the balance) and, when a check fails, raises this error. The
-- error aborts the transaction, the COMMIT sent after it then rolls it back, and the service
-- writes the set the slower way, which tells each request why. VOLATILE, so that it is called
-- only when a check fails, never folded into the plan.
CREATE FUNCTION payout_set_refused(reason text) RETURNS bigint
    LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    RAISE EXCEPTION 'payout set refused: %', reason;
END
$$;
