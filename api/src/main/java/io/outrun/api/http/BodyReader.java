package io.outrun.api.http;

import io.javalin.http.Context;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;

/**
 * Reads a request body up to a limit, whatever the client claims in Content-Length (a chunked
 * body has none). Over the limit it answers 413 after draining a bounded amount, so the client
 * can still read the answer instead of a reset connection.
 */
final class BodyReader {

    private static final long DRAIN_LIMIT = 32L << 20;

    private BodyReader() {
    }

    static byte[] read(Context ctx, int maxBytes) {
        return read(ctx, maxBytes, tooLarge(maxBytes));
    }

    /** As {@link #read(Context, int)}, answering {@code tooLarge} over the limit. */
    static byte[] read(Context ctx, int maxBytes, ApiError tooLarge) {
        long declared = ctx.req().getContentLengthLong();
        try (InputStream in = ctx.req().getInputStream()) {
            if (declared > maxBytes) {
                drain(in);
                throw tooLarge;
            }
            ByteArrayOutputStream body = new ByteArrayOutputStream(declared > 0 ? (int) declared : 8192);
            byte[] buffer = new byte[8192];
            int n;
            while ((n = in.read(buffer)) >= 0) {
                if (body.size() + n > maxBytes) {
                    drain(in);
                    throw tooLarge;
                }
                body.write(buffer, 0, n);
            }
            return body.toByteArray();
        } catch (IOException e) {
            throw ApiError.invalid("body", "could not be read completely (" + e.getMessage() + ")");
        }
    }

    private static void drain(InputStream in) throws IOException {
        byte[] buffer = new byte[65536];
        long drained = 0;
        int n;
        while (drained < DRAIN_LIMIT && (n = in.read(buffer)) >= 0) {
            drained += n;
        }
    }

    private static ApiError tooLarge(int maxBytes) {
        return new ApiError(413, "request_too_large", "The request body is larger than this server's limit of "
                + maxBytes + " bytes.", "Send a shorter command: put large inputs in `files` (within the"
                + " server's input limit) or a `workspace` a first run fills, rather than in the command.");
    }
}
