package io.outrun.worker.lease;

import io.outrun.sandbox.Exit;
import io.outrun.sandbox.Run;
import io.outrun.sandbox.capture.BoundedCapture;
import io.outrun.model.output.Captured;
import io.outrun.core.store.Chunk;
import io.outrun.core.store.Lease;
import java.io.ByteArrayOutputStream;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.TreeMap;
import java.util.UUID;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Random streams through BoundedCapture, OutputTracker's flushes (some lost after landing, some
 * failed before), an in-memory copy of execution_output's append/drop semantics, and
 * OutputStore.assemble, against a plain model: the whole stream kept in memory.
 */
class OutputModelTest {

    private static final UUID ID = UUID.randomUUID();
    private static final Lease LEASE = new Lease(ID, 1, 1, "n/1");

    /** execution_output of one stream: start offset -> chunk; the ON CONFLICT and DELETE of OutputStore. */
    static final class Table {
        final TreeMap<Long, byte[]> rows = new TreeMap<>();

        void append(List<Chunk> chunks) {
            for (Chunk k : chunks) {
                byte[] old = rows.get(k.offset());
                if (old == null || k.data().length >= old.length) {
                    rows.put(k.offset(), k.data());
                }
            }
        }

        void drop(long below, int max) {
            if (below <= 0) {
                return;
            }
            rows.entrySet().removeIf(e -> e.getKey() >= max / 2 && e.getKey() + e.getValue().length <= below);
        }

        /** Chunks ending after {@code from}, sorted by start (the read's SELECT). */
        List<Chunk> since(long from) {
            List<Chunk> out = new ArrayList<>();
            rows.forEach((off, data) -> {
                if (off + data.length > from) {
                    out.add(new Chunk(ID, 1, 1, off, data));
                }
            });
            return out;
        }

        /** The READ's stdout_end: the end of the chunk with the greatest start. */
        long end() {
            return rows.isEmpty() ? 0 : rows.lastKey() + rows.lastEntry().getValue().length;
        }
    }

    /** A run that is only its stdout capture. */
    static final class CaptureRun implements Run {
        final BoundedCapture out;
        final ByteArrayOutputStream all = new ByteArrayOutputStream();

        void write(byte[] b) {
            out.append(b);
            all.writeBytes(b);
        }

        CaptureRun(int max) {
            out = new BoundedCapture(max);
        }

        @Override public Captured stdout() { return out.snapshot(); }
        @Override public Captured stderr() { return Captured.EMPTY; }
        @Override public BoundedCapture.Since keptSince(int stream, long from) { return out.keptSince(from); }
        @Override public Optional<Exit> awaitExit(Duration wait) { return Optional.empty(); }
        @Override public boolean kill() { return true; }
        @Override public void close() { }
    }

    static Captured assemble(List<Chunk> chunks, long total, int max, long from) throws Exception {
        Method m = Class.forName("io.outrun.core.store.OutputStore")
                .getDeclaredMethod("assemble", List.class, long.class, int.class, long.class);
        m.setAccessible(true);
        return (Captured) m.invoke(null, chunks, total, max, from);
    }

    /** Offset -> byte of what a Captured shows at or after {@code from}. */
    static Map<Long, Byte> shown(Captured c, long from) {
        Map<Long, Byte> m = new TreeMap<>();
        for (int i = 0; i < c.head().length; i++) {
            if (i >= from) {
                m.put((long) i, c.head()[i]);
            }
        }
        long t0 = c.totalBytes() - c.tail().length;
        for (int i = 0; i < c.tail().length; i++) {
            if (t0 + i >= from) {
                m.put(t0 + i, c.tail()[i]);
            }
        }
        return m;
    }

    static byte[] randomPiece(Random r) {
        int kind = r.nextInt(4);
        StringBuilder s = new StringBuilder();
        int n = 1 + r.nextInt(kind == 3 ? 40 : 6);
        for (int i = 0; i < n; i++) {
            switch (r.nextInt(4)) {
                case 0 -> s.append((char) ('a' + r.nextInt(26)));
                case 1 -> s.append('é');
                case 2 -> s.append('€');
                default -> s.appendCodePoint(0x1F600 + r.nextInt(10));
            }
        }
        byte[] b = s.toString().getBytes(StandardCharsets.UTF_8);
        if (r.nextInt(5) == 0) { // a write cut mid-character
            return java.util.Arrays.copyOf(b, Math.max(1, b.length - 1 - r.nextInt(Math.min(3, b.length))));
        }
        return b;
    }

