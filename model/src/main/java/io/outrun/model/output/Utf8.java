package io.outrun.model.output;

/** Finds UTF-8 character boundaries so that kept output never starts or ends mid-character. */
final class Utf8 {
    private Utf8() {
    }

    /** Length of the longest prefix of {@code bytes[0..length)} that ends on a character boundary. */
    static int wholeCharsPrefix(byte[] bytes, int length) {
        // Walk back over at most 3 continuation bytes to the lead byte of the last character.
        int i = length - 1;
        int continuation = 0;
        while (i >= 0 && continuation < 3 && (bytes[i] & 0xC0) == 0x80) {
            i--;
            continuation++;
        }
        if (i < 0) {
            return length;
        }
        int lead = bytes[i] & 0xFF;
        int needed = lead < 0x80 ? 1 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
        return (length - i) >= needed ? length : i;
    }

    /** Number of continuation bytes (at most 3) at the start: they belong to a dropped character. */
    static int continuationPrefix(byte[] bytes) {
        int i = 0;
        while (i < bytes.length && i < 3 && (bytes[i] & 0xC0) == 0x80) {
            i++;
        }
        return i;
    }
}
