package io.outrun.cli;

/**
 * The command line or what it names is wrong (a bad option, no token, an unreadable file); the
 * message says which and what is accepted. The root command prints it as a configuration error
 * and exits with 2, as for a node's {@code ConfigException}: this module does not reach core,
 * so that a client carries the CLI without the node runtime.
 */
public class UsageException extends RuntimeException {
    public UsageException(String message) {
        super(message);
    }
}
