-- No query reads webhook attempts by subaccount: the events API and the operator's listing
-- read them by event (`webhook_attempts_event`), and a subaccount's attempts are only ever
-- reached through its events. Every recorded or skipped attempt paid an insert into this
-- index for nothing.
DROP INDEX webhook_attempts_subaccount;
