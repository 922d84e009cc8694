package io.outrun.worker.cli;

import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.util.ContextInitializer;
import ch.qos.logback.core.joran.spi.JoranException;
import java.util.Locale;
import org.slf4j.ILoggerFactory;
import org.slf4j.LoggerFactory;

/**
 * How log lines are written to stderr: {@code text} for people ({@code logback.xml}), {@code json}
 * for log shippers ({@code logback-json.xml}: one object per line from logback's
 * {@code JsonEncoder}, MDC included). Chosen by {@code --log-format} or {@code OUTRUN_LOG_FORMAT}.
 */
public enum LogFormat {
    TEXT(null),
    JSON("logback-json.xml");

    /** logback's own switch to another configuration (a classpath resource here). */
    private static final String CONFIG_PROPERTY = "logback.configurationFile";

    private final String resource;

    LogFormat(String resource) {
        this.resource = resource;
    }

    /** The format named {@code value} (case-insensitive). */
    public static LogFormat parse(String value) {
        try {
            return valueOf(value.strip().toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException | NullPointerException e) {
            throw new IllegalArgumentException("log format must be text or json, got: " + value);
        }
    }

    /** Makes this the format of every log line from now on. */
    public void apply() {
        String current = System.getProperty(CONFIG_PROPERTY);
        boolean ours = current == null || current.equals(JSON.resource);
        if (!ours || (resource == null ? current == null : resource.equals(current))) {
            // Already so, or an operator's own -Dlogback.configurationFile, which wins.
            return;
        }
        if (resource == null) {
            System.clearProperty(CONFIG_PROPERTY);
        } else {
            System.setProperty(CONFIG_PROPERTY, resource);
        }
        ILoggerFactory factory = LoggerFactory.getILoggerFactory();
        if (factory instanceof LoggerContext context) {
            context.reset();
            try {
                new ContextInitializer(context).autoConfig();
            } catch (JoranException e) {
                throw new IllegalStateException("cannot load the logging configuration " + resource, e);
            }
        }
    }
}
