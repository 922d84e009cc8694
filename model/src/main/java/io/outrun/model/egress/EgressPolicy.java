package io.outrun.model.egress;

import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Where a run that asked for {@code "network": "egress"} may connect: the operator's
 * {@code --egress-allow HOST[:PORT],…} list. An entry is a host name, a {@code *.suffix} pattern
 * (any name under it, not the suffix itself) or a literal IP address; without a port it allows 80
 * and 443 only, the ports of the package registries and web APIs runs fetch from.
 *
 * <p>Names are resolved here, by the node, and the connection goes to the address checked (no
 * second lookup a DNS rebinding could change). An address that is loopback, link-local, private
 * (RFC 1918, unique-local IPv6, shared CGNAT space), unspecified or multicast is refused unless an
 * entry names that very address: allowing {@code registry.example.org} never lets a run reach the
 * fleet's own network because the name happens to resolve into it.
 */
public final class EgressPolicy {

    /** Where to connect, once allowed: the address checked and the port. */
    public record Target(InetAddress address, int port) {
    }

    /** The decision: a target, or why not in words a run's user can act on. */
    public record Decision(Target target, String refusal) {
        public boolean allowed() {
            return target != null;
        }
    }

    /** How names are resolved (the system resolver; tests may pass their own). */
    @FunctionalInterface
    public interface Resolver {
        InetAddress[] resolve(String host) throws UnknownHostException;
    }

    private record Entry(String host, boolean wildcard, InetAddress literal, int port) {
        boolean matchesName(String name) {
            return wildcard ? name.endsWith(host) && name.length() > host.length() : name.equals(host);
        }

        boolean matchesPort(int p) {
            return port == 0 ? p == 80 || p == 443 : p == port;
        }
    }

    /** The flag runs' egress is allowed by. */
    public static final String EGRESS_FLAG = "--egress-allow";
    /** The flag completion webhooks' destinations are allowed by (issue 28): the same rules. */
    public static final String WEBHOOK_FLAG = "--webhook-allow";

    public static final EgressPolicy NONE = new EgressPolicy(List.of(), "", InetAddress::getAllByName, EGRESS_FLAG);
    public static final EgressPolicy NONE_WEBHOOKS = new EgressPolicy(List.of(), "", InetAddress::getAllByName, WEBHOOK_FLAG);

    private final List<Entry> entries;
    private final String text;
    private final Resolver resolver;
    private final String flag;

    private EgressPolicy(List<Entry> entries, String text, Resolver resolver, String flag) {
        this.entries = entries;
        this.text = text;
        this.resolver = resolver;
        this.flag = flag;
    }

    /** Parses {@code --egress-allow}; throws IllegalArgumentException naming a bad entry. */
    public static EgressPolicy parse(List<String> allow) {
        return parse(allow, InetAddress::getAllByName);
    }

    public static EgressPolicy parse(List<String> allow, Resolver resolver) {
        return parse(allow, resolver, EGRESS_FLAG);
    }

    /**
     * Parses an allowlist given by {@code flag} (named in errors and refusals). An entry {@code *}
     * allows any host name on the entry's ports (80 and 443 without one); names that resolve to
     * an internal address stay refused.
     */
    public static EgressPolicy parse(List<String> allow, Resolver resolver, String flag) {
        List<Entry> entries = new ArrayList<>();
        List<String> kept = new ArrayList<>();
        for (String raw : allow == null ? List.<String>of() : allow) {
            String e = raw.strip().toLowerCase(Locale.ROOT);
            if (e.isEmpty()) {
                continue;
            }
            try {
                entries.add(entry(e));
            } catch (IllegalArgumentException bad) {
                throw new IllegalArgumentException(flag + " entry " + bad.getMessage());
            }
            kept.add(e);
        }
        return new EgressPolicy(List.copyOf(entries), String.join(",", kept), resolver, flag);
    }

