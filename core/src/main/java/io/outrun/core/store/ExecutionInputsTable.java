package io.outrun.core.store;

/**
 * The {@code execution_inputs} table's statements (what a run asks for beyond its command: files,
 * artifacts, workspace, secrets), run by {@link SubmissionStore} and {@code worker.workdir.InputsStore}.
 * Statements only; see {@link ExecutionsTable} and CONTRIBUTING.md ("SQL") for the rule.
 */
public final class ExecutionInputsTable {

    public static final NamedSql INSERT = NamedSql.of("""
            INSERT INTO execution_inputs (execution_id, files_tar, artifacts, workspace, secrets)
            VALUES (:id, :files_tar, :artifacts::jsonb, :workspace,
              ARRAY(SELECT jsonb_array_elements_text(:secrets::jsonb)))""");

    public static final NamedSql WORKSPACE_HOLDER = NamedSql.of("""
            SELECT i.workspace, h.id FROM execution_inputs i
              JOIN execution_inputs hi ON hi.workspace = i.workspace AND hi.execution_id <> i.execution_id
              JOIN executions h ON h.id = hi.execution_id AND h.owner = :owner AND h.status = 'running'
            WHERE i.execution_id = :id AND i.workspace IS NOT NULL
            LIMIT 1""");

    public static final NamedSql FIND = NamedSql.of("""
            SELECT files_tar, artifacts::text, workspace, secrets FROM execution_inputs WHERE execution_id = :id""");

    public static final NamedSql WORKSPACE = NamedSql.of("SELECT workspace FROM execution_inputs WHERE execution_id = :id");

    private ExecutionInputsTable() {
    }
}
