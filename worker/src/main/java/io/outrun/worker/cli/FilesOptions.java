package io.outrun.worker.cli;

import io.outrun.core.files.FilesConfig;
import io.outrun.core.config.ConfigException;
import picocli.CommandLine.Option;

/** Limits on files in and out (see {@link FilesConfig}); the API reads the input limit, workers the rest. */
final class FilesOptions {

    @Option(names = "--max-input-bytes", description = "Input files of one submission, decoded, in all (default 8 MiB);"
            + " the submit's body limit grows to fit")
    long maxInputBytes = FilesConfig.DEFAULTS.maxInputBytes();

    @Option(names = "--max-artifact-bytes", description = "One collected artifact (default 256 MiB)")
    long maxArtifactBytes = FilesConfig.DEFAULTS.maxArtifactBytes();

    @Option(names = "--max-artifacts-bytes", description = "All artifacts of one execution (default 1 GiB)")
    long maxArtifactsBytes = FilesConfig.DEFAULTS.maxArtifactsBytes();

    @Option(names = "--max-workspace-bytes", description = "A workspace as saved (default 256 MiB)")
    long maxWorkspaceBytes = FilesConfig.DEFAULTS.maxWorkspaceBytes();

    @Option(names = "--full-output-bytes", description = "Compressed bytes kept of a stream's whole output once it"
            + " outgrows maxOutputBytes (default 256 MiB; 0 keeps none)")
    long fullOutputBytes = FilesConfig.DEFAULTS.fullOutputBytes();

    /** Validates and makes them this process's limits. */
    void activate() {
        try {
            FilesConfig.activate(new FilesConfig(maxInputBytes, FilesConfig.DEFAULTS.maxInputFiles(), maxArtifactBytes,
                    maxArtifactsBytes, FilesConfig.DEFAULTS.maxArtifacts(), maxWorkspaceBytes, fullOutputBytes));
        } catch (IllegalArgumentException e) {
            throw new ConfigException(e.getMessage());
        }
    }
}
