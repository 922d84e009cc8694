package io.outrun.core.secrets;

import io.outrun.core.config.ConfigException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.HexFormat;
import java.util.Optional;
import javax.crypto.AEADBadTagException;
import javax.crypto.Cipher;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;

/**
 * The operator's key that seals secret values at rest: AES-256-GCM, a fresh 96-bit nonce per
 * value, and the owner and name as associated data, so that a sealed value copied to another
 * owner's or name's row does not open. The key is 32 bytes, written base64 (as
 * {@code head -c 32 /dev/urandom | base64} prints it) in {@code --secrets-key-file} or
 * {@code OUTRUN_SECRETS_KEY}. Its {@link #id()} (a hash prefix, not the key) is stored with each
 * value, so a node with another key says so instead of failing to decrypt.
 */
public final class SecretsKey {

    private static final int KEY_BYTES = 32;
    private static final int NONCE_BYTES = 12;
    private static final int TAG_BITS = 128;
    private static final SecureRandom RANDOM = new SecureRandom();

    private final SecretKeySpec key;
    private final String id;

    private SecretsKey(byte[] bytes) {
        this.key = new SecretKeySpec(bytes, "AES");
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(
                    ByteBuffer.allocate(16 + bytes.length).put("outrun-secrets:".getBytes(StandardCharsets.US_ASCII))
                            .put((byte) 0).put(bytes).array());
            this.id = HexFormat.of().formatHex(digest, 0, 6);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("SHA-256 is required of every JVM", e);
        }
    }

    /** A key from its base64 text ({@code what} names where it came from, for the error). */
    public static SecretsKey fromBase64(String text, String what) {
        byte[] bytes;
        try {
            bytes = Base64.getDecoder().decode(text.strip());
        } catch (IllegalArgumentException e) {
            throw new ConfigException(what + " must hold a base64 key of 32 bytes (head -c 32 /dev/urandom | base64),"
                    + " and is not base64");
        }
        if (bytes.length != KEY_BYTES) {
            throw new ConfigException(what + " must hold a base64 key of 32 bytes (head -c 32 /dev/urandom | base64),"
                    + " got " + bytes.length + " bytes");
        }
        return new SecretsKey(bytes);
    }

    public static SecretsKey fromFile(Path file) {
        try {
            return fromBase64(Files.readString(file, StandardCharsets.US_ASCII), "--secrets-key-file " + file);
        } catch (IOException e) {
            throw new ConfigException("cannot read --secrets-key-file " + file + ": " + e.getMessage());
        }
    }

    /** A new random key as base64 text, for {@code outrun dev}'s data dir. */
    public static String generate() {
        byte[] bytes = new byte[KEY_BYTES];
        RANDOM.nextBytes(bytes);
        return Base64.getEncoder().encodeToString(bytes);
    }

    /** Which key this is, stored beside each value it seals (a hash prefix: it reveals nothing of the key). */
    public String id() {
        return id;
    }

    /** A value sealed under this key: nonce and ciphertext with its tag. */
    public record Sealed(byte[] nonce, byte[] ciphertext, String keyId) {
    }

    public Sealed seal(String owner, String name, String value) {
        byte[] nonce = new byte[NONCE_BYTES];
        RANDOM.nextBytes(nonce);
        try {
            Cipher cipher = Cipher.getInstance("AES/GCM/NoPadding");
            cipher.init(Cipher.ENCRYPT_MODE, key, new GCMParameterSpec(TAG_BITS, nonce));
            cipher.updateAAD(aad(owner, name));
            return new Sealed(nonce, cipher.doFinal(value.getBytes(StandardCharsets.UTF_8)), id);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("AES-GCM is required of every JVM", e);
        }
    }

    /** The value, or empty when it does not open under this key (another key, or a tampered row). */
    public Optional<String> open(String owner, String name, Sealed sealed) {
        try {
            Cipher cipher = Cipher.getInstance("AES/GCM/NoPadding");
            cipher.init(Cipher.DECRYPT_MODE, key, new GCMParameterSpec(TAG_BITS, sealed.nonce()));
            cipher.updateAAD(aad(owner, name));
            return Optional.of(new String(cipher.doFinal(sealed.ciphertext()), StandardCharsets.UTF_8));
        } catch (AEADBadTagException e) {
            return Optional.empty();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("AES-GCM is required of every JVM", e);
        }
    }

    private static byte[] aad(String owner, String name) {
        return (owner + "\0" + name).getBytes(StandardCharsets.UTF_8);
    }

    @Override
    public String toString() {
        return "SecretsKey[id=" + id + "]";
    }
}
