-- One word per idea (issue 41): "dispatch" is the claim, "book" the JobRunr job that mirrors an
-- execution; "owner" is the tenant, "holder" the node incarnation that holds a lease.
-- A rename keeps the data, the indexes, the constraints and the generated job_id (PostgreSQL
-- rewrites their references); the trigger functions name neither column.
ALTER TABLE executions RENAME COLUMN dispatch_seq TO book_seq;
ALTER TABLE executions RENAME COLUMN lease_owner TO lease_holder;
ALTER TABLE leases RENAME COLUMN owner TO holder;
