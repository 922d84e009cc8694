package io.outrun.client.wire;

/** A stable machine code and a message for people. */
public record ErrorInfo(String code, String message) {
}
