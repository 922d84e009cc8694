package io.outrun.worker.workdir;

import io.outrun.core.execution.Execution;
import io.outrun.core.execution.RunInputs;
import io.outrun.core.files.ArtifactStore;
import io.outrun.core.files.FilesConfig;
import io.outrun.worker.workdir.InputsStore;
import io.outrun.core.files.WorkspaceStore;
import io.outrun.sandbox.Run;
import io.outrun.sandbox.capture.FullOutput;
import io.outrun.sandbox.files.RunFiles;
import io.outrun.sandbox.files.TarSource;
import io.outrun.core.store.Lease;
import java.io.ByteArrayInputStream;
import io.opentelemetry.api.trace.Span;
import io.outrun.core.trace.AttemptTrace;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Brings an execution's files into its run and keeps what it left, within {@link FilesConfig}. */
public final class WorkdirBridge {

    private static final Logger LOG = LoggerFactory.getLogger(WorkdirBridge.class);

    /** Name of the artifacts row that reports a workspace save that failed (never a file's: files have no '@' prefix here). */
    public static final String WORKSPACE_REPORT = "@workspace";

    private final InputsStore inputs;
    private final ArtifactStore artifacts;
    private final WorkspaceStore workspaces;
    private final FilesConfig limits;
    private final Path spoolDir;

    public WorkdirBridge(DataSource dataSource, FilesConfig limits, Path spoolDir) {
        this.inputs = new InputsStore(dataSource);
        this.artifacts = new ArtifactStore(dataSource);
        this.workspaces = new WorkspaceStore(dataSource);
        this.limits = limits;
        this.spoolDir = spoolDir;
    }

    /** What the sandbox needs of a claimed execution's inputs, and the inputs for {@link #collect}. */
    public record Prepared(RunInputs inputs, RunFiles files) {
    }

    /** {@code hasInputs}: the claim's answer; false spares the read (most runs have none). */
    public Prepared prepare(Execution e, boolean hasInputs) {
        RunInputs in = hasInputs ? inputs.find(e.id()) : RunInputs.NONE;
        List<TarSource> tars = new ArrayList<>();
        if (in.workspace() != null && workspaces.find(e.owner(), in.workspace()).isPresent()) {
            // The last saved state: a re-run after a dead worker starts from it too (nothing is saved mid-run).
            String owner = e.owner();
            String name = in.workspace();
            tars.add(() -> workspaces.open(owner, name));
        }
        if (in.filesTar() != null) {
            byte[] tar = in.filesTar();
            tars.add(() -> new ByteArrayInputStream(tar));
        }
        boolean keep = !in.artifacts().isEmpty() || in.workspace() != null;
        return new Prepared(in, new RunFiles(tars, keep, limits.fullOutputBytes(), spoolDir));
    }

    /**
     * Keeps what the ended run left: the whole output of a stream that outgrew its bound, the
     * artifacts asked for, the workspace. Called while the attempt holds its lease, before its end
     * is written, whatever ended the command (exit, timeout, cancel). Never throws: a failure is
     * logged and what could not be kept is reported among the artifacts.
     */
    public void collect(Lease lease, Execution e, RunInputs in, Run run, AttemptTrace trace) {
        List<Spool> spooled = new ArrayList<>();
        try {
            for (int stream = 1; stream <= 2; stream++) {
                Optional<FullOutput.Spooled> whole = run.fullOutput(stream);
                if (whole.isPresent()) {
                    spooled.add(new Spool(stream == 1 ? "stdout" : "stderr", whole.get()));
                }
            }
            if (spooled.isEmpty() && in.artifacts().isEmpty() && in.workspace() == null) {
                return;
            }
            if (!artifacts.clear(lease)) {
                return; // lease lost: nothing of this attempt is kept
            }
            if (!spooled.isEmpty() || !in.artifacts().isEmpty()) {
                Span saving = trace.step("artifacts.save");
                try {
                    for (Spool s : spooled) {
                        try (InputStream gz = Files.newInputStream(s.whole().file())) {
                            artifacts.store(lease, s.name(), gz, "gzip", s.whole().rawBytes(), s.whole().sha256(),
                                    s.whole().complete(), s.whole().complete() ? null
                                            : "the whole output outgrew the kept cap of " + limits.fullOutputBytes()
                                            + " compressed bytes; its beginning is kept", s.whole().seekPoints());
                        }
                    }
                    if (!in.artifacts().isEmpty()) {
                        new ArtifactCollector(artifacts, limits, lease).collect(run, in.artifacts());
                    }
                } catch (Exception failure) {
                    AttemptTrace.failed(saving, failure);
                    throw failure;
                } finally {
                    saving.end();
                }
            }
            if (in.workspace() != null) {
                Span saving = trace.step("workspace.save");
                try {
                    new WorkspaceSaver(workspaces, artifacts, limits, spoolDir, lease).save(run, e.owner(), in.workspace());
                } catch (Exception failure) {
                    AttemptTrace.failed(saving, failure);
                    throw failure;
                } finally {
                    saving.end();
                }
            }
        } catch (Exception failure) {
            LOG.error("execution {}: collecting its files failed; what was kept so far stays", lease.executionId(), failure);
        }
    }

    private record Spool(String name, FullOutput.Spooled whole) {
    }
}
