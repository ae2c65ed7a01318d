-- Least-privilege PostgreSQL roles for payoutd (docs/DEPLOY.md, Database roles).
--
-- Run once per database, as a superuser (or the database owner holding CREATEROLE), with psql,
-- connected to the payoutd database, BEFORE the first `payoutd migrate`:
--
--   psql -v ON_ERROR_STOP=1 -d payoutd \
--        -v database=payoutd -v migrator=payoutd_migrator -v runtime=payoutd_app \
--        -v migrator_password="$(openssl rand -hex 24)" \
--        -v runtime_password="$(openssl rand -hex 24)" \
--        -f roles.sql
--
-- * The migrator owns the schema and every table: `payoutd migrate` runs as it (DATABASE_URL
--   with its credentials) and nothing else does.
-- * The runtime role is what `payoutd serve` and `payoutd admin ...` connect as: it reads and
--   writes rows, and cannot create, alter, drop or truncate anything.
--
-- What payoutd does at run time, and why no more is granted: LISTEN and NOTIFY (revocation
-- announcements) need no privilege; it takes no advisory locks, creates no temporary tables,
-- truncates nothing and creates no partitions; `maintenance_markers` is written (and locked,
-- which needs UPDATE) only by `payoutd migrate`. The readiness probe reads
-- `__diesel_schema_migrations`, a table like the others (SELECT).

\set ON_ERROR_STOP on

CREATE ROLE :"migrator" LOGIN PASSWORD :'migrator_password';
CREATE ROLE :"runtime" LOGIN PASSWORD :'runtime_password';

-- Only the two roles connect; nobody else may create temporary tables here.
REVOKE ALL ON DATABASE :"database" FROM PUBLIC;
GRANT CONNECT ON DATABASE :"database" TO :"migrator", :"runtime";

-- The migrator owns the schema payoutd's tables live in; no other role may create in it.
ALTER SCHEMA public OWNER TO :"migrator";
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO :"runtime";

-- Rows only, on the tables and sequences the migrator creates now and in later migrations.
ALTER DEFAULT PRIVILEGES FOR ROLE :"migrator" IN SCHEMA public
    GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO :"runtime";
ALTER DEFAULT PRIVILEGES FOR ROLE :"migrator" IN SCHEMA public
    GRANT USAGE, SELECT ON SEQUENCES TO :"runtime";

-- Tables that already exist (a database migrated before the roles were introduced: hand them
-- to the migrator with ALTER TABLE ... OWNER TO first).
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO :"runtime";
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO :"runtime";
