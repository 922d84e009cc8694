package io.outrun.worker.architecture;

import static org.assertj.core.api.Assertions.assertThat;

import io.outrun.cli.RunCommand;
import io.outrun.client.OutrunClient;
import io.outrun.sandbox.Sandbox;
import io.outrun.core.service.Core;
import io.outrun.api.http.ApiServer;
import io.outrun.testing.Await;
import io.outrun.worker.node.WorkerNode;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.jar.JarFile;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.spi.ToolProvider;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The shape of the code, checked on every build: no cycle between Outrun's packages, no package
 * split across modules, and each module depends only on the modules below it (client and model
 * on none, sandbox on model, the client commands (cli) on client and model: a client carries no
 * node runtime; core on client and model, api on core: an API node carries no sandbox and no
 * docker-java; worker on all; the test kit, used by every module's tests, on none, and no main
 * code on it). The edges are the union of what the
 * compiled classes reference ({@code jdeps}, which sees fully qualified names in code) and what
 * the sources import (which sees references to constants, inlined by the compiler and so absent
 * from the bytecode).
 */
class PackageDependenciesTest {

    /** Module → the modules its main code may depend on. */
    private static final Map<String, Set<String>> ALLOWED = Map.of(
            "client", Set.of(),
            "model", Set.of(),
            "sandbox", Set.of("model"),
            "cli", Set.of("client", "model"),
            "core", Set.of("client", "model"),
            "api", Set.of("core", "client", "model"),
            "worker", Set.of("client", "cli", "model", "sandbox", "core", "api"),
            "testkit", Set.of());

    private static final Pattern JDEPS_EDGE = Pattern.compile("^\\s+(io\\.outrun\\.\\S+)\\s+->\\s+(io\\.outrun\\.\\S+)\\s");
    private static final Pattern IMPORT = Pattern.compile("^import\\s+(?:static\\s+)?(io\\.outrun\\.[\\w.]+?)\\.[A-Z]");

    /** Package → module that defines it. */
    private static final Map<String, String> moduleOf = new HashMap<>();
    /** Package → module(s) that define it, to find split packages. */
    private static final Map<String, Set<String>> definedIn = new TreeMap<>();
    /** "from -> to" package edge → one class-level or source-level reason for it. */
    private static final Map<String, Map<String, String>> edges = new TreeMap<>();

    @BeforeAll
    static void readTheCode() throws Exception {
        Map<String, Path> roots = new LinkedHashMap<>();
        roots.put("client", origin(OutrunClient.class));
        roots.put("model", origin(io.outrun.model.output.Captured.class));
        roots.put("sandbox", origin(Sandbox.class));
        roots.put("cli", origin(RunCommand.class));
        roots.put("core", origin(Core.class));
        roots.put("api", origin(ApiServer.class));
        roots.put("worker", origin(WorkerNode.class));
        roots.put("testkit", origin(Await.class));
        for (var root : roots.entrySet()) {
            for (String pkg : packagesIn(root.getValue())) {
                definedIn.computeIfAbsent(pkg, p -> new TreeSet<>()).add(root.getKey());
                moduleOf.put(pkg, root.getKey());
            }
        }
        ToolProvider jdeps = ToolProvider.findFirst("jdeps")
                .orElseThrow(() -> new AssertionError("this test needs a JDK with jdeps"));
        List<String> args = new ArrayList<>(List.of("-verbose:class", "-filter:none", "-e", "io\\.outrun\\..*"));
        roots.values().forEach(p -> args.add(p.toString()));
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int rc = jdeps.run(new PrintWriter(out), new PrintWriter(err), args.toArray(String[]::new));
        assertThat(rc).as("jdeps failed: %s", err).isZero();
        for (String line : out.toString().split("\n")) {
            Matcher m = JDEPS_EDGE.matcher(line);
            if (m.find()) {
                edge(packageOf(m.group(1)), packageOf(m.group(2)), m.group(1) + " uses " + m.group(2));
            }
        }
        // Sources beside the classes: <module>/target/classes → <module>/src/main/java.
        for (Path root : roots.values()) {
            Path sources = root.getParent().getParent().resolve("src/main/java");
            if (Files.isDirectory(sources)) {
                readImports(sources);
            }
        }
    }

    @Test
    void noPackageIsSplitAcrossModules() {
        Map<String, Set<String>> split = new TreeMap<>();
        definedIn.forEach((pkg, modules) -> {
            if (modules.size() > 1) {
                split.put(pkg, modules);
            }
        });
        assertThat(split).as("packages defined in more than one module").isEmpty();
    }

    /** A package's name says its module (io.outrun.core.store, io.outrun.worker.lease): where its code runs. */
    @Test
    void packagesSayTheirModule() {
        List<String> wrong = new ArrayList<>();
        moduleOf.forEach((pkg, module) -> {
            String prefix = "io.outrun." + ("testkit".equals(module) ? "testing" : module);
            if (!pkg.equals(prefix) && !pkg.startsWith(prefix + ".")) {
                wrong.add(pkg + " (module " + module + ")");
            }
        });
        assertThat(moduleOf).containsEntry("io.outrun.core.store", "core");
        assertThat(wrong).as("packages whose name does not start with io.outrun.<module>").isEmpty();
    }

    @Test
    void onlyTheTestKitDefinesTheTestingPackage() throws IOException {
        assertThat(moduleOf).containsEntry("io.outrun.testing", "testkit");
        // Tests are not scanned above; another module's copy of the package (in its tests) would split it again.
        Path modules = origin(WorkerNode.class).getParent().getParent().getParent();
        List<String> copies = new ArrayList<>();
        if (Files.isRegularFile(modules.resolve("pom.xml"))) {
            try (Stream<Path> dirs = Files.list(modules)) {
                dirs.filter(d -> !d.getFileName().toString().equals("testkit"))
                        .filter(d -> Files.isDirectory(d.resolve("src/test/java/io/outrun/testing")))
                        .forEach(d -> copies.add(d.getFileName() + "/src/test/java/io/outrun/testing"));
            }
        }
        assertThat(copies).as("io.outrun.testing in a module's tests (it belongs in testkit/)").isEmpty();
    }

