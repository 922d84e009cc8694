package io.outrun.core.store;

import io.outrun.worker.lease.LeaseStore;
import io.outrun.worker.maintenance.RetentionStore;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** The named-parameter reader touches only what is a parameter; the rest of the text is the statement as written. */
class NamedSqlTest {

    @Test
    void turnsNamesIntoPlaceholdersAndLeavesCastsAlone() {
        NamedSql sql = NamedSql.of("SELECT :id::uuid, x::text::bpchar FROM t WHERE a = :a_1 AND b = :id");
        assertThat(sql.jdbc()).isEqualTo("SELECT ?::uuid, x::text::bpchar FROM t WHERE a = ? AND b = ?");
    }

    @Test
    void leavesQuotedTextAndCommentsAlone() {
        NamedSql sql = NamedSql.of("""
                SELECT hashtext('outrun.owner:' || :owner), "odd:name", 'it''s :not' -- :nor_this, it's a comment
                FROM t WHERE o = :owner""");
        assertThat(sql.jdbc()).isEqualTo("""
                SELECT hashtext('outrun.owner:' || ?), "odd:name", 'it''s :not' -- :nor_this, it's a comment
                FROM t WHERE o = ?""");
    }

    @Test
    void refusesWhatItDoesNotRead() {
        assertThatThrownBy(() -> NamedSql.of("SELECT $$x$$")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> NamedSql.of("SELECT j ? 'k'")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> NamedSql.of("SELECT 'open")).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void everyNameNeedsAValueAndEveryValueANameAtBindTime() {
        NamedSql sql = NamedSql.of("SELECT :a, :b");
        assertThatThrownBy(() -> sql.prepare(null, NamedSql.Args.of("a", 1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining(":b");
        assertThatThrownBy(() -> sql.prepare(null, NamedSql.Args.of("a", 1, "b", 2, "c", 3)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("[c]");
        assertThatThrownBy(() -> NamedSql.Args.of("a", 1).and("a", 2)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void everyStoreStatementParses() {
        // Loading the stores parses their constants, the departures' among them.
        for (Departure d : Departure.values()) {
            assertThat(d.sql(Departure.Rows.BY_LEASE).jdbc()).doesNotContain(":id").contains("e.id = ?");
        }
        assertThat(ExecutionsTable.READ_BY_ID.jdbc()).endsWith("WHERE e.id = ?");
        assertThat(new LeaseStore(null)).isNotNull();
        assertThat(new RedriveStore(null)).isNotNull();
        assertThat(new SubmissionStore(null)).isNotNull();
        assertThat(new RetentionStore(null)).isNotNull();
    }

    @Test
    void theNotifyChannelsWrittenInStatementsAreTheListenedOnes() {
        // A channel is a literal in the statement's text (no text is put together at run time).
        assertThat(ExecutionsTable.CLAIM.text()).contains("pg_notify('" + Channels.CHANGED + "', claimed.id::text)");
        assertThat(EndsTable.ENDS.text()).contains("pg_notify('" + Channels.CHANGED + "', ended.id::text)");
        assertThat(OutputStore.APPEND.text()).contains("pg_notify('" + Channels.CHANGED + "', x.id::text)");
        assertThat(ExecutionsTable.WRITE_STDIN.text()).contains("pg_notify('" + Channels.STDIN + "', id::text)");
    }
}
