package io.outrun.core.logging;

import java.util.UUID;
import org.slf4j.MDC;

/**
 * Tags every log line of the current thread with the execution it is about, through SLF4J's MDC:
 * {@value #EXECUTION_ID}, {@value #OWNER} and {@value #ATTEMPT} (JSON logs carry them under
 * {@code mdc}; text logs append them). Use with try-with-resources around the work on one
 * execution; closing puts back what the thread carried before, so scopes nest.
 *
 * <pre>{@code
 * try (ExecutionMdc ignored = ExecutionMdc.put(execution.id(), execution.owner(), attempt)) {
 *     ... run the attempt ...
 * }
 * }</pre>
 *
 * <p>MDC is per thread: work handed to another thread (an executor, a docker-java callback) does
 * not carry it, so log the execution id explicitly there. JobRunr copies the MDC of the thread
 * that enqueues a job into the job and restores it on the thread that runs it.
 */
public final class ExecutionMdc implements AutoCloseable {

    public static final String EXECUTION_ID = "executionId";
    public static final String OWNER = "owner";
    public static final String ATTEMPT = "attempt";

    private static final String[] KEYS = {EXECUTION_ID, OWNER, ATTEMPT};

    private final String[] previous;

    private ExecutionMdc(String[] previous) {
        this.previous = previous;
    }

    /** Tags the thread with an execution; a null owner or attempt leaves that key out. */
    public static ExecutionMdc put(UUID executionId, String owner, Integer attempt) {
        return put(executionId == null ? null : executionId.toString(), owner, attempt);
    }

    /** As {@link #put(UUID, String, Integer)}, with the id as the caller holds it (e.g. a path). */
    public static ExecutionMdc put(String executionId, String owner, Integer attempt) {
        String[] previous = new String[KEYS.length];
        String[] values = {executionId, owner, attempt == null ? null : attempt.toString()};
        for (int i = 0; i < KEYS.length; i++) {
            previous[i] = MDC.get(KEYS[i]);
            set(KEYS[i], values[i]);
        }
        return new ExecutionMdc(previous);
    }

    /** Removes the tags whatever scope set them (for a thread returned to a pool). */
    public static void clear() {
        for (String key : KEYS) {
            MDC.remove(key);
        }
    }

    @Override
    public void close() {
        for (int i = 0; i < KEYS.length; i++) {
            set(KEYS[i], previous[i]);
        }
    }

    private static void set(String key, String value) {
        if (value == null) {
            MDC.remove(key);
        } else {
            MDC.put(key, value);
        }
    }
}
