package io.outrun.api.http;

/** One route of the API as OpenAPI names it: method in upper case, path with {@code {param}}. */
public record Route(String method, String path) {
}
