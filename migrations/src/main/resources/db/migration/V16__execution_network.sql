-- A run's network (issue 27): 'egress' goes out through its node's egress proxy, to the hosts
-- the operator allows (--egress-allow); NULL is no network, as every run before.
ALTER TABLE executions ADD COLUMN network text CHECK (network IN ('egress'));
