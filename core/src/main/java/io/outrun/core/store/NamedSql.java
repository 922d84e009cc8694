package io.outrun.core.store;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A statement written with {@code :name} parameters, so that its text is what psql runs: psql
 * substitutes {@code :name} from {@code \set name value} (a text value carries its quotes:
 * {@code \set owner '''alice'''}), while JDBC gets a {@code ?} in each place. It reads no further than it must: {@code ::casts}, quoted literals and identifiers, and
 * {@code --} comments are left alone; anything else (dollar quotes, block comments) is refused
 * rather than guessed at. Every name in the text must be given a value, and every value given
 * must be named, so that a typo fails at once instead of binding the wrong column.
 *
 * <p>Every statement Outrun sends is one of these, a text block fixed at class load: no SQL is
 * built by concatenation, {@code formatted} or {@code replace} at run time. Kept rather than a
 * library: JDBI or jOOQ would bring a new framework (mappers, handles, its own transaction
 * model) for the one feature used here, named parameters over plain JDBC; this class is small
 * and refuses what it cannot read.
 */
public final class NamedSql {

    private final String text;
    private final String jdbc;
    /** The name bound at each {@code ?}, in order; a name may appear more than once. */
    private final List<String> names;

    private NamedSql(String text, String jdbc, List<String> names) {
        this.text = text;
        this.jdbc = jdbc;
        this.names = names;
    }

    /** This statement as JDBC text and its parameters' names, for the fleet benchmark. */
    public SqlText sqlText() {
        return new SqlText(jdbc, names);
    }

    public static NamedSql of(String text) {
        StringBuilder jdbc = new StringBuilder(text.length());
        List<String> names = new ArrayList<>();
        int i = 0;
        while (i < text.length()) {
            char ch = text.charAt(i);
            if (ch == '\'' || ch == '"') {
                int end = text.indexOf(ch, i + 1); // '' inside a literal closes and reopens it: still copied whole
                if (end < 0) {
                    throw new IllegalArgumentException("unclosed " + ch + " in: " + text);
                }
                jdbc.append(text, i, end + 1);
                i = end + 1;
            } else if (ch == '-' && text.startsWith("--", i)) {
                int end = text.indexOf('\n', i);
                end = end < 0 ? text.length() : end;
                jdbc.append(text, i, end);
                i = end;
            } else if (ch == '$' || ch == '?' || (ch == '/' && text.startsWith("/*", i))) {
                throw new IllegalArgumentException("NamedSql reads no " + ch + " (dollar quote, ? operator or block comment): "
                        + text);
            } else if (ch == ':' && text.startsWith("::", i)) {
                jdbc.append("::");
                i += 2;
            } else if (ch == ':' && i + 1 < text.length() && isNameStart(text.charAt(i + 1))) {
                int end = i + 1;
                while (end < text.length() && isNamePart(text.charAt(end))) {
                    end++;
                }
                names.add(text.substring(i + 1, end));
                jdbc.append('?');
                i = end;
            } else {
                jdbc.append(ch);
                i++;
            }
        }
        return new NamedSql(text, jdbc.toString(), List.copyOf(names));
    }

    /** The statement as written, with its {@code :names}. */
    String text() {
        return text;
    }

    /** The statement as JDBC takes it, with a {@code ?} for each name. */
    String jdbc() {
        return jdbc;
    }

    /** Prepares the statement on {@code c} and binds every parameter by name. */
    public PreparedStatement prepare(Connection c, Args args) throws SQLException {
        check(args);
        PreparedStatement ps = c.prepareStatement(jdbc);
        try {
            set(ps, args);
        } catch (SQLException | RuntimeException e) {
            ps.close();
            throw e;
        }
        return ps;
    }

    /**
     * Prepares the statement on {@code c} without binding: for one statement run again and again
     * with new values ({@link #bind}), as a chunked write does.
     */
    public PreparedStatement prepare(Connection c) throws SQLException {
        return c.prepareStatement(jdbc);
    }

    /** Binds every parameter of {@code ps}, prepared from this statement, by name. */
    public void bind(PreparedStatement ps, Args args) throws SQLException {
        check(args);
        set(ps, args);
    }

    private void check(Args args) {
        Set<String> unused = new HashSet<>(args.values.keySet());
        for (String name : names) {
            if (!args.values.containsKey(name)) {
                throw new IllegalArgumentException("no value for :" + name + " in: " + firstWords());
            }
            unused.remove(name);
        }
        if (!unused.isEmpty()) {
            throw new IllegalArgumentException("values for names the statement does not have " + unused + ": " + firstWords());
        }
    }

    private void set(PreparedStatement ps, Args args) throws SQLException {
        for (int i = 0; i < names.size(); i++) {
            ps.setObject(i + 1, args.values.get(names.get(i)));
        }
    }

    /** The statement's start, on one line: what an error names. */
    String firstWords() {
        String line = text.strip().replaceAll("\\s+", " ");
        return line.length() > 60 ? line.substring(0, 60) + "..." : line;
    }

    private static boolean isNameStart(char ch) {
        return ch == '_' || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
    }

    private static boolean isNamePart(char ch) {
        return isNameStart(ch) || (ch >= '0' && ch <= '9');
    }

    /** Values by name; a value may be null (SQL NULL, typed by the statement's cast where it needs one). */
    public static final class Args {

        private final Map<String, Object> values = new HashMap<>();

        private Args() {
        }

        public static Args of() {
            return new Args();
        }

        public static Args of(String name, Object value) {
            return new Args().and(name, value);
        }

        public static Args of(String n1, Object v1, String n2, Object v2) {
            return of(n1, v1).and(n2, v2);
        }

        public static Args of(String n1, Object v1, String n2, Object v2, String n3, Object v3) {
            return of(n1, v1, n2, v2).and(n3, v3);
        }

        public Args and(String name, Object value) {
            if (values.containsKey(name)) {
                throw new IllegalArgumentException(":" + name + " given twice");
            }
            values.put(name, value);
            return this;
        }

        /** These values, and {@code more}'s. */
        public Args and(Args more) {
            more.values.forEach(this::and);
            return this;
        }
    }
}
