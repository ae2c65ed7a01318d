-- The time zone an operator reads the console's times in: an IANA name of the tz database the
-- binary compiles in (the console checks it), UTC until the operator chooses another.
ALTER TABLE operators
    ADD COLUMN time_zone text NOT NULL DEFAULT 'UTC' CHECK (length(time_zone) BETWEEN 1 AND 64);
