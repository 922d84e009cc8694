package io.outrun.api.mcp;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.outrun.client.OutrunClient;
import io.outrun.client.wire.ArtifactList;
import io.outrun.client.wire.Json;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.util.Base64;

/** The list_artifacts and read_artifact tools: what a finished execution kept, read in parts. */
final class ArtifactTools {

    private ArtifactTools() {
    }

    static ObjectNode list(OutrunClient client, ToolArgs args) {
        ArtifactList list = client.artifacts(args.requiredString("executionId"));
        ObjectNode answer = Json.mapper().createObjectNode();
        answer.put("executionId", list.executionId());
        ArrayNode rows = answer.putArray("artifacts");
        for (ArtifactList.Item a : list.artifacts()) {
            ObjectNode row = rows.addObject();
            row.put("name", a.name()).put("status", a.status()).put("size", a.size());
            if (a.sha256() != null) {
                row.put("sha256", a.sha256());
            }
            if (a.detail() != null) {
                row.put("detail", a.detail());
            }
        }
        answer.put("guidance", list.artifacts().isEmpty() ? "Nothing kept (yet): artifacts are collected when the"
                + " command ends; name files with artifacts when you run it." : "read_artifact with a name reads one.");
        return answer;
    }

    static ObjectNode read(OutrunClient client, ToolArgs args) {
        String id = args.requiredString("executionId");
        String name = args.requiredString("name");
        Long offsetArg = args.integer("offset");
        Long maxArg = args.integer("maxBytes");
        long offset = offsetArg == null ? 0 : Math.max(0, offsetArg);
        int max = (int) (maxArg == null ? 65536 : Math.max(1, Math.min(1 << 20, maxArg)));
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        client.download(id, name, bytes, offset, max);
        byte[] read = bytes.toByteArray();
        ObjectNode answer = Json.mapper().createObjectNode();
        answer.put("executionId", id);
        answer.put("name", name);
        answer.put("offset", offset);
        try {
            answer.put("text", StandardCharsets.UTF_8.newDecoder()
                    .decode(ByteBuffer.wrap(read)).toString());
        } catch (CharacterCodingException e) {
            // Binary, or a read that cut a character: base64 keeps every byte.
            answer.put("base64", Base64.getEncoder().encodeToString(read));
        }
        answer.put("nextOffset", offset + read.length);
        answer.put("done", read.length < max);
        answer.put("guidance", read.length < max ? "That is the end of it." : "More follows: call read_artifact again"
                + " with offset " + (offset + read.length) + ".");
        return answer;
    }
}