    private static Entry entry(String e) {
        if (e.equals("*") || e.startsWith("*:")) {
            return new Entry("", true, null, e.equals("*") ? 0 : port(e, e.substring(2))); // any name
        }
        String host = e;
        int port = 0;
        int colon = e.lastIndexOf(':');
        boolean bracketed = e.startsWith("[");
        if (bracketed) {
            int close = e.indexOf(']');
            if (close < 0) {
                throw new IllegalArgumentException(e + ": an IPv6 address is written [addr] or [addr]:port");
            }
            host = e.substring(1, close);
            if (close + 1 < e.length()) {
                if (e.charAt(close + 1) != ':') {
                    throw new IllegalArgumentException(e + ": expected :PORT after ]");
                }
                port = port(e, e.substring(close + 2));
            }
        } else if (colon >= 0) {
            if (e.indexOf(':') != colon) {
                throw new IllegalArgumentException(e + ": write an IPv6 address as [addr] or [addr]:port");
            }
            host = e.substring(0, colon);
            port = port(e, e.substring(colon + 1));
        }
        boolean wildcard = host.startsWith("*.");
        if (wildcard) {
            host = host.substring(1); // ".example.org": any name ending so
            if (!host.substring(1).matches("[a-z0-9-]+(\\.[a-z0-9-]+)*")) {
                throw new IllegalArgumentException(e + ": a pattern is *.domain");
            }
            return new Entry(host, true, null, port);
        }
        InetAddress literal = literal(host);
        if (literal == null && !host.matches("[a-z0-9-]+(\\.[a-z0-9-]+)*")) {
            throw new IllegalArgumentException(e + ": not a host name, *.domain or IP address");
        }
        return new Entry(literal == null ? host : literal.getHostAddress(), false, literal, port);
    }

    private static int port(String entry, String text) {
        try {
            int p = Integer.parseInt(text);
            if (p >= 1 && p <= 65535) {
                return p;
            }
        } catch (NumberFormatException ignored) {
            // Reported below.
        }
        throw new IllegalArgumentException(entry + ": the port must be 1-65535");
    }

    /** A literal IPv4 or IPv6 address, without any lookup; null for a name. */
    static InetAddress literal(String host) {
        boolean v4 = host.matches("\\d{1,3}(\\.\\d{1,3}){3}");
        boolean v6 = host.contains(":") && host.matches("[0-9a-f:.]+");
        if (!v4 && !v6) {
            return null;
        }
        try {
            return InetAddress.getByName(host); // a literal: parsed, never resolved
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException(host + ": not an IP address");
        }
    }

    public boolean isEmpty() {
        return entries.isEmpty();
    }

    @Override
    public String toString() {
        return flag + "=" + (text.isEmpty() ? "(none)" : text);
    }

    /** The flag this list was given by. */
    public String flag() {
        return flag;
    }

    /** The list as given (normalized), for messages. */
    public String text() {
        return text;
    }