    @Test
    void eachModuleDependsOnlyOnTheModulesBelowIt() {
        List<String> wrong = new ArrayList<>();
        edges.forEach((from, tos) -> tos.forEach((to, why) -> {
            String a = moduleOf.get(from);
            String b = moduleOf.get(to);
            if (a != null && b != null && !a.equals(b) && !ALLOWED.get(a).contains(b)) {
                wrong.add(a + " -> " + b + ": " + why);
            }
        }));
        assertThat(wrong).as("module dependencies against the layering (api never depends on worker)").isEmpty();
    }

    @Test
    void apiNeverDependsOnWorker() {
        assertThat(moduleOf).containsEntry("io.outrun.worker.node", "worker").containsEntry("io.outrun.api.http", "api");
        List<String> wrong = new ArrayList<>();
        edges.forEach((from, tos) -> tos.forEach((to, why) -> {
            if ("api".equals(moduleOf.get(from)) && "worker".equals(moduleOf.get(to))) {
                wrong.add(why);
            }
        }));
        assertThat(wrong).isEmpty();
    }

    @Test
    void noCycleBetweenPackages() {
        assertThat(edges).as("the scan saw the code").containsKey("io.outrun.worker.node");
        List<String> cycles = new ArrayList<>();
        for (List<String> component : stronglyConnected()) {
            StringBuilder b = new StringBuilder(String.join(" <-> ", component)).append(':');
            for (String from : component) {
                edges.getOrDefault(from, Map.of()).forEach((to, why) -> {
                    if (component.contains(to)) {
                        b.append("\n    ").append(why);
                    }
                });
            }
            cycles.add(b.toString());
        }
        assertThat(cycles).as("package cycles").isEmpty();
    }

    private static void edge(String from, String to, String why) {
        if (!from.equals(to)) {
            edges.computeIfAbsent(from, f -> new TreeMap<>()).putIfAbsent(to, why);
        }
    }

    private static void readImports(Path sources) throws IOException {
        try (Stream<Path> files = Files.walk(sources)) {
            for (Path file : (Iterable<Path>) files.filter(f -> f.toString().endsWith(".java"))::iterator) {
                String pkg = null;
                for (String line : Files.readAllLines(file)) {
                    if (line.startsWith("package ")) {
                        pkg = line.substring("package ".length(), line.indexOf(';')).trim();
                    }
                    Matcher m = IMPORT.matcher(line);
                    if (pkg != null && m.find()) {
                        edge(pkg, m.group(1), sources.relativize(file) + " imports " + line.substring(7, line.length() - 1));
                    }
                }
            }
        }
    }

    /** Tarjan's strongly connected components with more than one package. */
    private static List<List<String>> stronglyConnected() {
        Map<String, Integer> index = new HashMap<>();
        Map<String, Integer> low = new HashMap<>();
        Deque<String> stack = new ArrayDeque<>();
        Set<String> onStack = new TreeSet<>();
        List<List<String>> found = new ArrayList<>();
        int[] next = {0};
        for (String v : new TreeSet<>(edges.keySet())) {
            if (!index.containsKey(v)) {
                connect(v, index, low, stack, onStack, found, next);
            }
        }
        return found;
    }

    private static void connect(String v, Map<String, Integer> index, Map<String, Integer> low, Deque<String> stack,
                                Set<String> onStack, List<List<String>> found, int[] next) {
        index.put(v, next[0]);
        low.put(v, next[0]++);
        stack.push(v);
        onStack.add(v);
        for (String w : edges.getOrDefault(v, Map.of()).keySet()) {
            if (!index.containsKey(w)) {
                connect(w, index, low, stack, onStack, found, next);
                low.put(v, Math.min(low.get(v), low.get(w)));
            } else if (onStack.contains(w)) {
                low.put(v, Math.min(low.get(v), index.get(w)));
            }
        }
        if (low.get(v).equals(index.get(v))) {
            List<String> component = new ArrayList<>();
            String w;
            do {
                w = stack.pop();
                onStack.remove(w);
                component.add(w);
            } while (!w.equals(v));
            if (component.size() > 1) {
                component.sort(null);
                found.add(component);
            }
        }
    }

    private static Path origin(Class<?> type) {
        try {
            return Path.of(type.getProtectionDomain().getCodeSource().getLocation().toURI());
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    private static Set<String> packagesIn(Path root) throws IOException {
        Set<String> packages = new TreeSet<>();
        if (Files.isDirectory(root)) {
            try (Stream<Path> files = Files.walk(root)) {
                files.filter(f -> f.toString().endsWith(".class"))
                        .map(f -> root.relativize(f.getParent()).toString().replace('/', '.'))
                        .filter(p -> p.startsWith("io.outrun"))
                        .forEach(packages::add);
            }
        } else {
            try (JarFile jar = new JarFile(root.toFile())) {
                jar.stream().map(e -> e.getName())
                        .filter(n -> n.startsWith("io/outrun/") && n.endsWith(".class"))
                        .map(n -> n.substring(0, n.lastIndexOf('/')).replace('/', '.'))
                        .forEach(packages::add);
            } catch (UncheckedIOException e) {
                throw e.getCause();
            }
        }
        return packages;
    }

    private static String packageOf(String className) {
        return className.substring(0, className.lastIndexOf('.'));
    }
}
