CREATE INDEX webhook_attempts_subaccount ON webhook_attempts (subaccount_id, attempted_at);
