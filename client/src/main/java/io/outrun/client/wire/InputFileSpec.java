package io.outrun.client.wire;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.util.Base64;

/**
 * One input file of a submission.
 *
 * @param path     relative to the workdir
 * @param content  UTF-8 text, or base64 when {@code encoding} is {@code base64}
 * @param encoding {@code utf8} (default) or {@code base64}
 * @param mode     permission bits as an octal string ("0755"), or null for 0644
 */
public record InputFileSpec(String path, String content, String encoding, String mode) {

    public static InputFileSpec text(String path, String text) {
        return new InputFileSpec(path, text, null, null);
    }

    /** Any bytes, sent as base64. */
    public static InputFileSpec bytes(String path, byte[] bytes, String mode) {
        return new InputFileSpec(path, Base64.getEncoder().encodeToString(bytes), "base64", mode);
    }

    /** Text when the bytes are valid UTF-8 (smaller on the wire), else base64. */
    public static InputFileSpec of(String path, byte[] bytes, String mode) {
        var decoder = StandardCharsets.UTF_8.newDecoder();
        try {
            String text = decoder.decode(ByteBuffer.wrap(bytes)).toString();
            return new InputFileSpec(path, text, null, mode);
        } catch (CharacterCodingException e) {
            return bytes(path, bytes, mode);
        }
    }
}
