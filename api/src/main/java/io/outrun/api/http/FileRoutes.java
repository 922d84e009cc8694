package io.outrun.api.http;

import io.javalin.http.Context;
import io.outrun.core.files.Artifact;
import io.outrun.core.files.ArtifactStore;
import io.outrun.core.files.ChunkStream;
import io.outrun.core.files.Workspace;
import io.outrun.core.files.WorkspaceStore;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.zip.GZIPInputStream;

/**
 * The handlers of {@code /v1/executions/{id}/artifacts} and {@code /v1/workspaces}, scoped to the
 * caller's owner like every route: another owner's execution or workspace answers exactly like a
 * missing one. Downloads stream from the database one chunk at a time (any API node serves any
 * artifact), with a single {@code Range}; the kept full output is stored gzipped and served
 * decompressed.
 */
final class FileRoutes {

    private static final Pattern RANGE = Pattern.compile("bytes=(\\d*)-(\\d*)");

    private final ArtifactStore artifacts;
    private final WorkspaceStore workspaces;

    FileRoutes(ArtifactStore artifacts, WorkspaceStore workspaces) {
        this.artifacts = artifacts;
        this.workspaces = workspaces;
    }

    void listArtifacts(Context ctx) {
        String owner = ApiServer.owner(ctx);
        UUID id = ExecutionRoutes.id(ctx);
        List<Artifact> all = artifacts.list(id, owner).orElseThrow(() -> ApiError.notFound(id.toString()));
        ApiServer.json(ctx, 200, Map.of("executionId", id, "artifacts", all.stream().map(a -> view(id, a)).toList()));
    }

    private static Map<String, Object> view(UUID id, Artifact a) {
        Map<String, Object> v = new LinkedHashMap<>();
        v.put("name", a.name());
        v.put("status", a.status());
        v.put("size", a.size());
        v.put("sha256", a.sha256());
        if (a.detail() != null) {
            v.put("detail", a.detail());
        }
        if (a.stored()) {
            v.put("url", "/v1/executions/" + id + "/artifacts/" + a.name());
        }
        return v;
    }

    /** What to do about an artifact that was not stored, by why it was not. */
    static String notStoredGuidance(String status) {
        return switch (status) {
            case "not_regular" -> "Only regular files are collected, and links are never followed: copy the file itself"
                    + " into the workdir (e.g. cp -L link file) and name that in `artifacts`.";
            case "partial" -> "The workspace was saved without the entries the detail names (FIFOs, sockets, devices,"
                    + " or paths too long to keep); everything else is in it. Keep such things out of the workdir.";
            case "missing" -> "Nothing in the workdir matched when the command ended: check the path (relative to the"
                    + " workdir) and that the command wrote it there.";
            default -> "Write a smaller file (or fewer), or ask the operator for larger artifact limits.";
        };
    }

