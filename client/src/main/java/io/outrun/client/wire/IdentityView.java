package io.outrun.client.wire;

/**
 * The identity a run was given (issue 31): its {@code OUTRUN_ID_TOKEN} is for {@code audience}.
 *
 * @param audience the token's {@code aud}
 */
public record IdentityView(String audience) {
}
