package io.outrun.worker.node;

import static org.jobrunr.dashboard.JobRunrDashboardWebServerConfiguration.usingStandardDashboardConfiguration;

import io.outrun.core.config.ConfigException;
import org.jobrunr.dashboard.JobRunrDashboardWebServer;
import org.jobrunr.storage.StorageProvider;
import org.jobrunr.utils.mapper.JsonMapper;

/**
 * Who may open JobRunr's dashboard. It shows every job's command (secrets included) and has
 * buttons that delete and requeue jobs, on all interfaces (JobRunr has no bind option): it needs
 * credentials unless the operator opens it on purpose.
 *
 * @param user     basic-auth user ({@code --dashboard-user}, {@code OUTRUN_DASHBOARD_USER}), or null
 * @param password basic-auth password ({@code --dashboard-password}, {@code OUTRUN_DASHBOARD_PASSWORD}), or null
 * @param open     served without a password on purpose ({@code --dashboard-no-auth})
 */
public record DashboardAccess(String user, String password, boolean open) {

    /** No credentials and not opened on purpose: no dashboard may be served. */
    public static final DashboardAccess NONE = new DashboardAccess(null, null, false);

    /** Served without a password, on purpose. */
    public static final DashboardAccess OPEN = new DashboardAccess(null, null, true);

    public DashboardAccess {
        user = blankToNull(user);
        password = blankToNull(password);
        boolean credentials = user != null || password != null;
        if (credentials && (user == null || password == null)) {
            throw new ConfigException(user == null
                    ? "--dashboard-password needs --dashboard-user (or OUTRUN_DASHBOARD_USER)"
                    : "--dashboard-user needs --dashboard-password (or OUTRUN_DASHBOARD_PASSWORD)");
        }
        if (credentials && open) {
            throw new ConfigException("--dashboard-no-auth contradicts --dashboard-user/--dashboard-password: give one or the other");
        }
    }

    public static DashboardAccess basic(String user, String password) {
        return new DashboardAccess(user, password, false);
    }

    public boolean hasCredentials() {
        return user != null;
    }

    /** Whether a dashboard may be served at all. */
    public boolean allowsServing() {
        return open || hasCredentials();
    }

    /**
     * Starts JobRunr's dashboard on {@code port} as this access allows: without anonymous usage
     * reporting (on by JobRunr's default), behind basic auth when there are credentials.
     */
    JobRunrDashboardWebServer serve(int port, StorageProvider storage, JsonMapper jsonMapper) {
        var config = usingStandardDashboardConfiguration().andPort(port).andAllowAnonymousDataUsage(false);
        if (hasCredentials()) {
            config.andBasicAuthentication(user, password);
        }
        JobRunrDashboardWebServer dashboard = new JobRunrDashboardWebServer(storage, jsonMapper, config);
        dashboard.start();
        return dashboard;
    }

    @Override
    public String toString() {
        return open ? "open (no password)" : hasCredentials() ? "basic auth as " + user + " (password ****)" : "none";
    }

    private static String blankToNull(String value) {
        return value == null || value.isBlank() ? null : value;
    }
}