    void downloadArtifact(Context ctx) throws IOException {
        String owner = ApiServer.owner(ctx);
        UUID id = ExecutionRoutes.id(ctx);
        String name = ctx.pathParam("name");
        Artifact a = artifacts.find(id, owner, name).orElseThrow(() -> artifactNotFound(id, name));
        if (!a.stored()) {
            throw new ApiError(404, "artifact_not_stored", "Artifact " + name + " of execution " + id + " was not stored: "
                    + a.status() + (a.detail() == null ? "" : " (" + a.detail() + ")") + ".",
                    notStoredGuidance(a.status()));
        }
        long size = a.size();
        long start = 0;
        long end = size - 1;
        String range = ctx.header("Range");
        boolean partial = false;
        if (range != null) {
            Matcher m = RANGE.matcher(range.trim());
            if (!m.matches() || (m.group(1).isEmpty() && m.group(2).isEmpty())) {
                throw unsatisfiable(size);
            }
            if (m.group(1).isEmpty()) {
                start = Math.max(0, size - Long.parseLong(m.group(2)));
            } else {
                start = Long.parseLong(m.group(1));
                if (!m.group(2).isEmpty()) {
                    end = Math.min(end, Long.parseLong(m.group(2)));
                }
            }
            if (start > end || start >= size) {
                throw unsatisfiable(size);
            }
            partial = true;
        }
        long length = size == 0 ? 0 : end - start + 1;
        InputStream in;
        if (a.encoding().equals("gzip")) {
            // From the member holding the first byte (V12 seek points), not from byte 0.
            long[] from = a.seekTo(start);
            InputStream stored = artifacts.open(id, name, (int) (from[1] / ChunkStream.CHUNK));
            stored.skipNBytes(from[1] % ChunkStream.CHUNK);
            in = new GZIPInputStream(stored, 64 * 1024);
            in.skipNBytes(start - from[0]);
        } else {
            in = artifacts.open(id, name, (int) (start / ChunkStream.CHUNK));
            in.skipNBytes(start % ChunkStream.CHUNK);
        }
        ctx.status(partial ? 206 : 200);
        ctx.header("Accept-Ranges", "bytes");
        ctx.header("Content-Type", "application/octet-stream");
        ctx.header("Content-Length", Long.toString(length));
        if (a.sha256() != null) {
            ctx.header("X-Outrun-Sha256", a.sha256());
        }
        if (partial) {
            ctx.header("Content-Range", "bytes " + start + "-" + end + "/" + size);
        }
        // Straight to the response, past Javalin's result buffering: memory stays one chunk.
        try (in) {
            OutputStream out = ctx.res().getOutputStream();
            byte[] buffer = new byte[64 * 1024];
            long left = length;
            while (left > 0) {
                int n = in.read(buffer, 0, (int) Math.min(buffer.length, left));
                if (n < 0) {
                    break;
                }
                out.write(buffer, 0, n);
                left -= n;
            }
            out.flush();
        }
    }

    private static ApiError artifactNotFound(UUID id, String name) {
        return new ApiError(404, "artifact_not_found", "Execution " + id + " has no artifact named " + name + ".",
                ch -> ch.listArtifacts(id) + " lists what was collected; name files to collect with "
                        + ch.field("artifacts") + " when you submit.");
    }

    private static ApiError unsatisfiable(long size) {
        return new ApiError(416, "range_not_satisfiable", "The Range header must be one range bytes=START-END within"
                + " the artifact's " + size + " bytes.", "Ask for bytes=0- to download it whole.");
    }

    void listWorkspaces(Context ctx) {
        String owner = ApiServer.owner(ctx);
        ApiServer.json(ctx, 200, Map.of("workspaces", workspaces.list(owner).stream().map(FileRoutes::view).toList()));
    }

    void getWorkspace(Context ctx) {
        String owner = ApiServer.owner(ctx);
        String name = ctx.pathParam("name");
        Workspace w = workspaces.find(owner, name).orElseThrow(() -> workspaceNotFound(name));
        ApiServer.json(ctx, 200, view(w));
    }

    void deleteWorkspace(Context ctx) {
        String owner = ApiServer.owner(ctx);
        String name = ctx.pathParam("name");
        if (!workspaces.delete(owner, name)) {
            throw workspaceNotFound(name);
        }
        ctx.status(204);
    }

    private static Map<String, Object> view(Workspace w) {
        Map<String, Object> v = new LinkedHashMap<>();
        v.put("name", w.name());
        v.put("size", w.size());
        v.put("sha256", w.sha256());
        v.put("savedAt", w.savedAt().toString());
        v.put("savedBy", w.savedBy());
        return v;
    }

    private static ApiError workspaceNotFound(String name) {
        return new ApiError(404, "workspace_not_found", "No workspace named " + name + ".",
                "GET /v1/workspaces lists yours; a run with \"workspace\": \"" + name + "\" creates it when it ends.");
    }
}
