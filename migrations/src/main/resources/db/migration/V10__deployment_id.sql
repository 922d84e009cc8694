-- One id per deployment, that is per database (issue 25 #3). Every container a node makes
-- carries it (label outrun.deployment), and a node's clean-up never judges what another
-- deployment made: two deployments that share a Docker engine (staging beside production, two
-- developers on one host) keep each other's runs and warm pools.
CREATE TABLE deployment (
    id   uuid    NOT NULL DEFAULT gen_random_uuid(),
    one  boolean PRIMARY KEY DEFAULT true CHECK (one)
);
INSERT INTO deployment DEFAULT VALUES;
