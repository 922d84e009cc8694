package io.outrun.cli;

import io.outrun.http.ApiConfig;
import java.util.List;
import picocli.CommandLine.Option;

/** The API's listening address and the limits it clamps submissions to. */
public final class ApiOptions {

    @Option(names = "--port", defaultValue = "8080", description = "API port (default ${DEFAULT-VALUE}; 0 = any free port)")
    int port;

    @Option(names = "--bind", description = "Interface to listen on (default 0.0.0.0 for `api`, 127.0.0.1 for `dev`)")
    String bind;

    @Option(names = "--max-timeout-ms", defaultValue = "3600000", description = "Largest timeout a caller gets (default ${DEFAULT-VALUE})")
    long maxTimeoutMs;

    @Option(names = "--max-output-bytes", defaultValue = "8388608", description = "Largest bytes kept per stream a caller gets (default ${DEFAULT-VALUE})")
    int maxOutputBytes;

    @Option(names = "--max-body-bytes", defaultValue = "2097152", description = "Largest request body; larger answers 413 (default ${DEFAULT-VALUE})")
    int maxBodyBytes;

    @Option(names = "--max-attempts", defaultValue = "3", description = "Most attempts an execution gets when workers"
            + " are lost mid-run; a submission may ask for fewer (default ${DEFAULT-VALUE})")
    int maxAttempts;

    @Option(names = "--env-allow", split = ",", description = "Env names callers may set: NAME, PREFIX* or * (default LANG,LC_*,TZ,TERM,NO_COLOR,PAGER,CI,DEBUG)")
    List<String> envAllow;

    ApiConfig toConfig(String defaultBind) {
        ApiConfig config = ApiConfig.defaults(bind != null ? bind : defaultBind, port)
                .withMaxTimeoutMs(maxTimeoutMs)
                .withMaxOutputBytes(maxOutputBytes)
                .withMaxBodyBytes(maxBodyBytes)
                .withMaxAttempts(maxAttempts);
        return envAllow == null ? config : config.withEnvAllowlist(envAllow);
    }
}
