package io.outrun.dispatch;

import java.util.UUID;

/**
 * What a JobRunr job of Outrun does: run one execution. The API enqueues an IoC lambda on this
 * interface ({@code r -> r.run(id)}) and the worker's {@code JobActivator} supplies the
 * implementation, so {@code api/} never depends on {@code worker/}.
 */
public interface ExecutionRunner {
    void run(UUID executionId) throws Exception;
}
