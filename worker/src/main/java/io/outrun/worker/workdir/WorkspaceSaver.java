package io.outrun.worker.workdir;

import io.outrun.core.files.ArtifactStore;
import io.outrun.core.files.FilesConfig;
import io.outrun.core.files.WorkspaceStore;
import io.outrun.core.store.Lease;
import io.outrun.model.inputs.InputTar;
import io.outrun.sandbox.Run;
import io.outrun.sandbox.files.WorkdirEntry;
import io.outrun.sandbox.files.WorkdirVisitor;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Saves an ended run's workdir as its owner's workspace: a tar of its directories, files and links
 * (FIFOs and devices are left out), spooled to a temp file on the worker and bounded by the
 * workspace limit, then stored in one transaction. A save over the limit fails the save, not the
 * run: the previous save stays, and the artifacts list says why ({@value WorkdirBridge#WORKSPACE_REPORT}).
 */
final class WorkspaceSaver {

    private static final Logger LOG = LoggerFactory.getLogger(WorkspaceSaver.class);

    private final WorkspaceStore workspaces;
    private final ArtifactStore artifacts;
    private final FilesConfig limits;
    private final Path spoolDir;
    private final Lease lease;

    WorkspaceSaver(WorkspaceStore workspaces, ArtifactStore artifacts, FilesConfig limits, Path spoolDir, Lease lease) {
        this.workspaces = workspaces;
        this.artifacts = artifacts;
        this.limits = limits;
        this.spoolDir = spoolDir;
        this.lease = lease;
    }

    void save(Run run, String owner, String name) throws IOException {
        Files.createDirectories(spoolDir);
        Path tarFile = Files.createTempFile(spoolDir, "workspace-", ".tar");
        List<String> left = new ArrayList<>();
        try {
            long size;
            try (Bounded bounded = new Bounded(Files.newOutputStream(tarFile), limits.maxWorkspaceBytes());
                 TarArchiveOutputStream tar = new TarArchiveOutputStream(bounded)) {
                tar.setLongFileMode(TarArchiveOutputStream.LONGFILE_POSIX);
                tar.setBigNumberMode(TarArchiveOutputStream.BIGNUMBER_POSIX);
                run.readWorkdir("", new WorkdirVisitor() {
                    @Override
                    public void visit(WorkdirEntry entry, InputStream content) throws IOException {
                        if (entry.type() == WorkdirEntry.Type.FILE && entry.size() > limits.maxWorkspaceBytes()) {
                            throw new OverLimit(entry.size()); // never streamed: it could not fit anyway
                        }
                        if (!add(tar, entry, content)) {
                            left.add(entry.path() + " (" + (entry.type() == WorkdirEntry.Type.OTHER
                                    ? "a FIFO, socket or device" : "not a file, directory or link") + ")");
                        }
                    }

                    @Override
                    public long maxFileBytes() {
                        return limits.maxWorkspaceBytes();
                    }

                    @Override
                    public void skipped(String entryName, String why) {
                        left.add((entryName.length() > 80 ? entryName.substring(0, 80) + "…" : entryName) + " (" + why + ")");
                    }
                });
                tar.finish();
                size = bounded.count;
            } catch (OverLimit e) {
                LOG.warn("execution {}: workspace {} not saved: over {} bytes", lease.executionId(), name,
                        limits.maxWorkspaceBytes());
                artifacts.report(lease, WorkdirBridge.WORKSPACE_REPORT, "over_limit", e.count,
                        "workspace '" + name + "' was not saved: the workdir's tar outgrew the limit of "
                                + limits.maxWorkspaceBytes() + " bytes; its previous save is kept. Remove build"
                                + " outputs and caches you do not need before the command ends.");
                return;
            }
            try (InputStream in = Files.newInputStream(tarFile)) {
                if (workspaces.save(lease, owner, name, in)) {
                    LOG.info("execution {}: saved workspace {} ({} bytes)", lease.executionId(), name, size);
                }
            }
            if (!left.isEmpty()) {
                // Saved, but not all of it: say what the next run will not find.
                artifacts.report(lease, WorkdirBridge.WORKSPACE_REPORT, "partial", size, "workspace '" + name
                        + "' was saved without " + left.size() + (left.size() == 1 ? " entry" : " entries") + ": "
                        + String.join("; ", left.subList(0, Math.min(left.size(), 5)))
                        + (left.size() > 5 ? "; …" : "") + ". Everything else is kept.");
            }
        } finally {
            Files.deleteIfExists(tarFile);
        }
    }

    /** Adds one entry; false when it cannot be kept in a workspace (a FIFO, a socket, a device). */
    private static boolean add(TarArchiveOutputStream tar, WorkdirEntry entry, InputStream content) throws IOException {
        TarArchiveEntry t;
        switch (entry.type()) {
            case DIRECTORY -> t = new TarArchiveEntry(entry.path() + "/");
            case FILE -> {
                t = new TarArchiveEntry(entry.path());
                t.setSize(entry.size());
            }
            case SYMLINK -> {
                t = new TarArchiveEntry(entry.path(), TarArchiveEntry.LF_SYMLINK);
                t.setLinkName(entry.linkTarget());
            }
            case HARDLINK -> {
                // Restored as the same file under both names, as the run left it.
                t = new TarArchiveEntry(entry.path(), TarArchiveEntry.LF_LINK);
                t.setLinkName(entry.linkTarget());
            }
            default -> {
                return false;
            }
        }
        t.setMode((t.getMode() & ~07777) | (entry.mode() & 0777));
        t.setUserId(InputTar.SANDBOX_UID);
        t.setGroupId(InputTar.SANDBOX_UID);
        tar.putArchiveEntry(t);
        if (entry.type() == WorkdirEntry.Type.FILE) {
            content.transferTo(tar);
        }
        tar.closeArchiveEntry();
        return true;
    }

    private static final class OverLimit extends IOException {
        final long count;

        OverLimit(long count) {
            super("over the workspace limit");
            this.count = count;
        }
    }

    private static final class Bounded extends FilterOutputStream {
        private final long limit;
        long count;

        Bounded(OutputStream out, long limit) {
            super(out);
            this.limit = limit;
        }

        @Override
        public void write(int b) throws IOException {
            check(1);
            out.write(b);
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            check(len);
            out.write(b, off, len);
        }

        private void check(int len) throws OverLimit {
            count += len;
            if (count > limit) {
                throw new OverLimit(count);
            }
        }
    }
}
