package io.outrun.http;

import com.fasterxml.jackson.core.type.TypeReference;
import io.outrun.execution.ExecutionStatus;
import io.outrun.http.wire.ExecutionPage;
import io.outrun.http.wire.ExecutionSummary;
import io.outrun.http.wire.Json;
import io.outrun.store.NamedSql;
import io.outrun.store.StoreException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * An owner's executions for {@code GET /v1/executions}, newest first. Reads only the columns a
 * listing shows: the stored output (up to megabytes per row) never leaves the database here.
 * Uses the {@code executions_owner_created} index; pages continue strictly after the last row
 * shown, so rows submitted meanwhile never repeat or shift a page.
 */
final class ExecutionListing {

    private static final TypeReference<Map<String, String>> STRING_MAP = new TypeReference<>() { };

    private static final int BY_STATUS = 1;
    private static final int BY_LABELS = 2;
    private static final int AFTER = 4;

    /**
     * The page's statement for each mix of filters (by the bits above): eight fixed statements,
     * built once at class load by concatenating fixed text, not one with {@code :x IS NULL OR}
     * branches, which would keep a generic plan from starting the index scan at the cursor.
     */
    private static final List<NamedSql> PAGE = java.util.stream.IntStream.range(0, 8).mapToObj(v -> NamedSql.of("""
            SELECT id, status, left(command, 200), exit_code, attempt, created_at, started_at, finished_at, labels::text,
                   (extract(epoch from (coalesce(finished_at, now()) - started_at)) * 1000)::bigint
              FROM executions WHERE owner = :owner"""
            + ((v & BY_STATUS) != 0 ? " AND status = :status" : "")
            + ((v & BY_LABELS) != 0 ? " AND labels @> :labels::jsonb" : "")
            + ((v & AFTER) != 0 ? " AND (created_at, id) < (:after_created, :after_id)" : "")
            // One row more than asked tells whether another page follows.
            + " ORDER BY created_at DESC, id DESC LIMIT :limit")).toList();

    private final DataSource dataSource;

    ExecutionListing(DataSource dataSource) {
        this.dataSource = dataSource;
    }

    ExecutionPage page(String owner, ExecutionStatus status, int limit, ListCursor after) {
        return page(owner, status, Map.of(), limit, after);
    }

    /** Only executions carrying every label in {@code labels} (the owner's index narrows first). */
    ExecutionPage page(String owner, ExecutionStatus status, Map<String, String> labels, int limit, ListCursor after) {
        NamedSql.Args args = NamedSql.Args.of("owner", owner, "limit", limit + 1);
        int variant = 0;
        if (status != null) {
            variant |= BY_STATUS;
            args.and("status", status.wire());
        }
        if (!labels.isEmpty()) {
            variant |= BY_LABELS;
            try {
                args.and("labels", Json.mapper().writeValueAsString(labels));
            } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
                throw new IllegalStateException(e);
            }
        }
        if (after != null) {
            variant |= AFTER;
            args.and("after_created", Timestamp.from(after.createdAt())).and("after_id", after.id());
        }
        List<ExecutionSummary> rows = new ArrayList<>();
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = PAGE.get(variant).prepare(c, args)) {
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    rows.add(map(rs));
                }
            }
        } catch (SQLException e) {
            throw new StoreException("cannot list executions of owner " + owner, e);
        }
        String next = null;
        if (rows.size() > limit) {
            rows = rows.subList(0, limit);
            ExecutionSummary last = rows.get(limit - 1);
            next = new ListCursor(last.createdAt(), UUID.fromString(last.executionId())).encode();
        }
        return new ExecutionPage(List.copyOf(rows), next);
    }

    private static ExecutionSummary map(ResultSet rs) throws SQLException {
        Map<String, String> labels;
        try {
            labels = Json.mapper().readValue(rs.getString(9), STRING_MAP);
        } catch (Exception e) {
            labels = Map.of();
        }
        long duration = rs.getLong(10);
        boolean started = !rs.wasNull();
        return new ExecutionSummary(rs.getObject(1, UUID.class).toString(), rs.getString(2), rs.getString(3),
                (Integer) rs.getObject(4), rs.getInt(5), instant(rs.getTimestamp(6)), instant(rs.getTimestamp(7)),
                instant(rs.getTimestamp(8)), started ? duration : null, labels);
    }

    private static Instant instant(Timestamp t) {
        return t == null ? null : t.toInstant();
    }
}
