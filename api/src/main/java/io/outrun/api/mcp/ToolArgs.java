package io.outrun.api.mcp;

import java.math.BigInteger;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A tool call's arguments, read with the API's rules: a wrong type names the argument (an
 * {@link InvalidArgument}, answered as a tool error with code {@code invalid_request}).
 */
final class ToolArgs {

    private final Map<String, Object> raw;

    ToolArgs(Map<String, Object> raw) {
        this.raw = raw == null ? Map.of() : raw;
    }

    /** A bad argument: the message names it. */
    static final class InvalidArgument extends RuntimeException {
        InvalidArgument(String message) {
            super(message, null, false, false);
        }
    }

    String string(String name) {
        Object v = raw.get(name);
        if (v == null) {
            return null;
        }
        if (!(v instanceof String s)) {
            throw new InvalidArgument(name + ": must be a string");
        }
        return s;
    }

    /** A nested object's arguments (null when absent). */
    ToolArgs object(String name) {
        Object v = raw.get(name);
        if (v == null) {
            return null;
        }
        if (!(v instanceof Map<?, ?> m)) {
            throw new InvalidArgument(name + ": must be an object");
        }
        Map<String, Object> inner = new LinkedHashMap<>();
        m.forEach((k, val) -> inner.put(String.valueOf(k), val));
        return new ToolArgs(inner);
    }

    List<?> listOf(String name) {
        Object v = raw.get(name);
        if (v == null) {
            return null;
        }
        if (!(v instanceof List<?> l)) {
            throw new InvalidArgument(name + ": must be a list");
        }
        return l;
    }

    /** An argument as given (null when absent), for one that takes more than one type. */
    Object value(String name) {
        return raw.get(name);
    }

    String requiredString(String name) {
        String s = string(name);
        if (s == null || s.isBlank()) {
            throw new InvalidArgument(name + ": is required");
        }
        return s;
    }

    Long integer(String name) {
        Object v = raw.get(name);
        if (v == null) {
            return null;
        }
        if (v instanceof BigInteger big) {
            // Beyond 64 bits: saturate (longValue would wrap), so the server clamps it as over HTTP.
            return big.signum() > 0 ? Long.MAX_VALUE : Long.MIN_VALUE;
        }
        if (v instanceof Number n && n.doubleValue() == Math.rint(n.doubleValue())) {
            return n.longValue();
        }
        throw new InvalidArgument(name + ": must be an integer");
    }

    Double number(String name) {
        Object v = raw.get(name);
        if (v == null) {
            return null;
        }
        if (v instanceof Number n) {
            double d = n.doubleValue();
            // 1e309 parses as infinity, which JSON cannot carry on: the largest finite value is clamped the same.
            return Double.isNaN(d) ? null : Math.max(-Double.MAX_VALUE, Math.min(Double.MAX_VALUE, d));
        }
        throw new InvalidArgument(name + ": must be a number");
    }

    /** An integer argument as an int (null when absent); beyond int's range it saturates, for the server to clamp. */
    Integer smallInteger(String name) {
        Long v = integer(name);
        return v == null ? null : (int) Math.max(Integer.MIN_VALUE, Math.min(Integer.MAX_VALUE, v));
    }

    boolean bool(String name, boolean fallback) {
        Object v = raw.get(name);
        if (v == null) {
            return fallback;
        }
        if (!(v instanceof Boolean b)) {
            throw new InvalidArgument(name + ": must be true or false");
        }
        return b;
    }

    /** A list argument's items as given (strings, objects as maps), or null when absent. */
    List<?> list(String name) {
        Object v = raw.get(name);
        if (v == null) {
            return null;
        }
        if (!(v instanceof List<?> l)) {
            throw new InvalidArgument(name + ": must be a list");
        }
        return l;
    }

    Map<String, String> stringMap(String name) {
        Object v = raw.get(name);
        if (v == null) {
            return null;
        }
        if (!(v instanceof Map<?, ?> m)) {
            throw new InvalidArgument(name + ": must be an object of string values, e.g. {\"KEY\": \"value\"}");
        }
        Map<String, String> out = new LinkedHashMap<>();
        for (Map.Entry<?, ?> e : m.entrySet()) {
            if (!(e.getValue() instanceof String s)) {
                throw new InvalidArgument(name + "." + e.getKey() + ": must be a string");
            }
            out.put(String.valueOf(e.getKey()), s);
        }
        return out;
    }
}
