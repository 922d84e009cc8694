package io.outrun.core.store;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * The {@code webhooks} and {@code webhook_secrets} tables. Completion webhooks (issue 28, V20):
 * the owner's signing secret, and the deliveries nodes take and write back. A delivery is made
 * due by its execution's end, in the end's transaction (a trigger), so no end is ever without
 * its event; a node takes due rows for a bounded time and writes each attempt's outcome fenced
 * by the attempt's number, so a node killed mid-send only delays the delivery, and a late
 * writer changes nothing.
 */
public final class WebhookStore {

    /** The name a webhook secret is sealed under (the owner is the rest of its associated data). */
    public static final String SECRET_NAME = "webhook-secret";

    /** A completion webhook (V20): waiting for the end, which makes it due (a trigger). */
    static final NamedSql INSERT = NamedSql.of("""
            INSERT INTO webhooks (execution_id, url) VALUES (:id, :url)""");

    private static final NamedSql PUT_SECRET = NamedSql.of("""
            INSERT INTO webhook_secrets (owner, nonce, ciphertext, key_id) VALUES (:owner, :nonce, :ciphertext, :key_id)
            ON CONFLICT (owner) DO UPDATE SET nonce = EXCLUDED.nonce, ciphertext = EXCLUDED.ciphertext,
              key_id = EXCLUDED.key_id, created_at = now(), previous_nonce = webhook_secrets.nonce,
              previous_ciphertext = webhook_secrets.ciphertext, previous_key_id = webhook_secrets.key_id, rotated_at = now()
            RETURNING created_at, (xmax <> 0) AS rotated""");

    private static final NamedSql HAS_SECRET = NamedSql.of("""
            SELECT EXISTS (SELECT 1 FROM webhook_secrets WHERE owner = :owner)""");

    /**
     * Takes up to {@code :n} due deliveries, oldest due first, skipping rows another node is
     * taking, and holds each for {@code :hold_ms} (an attempt's bound plus a margin): past it,
     * another node may take it again. Also says when the next row not yet due becomes due.
     */
    private static final NamedSql TAKE = NamedSql.of("""
            WITH candidates AS (SELECT w.execution_id, e.owner, w.next_attempt_at FROM webhooks w
                JOIN executions e ON e.id = w.execution_id
                WHERE w.state = 'pending' AND w.next_attempt_at <= now() AND e.owner <> ALL (:busy::text[])
                ORDER BY w.next_attempt_at LIMIT 200),
              -- One per owner, oldest due first: an owner whose receivers hang holds one sender, not all.
              fair AS (SELECT execution_id FROM (SELECT c.*, row_number() OVER (PARTITION BY c.owner
                  ORDER BY c.next_attempt_at) AS k FROM candidates c) r WHERE r.k = 1 ORDER BY r.next_attempt_at LIMIT :n),
              due AS (SELECT w.execution_id FROM webhooks w WHERE w.execution_id IN (SELECT execution_id FROM fair)
                AND w.state = 'pending' AND w.next_attempt_at <= now() FOR UPDATE SKIP LOCKED),
              -- Past the window (attempts that never wrote back, their nodes gone): failed, not taken.
              expired AS (UPDATE webhooks w SET state = 'failed', next_attempt_at = NULL,
                last_error = coalesce(w.last_error, 'no attempt answered') || ' (gave up: the delivery window ended)'
                FROM due WHERE w.execution_id = due.execution_id
                  AND w.ended_at + :window_ms * interval '1 millisecond' < now()
                RETURNING w.execution_id),
              taken AS (UPDATE webhooks w SET attempts = w.attempts + 1, last_attempt_at = now(),
                next_attempt_at = now() + :hold_ms * interval '1 millisecond'
                FROM due WHERE w.execution_id = due.execution_id AND w.execution_id NOT IN (SELECT execution_id FROM expired)
                RETURNING w.execution_id, w.url, w.event_id, w.attempts, w.ended_at)
            SELECT t.*, e.owner, e.status, e.exit_code, e.error_code, e.error_message, e.attempt, e.labels::text AS labels_json,
              e.created_at, e.started_at, e.finished_at, s.nonce, s.ciphertext, s.key_id,
              CASE WHEN s.rotated_at > now() - :window_ms * interval '1 millisecond' THEN s.previous_nonce END AS previous_nonce,
              s.previous_ciphertext, s.previous_key_id,
              (SELECT ceil(extract(epoch FROM min(w.next_attempt_at) - now()) * 1000)::int8 FROM webhooks w
                WHERE w.state = 'pending' AND w.next_attempt_at > now()) AS next_due_ms,
              (SELECT count(*) FROM candidates) AS candidates
            FROM (SELECT 1) one LEFT JOIN (taken t JOIN executions e ON e.id = t.execution_id
              LEFT JOIN webhook_secrets s ON s.owner = e.owner) ON true""");

    private static final NamedSql DELIVERED = NamedSql.of("""
            UPDATE webhooks SET state = 'delivered', delivered_at = now(), last_status = :status, last_error = NULL,
              next_attempt_at = NULL
            WHERE execution_id = :id AND state = 'pending' AND attempts = :attempt""");

    /** A failed attempt: again after {@code :retry_ms}, unless that is past the delivery window. */
    private static final NamedSql FAILED_ATTEMPT = NamedSql.of("""
            UPDATE webhooks SET last_status = :status, last_error = :error,
              state = CASE WHEN now() + :retry_ms * interval '1 millisecond'
                > ended_at + :window_ms * interval '1 millisecond' THEN 'failed' ELSE 'pending' END,
              next_attempt_at = CASE WHEN now() + :retry_ms * interval '1 millisecond'
                > ended_at + :window_ms * interval '1 millisecond' THEN NULL
                ELSE now() + :retry_ms * interval '1 millisecond' END
            WHERE execution_id = :id AND state = 'pending' AND attempts = :attempt
            RETURNING state""");

