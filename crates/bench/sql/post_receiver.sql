-- pgbench script: the SQL payoutd runs for one `POST /api/receiver`, in the same order, one round
-- trip per statement (run by `cargo xtask bench api`, case post-receiver).
--
-- Mirrors, as of this commit:
--   1. authentication, `AuthService::authenticate` (crates/domain/src/auth/service.rs): the
--      key from memory (`CachedCredentials`, see get_receiver.sql), then `record_nonce` (POST
--      nonces are single use) (crates/adapters-postgres/src/stores/credentials.rs);
--   2. `ReceiverStore::insert_receiver` (stores/receivers.rs), called by
--      `ReceiverService::create` (crates/domain/src/receiver/service.rs): one transaction with
--      the receiver row and its `receiverCreated` event (`insert_events`, stores/outbox.rs).
--      The sandbox KYC check that `create` opens first runs in memory.
-- The statements are the text diesel sends (seen with log_statement = all), with pgbench
-- variables or SQL expressions for the parameters:
--   - ids, the email and the reference are made unique from a random number (payoutd binds
--     values it made); the nonce is random (payoutd's increase per API key);
--   - the event payload is built with jsonb_build_object (payoutd binds it as jsonb);
--   - the event is written due in 10 years rather than now, so that the delivery worker of the
--     payoutd under test, which runs meanwhile, leaves pgbench's events alone. Giving up
--     payoutd's own events (the bench subaccount has no webhook: one claim statement per batch
--     of events marks them exhausted with a skipped attempt) is work payoutd does that this
--     script does not.
--
-- Variables (payoutd-bench passes them with -D): keyid (the key's id), sub.
\set r random(1, 9000000000000000000)
\set nonce random(1000000000000, 9000000000000000000)
INSERT INTO "request_nonces" ("api_key_id", "nonce", "subaccount_id", "seen_at") VALUES (:keyid, :nonce, :sub, now()) ON CONFLICT DO NOTHING;
BEGIN;
INSERT INTO "receivers" ("id", "subaccount_id", "first_name", "middle_name", "last_name", "email", "gender", "dob", "dialcode", "phone", "address", "address2", "city", "state", "country", "postcode", "reference", "applicant_id", "status", "kyc_status", "created_at", "updated_at", "email_normalized") VALUES (md5('nr' || :r)::uuid, :sub, 'Olivia', '', 'Smith', 'olivia.smith.' || :r || '@example.com', 'F', '1990-12-10', '61', '412345678', '1 George Street', '', 'Sydney', 'NSW', 'AUS', '2000', 'CUST-' || :r, 'sbx_app_' || md5('na' || :r), 1, 0, now(), now(), 'olivia.smith.' || :r || '@example.com');
WITH seq AS ( INSERT INTO outbox_sequences (object_id, subaccount_id, last_sequence) VALUES (md5('nr' || :r)::uuid, :sub, 1) ON CONFLICT ON CONSTRAINT outbox_sequences_pkey DO UPDATE SET last_sequence = outbox_sequences.last_sequence + 1 RETURNING last_sequence AS n) INSERT INTO outbox_events (id, subaccount_id, object_id, sequence, event_type, payload, created_at, next_attempt_at) SELECT md5('ne' || :r)::uuid, :sub, md5('nr' || :r)::uuid, seq.n, 'receiverCreated', jsonb_build_object('event', 'receiverCreated', 'event_id', md5('ne' || :r)::uuid::text, 'receiver_id', md5('nr' || :r)::uuid::text, 'subaccount_id', :sub::text, 'subccount_id', :sub::text, 'status', 'pending', 'kyc_status', 'pending', 'timestamp', (extract(epoch FROM now()) * 1000)::bigint) || jsonb_build_object('sequence', seq.n), now(), now() + interval '10 years' FROM seq;
COMMIT;
