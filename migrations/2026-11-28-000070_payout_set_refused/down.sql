DROP FUNCTION payout_set_refused(text);
