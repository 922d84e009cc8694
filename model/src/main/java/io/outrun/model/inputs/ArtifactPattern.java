package io.outrun.model.inputs;


import java.nio.file.FileSystems;
import java.nio.file.Path;
import java.nio.file.PathMatcher;
import java.util.regex.PatternSyntaxException;

/**
 * A path or glob relative to the workdir naming files to collect: {@code report.xml}, {@code dist}
 * (a directory: every file under it), {@code dist/*.tar} ({@code *} within one directory),
 * {@code logs/**} (any depth). Read from the engine starting at {@link #base()}, the part before
 * the first wildcard, so collecting {@code dist/*.tar} never reads the rest of the workdir.
 */
public final class ArtifactPattern {

    private final String text;
    private final String base;
    private final PathMatcher matcher;

    private ArtifactPattern(String text, String base, PathMatcher matcher) {
        this.text = text;
        this.base = base;
        this.matcher = matcher;
    }

    /** IllegalArgumentException when it is no valid relative path or glob. */
    public static ArtifactPattern compile(String pattern) {
        String checked = InputPath.check(pattern);
        StringBuilder base = new StringBuilder();
        boolean glob = false;
        for (String part : checked.split("/")) {
            if (part.matches(".*[*?\\[{].*")) {
                glob = true;
                break;
            }
            if (base.length() > 0) {
                base.append('/');
            }
            base.append(part);
        }
        try {
            PathMatcher matcher = glob ? FileSystems.getDefault().getPathMatcher("glob:" + checked) : null;
            return new ArtifactPattern(checked, base.toString(), matcher);
        } catch (PatternSyntaxException e) {
            throw new IllegalArgumentException("is not a valid glob (" + e.getDescription() + "): " + pattern);
        }
    }

    /** The directory or file to read from the workdir ("" when the glob starts at the top). */
    public String base() {
        return base;
    }

    /** True when the file at {@code path} (relative to the workdir) is named by this pattern. */
    public boolean matches(String path) {
        if (matcher == null) {
            return path.equals(text) || path.startsWith(text + "/");
        }
        // A matched directory brings every file under it.
        for (String prefix = path; ; ) {
            if (matcher.matches(Path.of(prefix))) {
                return true;
            }
            int slash = prefix.lastIndexOf('/');
            if (slash < 0) {
                return false;
            }
            prefix = prefix.substring(0, slash);
        }
    }

    @Override
    public String toString() {
        return text;
    }
}
