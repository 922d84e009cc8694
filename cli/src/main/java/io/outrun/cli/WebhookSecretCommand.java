package io.outrun.cli;

import io.outrun.client.OutrunClient;
import picocli.CommandLine.Command;

/** Makes or rotates your webhook signing secret and prints it, once: the server never shows it again. */
@Command(name = "webhook-secret", mixinStandardHelpOptions = true, description = "Make (or rotate) your webhook"
        + " signing secret and print it once; your receivers verify webhook-signature with it.")
public final class WebhookSecretCommand extends ClientCommand {

    @Override
    int run(OutrunClient client) {
        out().println(client.rotateWebhookSecret());
        return 0;
    }
}
