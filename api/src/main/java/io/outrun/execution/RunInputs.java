package io.outrun.execution;

import java.util.List;

/**
 * What a submission carries besides its command: input files, artifacts to collect and a workspace.
 *
 * @param filesTar  the input files as one tar (see {@code io.outrun.inputs.InputTar}), or
 *                  null when there are none; bounded by the API's input limit
 * @param artifacts paths or globs relative to the workdir, collected after the command ends
 * @param workspace the owner's workspace restored before the run and saved after it, or null
 */
public record RunInputs(byte[] filesTar, List<String> artifacts, String workspace) {

    public static final RunInputs NONE = new RunInputs(null, List.of(), null);

    public RunInputs {
        artifacts = artifacts == null ? List.of() : List.copyOf(artifacts);
    }

    public boolean isEmpty() {
        return filesTar == null && artifacts.isEmpty() && workspace == null;
    }
}
