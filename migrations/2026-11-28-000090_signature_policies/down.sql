UPDATE subaccounts SET require_signature_v2 = (signature_policy = 'v2');
ALTER TABLE subaccounts DROP COLUMN signature_policy;
