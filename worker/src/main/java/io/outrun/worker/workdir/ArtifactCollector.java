package io.outrun.worker.workdir;

import io.outrun.core.files.ArtifactStore;
import io.outrun.core.files.FilesConfig;
import io.outrun.core.store.Lease;
import io.outrun.model.inputs.ArtifactPattern;
import io.outrun.sandbox.Run;
import io.outrun.sandbox.files.WorkdirEntry;
import io.outrun.sandbox.files.WorkdirVisitor;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * Collects the files an execution named from its ended run's workdir, one entry at a time, each
 * stored while it is read (never a whole file in memory). What is not stored is reported with
 * why: over a limit, a link (never followed), not a regular file, or a pattern nothing matched.
 */
final class ArtifactCollector {

    private final ArtifactStore store;
    private final FilesConfig limits;
    private final Lease lease;
    private final Set<String> seen = new HashSet<>();
    private long totalBytes;
    private int stored;
    /** Rows written for files not stored; past {@link #MAX_REPORTED} they are only counted. */
    private int reported;
    private long notReported;
    private long notReportedBytes;

    /**
     * Rows of files not stored, per execution: a pattern over 20,000 files made 19,000 such rows
     * in one listing. Past this many, one row ({@value #MORE}) counts the rest.
     */
    static final int MAX_REPORTED = 100;
    static final String MORE = "@more";

    ArtifactCollector(ArtifactStore store, FilesConfig limits, Lease lease) {
        this.store = store;
        this.limits = limits;
        this.lease = lease;
    }

    void collect(Run run, List<String> patterns) throws IOException {
        List<ArtifactPattern> compiled = new ArrayList<>();
        for (String p : patterns) {
            compiled.add(ArtifactPattern.compile(p));
        }
        // Each base is read once, and a base under another base not at all.
        Set<String> bases = new LinkedHashSet<>();
        for (ArtifactPattern p : compiled) {
            bases.add(p.base());
        }
        Set<String> reads = new LinkedHashSet<>();
        for (String base : bases) {
            boolean covered = bases.stream().anyMatch(other -> !other.equals(base)
                    && (other.isEmpty() || base.startsWith(other + "/")));
            if (!covered) {
                reads.add(base);
            }
        }
        Set<ArtifactPattern> matched = new HashSet<>();
        List<String> unread = new ArrayList<>();
        for (String base : reads) {
            run.readWorkdir(base, new WorkdirVisitor() {
                @Override
                public void visit(WorkdirEntry entry, InputStream content) throws IOException {
                    List<ArtifactPattern> hits = compiled.stream().filter(p -> p.matches(entry.path())).toList();
                    if (hits.isEmpty() || entry.type() == WorkdirEntry.Type.DIRECTORY || !seen.add(entry.path())) {
                        return;
                    }
                    matched.addAll(hits);
                    take(entry, content);
                }

                /** A file over the per-file limit is reported by its size, never read. */
                @Override
                public long maxFileBytes() {
                    return limits.maxArtifactBytes();
                }

                @Override
                public void skipped(String name, String why) throws IOException {
                    unread.add(why);
                    store.report(lease, "@unread/" + (base.isEmpty() ? "." : base), "over_limit", 0, why
                            + "; files after it there were not collected");
                }
            });
        }
        for (ArtifactPattern p : compiled) {
            if (!matched.contains(p) && !seen.contains(p.toString())) {
                if (unread.isEmpty()) {
                    store.report(lease, p.toString(), "missing", 0, "nothing in the workdir matched " + p
                            + " when the command ended");
                } else {
                    // The read stopped at a file too large to stream past: what came after it is unknown.
                    store.report(lease, p.toString(), "over_limit", 0, "nothing matched " + p + " before the read stopped ("
                            + unread.get(0) + "); keep files that large out of the directories you collect from");
                }
            }
        }
        finish();
    }

    /** Reports a file not stored: a row of its own while there are few, else counted into {@value #MORE}. */
    private void report(String path, String status, long size, String detail) {
        if (reported < MAX_REPORTED) {
            reported++;
            store.report(lease, path, status, size, detail);
        } else {
            notReported++;
            notReportedBytes += size;
        }
    }

    /** After every read: the one row that counts what had no row of its own. */
    private void finish() {
        if (notReported > 0) {
            store.report(lease, MORE, "over_limit", notReportedBytes, notReported + " more files matched but were not"
                    + " collected (over a limit, links, FIFOs or devices); only the first " + MAX_REPORTED
                    + " such files get a row of their own. Collect fewer, larger files (a tar of the directory).");
        }
    }

    private void take(WorkdirEntry entry, InputStream content) throws IOException {
        switch (entry.type()) {
            case SYMLINK -> report(entry.path(), "not_regular", 0, "a symbolic link to " + entry.linkTarget()
                    + "; links are not followed: copy the file itself into the workdir");
            case OTHER -> report(entry.path(), "not_regular", 0,
                    "not a regular file (a FIFO or a device); only regular files are collected");
            case HARDLINK -> report(entry.path(), "not_regular", 0, "a second name (hard link) of "
                    + entry.linkTarget() + ", which holds its content: name that one in artifacts");
            case FILE -> {
                if (entry.size() > limits.maxArtifactBytes()) {
                    report(entry.path(), "over_limit", entry.size(), "larger than the limit of "
                            + limits.maxArtifactBytes() + " bytes per file");
                } else if (stored >= limits.maxArtifacts()) {
                    report(entry.path(), "over_limit", entry.size(), "past the limit of "
                            + limits.maxArtifacts() + " files per execution");
                } else if (totalBytes + entry.size() > limits.maxArtifactsBytes()) {
                    report(entry.path(), "over_limit", entry.size(), "past the limit of "
                            + limits.maxArtifactsBytes() + " bytes of artifacts per execution");
                } else {
                    store.store(lease, entry.path(), content, "identity", 0, null, true, null);
                    stored++;
                    totalBytes += entry.size();
                }
            }
            default -> {
            }
        }
    }
}
