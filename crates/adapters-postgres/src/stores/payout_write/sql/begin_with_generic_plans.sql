-- How a set transaction begins on plain PostgreSQL: every statement after BEGIN runs its
-- generic plan, and both go in one round trip (one simple query). The setting ends with the
-- transaction. No parameters.
BEGIN; SET LOCAL plan_cache_mode = force_generic_plan
