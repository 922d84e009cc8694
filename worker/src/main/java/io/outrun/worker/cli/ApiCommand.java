package io.outrun.worker.cli;

import io.outrun.api.http.ApiConfig;
import io.outrun.api.http.ApiNode;
import io.outrun.core.config.ConfigException;
import io.outrun.core.service.Core;
import io.outrun.core.trace.Tracing;
import io.outrun.model.egress.EgressPolicy;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** Serves the HTTP API until SIGTERM/SIGINT. Any number of API nodes share one database. */
@Command(name = "api", mixinStandardHelpOptions = true, description = "Serve the HTTP API.")
final class ApiCommand implements Callable<Integer> {

    @Mixin
    DbOptions db;

    @Mixin
    FilesOptions files;

    @Mixin
    ApiOptions apiOptions;

    @Mixin
    OwnerOptions owners;

    @Mixin
    SecretsKeyOptions secretsKey;

    @Mixin
    WebhookOptions webhooks;

    @Option(names = "--image-allow", split = ",", description = "Images a submission may name: NAME, PREFIX* or *;"
            + " others answer 400 at submit. Give the workers' --image and --image-allow (default outrun-sandbox:latest;"
            + " * leaves the check to the workers)")
    List<String> imageAllow;

    @Option(names = "--egress-allow", split = ",", defaultValue = "${env:OUTRUN_EGRESS_ALLOW}",
            description = "Hosts a submission with network=egress may reach (give the workers' list); empty: such"
                    + " submissions answer 400 (env OUTRUN_EGRESS_ALLOW; default none)")
    List<String> egressAllow;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws InterruptedException {
        files.activate();
        ApiConfig config = apiOptions.toConfig("0.0.0.0");
        if (imageAllow != null) {
            config = config.withImageAllowlist(imageAllow);
        }
        try {
            config = config.withEgress(EgressPolicy.parse(egressAllow));
        } catch (IllegalArgumentException e) {
            throw new ConfigException(e.getMessage());
        }
        config = config.withSecretsKey(secretsKey.key()).withWebhooks(webhooks.policy());
        Core core = Core.open(db.toConfig(), "api", owners.toLimits());
        ApiNode api;
        try {
            api = ApiNode.start(core, config, "api");
        } catch (RuntimeException e) {
            core.close();
            throw e;
        }
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            api.close();
            core.close();
            Tracing.closeProcess();
            stopped.countDown();
        }, "outrun-shutdown"));
        spec.commandLine().getOut().println("outrun: API listening on http://" + config.host() + ":" + api.port());
        spec.commandLine().getOut().flush();
        stopped.await();
        return 0;
    }
}
