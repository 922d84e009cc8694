package io.outrun.core.execution;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The state table, every (from, to) pair: legal exactly when listed here. The database's trigger
 * holds the same table ({@code ExecutionStoreIT} checks they agree); this one needs no database.
 */
class ExecutionStatusTest {

    private static final Set<String> LEGAL = Set.of(
            "queued->running", "queued->cancelled",
            "running->succeeded", "running->failed", "running->timed_out", "running->cancelled", "running->queued");

    static Stream<Arguments> everyPair() {
        return Stream.of(ExecutionStatus.values())
                .flatMap(from -> Stream.of(ExecutionStatus.values()).map(to -> Arguments.of(from, to)));
    }

    @ParameterizedTest(name = "{0} -> {1}")
    @MethodSource("everyPair")
    void aMoveIsLegalExactlyWhenTheTableListsIt(ExecutionStatus from, ExecutionStatus to) {
        assertThat(from.canMoveTo(to)).isEqualTo(LEGAL.contains(from.wire() + "->" + to.wire()));
    }

    @ParameterizedTest
    @EnumSource(ExecutionStatus.class)
    void terminalStatesNeverMoveAndTheOthersAlwaysCan(ExecutionStatus status) {
        assertThat(status.next().isEmpty()).isEqualTo(status.isTerminal());
    }

    @ParameterizedTest
    @EnumSource(ExecutionStatus.class)
    void theWireNameReadsBack(ExecutionStatus status) {
        assertThat(ExecutionStatus.fromWire(status.wire())).isEqualTo(status);
    }

    @Test
    void anUnknownWireNameIsRefused() {
        assertThatThrownBy(() -> ExecutionStatus.fromWire("RUNNING")).isInstanceOf(IllegalArgumentException.class);
    }
}
