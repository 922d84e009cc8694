package io.outrun.cli;

import io.outrun.client.OutrunClient;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import picocli.CommandLine.Option;

/** Where the client commands find the API and who they are. */
public final class ClientOptions {

    static final String DEFAULT_API = "http://localhost:8080";
    static final Path DEV_TOKEN = Path.of(".outrun", "dev-token");

    @Option(names = "--api", defaultValue = "${env:OUTRUN_API}", description = "API base URL (env OUTRUN_API; default " + DEFAULT_API + ")")
    String api;

    /** The run's own token, in the env of every run whose node can sign (issue 31). */
    static final String RUN_TOKEN_ENV = "OUTRUN_API_TOKEN";

    @Option(names = "--token", defaultValue = "${env:OUTRUN_TOKEN}", description = "Bearer token (env OUTRUN_TOKEN; else,"
            + " inside a run, the run's own token OUTRUN_API_TOKEN, so `outrun run` there submits a child and"
            + " `outrun progress` reports; else the token `outrun dev` wrote to .outrun/dev-token)")
    String token;

    public OutrunClient client() {
        String url = first(api, DEFAULT_API);
        URI base;
        try {
            base = URI.create(url);
            if (base.getScheme() == null || !base.getScheme().startsWith("http") || base.getHost() == null) {
                throw new IllegalArgumentException("not an http(s) URL");
            }
        } catch (IllegalArgumentException e) {
            throw new UsageException("--api must be an http(s) URL such as " + DEFAULT_API + ", got: " + url);
        }
        String t = first(token, System.getenv(RUN_TOKEN_ENV), devToken());
        if (t == null || t.isBlank()) {
            throw new UsageException("no token: pass --token or set OUTRUN_TOKEN (an operator creates one with"
                    + " `outrun token create --owner NAME`; `outrun dev` writes one to .outrun/dev-token)");
        }
        t = t.strip();
        if (!printable(t)) {
            throw new UsageException("the token contains spaces or control characters; pass it exactly as"
                    + " `outrun token create` printed it");
        }
        return new OutrunClient(base, t).withChannel("cli");
    }

    /** What an HTTP header value may hold here: visible ASCII only. */
    static boolean printable(String value) {
        return value.chars().allMatch(c -> c > 0x20 && c < 0x7f);
    }

    private static String devToken() {
        try {
            return Files.isReadable(DEV_TOKEN) ? Files.readString(DEV_TOKEN).strip() : null;
        } catch (IOException e) {
            return null;
        }
    }

    private static String first(String... values) {
        for (String v : values) {
            if (v != null && !v.isBlank()) {
                return v;
            }
        }
        return null;
    }
}
