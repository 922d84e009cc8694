package io.outrun.core.execution;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.UUID;

/**
 * The UUID of the JobRunr job that carries one dispatch of an execution. The same formula is the
 * generated column {@code executions.job_id} (md5 of "id:dispatch_seq" read as a UUID), so the
 * database and every node agree on it without asking each other.
 */
public final class JobIds {
    private JobIds() {
    }

    public static UUID of(UUID executionId, int bookSeq) {
        try {
            byte[] md5 = MessageDigest.getInstance("MD5")
                    .digest((executionId + ":" + bookSeq).getBytes(StandardCharsets.UTF_8));
            long msb = 0;
            long lsb = 0;
            for (int i = 0; i < 8; i++) {
                msb = (msb << 8) | (md5[i] & 0xFF);
                lsb = (lsb << 8) | (md5[i + 8] & 0xFF);
            }
            return new UUID(msb, lsb);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("MD5 is required of every JVM", e);
        }
    }
}
