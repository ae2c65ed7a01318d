-- pgbench script: the SQL payoutd runs for one `GET /api/payout/<id>`, in the same order, one
-- round trip per statement (run by `cargo xtask bench api`, case get-payout).
--
-- Mirrors, as of this commit, `PayoutService::get` (crates/domain/src/payout/service.rs):
--   1. authentication: no SQL, the key is served by `CachedCredentials`
--      (crates/domain/src/auth/cache.rs) from memory (see get_receiver.sql);
--   2. `PayoutStore::find_payout` (crates/adapters-postgres/src/stores/payouts.rs): the payout,
--      then its ledger entries;
--   3. `ReceiverStore::find_receiver` (stores/receivers.rs);
--   4. `AccountStore::find_account` (stores/accounts.rs);
--   5. `SubaccountStore::find_subaccount` (stores/subaccounts.rs), for the merchant id.
-- The statements are the text diesel sends (seen with log_statement = all), with pgbench
-- variables for the parameters and `LIMIT 1` for diesel's bound limit of `.first()`.
--
-- Variables (payoutd-bench passes them with -D): sub, tag, payouts. The payout is a
-- random seeded one (ids md5(tag || 'p' || j)::uuid, crates/bench/src/seed/payouts.rs); later
-- statements take the ids from the payout row (\gset), as the service does.
\set j random(0, :payouts - 1)
SELECT "payouts"."id", "payouts"."subaccount_id", "payouts"."receiver_id", "payouts"."account_id", "payouts"."asset", "payouts"."amount", "payouts"."fee", "payouts"."fee_template_id", "payouts"."fee_group_id", "payouts"."fee_fixed", "payouts"."fee_percentage", "payouts"."fee_min_amount", "payouts"."reference", "payouts"."note", "payouts"."status", "payouts"."batch_id", "payouts"."provider_reference", "payouts"."duplicate", "payouts"."created_at", "payouts"."updated_at" FROM "payouts" WHERE (("payouts"."id" = md5(:tag || 'p' || :j)::uuid) AND ("payouts"."subaccount_id" = :sub)) LIMIT 1 \gset p_
SELECT "ledger_entries"."id", "ledger_entries"."subaccount_id", "ledger_entries"."asset", "ledger_entries"."kind", "ledger_entries"."available_delta", "ledger_entries"."pending_delta", "ledger_entries"."payout_id", "ledger_entries"."created_at" FROM "ledger_entries" WHERE (("ledger_entries"."payout_id" = :p_id) AND ("ledger_entries"."subaccount_id" = :sub)) ORDER BY "ledger_entries"."seq" ASC;
SELECT "receivers"."id", "receivers"."subaccount_id", "receivers"."first_name", "receivers"."middle_name", "receivers"."last_name", "receivers"."email", "receivers"."gender", "receivers"."dob", "receivers"."dialcode", "receivers"."phone", "receivers"."address", "receivers"."address2", "receivers"."city", "receivers"."state", "receivers"."country", "receivers"."postcode", "receivers"."reference", "receivers"."applicant_id", "receivers"."status", "receivers"."kyc_status", "receivers"."created_at", "receivers"."updated_at", "receivers"."email_normalized" FROM "receivers" WHERE (("receivers"."id" = :p_receiver_id) AND ("receivers"."subaccount_id" = :sub)) LIMIT 1;
SELECT "receiver_accounts"."id", "receiver_accounts"."subaccount_id", "receiver_accounts"."receiver_id", "receiver_accounts"."method", "receiver_accounts"."asset", "receiver_accounts"."status", "receiver_accounts"."confirm_status", "receiver_accounts"."data_ciphertext", "receiver_accounts"."details_fingerprint", "receiver_accounts"."fp_bsb", "receiver_accounts"."fp_account_number", "receiver_accounts"."fp_routing_number", "receiver_accounts"."fp_account_type", "receiver_accounts"."fp_iban", "receiver_accounts"."fp_bic", "receiver_accounts"."fp_recipient", "receiver_accounts"."created_at", "receiver_accounts"."updated_at" FROM "receiver_accounts" WHERE (("receiver_accounts"."id" = :p_account_id) AND ("receiver_accounts"."subaccount_id" = :sub)) LIMIT 1;
SELECT "subaccounts"."id", "subaccounts"."merchant_id", "subaccounts"."name", "subaccounts"."title", "subaccounts"."first_name", "subaccounts"."last_name", "subaccounts"."email", "subaccounts"."dob", "subaccounts"."provider_status", "subaccounts"."business_name", "subaccounts"."business_or_individual", "subaccounts"."support_email", "subaccounts"."mobile_dialcode", "subaccounts"."mobile", "subaccounts"."home_phone_dialcode", "subaccounts"."home_telephone", "subaccounts"."address", "subaccounts"."suburb", "subaccounts"."state", "subaccounts"."country", "subaccounts"."postcode", "subaccounts"."has_passed_kyc", "subaccounts"."kyc_status", "subaccounts"."postback_url", "subaccounts"."sms_provider", "subaccounts"."email_provider", "subaccounts"."require_signature_v2", "subaccounts"."created_at", "subaccounts"."updated_at" FROM "subaccounts" WHERE ("subaccounts"."id" = :sub) LIMIT 1;
