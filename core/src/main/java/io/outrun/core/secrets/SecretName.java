package io.outrun.core.secrets;

import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * What a secret may be called and hold. A name becomes an environment variable of the run, so it
 * is one bash takes as a variable and not one the shell, the sandbox or the egress proxy sets
 * (a secret called PATH would break the run; one called HTTPS_PROXY would redirect it).
 */
public final class SecretName {

    public static final int MAX_NAME = 128;
    /** Shorter values would be masked wherever they happen to appear in ordinary output. */
    public static final int MIN_VALUE_BYTES = 4;
    /**
     * 16 KiB: a private key or a kubeconfig fits; every value is a pattern the run's output is
     * matched against as it streams, so a longer one costs the worker more per byte printed.
     */
    public static final int MAX_VALUE_BYTES = 16 * 1024;
    /** All the secrets one run names, together: they travel in its environment, which the kernel bounds. */
    public static final int MAX_RUN_BYTES = 64 * 1024;
    /** Secrets one owner may keep; a submission names at most {@link #MAX_PER_RUN}. */
    public static final int MAX_PER_OWNER = 200;
    public static final int MAX_PER_RUN = 32;

    private static final Pattern NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0," + (MAX_NAME - 1) + "}");
    private static final Set<String> TAKEN = Set.of("PATH", "HOME", "USER", "LOGNAME", "SHELL", "PWD", "OLDPWD", "IFS",
            "PS1", "PS2", "PS3", "PS4", "ENV", "UID", "EUID", "PPID", "SHLVL", "HOSTNAME", "HOSTTYPE", "OPTIND",
            "OPTARG", "TMPDIR", "TERM", "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "NO_PROXY",
            "no_proxy", "ALL_PROXY", "all_proxy",
            // bash's own: read-only, or replaced by bash before the command reads them
            "SHELLOPTS", "BASHOPTS", "GROUPS", "FUNCNAME", "RANDOM", "SRANDOM", "SECONDS", "LINENO", "HISTCMD",
            "DIRSTACK", "PIPESTATUS", "EPOCHSECONDS", "EPOCHREALTIME", "BASHPID", "_");

    private SecretName() {
    }

    /** Why {@code name} cannot name a secret, or null when it can. */
    public static String problem(String name) {
        if (name == null || !NAME.matcher(name).matches()) {
            return "a secret's name is an environment variable's: letters, digits and _, not starting with a digit,"
                    + " at most " + MAX_NAME + " characters";
        }
        if (name.startsWith("BASH") || name.startsWith("OUTRUN_") || name.startsWith("LD_") || name.startsWith("COMP_")
                || name.toLowerCase(Locale.ROOT).startsWith("_outrun_") || TAKEN.contains(name)) {
            return "the run's shell or sandbox sets " + name + " itself; choose another name";
        }
        return null;
    }

    /** Why {@code value} cannot be stored, or null when it can. */
    public static String valueProblem(String value) {
        if (value == null) {
            return "`value` is required: the secret's text";
        }
        int bytes = value.getBytes(StandardCharsets.UTF_8).length;
        if (bytes < MIN_VALUE_BYTES) {
            return "a secret must be at least " + MIN_VALUE_BYTES + " bytes: a shorter one could not be masked in output"
                    + " without masking ordinary text";
        }
        if (bytes > MAX_VALUE_BYTES) {
            return "a secret may be at most " + MAX_VALUE_BYTES + " bytes, got " + bytes;
        }
        if (value.indexOf('\0') >= 0) {
            return "a secret cannot contain a NUL byte, which an environment variable cannot hold";
        }
        if (!StandardCharsets.UTF_8.newEncoder().canEncode(value)) {
            return "a secret must be valid Unicode text (it has an unpaired surrogate, such as \\ud800 alone)";
        }
        return null;
    }
}
