package io.outrun.sandbox.process;

import io.outrun.sandbox.Run;
import io.outrun.sandbox.RunSpec;
import io.outrun.sandbox.Sandbox;
import io.outrun.sandbox.SandboxException;
import io.outrun.sandbox.SandboxUnavailableException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/**
 * Runs commands as host processes, for local development only.
 *
 * <p><b>No isolation</b>: the command runs as the node's user with the node's filesystem and
 * network. It gets its own session and process group (via {@code setsid}) so that a kill
 * reaches every process it started, unless one of them starts a session of its own. The
 * environment is the spec's plus a minimal PATH, never the node's own.
 */
public final class ProcessSandbox implements Sandbox {

    private final Path scratch;

    public ProcessSandbox() {
        try {
            this.scratch = Files.createTempDirectory("outrun-process-");
        } catch (IOException e) {
            throw new SandboxUnavailableException("cannot create a scratch directory for the process sandbox", e);
        }
    }

    @Override
    public String name() {
        return "process";
    }

    @Override
    public void verify() {
        for (String tool : new String[] {"/bin/bash", "/usr/bin/setsid"}) {
            if (!Files.isExecutable(Path.of(tool))) {
                throw new SandboxUnavailableException("the process sandbox needs " + tool + ", which is missing on this node");
            }
        }
    }

    @Override
    public Run start(RunSpec spec) {
        try {
            // The command goes through a file, never an argv: any size, no ARG_MAX.
            Path script = Files.createTempFile(scratch, "run-", ".sh");
            Files.writeString(script, spec.command(), StandardCharsets.UTF_8);
            ProcessBuilder builder = new ProcessBuilder("/usr/bin/setsid", "/bin/bash", script.toString());
            Map<String, String> env = builder.environment();
            env.clear();
            env.put("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
            env.put("HOME", System.getProperty("java.io.tmpdir"));
            env.putAll(spec.env());
            env.put("NO_COLOR", "1");
            env.put("TERM", "dumb");
            env.put("PAGER", "cat");
            if (spec.workdir() != null && Files.isDirectory(Path.of(spec.workdir()))) {
                builder.directory(Path.of(spec.workdir()).toFile());
            }
            builder.redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
            Process process = builder.start();
            return new ProcessRun(spec, process, script);
        } catch (IOException e) {
            throw new SandboxException("cannot start a host process for execution " + spec.executionId(), e);
        }
    }
}
