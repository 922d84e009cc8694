package io.outrun.api.http;

import com.fasterxml.jackson.databind.JsonNode;
import io.outrun.core.execution.RunInputs;
import io.outrun.core.files.FilesConfig;
import io.outrun.core.files.WorkspaceStore;
import io.outrun.core.secrets.SecretName;
import io.outrun.model.inputs.ArtifactPattern;
import io.outrun.model.inputs.InputFile;
import io.outrun.model.inputs.InputPath;
import io.outrun.model.inputs.InputTar;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * Reads a submission's {@code files}, {@code artifacts}, {@code workspace} and {@code secrets}. Each problem is a 400
 * naming the file (by its index and path): a path that leaves the workdir, content that is not
 * what its encoding says, inputs over the operator's limits.
 */
final class RunInputsParser {

    private static final Set<String> FILE_FIELDS = Set.of("path", "content", "encoding", "mode");

    private final FilesConfig limits;

    RunInputsParser(FilesConfig limits) {
        this.limits = limits;
    }

    RunInputs parse(JsonNode root) {
        byte[] tar = files(root.get("files"));
        List<String> artifacts = artifacts(root.get("artifacts"));
        String workspace = workspace(root.get("workspace"));
        return new RunInputs(tar, artifacts, workspace, secrets(root.get("secrets")));
    }

    /** {@code "secrets": ["NPM_TOKEN"]}: names of the owner's secrets, set as env for the run. */
    private static List<String> secrets(JsonNode node) {
        if (node == null || node.isNull()) {
            return List.of();
        }
        if (!node.isArray()) {
            throw ApiError.invalid("secrets", "must be a list of your secrets' names, e.g. [\"NPM_TOKEN\"]"
                    + " (set them with PUT /v1/secrets/{name})");
        }
        if (node.size() > SecretName.MAX_PER_RUN) {
            throw ApiError.invalid("secrets", "names " + node.size() + " secrets; at most "
                    + SecretName.MAX_PER_RUN);
        }
        LinkedHashSet<String> names = new LinkedHashSet<>();
        for (int i = 0; i < node.size(); i++) {
            JsonNode n = node.get(i);
            String problem = n.isTextual() ? SecretName.problem(n.asText()) : "must be a secret's name";
            if (problem != null) {
                throw ApiError.invalid("secrets[" + i + "]", problem);
            }
            names.add(n.asText());
        }
        return List.copyOf(names);
    }

    private byte[] files(JsonNode node) {
        if (node == null || node.isNull()) {
            return null;
        }
        if (!node.isArray()) {
            throw ApiError.invalid("files", "must be a list of {\"path\", \"content\", \"encoding\", \"mode\"}");
        }
        if (node.size() > limits.maxInputFiles()) {
            throw tooLarge("files", "has " + node.size() + " entries; this server accepts at most " + limits.maxInputFiles());
        }
        if (node.isEmpty()) {
            return null;
        }
        List<InputFile> files = new ArrayList<>();
        Set<String> paths = new HashSet<>();
        long total = 0;
        for (int i = 0; i < node.size(); i++) {
            JsonNode f = node.get(i);
            String field = "files[" + i + "]";
            if (!f.isObject()) {
                throw ApiError.invalid(field, "must be an object {\"path\", \"content\", \"encoding\", \"mode\"}");
            }
            for (var names = f.fieldNames(); names.hasNext(); ) {
                String name = names.next();
                if (!FILE_FIELDS.contains(name)) {
                    throw ApiError.invalid(field + "." + name, "is not a field of a file (known: path, content, encoding, mode)");
                }
            }
            JsonNode pathNode = f.get("path");
            if (pathNode == null || !pathNode.isTextual()) {
                throw ApiError.invalid(field + ".path", "is required: a path relative to the workdir, e.g. src/main.py");
            }
            String path;
            try {
                path = InputPath.check(pathNode.textValue());
            } catch (IllegalArgumentException e) {
                throw ApiError.invalid(field + ".path", e.getMessage());
            }
            field = "files[" + i + "] (" + path + ")";
            if (!paths.add(path)) {
                throw ApiError.invalid(field, "is given twice");
            }
            byte[] content = content(f, field);
            total += content.length;
            if (total > limits.maxInputBytes()) {
                throw tooLarge(field, "brings the input files to more than this server's limit of "
                        + limits.maxInputBytes() + " bytes in all");
            }
            files.add(new InputFile(path, content, mode(f.get("mode"), field)));
        }
        for (String path : paths) {
            for (int slash = path.indexOf('/'); slash > 0; slash = path.indexOf('/', slash + 1)) {
                if (paths.contains(path.substring(0, slash))) {
                    throw ApiError.invalid("files (" + path.substring(0, slash) + ")", "is a file, but " + path
                            + " needs it to be a directory");
                }
            }
        }
        return InputTar.build(files);
    }

