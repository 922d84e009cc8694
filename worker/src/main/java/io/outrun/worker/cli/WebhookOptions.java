package io.outrun.worker.cli;

import io.outrun.core.config.ConfigException;
import io.outrun.model.egress.EgressPolicy;
import java.net.InetAddress;
import java.util.List;
import picocli.CommandLine.Option;

/** Where completion webhooks may be sent: one list for every API node (checked at submit) and worker (at each attempt). */
public final class WebhookOptions {

    @Option(names = "--webhook-allow", split = ",", defaultValue = "${env:OUTRUN_WEBHOOK_ALLOW}",
            description = "Where completion webhooks may be sent: HOST, *.DOMAIN, an IP, or * for any host name, each"
                    + " with :PORT (without: 80 and 443); names resolving to loopback, link-local or private addresses only"
                    + " when that address is listed literally. Give the API nodes and workers the same list (env"
                    + " OUTRUN_WEBHOOK_ALLOW; default none: submissions with a webhook answer 400)")
    List<String> allow;

    /** The parsed list (empty when not given). */
    public EgressPolicy policy() {
        try {
            return EgressPolicy.parse(allow, InetAddress::getAllByName, EgressPolicy.WEBHOOK_FLAG);
        } catch (IllegalArgumentException e) {
            throw new ConfigException(e.getMessage());
        }
    }
}
