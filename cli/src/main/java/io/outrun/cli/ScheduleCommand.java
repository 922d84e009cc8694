package io.outrun.cli;

import io.outrun.client.OutrunClient;
import io.outrun.client.wire.Schedule;
import io.outrun.client.wire.SubmitRequest;
import java.util.List;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** Your recurring schedules: add (a command run on a cron or every N ms), list, pause, resume and remove. */
@Command(name = "schedule", mixinStandardHelpOptions = true, description = "Add, list, pause, resume or remove recurring schedules.",
        subcommands = {ScheduleCommand.Add.class, ScheduleCommand.Ls.class, ScheduleCommand.Pause.class,
                ScheduleCommand.Resume.class, ScheduleCommand.Rm.class})
public final class ScheduleCommand implements Runnable {

    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(spec.commandLine().getOut());
    }

    @Command(name = "add", mixinStandardHelpOptions = true, description = "Run a command on a schedule: each firing"
            + " is an execution labelled schedule=NAME. Example: outrun schedule add nightly --cron '0 3 * * *' -- make nightly")
    static final class Add extends ClientCommand {

        @Parameters(index = "0", paramLabel = "NAME", description = "1-64 characters of A-Z a-z 0-9 . _ -")
        String name;

        @Parameters(index = "1..*", paramLabel = "CMD", description = "The command, after --")
        List<String> command;

        @Option(names = "--cron", paramLabel = "EXPR", description = "minute hour day month weekday (or seconds first)")
        String cron;

        @Option(names = "--every-ms", paramLabel = "MS", description = "Fire every MS milliseconds (at least 5000)")
        Long everyMs;

        @Option(names = "--timezone", paramLabel = "ZONE", description = "The cron's time zone (default UTC)")
        String timezone;

        @Option(names = "--overlap", paramLabel = "skip|queue", description = "A firing while the previous run is queued"
                + " or running: skip it (default) or queue it")
        String overlap;

        @Option(names = "--catch-up", paramLabel = "none|one|all", description = "Firings missed while no worker ran:"
                + " let them go, fire once (default), or fire each")
        String catchUp;

        @Option(names = "--catch-up-window-ms", paramLabel = "MS", description = "How far back missed firings are made up"
                + " for (default a day, at most 7 days)")
        Long catchUpWindowMs;

        @picocli.CommandLine.Mixin
        CommandOptions common = new CommandOptions();

        @Override
        int run(OutrunClient client) {
            if (command == null || command.isEmpty()) {
                throw new UsageException("no command: give it after -- (outrun schedule add NAME --every-ms 60000 -- 'make sweep')");
            }
            SubmitRequest submission = new SubmitRequest(String.join(" ", command), common.timeoutMs, null, null,
                    common.image, common.env, null, common.labels, null, null).withSecrets(common.secrets)
                    .withWebhook(common.webhook);
            Schedule s = client.createSchedule(new Schedule.Request(name, cron, everyMs, timezone, overlap, catchUp,
                    catchUpWindowMs, submission));
            out().println("schedule " + s.name() + " " + (s.cron() != null ? "on " + s.cron() + " (" + s.timezone() + ")"
                    : "every " + s.everyMs() + " ms") + "; its runs: outrun ls --label schedule=" + s.name());
            return 0;
        }
    }

    @Command(name = "ls", mixinStandardHelpOptions = true, description = "List your schedules.")
    static final class Ls extends ClientCommand {

        @Option(names = "--json", description = "Print the list as JSON")
        boolean json;

        @Override
        int run(OutrunClient client) {
            Schedule.Listing list = client.schedules();
            if (json) {
                printJson(list);
            } else if (list.schedules().isEmpty()) {
                err().println("no schedules; add one with: outrun schedule add NAME --cron '0 3 * * *' -- CMD");
            } else {
                for (Schedule s : list.schedules()) {
                    out().println(s.name() + "  " + (s.cron() != null ? s.cron() + " " + s.timezone() : "every " + s.everyMs()
                            + " ms") + "  fired " + s.fired() + ", skipped " + s.skipped()
                            + (s.paused() ? "  PAUSED" : s.nextFireAt() == null ? "" : "  next " + s.nextFireAt())
                            + "  " + s.command());
                }
            }
            return 0;
        }
    }

    /** A command on one schedule, named by its first argument. */
    abstract static class Named extends ClientCommand {
        @Parameters(index = "0", paramLabel = "NAME")
        String name;
    }

    @Command(name = "pause", mixinStandardHelpOptions = true, description = "Pause a schedule: it fires nothing until resumed.")
    static final class Pause extends Named {

        @Override
        int run(OutrunClient client) {
            client.pauseSchedule(name);
            out().println("schedule " + name + " paused; outrun schedule resume " + name + " resumes it");
            return 0;
        }
    }

    @Command(name = "resume", mixinStandardHelpOptions = true, description = "Resume a paused schedule: it fires from"
            + " now on (nothing due while it was paused is made up for).")
    static final class Resume extends Named {

        @Override
        int run(OutrunClient client) {
            client.resumeSchedule(name);
            out().println("schedule " + name + " resumed");
            return 0;
        }
    }

    @Command(name = "rm", mixinStandardHelpOptions = true, description = "Remove a schedule: no later firing runs anything.")
    static final class Rm extends Named {

        @Override
        int run(OutrunClient client) {
            client.deleteSchedule(name);
            out().println("schedule " + name + " removed");
            return 0;
        }
    }
}