    private static byte[] content(JsonNode f, String field) {
        JsonNode content = f.get("content");
        if (content == null || !content.isTextual()) {
            throw ApiError.invalid(field + ".content", "is required: a string (UTF-8 text, or base64 with \"encoding\": \"base64\")");
        }
        JsonNode encoding = f.get("encoding");
        String enc = encoding == null || encoding.isNull() ? "utf8" : encoding.asText();
        switch (enc) {
            case "utf8", "utf-8" -> {
                return content.textValue().getBytes(StandardCharsets.UTF_8);
            }
            case "base64" -> {
                try {
                    return Base64.getMimeDecoder().decode(content.textValue());
                } catch (IllegalArgumentException e) {
                    throw ApiError.invalid(field + ".content", "is not valid base64 (" + e.getMessage() + ")");
                }
            }
            default -> throw ApiError.invalid(field + ".encoding", "must be \"utf8\" or \"base64\", got: " + enc);
        }
    }

    private static int mode(JsonNode mode, String field) {
        if (mode == null || mode.isNull()) {
            return 0644;
        }
        int value;
        if (mode.isIntegralNumber() && mode.canConvertToInt()) {
            value = mode.intValue();
        } else if (mode.isTextual() && mode.textValue().matches("0?[0-7]{3}")) {
            value = Integer.parseInt(mode.textValue(), 8);
        } else {
            throw ApiError.invalid(field + ".mode", "must be permission bits as an octal string such as \"0755\" or"
                    + " their integer value (493)");
        }
        if (value < 0 || value > 0777) {
            throw ApiError.invalid(field + ".mode", "must be within 0000-0777 (no setuid, setgid or sticky bits)");
        }
        return value;
    }

    private static List<String> artifacts(JsonNode node) {
        if (node == null || node.isNull()) {
            return List.of();
        }
        if (!node.isArray()) {
            throw ApiError.invalid("artifacts", "must be a list of paths or globs relative to the workdir, e.g."
                    + " [\"dist/*.tar\", \"report.xml\"]");
        }
        if (node.size() > FilesConfig.MAX_ARTIFACT_PATTERNS) {
            throw ApiError.invalid("artifacts", "has " + node.size() + " entries; at most "
                    + FilesConfig.MAX_ARTIFACT_PATTERNS + " are allowed (use globs)");
        }
        List<String> patterns = new ArrayList<>();
        for (int i = 0; i < node.size(); i++) {
            String field = "artifacts[" + i + "]";
            if (!node.get(i).isTextual()) {
                throw ApiError.invalid(field, "must be a string");
            }
            String pattern;
            try {
                pattern = InputPath.check(node.get(i).textValue());
                ArtifactPattern.compile(pattern);
            } catch (IllegalArgumentException e) {
                throw ApiError.invalid(field, e.getMessage());
            }
            if (pattern.equals("stdout") || pattern.equals("stderr")) {
                throw ApiError.invalid(field, "names the kept full output, which is listed among the artifacts"
                        + " by itself when the output outgrows its bound; name files of the workdir");
            }
            patterns.add(pattern);
        }
        return patterns;
    }

    private static String workspace(JsonNode node) {
        if (node == null || node.isNull()) {
            return null;
        }
        if (!node.isTextual() || !node.textValue().matches(WorkspaceStore.NAME_PATTERN)) {
            throw ApiError.invalid("workspace", "must be a name of 1-100 letters, digits, '.', '_' or '-' starting with"
                    + " a letter or digit, e.g. \"my-project\"");
        }
        return node.textValue();
    }

    private static ApiError tooLarge(String field, String problem) {
        return new ApiError(413, "request_too_large", field + ": " + problem,
                "Send fewer or smaller files: put large inputs in a workspace (one run can fetch or build them once),"
                        + " or ask the operator for a larger --max-input-bytes.");
    }
}
