package io.outrun.worker.attempt;

import io.outrun.core.store.Outcome;
import java.time.Duration;

/**
 * How one attempt on this node ends, decided in one place ({@link AttemptRunner#runClaimed}) and
 * written by one writer ({@link AttemptRunner#apply}), as River's job executor returns a result
 * that its {@code reportResult} writes. Each says what the execution's row becomes:
 * <ul>
 *   <li>{@link Finished}: the command's own end (exit, timeout, memory kill, cancel) or a start
 *       the sandbox refused as specified, written with the last output under the lease;</li>
 *   <li>{@link HandedBack}: the sandbox never started the run: no attempt spent, claimable again
 *       after {@code pause};</li>
 *   <li>{@link Abandoned}: the sandbox lost a started run (engine restart, an operator's kill):
 *       re-driven while attempts remain, after {@code pause};</li>
 *   <li>{@link Drained}: this node's drain time ran out and killed the run: re-driven at once,
 *       no attempt spent;</li>
 *   <li>{@link LeaseLost}: nothing is written; the sweep decides once the lease has expired.</li>
 * </ul>
 */
public sealed interface AttemptEnd {

    record Finished(Outcome outcome) implements AttemptEnd {
    }

    record HandedBack(String why, Duration pause) implements AttemptEnd {
    }

    record Abandoned(String why, Duration pause) implements AttemptEnd {
    }

    record Drained() implements AttemptEnd {
    }

    record LeaseLost(String why) implements AttemptEnd {
    }
}
