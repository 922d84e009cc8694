package io.outrun.core.store;

import java.util.List;
import java.util.Locale;

/**
 * The servers a JDBC URL names. Several ({@code jdbc:postgresql://h1:p1,h2:p2/db}) is a highly
 * available PostgreSQL (issue 43: Patroni, a primary and a synchronous standby): pgjdbc tries
 * them in order and, with {@code targetServerType=primary}, keeps only the one that takes writes,
 * so after a failover new connections find the promoted standby by themselves.
 */
public record DatabaseHosts(List<String> hosts) {

    private static final String PREFIX = "jdbc:postgresql://";

    /** The hosts of {@code url} as written ({@code host[:port]}); a URL without {@code //} names the local one. */
    public static DatabaseHosts of(String url) {
        if (url == null || !url.startsWith(PREFIX)) {
            return new DatabaseHosts(List.of("localhost"));
        }
        String rest = url.substring(PREFIX.length());
        int end = rest.length();
        for (char c : new char[] {'/', '?'}) {
            int at = rest.indexOf(c);
            if (at >= 0 && at < end) {
                end = at;
            }
        }
        String authority = rest.substring(0, end);
        return new DatabaseHosts(List.of((authority.isEmpty() ? "localhost" : authority).split(",")));
    }

    /** More than one server: a failover is possible, and only a primary may be used. */
    public boolean several() {
        return hosts.size() > 1;
    }

    /**
     * Why no connection could be had, in words for a readiness answer: with several hosts, none
     * of them is a primary that answers (the old one died and no standby is promoted yet).
     */
    public String unreachable() {
        return several()
                ? "no primary answers among " + String.join(", ", hosts) + " (failing over?)"
                : "PostgreSQL at " + hosts.get(0) + " does not answer";
    }

    /**
     * {@code url} as a node uses it. A URL naming several hosts gets, unless it says otherwise:
     * <ul>
     *   <li>{@code targetServerType=primary}: pgjdbc's default ({@code any}) would connect to a
     *   standby, where every write fails (one that asks for a standby is refused by the caller);</li>
     *   <li>{@code hostRecheckSeconds=1}: pgjdbc remembers each host's role and skips the ones
     *   known as standbys for this long (default 10 s), so a standby promoted just after it was
     *   tried would be ignored that long: measured, the nodes found the new primary 11 s after
     *   its promotion. Rechecking costs a new connection one more round trip to a standby listed
     *   first, and connections are rarely made.</li>
     * </ul>
     */
    static String primaryOnly(String url) {
        if (!of(url).several()) {
            return url;
        }
        String out = url;
        if (param(url, "targetServerType") == null) {
            out += (out.contains("?") ? "&" : "?") + "targetServerType=primary";
        }
        if (param(url, "hostRecheckSeconds") == null) {
            out += (out.contains("?") ? "&" : "?") + "hostRecheckSeconds=1";
        }
        return out;
    }

    /** The URL's targetServerType, lower case, or null when it sets none. */
    static String targetServerType(String url) {
        String value = param(url, "targetServerType");
        return value == null ? null : value.toLowerCase(Locale.ROOT);
    }

    /** The value of the URL's parameter {@code name} (matched regardless of case), or null. */
    private static String param(String url, String name) {
        int q = url.indexOf('?');
        if (q < 0) {
            return null;
        }
        String prefix = name.toLowerCase(Locale.ROOT) + "=";
        for (String p : url.substring(q + 1).split("&")) {
            if (p.toLowerCase(Locale.ROOT).startsWith(prefix)) {
                return p.substring(prefix.length());
            }
        }
        return null;
    }
}
