package io.outrun.worker.attempt;

import io.outrun.core.store.Outcome;
import java.time.Duration;

/**
 * How one attempt on this node ends, decided in one place ({@link EndDecision}, from plain
 * values) and written by one writer ({@link EndWriter}), as River's job executor returns a result
 * that its {@code reportResult} writes. Each says what the execution's row becomes:
 * <ul>
 *   <li>{@link Finished}: the command's own end (exit, timeout, memory kill, cancel) or a start
 *       the sandbox refused as specified, written with the last output under the lease;</li>
 *   <li>{@link Retried}: a failure its submission's {@code retry} policy covers: re-queued with
 *       its output after {@code pause}, a new attempt (written as {@link Finished} instead when
 *       its owner cancelled as it failed);</li>
 *   <li>{@link HandedBack}: the sandbox never started the run: no attempt spent, claimable again
 *       after {@code pause};</li>
 *   <li>{@link Unstarted}: its node stopped between the claim and the start: handed back at
 *       once, no attempt spent, its job retired (the books never saw it claimed);</li>
 *   <li>{@link Abandoned}: the sandbox lost a started run (engine restart, an operator's kill):
 *       re-driven while attempts remain, after {@code pause};</li>
 *   <li>{@link Drained}: this node's drain time ran out and killed the run: re-driven at once,
 *       no attempt spent;</li>
 *   <li>{@link LeaseLost}: nothing is written; the sweep decides once the lease has expired.</li>
 * </ul>
 * Whatever reads an end does so through a {@link Visitor}: a new kind of end does not compile
 * until every reader handles it (Java 17 has no pattern-matching {@code switch}).
 */
public sealed interface AttemptEnd {

    <R> R accept(Visitor<R> visitor);

    /** One method per kind of end. */
    interface Visitor<R> {
        R finished(Finished end);

        R retried(Retried end);

        R handedBack(HandedBack end);

        R unstarted(Unstarted end);

        R abandoned(Abandoned end);

        R drained(Drained end);

        R leaseLost(LeaseLost end);
    }

    record Finished(Outcome outcome) implements AttemptEnd {
        @Override
        public <R> R accept(Visitor<R> visitor) {
            return visitor.finished(this);
        }
    }

    /** @param retry which retry this is (1 for the first), of {@code maxRetries} */
    record Retried(Outcome outcome, Duration pause, int retry, int maxRetries) implements AttemptEnd {
        @Override
        public <R> R accept(Visitor<R> visitor) {
            return visitor.retried(this);
        }
    }

    record HandedBack(String why, Duration pause) implements AttemptEnd {
        @Override
        public <R> R accept(Visitor<R> visitor) {
            return visitor.handedBack(this);
        }
    }

    record Unstarted(String why) implements AttemptEnd {
        @Override
        public <R> R accept(Visitor<R> visitor) {
            return visitor.unstarted(this);
        }
    }

    record Abandoned(String why, Duration pause) implements AttemptEnd {
        @Override
        public <R> R accept(Visitor<R> visitor) {
            return visitor.abandoned(this);
        }
    }

    record Drained() implements AttemptEnd {
        @Override
        public <R> R accept(Visitor<R> visitor) {
            return visitor.drained(this);
        }
    }

    record LeaseLost(String why) implements AttemptEnd {
        @Override
        public <R> R accept(Visitor<R> visitor) {
            return visitor.leaseLost(this);
        }
    }
}
