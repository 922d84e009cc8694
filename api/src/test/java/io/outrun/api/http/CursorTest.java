package io.outrun.api.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Base64;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The opaque cursors of listing and output: they read back exactly, and anything else is a 400 naming the parameter. */
class CursorTest {

    @Test
    void aListCursorReadsBackExactly() {
        ListCursor cursor = new ListCursor(Instant.parse("2026-12-01T03:04:05.123456Z"), UUID.randomUUID());
        assertThat(ListCursor.decode(cursor.encode())).isEqualTo(cursor);
    }

    @Test
    void noListCursorIsTheFirstPage() {
        assertThat(ListCursor.decode(null)).isNull();
        assertThat(ListCursor.decode("")).isNull();
    }

    @ParameterizedTest
    @ValueSource(strings = {"garbage!", "bDF8eA", "not base64 at all", "l2|2026-12-01T00:00:00Z|00000000-0000-0000-0000-000000000000"})
    void aForeignListCursorIsA400NamingAfter(String text) {
        assertInvalid(() -> ListCursor.decode(text), "after");
    }

    @Test
    void aListCursorOutsidePostgresTimestampsIsRefused() {
        assertInvalid(() -> ListCursor.decode(b64("l1|+10000-01-01T00:00:00Z|" + UUID.randomUUID())), "after");
        assertInvalid(() -> ListCursor.decode(b64("l1|1960-01-01T00:00:00Z|" + UUID.randomUUID())), "after");
    }

    @Test
    void anOutputCursorReadsBackExactly() {
        OutputCursor cursor = new OutputCursor(3, 1 << 20, 17);
        assertThat(OutputCursor.decode(cursor.encode())).isEqualTo(cursor);
    }

    @Test
    void noOutputCursorIsTheStart() {
        assertThat(OutputCursor.decode(null)).isEqualTo(OutputCursor.START);
        assertThat(OutputCursor.decode("")).isEqualTo(OutputCursor.START);
    }

    @Test
    void aVersionOneOutputCursorIsStillRead() {
        assertThat(OutputCursor.decode(b64("o1:0:5:6"))).isEqualTo(new OutputCursor(0, 5, 6));
    }

    @ParameterizedTest
    @ValueSource(strings = {"o2:1:-5:0", "o2:1:2", "o3:1:2:3", "o2:x:2:3", "o2:1:2:99999999999999999999"})
    void aForeignOutputCursorIsA400NamingCursor(String raw) {
        assertInvalid(() -> OutputCursor.decode(b64(raw)), "cursor");
    }

    @Test
    void anOverlongOutputCursorIsRefused() {
        assertInvalid(() -> OutputCursor.decode("A".repeat(201)), "cursor");
    }

    private static String b64(String raw) {
        return Base64.getUrlEncoder().withoutPadding().encodeToString(raw.getBytes(StandardCharsets.US_ASCII));
    }

    private static void assertInvalid(Runnable decode, String parameter) {
        assertThatThrownBy(decode::run).isInstanceOfSatisfying(ApiError.class, e -> {
            assertThat(e.httpStatus()).isEqualTo(400);
            assertThat(e.code()).isEqualTo("invalid_request");
            assertThat(e.getMessage()).contains(parameter);
        });
    }
}
