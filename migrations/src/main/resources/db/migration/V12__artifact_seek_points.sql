-- Seek points of a gzipped full output (issue 25 #7): it is written as one gzip member per few
-- MiB of output, and this lists where each member starts, as pairs (raw offset, stored offset),
-- flattened. A Range read starts at the member holding its first byte instead of inflating
-- everything before it. NULL for artifacts stored as they are, and for outputs kept before V12.
ALTER TABLE artifacts ADD COLUMN seek_points bigint[];
