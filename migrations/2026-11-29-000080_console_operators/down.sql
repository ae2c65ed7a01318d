DROP TABLE audit_log;
DROP FUNCTION refuse_audit_change();
DROP TABLE login_failures;
DROP TABLE operator_sessions;
DROP TABLE operators;
DROP INDEX receivers_kyc_pending;
