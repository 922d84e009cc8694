package io.outrun.model.inputs;

import java.nio.file.Path;
import java.util.List;

/**
 * Where a run may work: an absolute path that a fresh tmpfs can be mounted on without breaking
 * the container (not {@code /}, {@code /tmp}, the kernel's {@code /proc}, {@code /sys},
 * {@code /dev}, nor the init binary Docker mounts). Checked by the API (400 at submit) and again
 * by the sandbox, because a path the engine refuses would otherwise fail at every start.
 */
public final class Workdir {

    private static final List<String> RESERVED = List.of("/proc", "/sys", "/dev", "/usr/sbin/docker-init", "/sbin/docker-init");

    private Workdir() {
    }

    /** The normalised path, or IllegalArgumentException saying why it cannot be a workdir. */
    public static String check(String workdir) {
        if (workdir == null || !workdir.startsWith("/")) {
            throw new IllegalArgumentException("must be an absolute path, got: " + workdir);
        }
        String normal = Path.of(workdir).normalize().toString();
        if (normal.equals("/") || normal.equals("/tmp")) {
            throw new IllegalArgumentException("must be a directory other than / and /tmp, got: " + workdir);
        }
        for (String reserved : RESERVED) {
            if (normal.equals(reserved) || normal.startsWith(reserved + "/")) {
                throw new IllegalArgumentException("must not be in " + reserved + " (the container needs it), got: " + workdir);
            }
        }
        return normal;
    }
}
