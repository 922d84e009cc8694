package io.outrun.core.config;

/** A setting is missing or out of range; the message names the option and what it accepts. */
public class ConfigException extends RuntimeException {
    public ConfigException(String message) {
        super(message);
    }
}