    private final DataSource dataSource;

    public WebhookStore(DataSource dataSource) {
        this.dataSource = dataSource;
    }

    /** Stores (or replaces) the owner's signing secret; true when it replaced one. */
    public boolean putSecret(String owner, Sealed sealed) {
        NamedSql.Args args = NamedSql.Args.of("owner", owner, "nonce", sealed.nonce(), "ciphertext", sealed.ciphertext())
                .and("key_id", sealed.keyId());
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = PUT_SECRET.prepare(c, args);
             ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getBoolean("rotated");
        } catch (SQLException e) {
            throw new StoreException("cannot store the webhook secret of owner " + owner, e);
        }
    }

    public boolean hasSecret(String owner) {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = HAS_SECRET.prepare(c,
                NamedSql.Args.of("owner", owner)); ResultSet rs = ps.executeQuery()) {
            return rs.next() && rs.getBoolean(1);
        } catch (SQLException e) {
            throw new StoreException("cannot read the webhook secret of owner " + owner, e);
        }
    }

    /** A secret as sealed by the operator's key ({@code core.secrets.SecretsKey}, which this package does not see). */
    public record Sealed(byte[] nonce, byte[] ciphertext, String keyId) {
    }

    /** A delivery taken by this node: what to send, where, and the owner's sealed secret (null: none). */
    public record Due(UUID executionId, String url, String eventId, int attempt, Instant endedAt, String owner,
                      String status, Integer exitCode, String errorCode, String errorMessage, int executionAttempt,
                      String labelsJson, Instant createdAt, Instant startedAt, Instant finishedAt,
                      Sealed secret, Sealed previous) {
    }

    /**
     * What a take got; in how many ms the next pending row becomes due (null: none); and whether
     * more were due than it took ({@code more}: look again once a sender is free).
     */
    public record Taken(List<Due> due, Long nextDueMs, boolean more) {
    }

    /**
     * Takes up to {@code n} due deliveries, at most one per owner and none of {@code busy} (owners
     * this node is sending to now), each held for {@code hold}; rows past {@code window} after
     * their end are made {@code failed} instead.
     */
    public Taken take(int n, Duration hold, Set<String> busy, Duration window) {
        NamedSql.Args args = NamedSql.Args.of("n", n, "hold_ms", hold.toMillis(), "busy", busy.toArray(new String[0]))
                .and("window_ms", window.toMillis());
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = TAKE.prepare(c, args)) {
            ps.setQueryTimeout(ExecutionRows.WRITE_TIMEOUT_S);
            List<Due> due = new ArrayList<>();
            Long next = null;
            long candidates = 0;
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    next = (Long) rs.getObject("next_due_ms");
                    candidates = rs.getLong("candidates");
                    if (rs.getObject("execution_id") == null) {
                        continue;
                    }
                    byte[] nonce = rs.getBytes("nonce");
                    byte[] previousNonce = rs.getBytes("previous_nonce");
                    due.add(new Due(rs.getObject("execution_id", UUID.class), rs.getString("url"), rs.getString("event_id"),
                            rs.getInt("attempts"), ExecutionRows.instant(rs, "ended_at"), rs.getString("owner"),
                            rs.getString("status"), (Integer) rs.getObject("exit_code"), rs.getString("error_code"),
                            rs.getString("error_message"), rs.getInt("attempt"), rs.getString("labels_json"),
                            ExecutionRows.instant(rs, "created_at"), ExecutionRows.instant(rs, "started_at"),
                            ExecutionRows.instant(rs, "finished_at"),
                            nonce == null ? null : new Sealed(nonce, rs.getBytes("ciphertext"), rs.getString("key_id")),
                            previousNonce == null ? null : new Sealed(previousNonce, rs.getBytes("previous_ciphertext"),
                                    rs.getString("previous_key_id"))));
                }
            }
            return new Taken(due, next, candidates > due.size());
        } catch (SQLException e) {
            throw new StoreException("cannot take due webhooks", e);
        }
    }

    /** A 2xx came back for attempt {@code attempt}; false when another node has taken the row since. */
    public boolean delivered(UUID id, int attempt, int status) {
        return ExecutionRows.update(dataSource, DELIVERED, NamedSql.Args.of("id", id, "attempt", attempt, "status", status)) == 1;
    }

    /**
     * Attempt {@code attempt} failed ({@code status}: the receiver's answer, null without one):
     * pending again in {@code retryIn}, or {@code failed} when that is past {@code window} after
     * the end. Empty when another node has taken the row since.
     */
    public Optional<String> failedAttempt(UUID id, int attempt, Integer status, String error, Duration retryIn,
                                          Duration window) {
        NamedSql.Args args = NamedSql.Args.of("id", id, "attempt", attempt, "status", status)
                .and("error", error)
                .and("retry_ms", retryIn.toMillis())
                .and("window_ms", window.toMillis());
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = FAILED_ATTEMPT.prepare(c, args);
             ResultSet rs = ps.executeQuery()) {
            return rs.next() ? Optional.of(rs.getString(1)) : Optional.empty();
        } catch (SQLException e) {
            throw new StoreException("cannot record a webhook attempt of execution " + id, e);
        }
    }
}
