-- Which signature versions a subaccount's requests may use (docs/API.md, Signature policies):
-- any (v1 or v2 everywhere), v2_for_posts (v1 on GET only) or v2 (everywhere). A v1 signature
-- covers only the nonce and the key, so a captured one could sign a POST with any body: new
-- subaccounts sign their POSTs with v2. Subaccounts created before keep what they had, so no
-- client of theirs breaks: v2 where v2 was required, any otherwise.
ALTER TABLE subaccounts ADD COLUMN signature_policy text NOT NULL DEFAULT 'any'
    CHECK (signature_policy IN ('any', 'v2_for_posts', 'v2'));
UPDATE subaccounts SET signature_policy = 'v2' WHERE require_signature_v2;
ALTER TABLE subaccounts ALTER COLUMN signature_policy SET DEFAULT 'v2_for_posts';
-- require_signature_v2 is kept, written as (signature_policy = 'v2'), for instances of the
-- previous version during a rolling upgrade; a later migration drops it.
