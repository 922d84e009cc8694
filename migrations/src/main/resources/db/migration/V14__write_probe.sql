-- A table that stays empty: /health writes to it to learn whether the database can still store
-- anything (issue 25: with the data disk full, /health said ok and submits answered 202 while
-- nothing could run). The probe truncates it and inserts a row inside a subtransaction it always
-- rolls back, so the insert must give the table a fresh file its first page; on a full disk that
-- fails with SQLSTATE 53100 however much free space the other tables' pages still have.
CREATE TABLE outrun_write_probe (
    probed_at timestamptz NOT NULL
);
