DROP TABLE kyc_decisions;
