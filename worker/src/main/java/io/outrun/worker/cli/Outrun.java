package io.outrun.worker.cli;

import io.outrun.cli.AttachCommand;
import io.outrun.cli.CancelCommand;
import io.outrun.cli.GetCommand;
import io.outrun.cli.LogsCommand;
import io.outrun.cli.LsCommand;
import io.outrun.cli.ProgressCommand;
import io.outrun.cli.RunCommand;
import io.outrun.cli.ScheduleCommand;
import io.outrun.cli.SecretCommand;
import io.outrun.cli.SendCommand;
import io.outrun.cli.StatusCommand;
import io.outrun.cli.UsageException;
import io.outrun.cli.WebhookSecretCommand;
import io.outrun.core.config.ConfigException;
import io.outrun.worker.dev.DevDirException;
import io.outrun.sandbox.SandboxException;
import io.outrun.core.store.StoreException;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * The {@code outrun} command: every role (migrate, worker, api, dev) and the client commands
 * (io.outrun.cli, the HTTP API only).
 * Exit codes: 0 success, 1 runtime failure, 2 usage or configuration error.
 */
@Command(name = "outrun", mixinStandardHelpOptions = true, version = "outrun " + Outrun.VERSION,
        description = "Durable executor of long commands for agents and services.",
        subcommands = {MigrateCommand.class, WorkerCommand.class, PruneCommand.class, ApiCommand.class, DevCommand.class, TokenCommand.class,
                RunCommand.class, StatusCommand.class, LogsCommand.class, CancelCommand.class, LsCommand.class, McpCommand.class,
                NodesCommand.class, DrainCommand.class, OwnerCommand.class, GetCommand.class, SendCommand.class,
                AttachCommand.class, SecretCommand.class, WebhookSecretCommand.class, ScheduleCommand.class, KeysCommand.class,
                ProgressCommand.class,
                CommandLine.HelpCommand.class})
public final class Outrun implements Runnable {

    static final String VERSION = "0.1.0";

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    /** On every subcommand (inherited); applied while parsing, before any command logs. */
    @CommandLine.Option(names = "--log-format", scope = CommandLine.ScopeType.INHERIT, paramLabel = "text|json",
            defaultValue = "${env:OUTRUN_LOG_FORMAT:-text}",
            description = "Log lines on stderr as text or json, one object per line (env OUTRUN_LOG_FORMAT; default text)")
    void logFormat(String value) {
        LogFormat format;
        try {
            format = LogFormat.parse(value);
        } catch (IllegalArgumentException e) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--log-format (or OUTRUN_LOG_FORMAT): " + e.getMessage());
        }
        format.apply();
    }

    @Override
    public void run() {
        spec.commandLine().usage(spec.commandLine().getOut());
    }

    /** The command line with Outrun's error handling; tests use it without System.exit. */
    public static CommandLine commandLine() {
        CommandLine cl = new CommandLine(new Outrun());
        cl.setExecutionExceptionHandler((ex, commandLine, parseResult) -> {
            // The node's settings and the client commands' arguments alike: a usage error.
            if (ex instanceof ConfigException || ex instanceof UsageException) {
                commandLine.getErr().println("outrun: configuration error: " + ex.getMessage());
                commandLine.getErr().flush();
                return 2;
            }
            if (ex instanceof DevDirException) {
                // Already one complete sentence for the user.
                commandLine.getErr().println("outrun: " + ex.getMessage());
                commandLine.getErr().flush();
                return 1;
            }
            if (ex instanceof SandboxException || ex instanceof StoreException) {
                commandLine.getErr().println("outrun: " + ex.getMessage()
                        + (ex.getCause() != null ? " (" + ex.getCause().getMessage() + ")" : ""));
                commandLine.getErr().flush();
                return 1;
            }
            throw ex;
        });
        return cl;
    }

    public static void main(String[] args) {
        // The process sandbox spawns a child per execution; vfork skips the jspawnhelper hop of
        // the default posix_spawn and cut the children's CPU per run by a quarter (bench).
        if (System.getProperty("jdk.lang.Process.launchMechanism") == null) {
            System.setProperty("jdk.lang.Process.launchMechanism", "VFORK");
        }
        System.exit(commandLine().execute(args));
    }
}
