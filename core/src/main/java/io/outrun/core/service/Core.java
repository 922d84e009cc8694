package io.outrun.core.service;

import com.zaxxer.hikari.HikariDataSource;
import io.outrun.core.books.Books;
import io.outrun.core.books.JobRunrStorage;
import io.outrun.core.books.NewBooks;
import io.outrun.core.family.Children;
import io.outrun.core.notify.Notifier;
import io.outrun.core.notify.Wakes;
import io.outrun.core.owner.OwnerLimits;
import io.outrun.core.owner.OwnerStore;
import io.outrun.core.owner.QueueGate;
import io.outrun.core.redrive.RedriveSweep;
import io.outrun.core.store.Database;
import io.outrun.core.store.DatabaseConfig;
import io.outrun.core.store.RedriveStore;
import io.outrun.core.store.StdinStore;
import io.outrun.core.store.SubmissionStore;
import io.outrun.core.trace.Tracing;
import javax.sql.DataSource;
import org.jobrunr.storage.StorageProvider;
import org.jobrunr.utils.mapper.JsonMapper;
import org.slf4j.LoggerFactory;

/**
 * What every node role shares: its connection pool (migrated at open), the stores of executions,
 * JobRunr's storage and the books, the wake-ups, the re-drive sweep and the owner-facing service.
 */
public final class Core implements AutoCloseable {

    private final DatabaseConfig config;
    private final HikariDataSource pool;
    private final SubmissionStore submissions;
    private final RedriveStore redrives;
    private final StdinStore stdin;
    private final JsonMapper jsonMapper;
    private final StorageProvider storage;
    private final Wakes wakes;
    private final Books books;
    private final NewBooks newBooks;
    private final RedriveSweep sweep;
    private final ExecutionService service;
    private final Children children;
    private final OwnerStore owners;
    private final OwnerLimits limits;
    private final String deployment;

    private Core(DatabaseConfig config, String name, OwnerLimits limits) {
        this.config = config;
        this.limits = limits;
        // The effective settings, once per process (the password never appears: DatabaseConfig masks it).
        LoggerFactory.getLogger(Core.class).info("database: {}", config);
        // Traces are set up (or found off) at the node's start: a bad OTEL_* setting stops it here.
        Tracing.process();
        this.pool = Database.pool(config, name);
        try {
            // Session locks and DDL go to PostgreSQL itself, never through a transaction pooler.
            DataSource direct = Database.direct(config);
            Database.migrate(direct);
            this.deployment = Database.deployment(pool);
            this.submissions = new SubmissionStore(pool);
            this.redrives = new RedriveStore(pool);
            this.stdin = new StdinStore(pool);
            this.jsonMapper = JobRunrStorage.jsonMapper();
            this.storage = JobRunrStorage.open(pool, jsonMapper, direct);
            this.wakes = new Wakes(new Notifier(pool));
            this.books = new Books(storage);
            this.newBooks = new NewBooks(books);
            this.owners = new OwnerStore(pool);
            this.sweep = new RedriveSweep(redrives, submissions, books, wakes);
            this.children = new Children(pool, newBooks, wakes);
            this.service = new ExecutionService(submissions, stdin, books, newBooks, wakes, sweep,
                    new QueueGate(owners, limits.maxQueued()), children);
        } catch (RuntimeException e) {
            pool.close();
            throw e;
        }
    }

    /** Opens the pool, applies migrations (Outrun's, then JobRunr's) and wires the rest. */
    public static Core open(DatabaseConfig config, String name) {
        return new Core(config, name, OwnerLimits.DEFAULTS);
    }

    /** As {@link #open(DatabaseConfig, String)}, sharing the fleet between owners by {@code limits}. */
    public static Core open(DatabaseConfig config, String name, OwnerLimits limits) {
        return new Core(config, name, limits);
    }

    /** This deployment's id (one per database; V10): what the containers its nodes make carry. */
    public String deployment() {
        return deployment;
    }

    public DatabaseConfig config() {
        return config;
    }

    public HikariDataSource pool() {
        return pool;
    }

    /** Submissions, reads and cancels: an owner's side of its executions. */
    public SubmissionStore submissions() {
        return submissions;
    }

    /** Re-drive and the dashboard's changes: the sweep's side. */
    public RedriveStore redrives() {
        return redrives;
    }

    /** What owners write to their commands' stdin: written by the API, fed by workers. */
    public StdinStore stdin() {
        return stdin;
    }

    public JsonMapper jsonMapper() {
        return jsonMapper;
    }

    public StorageProvider storage() {
        return storage;
    }

    /** The one writer of JobRunr's jobs. */
    public Books books() {
        return books;
    }

    /** The books of new executions, written off the submit's path in batches. */
    public NewBooks newBooks() {
        return newBooks;
    }

    /** The wake-ups of dispatch: new work, a relayed wake-up, a change or a cancel told to the fleet. */
    public Wakes wakes() {
        return wakes;
    }

    public RedriveSweep sweep() {
        return sweep;
    }

    /** Children that end with their parents (issue 31). */
    public Children children() {
        return children;
    }

    public ExecutionService service() {
        return service;
    }

    public OwnerStore owners() {
        return owners;
    }

    /** How the fleet is shared between owners: the claim's default running cap, the submit's queued cap. */
    public OwnerLimits limits() {
        return limits;
    }

    @Override
    public void close() {
        try {
            newBooks.close(); // what was submitted last gets its book before the storage closes
            wakes.close();
            storage.close();
        } finally {
            pool.close();
        }
    }
}
