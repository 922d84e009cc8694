package io.outrun.worker.cli;

import io.outrun.core.secrets.SecretsKey;
import java.nio.file.Path;
import picocli.CommandLine.Option;

/** Where the operator's secrets key comes from: one for every API node and worker of a fleet. */
public final class SecretsKeyOptions {

    static final String ENV = "OUTRUN_SECRETS_KEY";

    @Option(names = "--secrets-key-file", description = "File holding the key that seals secrets: 32 random bytes in"
            + " base64 (head -c 32 /dev/urandom | base64), the same on every API node and worker; or the key itself in"
            + " env " + ENV + ". Without one, secrets cannot be set and runs naming one fail")
    Path file;

    /** The key, or null when none is given. */
    public SecretsKey key() {
        if (file != null) {
            return SecretsKey.fromFile(file);
        }
        String fromEnv = System.getenv(ENV);
        return fromEnv == null || fromEnv.isBlank() ? null : SecretsKey.fromBase64(fromEnv, "env " + ENV);
    }
}
