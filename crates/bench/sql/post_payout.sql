-- pgbench script: the SQL payoutd runs for one `POST /api/payout/single`, in the same order, one
-- round trip per statement (run by `cargo xtask bench api`, case post-payout, at each
-- concurrency).
--
-- Mirrors:
--   1. authentication, `AuthService::authenticate` (crates/domain/src/auth/service.rs): the
--      key from memory (`CachedCredentials`, see get_receiver.sql), then `record_nonce`
--      (crates/adapters-postgres/src/stores/credentials.rs); then the claim of the request's
--      `idempotency-key` (`IdempotencyStore::claim`, stores/idempotency.rs: one INSERT for a
--      new key). The request carries a key, so both inserts commit without waiting for the
--      WAL flush (`synchronous_commit` off for the statement, as payoutd does);
--   2. the reads of `PayoutService::create` (crates/domain/src/payout/service.rs): receiver,
--      account, fee template and the duplicate check. payoutd now makes them with one call,
--      `PayoutStore::planning_facts` (stores/payouts.rs), as four `= ANY` reads pipelined on one
--      connection; this script still runs the earlier one-row reads one after another, so here
--      it approximates payoutd's SQL rather than replaying it;
--   3. `PayoutStore::insert_payout` (stores/payouts.rs): one transaction with the receiver and
--      account locked FOR SHARE and re-checked (`check_parties`), the open batch joined FOR
--      SHARE (`join_open_batch`; the scenario seeds one per currency, due in 30 days), the
--      payout row, its `payout_hold` and `fee_hold` ledger entries (one INSERT from arrays,
--      `insert_entries`), the `payoutCreated` event with the idempotency key marked committed
--      and completed with its response in the same statement (`insert_events`,
--      stores/outbox.rs), and last the hold (the conditional update of the balance). This is
--      the write of a lone request; concurrent requests of one subaccount and currency are
--      written by payoutd in groups (stores/payout_groups.rs), which this script does not do.
-- The statements are the text diesel sends (seen with log_statement = all), with pgbench
-- variables or SQL expressions for the parameters:
--   - the currency, the ids and the fee come from the rows read before (\gset) and the fee rule
--     (crates/domain/src/payout/fee.rs) in pgbench arithmetic, as payoutd computes them;
--   - ids and the reference are made unique from a random number; the nonce is random;
--   - the event payload is built with jsonb_build_object (payoutd binds it as jsonb), and the
--     ledger entries' arrays with ARRAY[...] (payoutd binds them);
--   - the event is written due in 10 years rather than now, so that the delivery worker of the
--     payoutd under test leaves pgbench's events alone. Giving up payoutd's own events (the
--     bench subaccount has no webhook: one claim statement per batch of events marks them
--     exhausted with a skipped attempt) is work payoutd does that this script does not.
--
-- Variables (payoutd-bench passes them with -D): keyid (the key's id), sub, tag,
-- receivers. The receiver is a random seeded one (receiver i has account i; ids
-- md5(tag || 'r' || i)::uuid and md5(tag || 'a' || i)::uuid, `sql_uuid` in
-- crates/bench/src/seed/generate.rs); every seeded receiver is payable (KYC completed, account
-- confirmed), so payouts start `pending` (status 1).
\set i random(0, :receivers - 1)
\set r random(1, 9000000000000000000)
\set nonce random(1000000000000, 9000000000000000000)
\set amount random(100, 99999)
WITH no_flush_wait AS (SELECT set_config('synchronous_commit', 'off', true)) INSERT INTO request_nonces (api_key_id, nonce, subaccount_id, seen_at) SELECT :keyid, :nonce, :sub, now() FROM no_flush_wait ON CONFLICT DO NOTHING;
WITH no_flush_wait AS (SELECT set_config('synchronous_commit', 'off', true)) INSERT INTO idempotency_keys (subaccount_id, idempotency_key, request_hash, state, response_status, response_body, created_at, expires_at, locked_until, committed) SELECT :sub, 'pgb-' || :r, decode(md5(:r::text) || md5(:nonce::text), 'hex'), 'in_progress', NULL, NULL, now(), now() + interval '24 hours', now() + interval '60 seconds', false FROM no_flush_wait ON CONFLICT DO NOTHING;
SELECT "receivers"."id", "receivers"."subaccount_id", "receivers"."first_name", "receivers"."middle_name", "receivers"."last_name", "receivers"."email", "receivers"."gender", "receivers"."dob", "receivers"."dialcode", "receivers"."phone", "receivers"."address", "receivers"."address2", "receivers"."city", "receivers"."state", "receivers"."country", "receivers"."postcode", "receivers"."reference", "receivers"."applicant_id", "receivers"."status", "receivers"."kyc_status", "receivers"."created_at", "receivers"."updated_at", "receivers"."email_normalized" FROM "receivers" WHERE (("receivers"."id" = md5(:tag || 'r' || :i)::uuid) AND ("receivers"."subaccount_id" = :sub)) LIMIT 1;
SELECT "receiver_accounts"."id", "receiver_accounts"."subaccount_id", "receiver_accounts"."receiver_id", "receiver_accounts"."method", "receiver_accounts"."asset", "receiver_accounts"."status", "receiver_accounts"."confirm_status", "receiver_accounts"."data_ciphertext", "receiver_accounts"."details_fingerprint", "receiver_accounts"."fp_bsb", "receiver_accounts"."fp_account_number", "receiver_accounts"."fp_routing_number", "receiver_accounts"."fp_account_type", "receiver_accounts"."fp_iban", "receiver_accounts"."fp_bic", "receiver_accounts"."fp_recipient", "receiver_accounts"."created_at", "receiver_accounts"."updated_at" FROM "receiver_accounts" WHERE (("receiver_accounts"."id" = md5(:tag || 'a' || :i)::uuid) AND ("receiver_accounts"."subaccount_id" = :sub)) LIMIT 1 \gset a_
SELECT "fee_templates"."id", "fee_templates"."group_id", "fee_templates"."fixed", "fee_templates"."percentage", "fee_templates"."min_amount" FROM "fee_templates" WHERE (("fee_templates"."subaccount_id" = :sub) AND ("fee_templates"."asset" = :a_asset)) LIMIT 1 \gset f_
SELECT EXISTS (SELECT "payouts"."id", "payouts"."subaccount_id", "payouts"."receiver_id", "payouts"."account_id", "payouts"."asset", "payouts"."amount", "payouts"."fee", "payouts"."fee_template_id", "payouts"."fee_group_id", "payouts"."fee_fixed", "payouts"."fee_percentage", "payouts"."fee_min_amount", "payouts"."reference", "payouts"."note", "payouts"."status", "payouts"."batch_id", "payouts"."provider_reference", "payouts"."duplicate", "payouts"."created_at", "payouts"."updated_at", "payouts"."submitted_at", "payouts"."receiver_is_invalid", "payouts"."failure_reason" FROM "payouts" WHERE ((((("payouts"."subaccount_id" = :sub) AND ("payouts"."account_id" = :a_id)) AND ("payouts"."amount" = :amount)) AND ("payouts"."asset" = :a_asset)) AND ("payouts"."created_at" >= now() - interval '24 hours'))) AS duplicate \gset d_
\set fee greatest(:f_fixed + (:amount * :f_percentage + 500000) / 1000000, :f_min_amount)
\set total :amount + :fee
\set payout_available -1 * :amount
\set fee_available -1 * :fee
BEGIN;
SELECT "receivers"."status", "receivers"."kyc_status", "receiver_accounts"."status", "receiver_accounts"."confirm_status" FROM ("receivers" INNER JOIN "receiver_accounts" ON ("receiver_accounts"."receiver_id" = "receivers"."id")) WHERE (((("receivers"."id" = :a_receiver_id) AND ("receivers"."subaccount_id" = :sub)) AND ("receiver_accounts"."id" = :a_id)) AND ("receiver_accounts"."subaccount_id" = :sub)) LIMIT 1 FOR SHARE;
SELECT "batches"."id", "batches"."batch_run_time" FROM "batches" WHERE ((("batches"."subaccount_id" = :sub) AND ("batches"."asset" = :a_asset)) AND ("batches"."status" = 'open')) LIMIT 1 FOR SHARE \gset b_
INSERT INTO "payouts" ("id", "subaccount_id", "receiver_id", "account_id", "asset", "amount", "fee", "fee_template_id", "fee_group_id", "fee_fixed", "fee_percentage", "fee_min_amount", "reference", "note", "status", "batch_id", "provider_reference", "duplicate", "created_at", "updated_at", "submitted_at", "receiver_is_invalid", "failure_reason") VALUES (md5('np' || :r)::uuid, :sub, :a_receiver_id, :a_id, :a_asset, :amount, :fee, :f_id, :f_group_id, :f_fixed, :f_percentage, :f_min_amount, 'PGB-' || :r, 'bench', 1, :b_id, '', :d_duplicate, now(), now(), NULL, false, NULL);
INSERT INTO ledger_entries (id, subaccount_id, asset, kind, available_delta, pending_delta, payout_id, created_at) SELECT id, subaccount_id, asset, kind, available_delta, pending_delta, payout_id, created_at FROM unnest(ARRAY[md5('nh' || :r)::uuid, md5('nf' || :r)::uuid], ARRAY[:sub, :sub]::uuid[], ARRAY[:a_asset, :a_asset]::text[], ARRAY['payout_hold', 'fee_hold']::text[], ARRAY[:payout_available, :fee_available]::int8[], ARRAY[:amount, :fee]::int8[], ARRAY[md5('np' || :r)::uuid, md5('np' || :r)::uuid], ARRAY[now(), now()]::timestamptz[]) WITH ORDINALITY AS e(id, subaccount_id, asset, kind, available_delta, pending_delta, payout_id, created_at, n) ORDER BY n;
WITH mark AS ( UPDATE idempotency_keys SET committed = true, state = 'completed', response_status = 200, response_body = convert_to('{"message":"Payout created successfully","payload":{"payout_id":"' || md5('np' || :r)::uuid || '"}}', 'UTF8'), locked_until = NULL WHERE subaccount_id = :sub AND idempotency_key = 'pgb-' || :r AND locked_until IS NOT NULL AND state = 'in_progress' RETURNING 1), seq AS ( INSERT INTO outbox_sequences (object_id, subaccount_id, last_sequence) VALUES (md5('np' || :r)::uuid, :sub, 1) ON CONFLICT ON CONSTRAINT outbox_sequences_pkey DO UPDATE SET last_sequence = outbox_sequences.last_sequence + 1 RETURNING last_sequence AS n) INSERT INTO outbox_events (id, subaccount_id, object_id, sequence, event_type, payload, created_at, next_attempt_at) SELECT md5('ne' || :r)::uuid, :sub, md5('np' || :r)::uuid, seq.n, 'payoutCreated', jsonb_build_object('event', 'payoutCreated', 'event_id', md5('ne' || :r)::uuid::text, 'payout_id', md5('np' || :r)::uuid::text, 'amount', :amount::bigint, 'currency', :a_asset::text, 'batch_id', :b_id::text, 'batch_run_time', (extract(epoch FROM :b_batch_run_time::timestamptz) * 1000)::bigint, 'receiver_account_id', :a_id::text, 'receiver_id', :a_receiver_id::text, 'reference', 'PGB-' || :r, 'status', 'pending', 'subaccount_id', :sub::text, 'subccount_id', :sub::text, 'timestamp', (extract(epoch FROM now()) * 1000)::bigint) || jsonb_build_object('sequence', seq.n), now(), now() + interval '10 years' FROM seq, mark;
UPDATE "balances" SET "available" = ("balances"."available" - :total), "pending" = ("balances"."pending" + :total), "updated_at" = now() WHERE ((("balances"."subaccount_id" = :sub) AND ("balances"."asset" = :a_asset)) AND ("balances"."available" >= :total));
COMMIT;
