package io.outrun.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.sql.SQLException;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** The row factory writes rows the real schema accepts (its CHECKs and triggers), with the defaults it documents. */
class RowsIT {

    private final Rows rows = TestDatabase.migrated(Rows::on);

    @Test
    void aDefaultRowIsQueuedWithoutALease() throws SQLException {
        UUID id = rows.execution().insert();
        assertThat(rows.single("SELECT count(*) FROM executions WHERE id = ? AND status = 'queued' AND owner = 'alice'"
                + " AND attempt = 0", id)).isEqualTo(1);
        assertThat(rows.single("SELECT count(*) FROM leases WHERE execution_id = ?", id)).isZero();
    }

    @Test
    void aRunningRowHasItsLeaseAndExpiresWhenTold() throws SQLException {
        UUID id = rows.execution().owner("bob").status("running").attempt(2).lease("n/1", Duration.ofSeconds(30)).insert();
        assertThat(rows.single("SELECT count(*) FROM leases l JOIN executions e ON e.id = l.execution_id"
                + " WHERE l.execution_id = ? AND l.epoch = 2 AND l.owner = 'n/1' AND e.lease_owner = 'n/1'"
                + " AND l.expires_at > now()", id)).isEqualTo(1);
        assertThat(rows.expireLease(id, Duration.ofMinutes(1))).isEqualTo(1);
        assertThat(rows.single("SELECT count(*) FROM leases WHERE execution_id = ? AND expires_at < now()", id)).isEqualTo(1);
    }

    @Test
    void terminalAndLongQueuedRowsSatisfyTheSchema() throws SQLException {
        UUID failed = rows.execution().status("failed").attempt(3).ended(1, "exit_nonzero").insert();
        UUID waiting = rows.execution().enqueuedAgo(Duration.ofMinutes(5)).insert();
        assertThat(rows.single("SELECT count(*) FROM executions WHERE id = ? AND finished_at IS NOT NULL"
                + " AND lease_owner IS NULL AND exit_code = 1", failed)).isEqualTo(1);
        assertThat(rows.single("SELECT count(*) FROM executions WHERE id = ? AND status = 'queued'"
                + " AND enqueued_at < now() - interval '4 minutes'", waiting)).isEqualTo(1);
    }

    @Test
    void theSchemaStillRefusesWhatItRefuses() {
        // A fixture, not a bypass: the database's own rules hold (attempts bounded here).
        assertThatThrownBy(() -> rows.execution().attempt(4).maxAttempts(3).insert()).isInstanceOf(SQLException.class);
    }
}
