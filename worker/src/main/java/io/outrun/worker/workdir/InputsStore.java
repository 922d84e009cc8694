package io.outrun.worker.workdir;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.outrun.core.execution.RunInputs;
import io.outrun.core.store.ExecutionInputsTable;
import io.outrun.core.store.NamedSql;
import io.outrun.core.store.StoreException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import javax.sql.DataSource;

/** The {@code execution_inputs} table: written with the execution's row ({@code SubmissionStore.insert}), read by the worker that claims it. */
public final class InputsStore {

    private static final ObjectMapper JSON = new ObjectMapper();

    private final DataSource dataSource;

    public InputsStore(DataSource dataSource) {
        this.dataSource = dataSource;
    }

    /** What the execution asked for beyond its command ({@link RunInputs#NONE} when nothing). */
    public RunInputs find(UUID id) {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = ExecutionInputsTable.FIND.prepare(c, NamedSql.Args.of("id", id))) {
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return RunInputs.NONE;
                }
                List<String> artifacts = JSON.readValue(rs.getString(2), new TypeReference<List<String>>() { });
                String[] secrets = (String[]) rs.getArray(4).getArray();
                return new RunInputs(rs.getBytes(1), artifacts, rs.getString(3), List.of(secrets));
            }
        } catch (SQLException e) {
            throw new StoreException("cannot read the inputs of " + id, e);
        } catch (JsonProcessingException e) {
            throw new StoreException("unreadable inputs of " + id, null);
        }
    }

    /** Only the workspace name, for the claim's check (no tar read). */
    public Optional<String> workspace(UUID id) {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = ExecutionInputsTable.WORKSPACE.prepare(c, NamedSql.Args.of("id", id))) {
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? Optional.ofNullable(rs.getString(1)) : Optional.empty();
            }
        } catch (SQLException e) {
            throw new StoreException("cannot read the inputs of " + id, e);
        }
    }
}
