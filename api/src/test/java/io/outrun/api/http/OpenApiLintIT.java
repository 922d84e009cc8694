package io.outrun.api.http;

import static org.assertj.core.api.Assertions.assertThat;

import io.outrun.testing.Requirements;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code redocly lint} with its recommended rules reports no error in the OpenAPI document
 * (warnings pass: the one left is info-license, as the project names no license). Redocly
 * comes from the npm registry through npx; without npx the test fails under CI=true and is
 * skipped elsewhere, with the reason ({@link Requirements}).
 */
class OpenApiLintIT {

    /** A version known to install and run on this machine's Node.js 20. */
    private static final String REDOCLY = "@redocly/cli@2.77.0";

    @Test
    void redoclyRecommendedRulesReportNoError(@TempDir Path dir) throws Exception {
        Path doc = dir.resolve("openapi.json");
        try (InputStream in = ApiServer.class.getResourceAsStream("openapi.json")) {
            Files.write(doc, in.readAllBytes());
        }
        Path npx = Requirements.binary("npx"); // Node.js, for redocly
        Process p = new ProcessBuilder(npx.toString(), "--yes", REDOCLY, "lint", doc.toString(), "--format=stylish")
                .directory(dir.toFile()).redirectErrorStream(true).start();
        p.getOutputStream().close();
        byte[] out = p.getInputStream().readAllBytes();
        assertThat(p.waitFor(5, TimeUnit.MINUTES)).isTrue();
        String report = new String(out, StandardCharsets.UTF_8);
        System.out.println(report);
        assertThat(p.exitValue()).as(report).isZero();
        assertThat(report).contains("valid").doesNotContain(" error ");
    }
}
