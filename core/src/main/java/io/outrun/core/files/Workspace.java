package io.outrun.core.files;

import java.time.Instant;
import java.util.UUID;

/**
 * An owner's named workspace: a tar of a workdir as a run left it.
 *
 * @param size    bytes of the tar
 * @param savedBy the execution whose end saved it
 */
public record Workspace(String name, long size, String sha256, Instant savedAt, UUID savedBy) {
}
