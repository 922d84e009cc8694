package io.outrun.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import io.outrun.client.ApiException;
import io.outrun.client.OutrunClient;
import io.outrun.client.UnreachableException;
import io.outrun.client.wire.ExecutionView;
import io.outrun.client.wire.Json;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/**
 * What every client command shares: the API connection, output writers, and one way of
 * reporting the API's errors (code, message, guidance) with exit code 1.
 */
abstract class ClientCommand implements Callable<Integer> {

    /** Exit code when Outrun itself failed (API error, unreachable); usage errors are 2. */
    static final int FAILURE = 1;

    @Mixin
    ClientOptions clientOptions;

    @Spec
    CommandSpec spec;

    abstract int run(OutrunClient client) throws Exception;

    @Override
    public final Integer call() throws Exception {
        OutrunClient client = clientOptions.client();
        try {
            return run(client);
        } catch (ApiException e) {
            err().println("outrun: " + e.code() + ": " + e.getMessage());
            if (e.guidance() != null) {
                err().println("  " + e.guidance());
            }
            return FAILURE;
        } catch (UnreachableException e) {
            err().println("outrun: " + e.getMessage());
            err().println("  Is the API running? Start one with `outrun dev`, or point --api (OUTRUN_API) at it.");
            return FAILURE;
        } finally {
            out().flush();
            err().flush();
        }
    }

    PrintWriter out() {
        return spec.commandLine().getOut();
    }

    PrintWriter err() {
        return spec.commandLine().getErr();
    }

    void printJson(Object value) {
        try {
            out().println(Json.mapper().writeValueAsString(value));
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * The command's exit code as this process's: its own code when it exited, 124 for a timeout
     * (like timeout(1)), 130 for a cancel (like Ctrl-C), 1 for other failures.
     */
    static int exitCodeOf(ExecutionView v) {
        return switch (v.status()) {
            case "succeeded" -> 0;
            case "timed_out" -> 124;
            case "cancelled" -> 130;
            case "failed" -> v.exitCode() != null && v.exitCode() != 0 ? v.exitCode() : 1;
            default -> 0;
        };
    }

    /** Streams an execution's output to its end, then reports the end; returns the exit code to use. */
    int followToEnd(OutrunClient client, String id, boolean json) {
        new Follower(client, out(), err(), System.console() != null, json).follow(id);
        ExecutionView end = client.get(id, 0, json ? "full" : "none");
        if (json) {
            printJson(end);
        }
        reportEnd(end);
        return exitCodeOf(end);
    }

    /** One line on stderr when an execution did not succeed, so a piped run still says why. */
    void reportEnd(ExecutionView v) {
        if (!v.status().equals("succeeded") && v.finished()) {
            err().println("outrun: execution " + v.executionId() + " " + v.status()
                    + (v.error() != null ? ": " + v.error().message() : ""));
        }
    }
}
