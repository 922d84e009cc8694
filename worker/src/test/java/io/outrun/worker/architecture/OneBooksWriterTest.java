package io.outrun.worker.architecture;

import static org.assertj.core.api.Assertions.assertThat;

import io.outrun.api.http.ApiServer;
import io.outrun.cli.RunCommand;
import io.outrun.client.OutrunClient;
import io.outrun.core.service.Core;
import io.outrun.model.output.Captured;
import io.outrun.sandbox.Sandbox;
import io.outrun.testing.Await;
import io.outrun.worker.node.WorkerNode;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.spi.ToolProvider;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * JobRunr's jobs have one writer (DESIGN.md, "Every write of a JobRunr job goes through one
 * class"): {@code io.outrun.core.books.Books}. Outrun's {@code executions} table is each
 * execution's truth and its JobRunr job (the book) mirrors it for the dashboard; when many
 * classes wrote the book, each with its own idea of which state an end becomes and of which
 * states to leave alone, the mirror drifted.
 *
 * <p>A <b>write</b> is anything that creates a JobRunr job or changes one: JobRunr's scheduling
 * API ({@code org.jobrunr.scheduling.*}: {@code JobScheduler}, {@code JobBuilder},
 * {@code RecurringJobBuilder}, {@code BackgroundJob}), a {@code Job}'s constructor and its state
 * methods and setters ({@code enqueue}, {@code scheduleAt}, {@code startProcessingOn},
 * {@code updateProcessing}, {@code succeeded}, {@code failed}, {@code delete}, {@code set…}),
 * its dashboard log and progress bar ({@code org.jobrunr.jobs.context.*}, which change the job's
 * metadata), and a {@code StorageProvider}'s {@code save…} and {@code delete…}. <b>Not a write</b>:
 * reading ({@code getJobById}, a {@code Job}'s getters and {@code hasState}), JobRunr's storage
 * as such ({@code JobRunrStorage} opens it), its dashboard server, and its
 * {@code BackgroundJobServer} and {@code JobActivator} (a node on the dashboard's servers page;
 * its storage hands it no work).
 *
 * <p>Two looks. The sources of every module's main code: outside {@code io.outrun.core.books}
 * nothing names {@code Job}, its states, the scheduling API or the dashboard's job context, nor
 * calls a write of a {@code StorageProvider}. The compiled main code (each class's constant pool,
 * which also sees method references and inline names): inside {@code io.outrun.core.books} too,
 * only {@code Books} refers to a write; its helpers there ({@code JobBooks},
 * {@code ProgressOnDashboard}) may hold and read a {@code Job} and decide what is due, and hand
 * every change to {@code Books}. {@code bench/} is not looked at: its baseline is plain JobRunr.
 */
class OneBooksWriterTest {

    /** The one writer, as the compiled code names it (its nested classes and lambdas are its own). */
    private static final String WRITER = "io/outrun/core/books/Books";

    /** Names of JobRunr's job-writing API in source code; outside io.outrun.core.books, none may appear. */
    private static final Pattern WRITING_API = Pattern.compile(
            "org\\.jobrunr\\.jobs\\.(Job|RecurringJob)\\b|org\\.jobrunr\\.jobs\\.states\\.|org\\.jobrunr\\.scheduling\\."
                    + "|org\\.jobrunr\\.jobs\\.context\\.");
    private static final Pattern STORAGE_VARIABLE = Pattern.compile("\\bStorageProvider\\s+(\\w+)");
    private static final String STORAGE_WRITES = "(save\\w*|delete\\w*)\\s*\\(";

    /** A constant pool entry of javap -v: its kind, then the name it refers to. */
    private static final Pattern POOL_ENTRY = Pattern.compile(
            "^\\s*#\\d+ = (Class|Methodref|InterfaceMethodref|Fieldref)\\s+\\S+\\s+// (.+)$");
    private static final Pattern THIS_CLASS = Pattern.compile("^\\s*this_class: #\\d+\\s+// (\\S+)$");

    @Test
    void noCodeOutsideTheBooksUsesJobRunrsWritingApi() throws IOException {
        Path modules = Path.of("").toAbsolutePath().getParent();
        List<String> wrong = new ArrayList<>();
        int files = 0;
        for (String module : List.of("client", "model", "sandbox", "cli", "core", "api", "worker", "testkit")) {
            Path sources = modules.resolve(module).resolve("src/main/java");
            assertThat(sources).isDirectory();
            try (Stream<Path> walk = Files.walk(sources)) {
                for (Path file : (Iterable<Path>) walk.filter(f -> f.toString().endsWith(".java"))::iterator) {
                    files++;
                    if (file.startsWith(sources.resolve("io/outrun/core/books"))) {
                        continue;
                    }
                    wrong.addAll(writesIn(modules.relativize(file).toString(), Files.readString(file)));
                }
            }
        }
        assertThat(files).as("the scan saw the code").isGreaterThan(100);
        assertThat(wrong).as("JobRunr's job-writing API outside io.outrun.core.books (Books is its one writer)")
                .isEmpty();
    }

    /** The look on a source file: names of the writing API, and writes through a StorageProvider. */
    static List<String> writesIn(String file, String code) {
        List<String> found = new ArrayList<>();
        String[] lines = code.split("\n", -1);
        Set<String> storages = new TreeSet<>(Set.of("storage()"));
        Matcher declared = STORAGE_VARIABLE.matcher(code);
        while (declared.find()) {
            storages.add(declared.group(1));
        }
        List<Pattern> storageWrites = storages.stream()
                .map(s -> Pattern.compile("(?<!\\w)" + Pattern.quote(s) + "\\s*\\.\\s*" + STORAGE_WRITES)).toList();
        for (int i = 0; i < lines.length; i++) {
            String line = lines[i].strip();
            if (line.startsWith("*") || line.startsWith("//") || line.startsWith("/*")) {
                continue; // comments may name what they do not use
            }
            if (WRITING_API.matcher(line).find()) {
                found.add(file + ":" + (i + 1) + ": " + line);
            }
            for (Pattern write : storageWrites) {
                if (write.matcher(line).find()) {
                    found.add(file + ":" + (i + 1) + ": " + line);
                }
            }
        }
        return found;
    }

    @Test
    void theLookOnSourcesSeesWhatItLooksFor() {
        assertThat(writesIn("A.java", "import org.jobrunr.jobs.Job;")).hasSize(1);
        assertThat(writesIn("A.java", "import org.jobrunr.jobs.JobDetails;")).isEmpty();
        assertThat(writesIn("A.java", "import static org.jobrunr.scheduling.JobBuilder.aJob;")).hasSize(1);
        assertThat(writesIn("A.java", "var s = new org.jobrunr.jobs.states.SucceededState();")).hasSize(1);
        assertThat(writesIn("A.java", "new org.jobrunr.jobs.context.JobDashboardLogger(job).info(x);")).hasSize(1);
        assertThat(writesIn("A.java", "core.storage().save(job);")).hasSize(1);
        assertThat(writesIn("A.java", "StorageProvider provider = core.storage();\nprovider.save(List.of(job));"))
                .hasSize(1);
        assertThat(writesIn("A.java", "core.storage().getJobById(id);\nbooks.save(x);")).isEmpty();
        assertThat(writesIn("A.java", " * {@link org.jobrunr.jobs.Job} is written by Books")).isEmpty();
    }

    @Test
    void onlyBooksWritesJobRunrsJobs() throws IOException {
        Map<String, Path> roots = new LinkedHashMap<>();
        roots.put("client", origin(OutrunClient.class));
        roots.put("model", origin(Captured.class));
        roots.put("sandbox", origin(Sandbox.class));
        roots.put("cli", origin(RunCommand.class));
        roots.put("core", origin(Core.class));
        roots.put("api", origin(ApiServer.class));
        roots.put("worker", origin(WorkerNode.class));
        roots.put("testkit", origin(Await.class));
        Map<String, Set<String>> writers = new TreeMap<>();
        for (Path root : roots.values()) {
            List<String> classes = classesNamingJobRunr(root);
            if (classes.isEmpty()) {
                continue;
            }
            String current = null;
            for (String line : javap(root, classes).split("\n")) {
                Matcher self = THIS_CLASS.matcher(line);
                if (self.find()) {
                    current = self.group(1);
                    continue;
                }
                Matcher entry = POOL_ENTRY.matcher(line);
                if (current != null && entry.find() && isWrite(entry.group(1), entry.group(2))) {
                    writers.computeIfAbsent(current, c -> new TreeSet<>()).add(entry.group(2));
                }
            }
        }
        assertThat(writers).as("the scan saw the writer").containsKey(WRITER);
        Map<String, Set<String>> others = new TreeMap<>(writers);
        others.keySet().removeIf(c -> c.equals(WRITER) || c.startsWith(WRITER + "$"));
        assertThat(others).as("classes other than Books that write JobRunr's jobs (what they refer to)").isEmpty();
    }

    /** Whether a constant pool reference (javap's comment: {@code owner.name:type} or a class) is a write. */
    static boolean isWrite(String kind, String ref) {
        String owner = kind.equals("Class") ? ref : ref.substring(0, ref.indexOf('.') < 0 ? ref.length() : ref.indexOf('.'));
        String member = kind.equals("Class") ? "" : ref.substring(owner.length() + 1).replace("\"", "");
        if (owner.startsWith("org/jobrunr/scheduling/") || owner.startsWith("org/jobrunr/jobs/context/")) {
            return true;
        }
        if (kind.equals("Class")) {
            return false; // holding or reading a Job, a state name or the storage is not a write
        }
        if (owner.equals("org/jobrunr/jobs/Job") || owner.equals("org/jobrunr/jobs/AbstractJob")) {
            return !member.matches("(get|has|is|lock|toString|equals|hashCode)\\w*:.*");
        }
        if (owner.startsWith("org/jobrunr/storage/") && owner.endsWith("StorageProvider")) {
            return member.matches("(save|delete)\\w*:.*");
        }
        return false;
    }

    @Test
    void theLookOnCompiledCodeSeesWhatItLooksFor() {
        assertThat(isWrite("Methodref", "org/jobrunr/jobs/Job.succeeded:()Lorg/jobrunr/jobs/Job;")).isTrue();
        assertThat(isWrite("Methodref", "org/jobrunr/jobs/Job.\"<init>\":(Lorg/jobrunr/jobs/JobDetails;)V")).isTrue();
        assertThat(isWrite("Methodref", "org/jobrunr/jobs/Job.hasState:(Lorg/jobrunr/jobs/states/StateName;)Z"))
                .isFalse();
        assertThat(isWrite("InterfaceMethodref",
                "org/jobrunr/storage/StorageProvider.save:(Ljava/util/List;)Ljava/util/List;")).isTrue();
        assertThat(isWrite("InterfaceMethodref",
                "org/jobrunr/storage/StorageProvider.getJobById:(Ljava/util/UUID;)Lorg/jobrunr/jobs/Job;")).isFalse();
        assertThat(isWrite("Class", "org/jobrunr/scheduling/JobScheduler")).isTrue();
        assertThat(isWrite("Class", "org/jobrunr/jobs/context/JobDashboardLogger")).isTrue();
        assertThat(isWrite("Class", "org/jobrunr/jobs/Job")).isFalse();
        assertThat(isWrite("Methodref", "org/jobrunr/server/BackgroundJobServer.start:()V")).isFalse();
    }

    /** The classes under {@code root} (a directory or a jar) whose bytes name JobRunr at all. */
    private static List<String> classesNamingJobRunr(Path root) throws IOException {
        List<String> names = new ArrayList<>();
        if (Files.isDirectory(root)) {
            try (Stream<Path> walk = Files.walk(root)) {
                for (Path f : (Iterable<Path>) walk.filter(p -> p.toString().endsWith(".class"))::iterator) {
                    if (namesJobRunr(Files.readAllBytes(f))) {
                        String rel = root.relativize(f).toString();
                        names.add(rel.substring(0, rel.length() - ".class".length()).replace('/', '.'));
                    }
                }
            }
        } else {
            try (JarFile jar = new JarFile(root.toFile())) {
                for (JarEntry e : (Iterable<JarEntry>) jar.stream()::iterator) {
                    if (e.getName().startsWith("io/outrun/") && e.getName().endsWith(".class")) {
                        try (InputStream in = jar.getInputStream(e)) {
                            if (namesJobRunr(in.readAllBytes())) {
                                names.add(e.getName().substring(0, e.getName().length() - 6).replace('/', '.'));
                            }
                        }
                    }
                }
            }
        }
        return names;
    }

    private static boolean namesJobRunr(byte[] classFile) {
        return new String(classFile, StandardCharsets.ISO_8859_1).contains("org/jobrunr/");
    }

    private static String javap(Path root, List<String> classes) {
        ToolProvider javap = ToolProvider.findFirst("javap")
                .orElseThrow(() -> new AssertionError("this test needs a JDK with javap"));
        List<String> args = new ArrayList<>(List.of("-v", "-p", "-cp", root.toString()));
        args.addAll(classes);
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int rc = javap.run(new PrintWriter(out), new PrintWriter(err), args.toArray(String[]::new));
        assertThat(rc).as("javap failed: %s", err).isZero();
        return out.toString();
    }

    private static Path origin(Class<?> type) {
        try {
            return Path.of(type.getProtectionDomain().getCodeSource().getLocation().toURI());
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }
}
