-- Maintenance that runs from Rust after the SQL migrations (e.g. recomputing receivers'
-- e-mail keys, which SQL cannot compute) records here which version of it the data has, so
-- `payoutd migrate` does it once per version instead of scanning at every run.
CREATE TABLE maintenance_markers (
    name text PRIMARY KEY,
    version integer NOT NULL,
    done_at timestamptz NOT NULL DEFAULT now()
);
