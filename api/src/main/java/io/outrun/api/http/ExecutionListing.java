package io.outrun.api.http;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import io.outrun.client.wire.ExecutionPage;
import io.outrun.client.wire.ExecutionSummary;
import io.outrun.client.wire.Json;
import io.outrun.core.execution.ExecutionStatus;
import io.outrun.core.store.ExecutionsTable;
import io.outrun.core.store.NamedSql;
import io.outrun.core.store.StoreException;
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
            variant |= ExecutionsTable.PAGE_BY_STATUS;
            args.and("status", status.wire());
        }
        if (!labels.isEmpty()) {
            variant |= ExecutionsTable.PAGE_BY_LABELS;
            try {
                args.and("labels", Json.mapper().writeValueAsString(labels));
            } catch (JsonProcessingException e) {
                throw new IllegalStateException(e);
            }
        }
        if (after != null) {
            variant |= ExecutionsTable.PAGE_AFTER;
            args.and("after_created", Timestamp.from(after.createdAt())).and("after_id", after.id());
        }
        List<ExecutionSummary> rows = new ArrayList<>();
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = ExecutionsTable.PAGE.get(variant).prepare(c, args)) {
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
