package ferry.pcpeer;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * The tables shared with ferry-load's Rust side, and the two statements that write them.
 *
 * <p>{@code P_epochs} holds each partition's owner epoch, raised by one on every assignment.
 * {@code P_keys} holds one row per key. Applying a record (seq, offset) under epoch e adds one to
 * {@code applied}, adds one to {@code disorder} when seq is not the last seq plus one, and stores
 * seq, offset and e, unless the row already holds that offset or a later one (a redelivery) or an
 * epoch above e (a newer owner): then the statement changes no row.
 */
final class Schema {
    private final String prefix;

    /** The schema with tables {@code prefix_epochs} and {@code prefix_keys}. */
    Schema(String prefix) {
        this.prefix = prefix;
    }

    /** Creates both tables when absent. */
    void ensure(Connection connection) throws SQLException {
        try (Statement statement = connection.createStatement()) {
            statement.execute("CREATE TABLE IF NOT EXISTS " + prefix + "_epochs (topic text NOT NULL,"
                    + " partition int NOT NULL, epoch bigint NOT NULL, PRIMARY KEY (topic, partition))");
            statement.execute("CREATE TABLE IF NOT EXISTS " + prefix + "_keys (topic text NOT NULL,"
                    + " key text NOT NULL, applied bigint NOT NULL, last_seq bigint NOT NULL,"
                    + " disorder bigint NOT NULL, last_offset bigint NOT NULL, owner_epoch bigint NOT NULL,"
                    + " PRIMARY KEY (topic, key))");
        }
    }

    /** Takes the next epoch of a partition. Parameters: topic, partition. Returns one row: epoch. */
    String takeEpoch() {
        String table = prefix + "_epochs";
        return "INSERT INTO " + table + " (topic, partition, epoch) VALUES (?, ?, 1)"
                + " ON CONFLICT (topic, partition) DO UPDATE SET epoch = " + table + ".epoch + 1"
                + " RETURNING epoch";
    }

    /**
     * Applies one record to its key, fenced. Parameters: topic, key, seq, seq, offset, epoch.
     * Changes one row when applied and none when fenced.
     */
    String applyRecord() {
        String table = prefix + "_keys";
        return "INSERT INTO " + table
                + " (topic, key, applied, last_seq, disorder, last_offset, owner_epoch)"
                + " VALUES (?, ?, 1, ?, CASE WHEN ? = 1 THEN 0 ELSE 1 END, ?, ?)"
                + " ON CONFLICT (topic, key) DO UPDATE SET applied = " + table + ".applied + 1,"
                + " disorder = " + table + ".disorder + CASE WHEN EXCLUDED.last_seq = " + table
                + ".last_seq + 1 THEN 0 ELSE 1 END,"
                + " last_seq = EXCLUDED.last_seq, last_offset = EXCLUDED.last_offset,"
                + " owner_epoch = EXCLUDED.owner_epoch"
                + " WHERE " + table + ".last_offset < EXCLUDED.last_offset AND " + table
                + ".owner_epoch <= EXCLUDED.owner_epoch";
    }
}
