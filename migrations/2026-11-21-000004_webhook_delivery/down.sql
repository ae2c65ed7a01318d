ALTER TABLE subaccounts ADD COLUMN webhook_secret bytea;
UPDATE subaccounts s SET webhook_secret = e.secret FROM webhook_endpoints e WHERE e.subaccount_id = s.id;
DROP TABLE webhook_endpoints;
DROP TABLE webhook_attempts;
ALTER TABLE outbox_events DROP COLUMN last_error;
ALTER TABLE outbox_events DROP COLUMN claimed_until;