    /** Whether a run may connect to {@code host:port}, and where to. */
    public Decision decide(String rawHost, int port) {
        String host = rawHost.toLowerCase(Locale.ROOT);
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        }
        if (host.endsWith(".")) {
            host = host.substring(0, host.length() - 1);
        }
        InetAddress literal;
        try {
            literal = literal(host);
        } catch (IllegalArgumentException e) {
            return refuse(rawHost, port, "it is not a valid address");
        }
        String name = literal == null ? host : literal.getHostAddress();
        boolean listed = false;
        for (Entry e : entries) {
            if (e.matchesPort(port) && (e.literal != null ? e.literal.equals(literal) : literal == null && e.matchesName(name))) {
                listed = true;
                break;
            }
        }
        if (!listed) {
            return refuse(rawHost, port, "it is not on the operator's " + flag + " list");
        }
        if (literal != null) {
            return new Decision(new Target(literal, port), null); // named literally: allowed whatever its range
        }
        InetAddress[] addresses;
        try {
            addresses = resolver.resolve(host);
        } catch (UnknownHostException e) {
            return refuse(rawHost, port, "the name does not resolve");
        }
        for (InetAddress a : addresses) {
            if (internal(a) && !listedLiterally(a, port)) {
                // The address itself is not echoed: a run should not map the fleet's DNS through refusals.
                return refuse(rawHost, port, "it resolves to an internal address (loopback, link-local, private or"
                        + " reserved), which is allowed only when that address is listed literally");
            }
        }
        return new Decision(new Target(addresses[0], port), null);
    }

    private boolean listedLiterally(InetAddress a, int port) {
        return entries.stream().anyMatch(e -> e.literal != null && e.literal.equals(a) && e.matchesPort(port));
    }

    /**
     * Loopback, link-local, private, unspecified, multicast, CGNAT (100.64/10), benchmarking
     * (198.18/15), IETF (192.0.0/24), reserved (240/4, broadcast) or unique-local IPv6; an IPv6
     * address that carries an IPv4 one (compatible, NAT64 64:ff9b::/96, 6to4 2002::/16) is judged
     * by that IPv4 address.
     */
    static boolean internal(InetAddress a) {
        if (a.isLoopbackAddress() || a.isLinkLocalAddress() || a.isSiteLocalAddress() || a.isAnyLocalAddress()
                || a.isMulticastAddress()) {
            return true;
        }
        byte[] b = a.getAddress();
        if (a instanceof Inet4Address) {
            int b0 = b[0] & 0xff;
            int b1 = b[1] & 0xff;
            return b0 == 0 || b0 >= 240 || b0 == 100 && (b1 & 0xc0) == 64 || b0 == 198 && (b1 & 0xfe) == 18
                    || b0 == 192 && b1 == 0 && (b[2] & 0xff) == 0;
        }
        if (a instanceof Inet6Address) {
            if ((b[0] & 0xfe) == 0xfc) {
                return true; // fc00::/7
            }
            byte[] v4 = embeddedIpv4(b);
            if (v4 != null) {
                try {
                    return internal(InetAddress.getByAddress(v4));
                } catch (UnknownHostException impossible) {
                    return true;
                }
            }
        }
        return false;
    }

    /**
     * The IPv4 address inside an IPv4-compatible (::/96), IPv4-mapped (::ffff:0:0/96, which a DNS
     * AAAA answer may carry and the kernel connects to as IPv4), SIIT (::ffff:0:0:0/96), NAT64
     * (64:ff9b::/96) or 6to4 (2002::/16) address.
     */
    private static byte[] embeddedIpv4(byte[] b) {
        boolean zeros96 = true;
        for (int i = 0; i < 12; i++) {
            zeros96 &= b[i] == 0;
        }
        boolean mapped = true; // ::ffff:a.b.c.d
        for (int i = 0; i < 10; i++) {
            mapped &= b[i] == 0;
        }
        mapped &= (b[10] & 0xff) == 0xff && (b[11] & 0xff) == 0xff;
        boolean siit = (b[8] & 0xff) == 0xff && (b[9] & 0xff) == 0xff && b[10] == 0 && b[11] == 0; // ::ffff:0:a.b.c.d
        for (int i = 0; siit && i < 8; i++) {
            siit = b[i] == 0;
        }
        if (mapped || siit) {
            return new byte[] {b[12], b[13], b[14], b[15]};
        }
        boolean nat64 = (b[0] & 0xff) == 0 && (b[1] & 0xff) == 0x64 && (b[2] & 0xff) == 0xff && (b[3] & 0xff) == 0x9b;
        for (int i = 4; nat64 && i < 12; i++) {
            nat64 = b[i] == 0;
        }
        if (zeros96 || nat64) {
            return new byte[] {b[12], b[13], b[14], b[15]};
        }
        if ((b[0] & 0xff) == 0x20 && (b[1] & 0xff) == 0x02) {
            return new byte[] {b[2], b[3], b[4], b[5]};
        }
        return null;
    }

    private Decision refuse(String host, int port, String why) {
        // The list itself is not shown: it may name internal hosts a run has no business mapping.
        return new Decision(null, (EGRESS_FLAG.equals(flag) ? "outrun egress: " : "") + host + ":" + port + " refused: "
                + why + ". The operator allows hosts with " + flag + " HOST[:PORT],…; ask for this one if "
                + (EGRESS_FLAG.equals(flag) ? "the run needs it." : "you need it."));
    }
}
