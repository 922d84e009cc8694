package io.outrun.core.store;

import static org.assertj.core.api.Assertions.assertThat;

import io.outrun.testing.TestDatabase;
import org.junit.jupiter.api.Test;

/** The test kit migrates without product classes; a node must find such a database up to date. */
class TestDatabaseIT {

    @Test
    void aNodeFindsNothingToMigrateOnTheKitsDatabase() {
        try (var pool = Database.pool(TestDatabase.migrated(DatabaseConfig::new), "kit-check")) {
            assertThat(Database.migrate(pool)).as("migrations a node still ran").isZero();
        }
    }
}
