package io.outrun.core.store;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The reads of a whole row share one column list ({@code ExecutionsTable.ROW}); the claim's
 * RETURNING writes the same columns out (it names them without {@code e.}). {@link
 * ExecutionRows#map} reads them by name, so they must not drift: a column added to the reads and
 * not the claim would fail only on the path that uses it.
 */
class ExecutionsTableTest {

    @Test
    void theReadsDifferOnlyInTheirWhere() {
        String byId = beforeWhere(ExecutionsTable.READ_BY_ID.text());
        assertThat(beforeWhere(ExecutionsTable.READ_OWNED.text())).isEqualTo(byId);
        assertThat(beforeWhere(ExecutionsTable.READ_BY_KEY.text())).isEqualTo(byId);
        assertThat(beforeWhere(ExecutionsTable.READ_BY_KEYS.text())).isEqualTo(byId);
    }

    @Test
    void theClaimReturnsTheColumnsTheReadsRead() {
        String read = ExecutionsTable.READ_BY_ID.text();
        String readColumns = read.substring(read.indexOf("SELECT ") + 7, read.indexOf("l.expires_at AS lease_expires_at"));
        String claim = ExecutionsTable.CLAIM.text();
        int returning = claim.indexOf("RETURNING id, owner, command");
        assertThat(returning).as("the claim's RETURNING of the row").isPositive();
        String claimColumns = claim.substring(returning + 10, claim.indexOf("),", returning));
        assertThat(words(claimColumns)).isEqualTo(words(readColumns.replace("e.", "")).replaceAll(",$", ""));
    }

    private static String beforeWhere(String text) {
        return text.substring(0, text.lastIndexOf("WHERE"));
    }

    private static String words(String s) {
        return s.strip().replaceAll("\\s+", " ");
    }
}
