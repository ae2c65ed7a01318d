-- Reference script of `cargo xtask bench cutoff`, step "settled", for a rail whose bank or
-- partner answers each file with a status report (SEPA's pain.002, Interac's final report): the
-- rows payoutd writes for the reports besides the settlement itself (cutoff_settled.sql). Each
-- file's report is stored with its bytes (`report_line_bytes` a payment, as the bench's bank
-- and the partner write them: about 215 for pain.002, 107 for Interac) and its lines
-- (InboundProcessor::process, InboundStore::record_inbound): the file's verdict (`file_settled`,
-- applied; Interac's comes in its first report), then one line per payment (`settled`).
-- Run by the harness after cutoff_settled.sql in the same rolled-back transaction, on those
-- rails only. Variables (psql -v): batches (a uuid[] literal), method (the route),
-- report_line_bytes.
WITH reports AS (
    SELECT f.id AS file_id, f.name,
        convert_to(string_agg(rpad('<TxInfAndSts><OrgnlEndToEndId>' || i.reference
            || '</OrgnlEndToEndId><TxSts>ACSC</TxSts></TxInfAndSts>', :report_line_bytes), E'\n'
            ORDER BY i.position), 'UTF8') AS bytes
    FROM rail_files f
    JOIN rail_file_items i ON i.file_id = f.id
    WHERE f.batch_id = ANY (:'batches'::uuid[]) AND f.method = :'method'
    GROUP BY f.id, f.name)
INSERT INTO inbound_files (id, method, name, sha256, outcome, received_at, bytes)
SELECT md5('reference-report' || file_id)::uuid, :'method', name || '-pain002', sha256(bytes),
    'read', now(), bytes
FROM reports;

INSERT INTO bank_reports (id, inbound_file_id, position, method, kind, reference, code, reason,
    account_invalid, amount, subaccount_id, payout_id, rail_file_id, resolution, created_at)
SELECT gen_random_uuid(), md5('reference-report' || f.id)::uuid, 0, :'method', 'file_settled',
    f.name, 'ACCP', NULL, false, NULL, NULL, NULL, f.id, 'applied', now()
FROM rail_files f
WHERE f.batch_id = ANY (:'batches'::uuid[]) AND f.method = :'method'
UNION ALL
SELECT gen_random_uuid(), md5('reference-report' || i.file_id)::uuid, i.position + 1, :'method',
    'settled', i.reference, 'ACSC', NULL, false, p.amount, i.subaccount_id, i.payout_id,
    i.file_id, 'repeated', now()
FROM rail_files f
JOIN rail_file_items i ON i.file_id = f.id
JOIN payouts p ON p.id = i.payout_id AND p.subaccount_id = i.subaccount_id
WHERE f.batch_id = ANY (:'batches'::uuid[]) AND f.method = :'method';
