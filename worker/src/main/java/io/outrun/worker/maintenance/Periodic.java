package io.outrun.worker.maintenance;

import java.time.Duration;
import java.util.Objects;

/**
 * One background loop of a node, in one shape for all (as River's maintenance services): a name
 * for logs and threads, an interval, and one pass. {@link Maintenance} runs it; a pass that
 * throws is logged and the loop carries on at the next interval.
 */
public interface Periodic {

    /** What the loop does, as the logs name it ("re-drive sweep"). */
    String name();

    /** Time between the end of one pass and the start of the next. */
    Duration interval();

    /** One pass. */
    void runOnce();

    /** A loop made of a name, an interval and a pass. */
    static Periodic of(String name, Duration interval, Runnable pass) {
        Objects.requireNonNull(pass, "pass");
        if (interval == null || interval.isNegative() || interval.isZero()) {
            throw new IllegalArgumentException(name + ": the interval must be positive, got: " + interval);
        }
        return new Periodic() {
            @Override
            public String name() {
                return name;
            }

            @Override
            public Duration interval() {
                return interval;
            }

            @Override
            public void runOnce() {
                pass.run();
            }
        };
    }
}
