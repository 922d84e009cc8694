-- A node's lease TTL, written by its heartbeat. A node that has not beaten within its own TTL
-- has lost every lease it held (its beats renew them): it is dead or cut off, and instant pickup
-- must not wake it. Before, any node that beat within a minute could be woken, so for a minute
-- after a crash about one wake-up in N went to the dead node and its work waited for JobRunr's
-- poll. NULL (a node of an older version): judged by the minute, as before.
ALTER TABLE nodes ADD COLUMN lease_ttl_ms integer;
