-- `outrun drain NODE` asks a node, from anywhere, to drain: its next heartbeat reads the request.
ALTER TABLE nodes ADD COLUMN drain_requested boolean NOT NULL DEFAULT false;
