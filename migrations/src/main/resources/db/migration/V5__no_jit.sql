-- Outrun's statements are short OLTP statements; PostgreSQL's JIT compiles whenever a plan's
-- estimated cost is high, which on a big executions table can be 25 ms of compilation for a
-- 0.5 ms lost-dispatch check (seen by bench/fleet at 10M rows). Off for this database (new
-- sessions, PgBouncer's server connections included). Only the database's owner may set it: a
-- migration run by another role leaves it as it is and says so.
DO $$
BEGIN
    EXECUTE format('ALTER DATABASE %I SET jit = off', current_database());
EXCEPTION WHEN insufficient_privilege THEN
    RAISE NOTICE 'jit stays as configured: only the owner of database % can turn it off for Outrun', current_database();
END
$$;
