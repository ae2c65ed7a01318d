-- pgbench script: the SQL payoutd runs for one `GET /api/payout/?subaccount_id=..&limit=..`
-- asking for the deep page (with a lastkey), in the same order, one round trip per statement
-- (run by `cargo xtask bench api`, case list, alternately with list_first.sql).
--
-- Mirrors, as of this commit, `PayoutService::list` (crates/domain/src/payout/service.rs):
--   1. authentication: no SQL, the key is served by `CachedCredentials`
--      (crates/domain/src/auth/cache.rs) from memory (see get_receiver.sql);
--   2. `PayoutStore::list_payouts` (crates/adapters-postgres/src/stores/payouts.rs): the page
--      (limit + 1 rows, newest first), then the receivers and the accounts of those rows.
-- The statements are the text diesel sends (seen with log_statement = all), with pgbench
-- variables for the parameters.
--
-- Variables (payoutd-bench passes them with -D): sub, limit (page size + 1), and, read
-- from the database before the run, the receiver and account ids of the page's rows
-- (after_rids, after_aids) and the position the cursor holds (after_at, after_id). The page
-- is always the same, as it is in the load payoutd gets.
SELECT "payouts"."id", "payouts"."subaccount_id", "payouts"."receiver_id", "payouts"."account_id", "payouts"."asset", "payouts"."amount", "payouts"."fee", "payouts"."fee_template_id", "payouts"."fee_group_id", "payouts"."fee_fixed", "payouts"."fee_percentage", "payouts"."fee_min_amount", "payouts"."reference", "payouts"."note", "payouts"."status", "payouts"."batch_id", "payouts"."provider_reference", "payouts"."duplicate", "payouts"."created_at", "payouts"."updated_at" FROM "payouts" WHERE (("payouts"."subaccount_id" = :sub) AND (payouts.created_at, payouts.id) < (:after_at::timestamptz, :after_id::uuid)) ORDER BY "payouts"."created_at" DESC, "payouts"."id" DESC LIMIT :limit;
SELECT "receivers"."id", "receivers"."subaccount_id", "receivers"."first_name", "receivers"."middle_name", "receivers"."last_name", "receivers"."email", "receivers"."gender", "receivers"."dob", "receivers"."dialcode", "receivers"."phone", "receivers"."address", "receivers"."address2", "receivers"."city", "receivers"."state", "receivers"."country", "receivers"."postcode", "receivers"."reference", "receivers"."applicant_id", "receivers"."status", "receivers"."kyc_status", "receivers"."created_at", "receivers"."updated_at", "receivers"."email_normalized" FROM "receivers" WHERE (("receivers"."subaccount_id" = :sub) AND ("receivers"."id" = ANY(:after_rids::uuid[])));
SELECT "receiver_accounts"."id", "receiver_accounts"."subaccount_id", "receiver_accounts"."receiver_id", "receiver_accounts"."method", "receiver_accounts"."asset", "receiver_accounts"."status", "receiver_accounts"."confirm_status", "receiver_accounts"."data_ciphertext", "receiver_accounts"."details_fingerprint", "receiver_accounts"."fp_bsb", "receiver_accounts"."fp_account_number", "receiver_accounts"."fp_routing_number", "receiver_accounts"."fp_account_type", "receiver_accounts"."fp_iban", "receiver_accounts"."fp_bic", "receiver_accounts"."fp_recipient", "receiver_accounts"."created_at", "receiver_accounts"."updated_at" FROM "receiver_accounts" WHERE (("receiver_accounts"."subaccount_id" = :sub) AND ("receiver_accounts"."id" = ANY(:after_aids::uuid[])));
