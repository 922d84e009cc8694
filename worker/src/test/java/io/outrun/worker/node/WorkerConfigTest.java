package io.outrun.worker.node;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.outrun.core.config.ConfigException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** A bad worker setting fails at construction, before anything starts, naming the option. */
class WorkerConfigTest {

    private static final WorkerConfig DEFAULTS = WorkerConfig.defaults("n1");

    static Stream<Arguments> badSettings() {
        WorkerConfig d = DEFAULTS;
        return Stream.of(
                bad("--node-id", () -> WorkerConfig.defaults("no spaces")),
                bad("--slots", () -> d.withSlots(0)),
                bad("--lease-ttl-ms", () -> d.withLeaseTtl(Duration.ofSeconds(2))),
                bad("--lease-ttl-ms", () -> d.withLeaseTtl(null)),
                bad("--poll-interval-s", () -> d.withPollInterval(Duration.ofMillis(500))),
                bad("--cleanup-interval-s", () -> new WorkerConfig("n1", 4, d.leaseTtl(), d.outputFlush(), d.sweepInterval(),
                        d.pollInterval(), Duration.ZERO, 0, 0, d.leaseDir(), d.limits(), d.dashboardAccess(), null)),
                bad("--sweep-interval-ms", () -> new WorkerConfig("n1", 4, d.leaseTtl(), d.outputFlush(), Duration.ofMillis(10),
                        d.pollInterval(), d.cleanupInterval(), 0, 0, d.leaseDir(), d.limits(), d.dashboardAccess(), null)),
                bad("--metrics-port", () -> d.withMetricsPort(-1)),
                bad("--lease-dir", () -> d.withLeaseDir(Path.of("relative"))),
                bad("--dashboard-port", () -> d.withDashboard(70000, DashboardAccess.OPEN)),
                bad("--dashboard-no-auth", () -> d.withDashboard(8000, DashboardAccess.NONE)),
                bad("--dashboard-password", () -> new DashboardAccess("admin", null, false)),
                bad("--dashboard-user", () -> new DashboardAccess(null, "secret", false)),
                bad("contradicts", () -> new DashboardAccess("admin", "secret", true)));
    }

    private static Arguments bad(String option, Supplier<Object> build) {
        return Arguments.of(option, build);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("badSettings")
    void aBadSettingNamesItsOption(String option, Supplier<Object> build) {
        assertThatThrownBy(build::get).isInstanceOf(ConfigException.class).hasMessageContaining(option);
    }

    @Test
    void aDashboardIsServedWithCredentialsOrOpenOnPurpose() {
        assertThat(DEFAULTS.withDashboard(8000, DashboardAccess.basic("admin", "secret")).dashboardAccess().hasCredentials()).isTrue();
        assertThat(DEFAULTS.withDashboard(8000, DashboardAccess.OPEN).dashboardPort()).isEqualTo(8000);
        assertThat(new DashboardAccess(" ", "", false)).as("blank is unset").isEqualTo(DashboardAccess.NONE);
    }

    @Test
    void theLoggedConfigNeverShowsTheDashboardPassword() {
        String logged = DEFAULTS.withDashboard(8000, DashboardAccess.basic("admin", "hunter2")).toString();
        assertThat(logged).contains("admin").doesNotContain("hunter2");
    }

    @Test
    void theDefaultsAreTheirConstants() {
        assertThat(DEFAULTS.slots()).isEqualTo(WorkerConfig.DEFAULT_SLOTS);
        assertThat(DEFAULTS.leaseTtl()).isEqualTo(Duration.ofMillis(WorkerConfig.DEFAULT_LEASE_TTL_MS));
        assertThat(DEFAULTS.heartbeat()).isEqualTo(DEFAULTS.leaseTtl().dividedBy(3));
        assertThat(DEFAULTS.leaseDir()).isEqualTo(Path.of("/tmp/outrun-leases"));
    }
}
