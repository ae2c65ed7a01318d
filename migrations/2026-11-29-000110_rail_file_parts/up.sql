-- A batch's payouts of a method become as many files as the format's limits need (docs/RAILS.md,
-- Limits of a file): each file is one part, numbered from 1, and a batch has one file per method
-- and part. Files written before are part 1, and so is every file the previous release writes
-- while it still runs (the default: the domain always names the part).
ALTER TABLE rail_files ADD COLUMN part integer NOT NULL DEFAULT 1 CHECK (part >= 1);

-- The uniqueness leads with subaccount_id (a batch belongs to one subaccount, so it is the same
-- rule) so that it also holds on Citus, where every unique constraint of a distributed table
-- includes its distribution column.
-- contract: the previous release does not name this constraint (its insert is ON CONFLICT DO NOTHING without a target) and writes only part 1, for which (subaccount_id, batch_id, method, part) is the same rule as (batch_id, method).
ALTER TABLE rail_files DROP CONSTRAINT rail_files_one_per_batch_and_method;
ALTER TABLE rail_files ADD CONSTRAINT rail_files_one_per_batch_method_and_part
    UNIQUE (subaccount_id, batch_id, method, part);
