-- pgbench script: the SQL payoutd runs for one `GET /api/receiver/<id>`, in the same order, one
-- round trip per statement (run by `cargo xtask bench api`, case get-receiver).
--
-- Mirrors, as of this commit:
--   1. authentication, `AuthService::authenticate` (crates/domain/src/auth/service.rs): no SQL.
--      The key is served by `CachedCredentials` (crates/domain/src/auth/cache.rs) from memory,
--      as for every request within `PAYOUT_CREDENTIAL_CACHE_MS` (1 s) of its worker's last
--      lookup of that key (`CredentialStore::find_credential`, one SELECT per key and worker
--      per second, left out); GETs record no nonce;
--   2. `ReceiverStore::find_receiver` (crates/adapters-postgres/src/stores/receivers.rs), called
--      by `ReceiverService::get` (crates/domain/src/receiver/service.rs).
-- The statements are the text diesel sends (seen with log_statement = all), with pgbench
-- variables for the parameters and `LIMIT 1` for diesel's bound limit of `.first()`.
--
-- Variables (payoutd-bench passes them with -D): sub (the subaccount), tag, receivers.
-- The receiver is a random seeded one: seeded ids are md5(tag || 'r' || i)::uuid
-- (`sql_uuid` in crates/bench/src/seed/generate.rs), so SQL computes the id where payoutd
-- binds it.
\set i random(0, :receivers - 1)
SELECT "receivers"."id", "receivers"."subaccount_id", "receivers"."first_name", "receivers"."middle_name", "receivers"."last_name", "receivers"."email", "receivers"."gender", "receivers"."dob", "receivers"."dialcode", "receivers"."phone", "receivers"."address", "receivers"."address2", "receivers"."city", "receivers"."state", "receivers"."country", "receivers"."postcode", "receivers"."reference", "receivers"."applicant_id", "receivers"."status", "receivers"."kyc_status", "receivers"."created_at", "receivers"."updated_at", "receivers"."email_normalized" FROM "receivers" WHERE (("receivers"."id" = md5(:tag || 'r' || :i)::uuid) AND ("receivers"."subaccount_id" = :sub)) LIMIT 1;
