package io.outrun.core.books;

import java.util.UUID;

/**
 * What a JobRunr job of Outrun stands for: one execution. The API enqueues an IoC lambda on this
 * interface ({@code r -> r.run(id)}), which names the execution on the dashboard. Nothing ever
 * runs it: worker nodes claim executions themselves, and JobRunr's servers are given no job to
 * process ({@link JobRunrStorage}).
 */
public interface ExecutionRunner {
    void run(UUID executionId) throws Exception;
}
