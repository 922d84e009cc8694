package io.outrun.core.store;

/**
 * The node's ends, several in one statement (issue 42; {@code worker.lease.EndBatch}): apart from
 * {@link ExecutionsTable} because it is one idea of its own, the fenced end of many rows at once.
 */
public final class EndsTable {

    private EndsTable() {
    }

    /**
     * The ends of several runs of a node in one statement (the node's end batch, {@code
     * EndBatch}), each fenced as {@link Departure.Rows#BY_LEASE} says: past its lease's expiry the
     * run's kill switch may have fired, and its end and last output land together or not at all.
     * Each row is fenced on its own: a row whose lease is lost is not written, nor its output, and
     * the others are. Its last output is appended, and the chunks that fell out of its kept tail
     * dropped, for the rows ended only, in this statement (the lease row that fences a flush is
     * removed by the end's trigger: here the end itself is the fence).
     *
     * <p>Rows are locked without waiting ({@code SKIP LOCKED}): a statement ending several rows
     * that waited could hold one lease row while waiting for another held by the node's heartbeat
     * (which renews in its own order), itself waiting for the first. A row whose lock another
     * write holds now (the heartbeat, a cancel, a progress report: all short) is answered busy
     * ({@code ended} false) and written again by the next statement; one neither ended nor busy
     * was fenced out.
     */
    public static final NamedSql ENDS = NamedSql.of("""
            WITH v AS (SELECT * FROM unnest(:ids::uuid[], :epochs::int8[], :statuses::text[], :exit_codes::int4[],
                  :error_codes::text[], :error_messages::text[], :stdout_totals::int8[], :stderr_totals::int8[],
                  :default_caps::int4[])
                AS v(id, epoch, status, exit_code, error_code, error_message, stdout_total, stderr_total, default_cap)),
              mine AS (SELECT e.id FROM executions e JOIN v ON v.id = e.id AND v.epoch = e.lease_epoch
                WHERE e.status = 'running' FOR NO KEY UPDATE OF e SKIP LOCKED),
              fenced AS (SELECT l.execution_id AS id FROM leases l JOIN v ON v.id = l.execution_id AND v.epoch = l.epoch
                WHERE l.expires_at > now() AND l.execution_id IN (SELECT id FROM mine) FOR UPDATE OF l SKIP LOCKED),
              ended AS (UPDATE executions e SET status = v.status, exit_code = v.exit_code, error_code = v.error_code,
                -- An operator's cancel recorded its own message (SubmissionStore.requestCancelAsOperator).
                error_message = CASE WHEN v.status = 'cancelled' AND e.cancel_requested_at IS NOT NULL
                  AND e.error_message IS NOT NULL THEN e.error_message ELSE v.error_message END,
                stdout_total_bytes = v.stdout_total, stderr_total_bytes = v.stderr_total,
                stdout_truncated = v.stdout_total > e.max_output_bytes / 2 + (e.max_output_bytes - e.max_output_bytes / 2),
                stderr_truncated = v.stderr_total > e.max_output_bytes / 2 + (e.max_output_bytes - e.max_output_bytes / 2),
                finished_at = now(), updated_at = now(), lease_owner = NULL
                FROM v WHERE e.id = v.id AND e.lease_epoch = v.epoch AND e.status = 'running'
                  AND e.id IN (SELECT id FROM fenced)
                RETURNING e.id, e.owner, e.lease_epoch, e.output_epoch, e.max_output_bytes, v.default_cap),
              chunks AS (SELECT * FROM unnest(:chunk_ids::uuid[], :chunk_epochs::int8[], :streams::int2[], :offsets::int8[],
                  :datas::bytea[]) AS u(id, epoch, stream, off, data)),
              -- Each ended run's last output, appended as a flush appends (OutputStore.APPEND).
              appended AS (INSERT INTO execution_output (execution_id, epoch, stream, start_offset, end_offset, data)
                SELECT u.id, u.epoch, u.stream, u.off, u.off + octet_length(u.data), u.data
                  FROM chunks u JOIN ended ON ended.id = u.id AND ended.lease_epoch = u.epoch
                ON CONFLICT (execution_id, epoch, stream, start_offset) DO UPDATE
                  SET data = EXCLUDED.data, end_offset = EXCLUDED.end_offset
                  WHERE EXCLUDED.end_offset >= execution_output.end_offset),
              -- Stored tail chunks that fell out of the kept tail, as a flush drops them; never one
              -- this statement rewrites (a statement changes a row once).
              dropped AS (DELETE FROM execution_output o USING ended,
                  unnest(:drop_ids::uuid[], :drop_epochs::int8[], :out_below::int8[], :err_below::int8[])
                    AS d(id, epoch, out_below, err_below)
                WHERE ended.id = d.id AND ended.lease_epoch = d.epoch AND o.execution_id = d.id AND o.epoch = d.epoch
                  AND o.start_offset >= ended.max_output_bytes / 2
                  AND o.end_offset <= CASE o.stream WHEN 1 THEN d.out_below ELSE d.err_below END
                  AND NOT EXISTS (SELECT 1 FROM chunks u WHERE u.id = o.execution_id AND u.epoch = o.epoch
                    AND u.stream = o.stream AND u.off = o.start_offset)),
              -- Earlier attempts' output is no longer shown by anyone: drop it with the end.
              old AS (DELETE FROM execution_output o USING ended WHERE o.execution_id = ended.id
                AND o.epoch <> ended.output_epoch),
              -- Fenced in by this statement's snapshot, but locked by another write: written again.
              busy AS (SELECT v.id, v.epoch FROM v WHERE v.id NOT IN (SELECT id FROM fenced)
                AND EXISTS (SELECT 1 FROM executions e JOIN leases l ON l.execution_id = e.id AND l.epoch = e.lease_epoch
                  WHERE e.id = v.id AND e.lease_epoch = v.epoch AND e.status = 'running' AND l.expires_at > now()))
            -- Each end and its NOTIFY (long polls answer at once) in one round trip, and whether work
            -- of the owner may have been held back by what this end releases (its running cap, or
            -- this run's workspace), which the freed slot may take now. Work held by neither was
            -- offered to a node when it was queued. ('outrun_changed' is Channels.CHANGED.)
            SELECT true AS ended, ended.id, ended.lease_epoch AS epoch, pg_notify('outrun_changed', ended.id::text)::text,
              EXISTS (SELECT 1 FROM executions q WHERE q.owner = ended.owner
                AND q.status = 'queued' AND q.enqueued_at <= now())
              AND (coalesce((SELECT w.max_running FROM owners w WHERE w.owner = ended.owner), ended.default_cap) IS NOT NULL
                OR EXISTS (SELECT 1 FROM execution_inputs i WHERE i.execution_id = ended.id AND i.workspace IS NOT NULL))
              AS owner_queued FROM ended
            UNION ALL
            SELECT false, busy.id, busy.epoch, NULL, false FROM busy""");
}
