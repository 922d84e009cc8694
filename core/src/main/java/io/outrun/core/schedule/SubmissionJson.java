package io.outrun.core.schedule;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.datatype.jsr310.JavaTimeModule;
import io.outrun.core.execution.Submission;

/**
 * A schedule's submission as stored: the record the API node checked and clamped, so every
 * firing runs what was accepted, whichever node fires it.
 */
public final class SubmissionJson {

    private static final ObjectMapper JSON = JsonMapper.builder().addModule(new JavaTimeModule())
            .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES).build();

    private SubmissionJson() {
    }

    static String write(Submission s) {
        try {
            return JSON.writeValueAsString(s);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot store a schedule's submission", e);
        }
    }

    /** The same submission, whatever the order of its JSON's keys (jsonb keeps its own). */
    static boolean same(String a, String b) {
        try {
            return JSON.readTree(a).equals(JSON.readTree(b));
        } catch (JsonProcessingException e) {
            return false;
        }
    }

    public static Submission read(String json) {
        try {
            return JSON.readValue(json, Submission.class);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("unreadable schedule submission: " + e.getOriginalMessage(), e);
        }
    }
}
