package io.outrun.core.identity;

/**
 * What one attempt of a run is given (issue 31), both JWTs signed with the fleet's current key.
 *
 * @param apiToken its run token for Outrun's own API ({@code OUTRUN_API_TOKEN}: {@code typ}
 *                 {@value TokenIssuer#RUN_TOKEN_TYPE}, scope {@code run}); every attempt gets one
 * @param idToken  its identity token for other services ({@code OUTRUN_ID_TOKEN}: an OIDC-style
 *                 token with the asked audience); null unless the submission asked for an identity
 */
public record RunTokens(String apiToken, String idToken) {

    @Override
    public String toString() {
        return "RunTokens[redacted]";
    }
}
