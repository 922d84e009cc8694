package io.outrun.model.egress;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class EgressPolicyTest {

    /** Names resolve as this table says (a rebinding attacker's DNS, say); anything else does not resolve. */
    private static final Map<String, String> DNS = Map.of(
            "registry.example.org", "93.184.216.34",
            "files.example.org", "93.184.216.35",
            "rebind.example.org", "127.0.0.1",
            "internal.example.org", "10.0.0.7",
            "localhost", "127.0.0.1");

    private static EgressPolicy policy(String... allow) {
        return EgressPolicy.parse(List.of(allow), host -> {
            String a = DNS.get(host);
            if (a == null) {
                throw new UnknownHostException(host);
            }
            return new InetAddress[] {InetAddress.getByName(a)};
        });
    }

    @Test
    void namesPatternsAndPortsAllowOnlyWhatTheyName() {
        EgressPolicy p = policy("registry.example.org", "*.example.org:8443");
        assertThat(p.decide("registry.example.org", 443).allowed()).isTrue();
        assertThat(p.decide("REGISTRY.example.org.", 80).target().address().getHostAddress()).isEqualTo("93.184.216.34");
        assertThat(p.decide("registry.example.org", 22).allowed()).as("no port: 80 and 443 only").isFalse();
        assertThat(p.decide("files.example.org", 8443).allowed()).isTrue();
        assertThat(p.decide("files.example.org", 443).allowed()).isFalse();
        assertThat(p.decide("example.org", 8443).allowed()).as("*.example.org is names under it").isFalse();
        EgressPolicy.Decision other = p.decide("evil.test", 443);
        assertThat(other.allowed()).isFalse();
        assertThat(other.refusal()).contains("evil.test:443").contains("--egress-allow").doesNotContain("registry.example.org");
    }

    @Test
    void aNameThatResolvesInsideIsRefusedUnlessTheAddressIsListed() {
        EgressPolicy p = policy("*.example.org", "localhost:8080");
        assertThat(p.decide("rebind.example.org", 443).refusal()).contains("internal address").doesNotContain("127.0.0.1");
        assertThat(p.decide("internal.example.org", 80).allowed()).isFalse();
        assertThat(p.decide("localhost", 8080).allowed()).as("listed by name, resolves to loopback").isFalse();
        EgressPolicy literal = policy("127.0.0.1:8080", "10.0.0.7", "*.example.org");
        assertThat(literal.decide("127.0.0.1", 8080).allowed()).isTrue();
        assertThat(literal.decide("127.0.0.1", 8081).allowed()).isFalse();
        assertThat(literal.decide("internal.example.org", 443).allowed()).as("its address is listed literally").isTrue();
        assertThat(literal.decide("10.0.0.8", 443).allowed()).isFalse();
    }

    @Test
    void internalRangesAreRecognized() throws Exception {
        for (String a : new String[] {"127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254",
                "100.64.0.1", "0.0.0.0", "::1", "fe80::1", "fd00::1", "224.0.0.1", "198.18.0.1", "192.0.0.170",
                "240.0.0.1", "255.255.255.255", "::7f00:1", "64:ff9b::a9fe:a9fe", "2002:a9fe:a9fe::1", "::ffff:127.0.0.1"}) {
            assertThat(EgressPolicy.internal(InetAddress.getByName(a))).as(a).isTrue();
        }
        for (String a : new String[] {"93.184.216.34", "100.128.0.1", "2606:4700::1111", "64:ff9b::5db8:d822",
                "2002:5db8:d822::1"}) {
            assertThat(EgressPolicy.internal(InetAddress.getByName(a))).as(a).isFalse();
        }
    }

    @Test
    void ipv4MappedAddressesFromDnsAreJudgedByTheirIpv4() throws Exception {
        // A DNS AAAA answer ::ffff:127.0.0.1 comes back as an Inet6Address (not folded to IPv4), and
        // the kernel connects to it as 127.0.0.1: it must count as loopback.
        for (String v4 : new String[] {"127.0.0.1", "169.254.169.254", "10.0.0.1"}) {
            byte[] b = new byte[16];
            b[10] = (byte) 0xff;
            b[11] = (byte) 0xff;
            System.arraycopy(InetAddress.getByName(v4).getAddress(), 0, b, 12, 4);
            assertThat(EgressPolicy.internal(java.net.Inet6Address.getByAddress(null, b, -1))).as("::ffff:" + v4).isTrue();
            byte[] siit = new byte[16];
            siit[8] = (byte) 0xff;
            siit[9] = (byte) 0xff;
            System.arraycopy(InetAddress.getByName(v4).getAddress(), 0, siit, 12, 4);
            assertThat(EgressPolicy.internal(java.net.Inet6Address.getByAddress(null, siit, -1))).as("::ffff:0:" + v4).isTrue();
        }
        EgressPolicy any = EgressPolicy.parse(List.of("*"), host -> {
            byte[] b = new byte[16];
            b[10] = (byte) 0xff;
            b[11] = (byte) 0xff;
            b[12] = 127;
            b[15] = 1;
            return new InetAddress[] {java.net.Inet6Address.getByAddress(host, b, -1)};
        }, EgressPolicy.WEBHOOK_FLAG);
        EgressPolicy.Decision d = any.decide("mapped.example.org", 443);
        assertThat(d.allowed()).isFalse();
        assertThat(d.refusal()).contains("internal address", "--webhook-allow").doesNotContain("outrun egress");
    }

    @Test
    void aStarAllowsAnyPublicNameOnItsPorts() {
        EgressPolicy p = EgressPolicy.parse(List.of("*"), host -> {
            String a = DNS.get(host);
            if (a == null) {
                throw new UnknownHostException(host);
            }
            return new InetAddress[] {InetAddress.getByName(a)};
        }, EgressPolicy.WEBHOOK_FLAG);
        assertThat(p.decide("registry.example.org", 443).allowed()).isTrue();
        assertThat(p.decide("registry.example.org", 8443).allowed()).isFalse();
        assertThat(p.decide("rebind.example.org", 443).allowed()).isFalse();
        assertThat(p.decide("93.184.216.34", 443).allowed()).as("* names hosts, not addresses").isFalse();
    }

    @Test
    void badEntriesAreNamed() {
        for (String bad : new String[] {"host:0", "host:x", "ho st", "*.", "::1", "[::1"}) {
            assertThatThrownBy(() -> EgressPolicy.parse(List.of(bad))).as(bad)
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("--egress-allow");
        }
        assertThat(EgressPolicy.parse(List.of("[::1]:8080", " ")).text()).isEqualTo("[::1]:8080");
        assertThat(EgressPolicy.parse(List.of()).isEmpty()).isTrue();
    }
}
