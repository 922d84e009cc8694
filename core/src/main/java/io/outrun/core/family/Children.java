package io.outrun.core.family;

import io.outrun.core.books.NewBooks;
import io.outrun.core.notify.Wakes;
import io.outrun.core.store.Channels;
import io.outrun.core.store.ExecutionsTable;
import io.outrun.core.store.NamedSql;
import io.outrun.core.store.StoreException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A run's children end with it (issue 31): those submitted with {@code "cancelWithParent": true}
 * (the default), and theirs, are cancelled when their parent ends. At once when the parent is
 * cancelled through the API ({@code ExecutionService#cancel}); within a sweep otherwise (it
 * succeeded, failed, timed out, or was reaped, perhaps on a node that died), by {@link #endOrphans}
 * on the fleet's sweeper. A queued child is cancelled on the spot; a running one is told to stop
 * through its lease and NOTIFY, as any cancel is, and its worker writes its end.
 */
public final class Children {

    private static final Logger LOG = LoggerFactory.getLogger(Children.class);

    private final DataSource dataSource;
    private final NewBooks books;
    private final Wakes wakes;

    public Children(DataSource dataSource, NewBooks books, Wakes wakes) {
        this.dataSource = dataSource;
        this.books = books;
        this.wakes = wakes;
    }

    /** Cancels the live children of {@code parent} that end with it, and theirs; answers how many. */
    public int endChildrenOf(UUID parent) {
        record Ended(UUID id, boolean cancelled, UUID jobId) {
        }
        List<Ended> ended = new ArrayList<>();
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = ExecutionsTable.CANCEL_CHILDREN.prepare(c,
                NamedSql.Args.of("parent", parent, "message", "Cancelled with its parent " + parent
                        + ", which ended (the child was submitted with cancelWithParent, the default)."));
             ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                ended.add(new Ended(rs.getObject(1, UUID.class), "cancelled".equals(rs.getString(2)),
                        rs.getObject(3, UUID.class)));
            }
        } catch (SQLException e) {
            throw new StoreException("cannot cancel the children of " + parent, e);
        }
        for (Ended e : ended) {
            if (e.cancelled()) {
                books.retire(e.jobId(), "cancelled with its parent");
                wakes.wake(Channels.CHANGED, e.id().toString());
            } else {
                wakes.wake(Channels.CANCEL, e.id().toString());
            }
        }
        if (!ended.isEmpty()) {
            LOG.info("cancelled {} children of {} with it", ended.size(), parent);
        }
        return ended.size();
    }

    /** The sweeper's check: children left live by a parent that ended are cancelled. */
    public void endOrphans() {
        List<UUID> parents = new ArrayList<>();
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = ExecutionsTable.ENDED_PARENTS.prepare(c,
                NamedSql.Args.of()); ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                parents.add(rs.getObject(1, UUID.class));
            }
        } catch (SQLException e) {
            throw new StoreException("cannot find the children of ended parents", e);
        }
        for (UUID parent : parents) {
            endChildrenOf(parent);
        }
    }
}
