package io.outrun.cli;

import java.util.List;
import java.util.Map;
import picocli.CommandLine.Option;

/**
 * What every run of a command may be given, whether it runs now ({@code outrun run}) or at each
 * firing of a schedule ({@code outrun schedule add}): one set of options, one meaning.
 */
final class CommandOptions {

    @Option(names = "--timeout-ms", description = "Timeout in ms (server default 10 min, clamped to its maximum)")
    Long timeoutMs;

    @Option(names = "--env", description = "KEY=VALUE for the command's environment (names on the server's allowlist)")
    Map<String, String> env;

    @Option(names = "--label", description = "key=value label")
    Map<String, String> labels;

    @Option(names = "--image", description = "Container image (docker sandbox)")
    String image;

    @Option(names = "--secret", paramLabel = "NAME", description = "Give the run your secret NAME as env (repeatable;"
            + " set it with `outrun secret set NAME`); its value shows as [secret:NAME] in the output")
    List<String> secrets;

    @Option(names = "--webhook", paramLabel = "URL", description = "POST the end to URL, signed with your webhook secret"
            + " (make it once with `outrun webhook-secret`); the operator allows destinations with --webhook-allow")
    String webhook;
}