    /** The capture itself against the whole stream: keptSince is exact, snapshot is ofRaw of head and tail. */
    @Test
    void keptSinceMatchesThePlainModel() {
        Random r = new Random(1);
        for (int round = 0; round < 3000; round++) {
            int max = 2 + r.nextInt(60);
            BoundedCapture cap = new BoundedCapture(max);
            ByteArrayOutputStream all = new ByteArrayOutputStream();
            int pieces = r.nextInt(30);
            for (int p = 0; p < pieces; p++) {
                byte[] b = randomPiece(r);
                cap.append(b);
                all.writeBytes(b);
                byte[] stream = all.toByteArray();
                long total = stream.length;
                int headLen = (int) Math.min(total, max / 2);
                long tailStart = Math.max(headLen, total - (max - max / 2));
                long from = r.nextInt((int) total + 1);
                BoundedCapture.Since since = cap.keptSince(from);
                assertThat(since.total()).isEqualTo(total);
                Map<Long, Byte> got = new TreeMap<>();
                for (BoundedCapture.Segment s : since.segments()) {
                    for (int i = 0; i < s.bytes().length; i++) {
                        assertThat(got.put(s.offset() + i, s.bytes()[i])).isNull();
                    }
                }
                Map<Long, Byte> want = new TreeMap<>();
                for (long o = from; o < total; o++) {
                    if (o < headLen || o >= tailStart) {
                        want.put(o, stream[(int) o]);
                    }
                }
                assertThat(got).as("round %d max %d from %d", round, max, from).isEqualTo(want);
                Captured expected = Captured.ofRaw(java.util.Arrays.copyOf(stream, headLen),
                        java.util.Arrays.copyOfRange(stream, (int) tailStart, (int) total), total);
                Captured snap = cap.snapshot();
                assertThat(snap.head()).isEqualTo(expected.head());
                assertThat(snap.tail()).isEqualTo(expected.tail());
            }
        }
    }

    /**
     * Flushes (landed, lost after landing, failed), batch drops and the end's last write: the store
     * read back (whole, or from any cursor) shows exactly what the capture keeps.
     */
    @Test
    void storedOutputIsACopyOfTheCapture() throws Exception {
        Random r = new Random(2);
        for (int round = 0; round < 3000; round++) {
            int max = 2 + r.nextInt(60);
            CaptureRun run = new CaptureRun(max);
            OutputTracker tracker = new OutputTracker(1, max);
            Table table = new Table();
            int steps = r.nextInt(40);
            for (int s = 0; s < steps; s++) {
                run.write(randomPiece(r));
                if (r.nextInt(3) == 0) {
                    OutputTracker.Next next = tracker.next(LEASE, run);
                    int fate = r.nextInt(4); // 0 failed before landing, 1 landed but the answer was lost, else landed
                    if (fate != 0) {
                        table.append(next.chunks());
                        table.drop(next.dropBelow(), max);
                    }
                    if (fate >= 2) {
                        tracker.stored(next);
                    }
                    // A reader while it runs: total is how far the stored output reaches.
                    checkRead(table, table.end(), max, r, run, false);
                }
            }
            // The end: lastOutput's chunks, nothing dropped; the total is the capture's.
            table.append(tracker.next(LEASE, run).chunks());
            checkRead(table, run.out.totalBytes(), max, r, run, true);
        }
    }

    private static void checkRead(Table table, long total, int max, Random r, CaptureRun run, boolean ended) throws Exception {
        Captured whole = assemble(table.since(0), total, max, 0);
        if (ended) {
            Captured snap = run.out.snapshot();
            assertThat(whole.totalBytes()).isEqualTo(snap.totalBytes());
            assertThat(whole.head()).as("head, max %d total %d", max, total).isEqualTo(snap.head());
            assertThat(whole.tail()).as("tail, max %d total %d", max, total).isEqualTo(snap.tail());
        }
        long from = total == 0 ? 0 : r.nextInt((int) total + 1);
        Captured since = assemble(table.since(from), total, max, from);
        // Past the cursor: only real bytes of the stream, and at least what the whole read shows there.
        // (Not equal: with the bytes before the cursor zero-filled, a character cut at the head's end
        // or the tail's start is not cut, so the reader gets the rest of the one it already began.)
        byte[] stream = run.all.toByteArray();
        Map<Long, Byte> got = shown(since, from);
        got.forEach((o, b) -> assertThat(b).as("byte %d since %d of %d (max %d)", o, from, total, max).isEqualTo(stream[o.intValue()]));
        assertThat(got.keySet()).as("since %d of %d (max %d)", from, total, max).containsAll(shown(whole, from).keySet());
        shown(whole, 0).forEach((o, b) -> assertThat(b).as("whole byte %d of %d (max %d)", o, total, max).isEqualTo(stream[o.intValue()]));
    }
}
