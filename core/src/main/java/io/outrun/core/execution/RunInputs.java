package io.outrun.core.execution;

import java.util.List;

/**
 * What a submission carries besides its command: input files, artifacts to collect, a workspace and secrets.
 *
 * @param filesTar  the input files as one tar (see {@code io.outrun.model.inputs.InputTar}), or
 *                  null when there are none; bounded by the API's input limit
 * @param artifacts paths or globs relative to the workdir, collected after the command ends
 * @param workspace the owner's workspace restored before the run and saved after it, or null
 * @param secrets   names of the owner's secrets the run gets as environment variables (their
 *                  values stay sealed in {@code secrets} until the node that runs it opens them)
 */
public record RunInputs(byte[] filesTar, List<String> artifacts, String workspace, List<String> secrets) {

    public static final RunInputs NONE = new RunInputs(null, List.of(), null, List.of());

    public RunInputs(byte[] filesTar, List<String> artifacts, String workspace) {
        this(filesTar, artifacts, workspace, List.of());
    }

    public RunInputs {
        artifacts = artifacts == null ? List.of() : List.copyOf(artifacts);
        secrets = secrets == null ? List.of() : List.copyOf(secrets);
    }

    public boolean isEmpty() {
        return filesTar == null && artifacts.isEmpty() && workspace == null && secrets.isEmpty();
    }

    public RunInputs withSecrets(List<String> names) {
        return new RunInputs(filesTar, artifacts, workspace, names);
    }
}
