package ferry.pcpeer;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;

/**
 * Applies one record at a time to its key's row with one autocommit statement, on the calling
 * worker thread's own connection (opened on its first record; the parallel consumer runs
 * max-concurrency workers, so there are as many connections).
 *
 * <p>A failed write drops that thread's connection and rethrows, so the parallel consumer retries
 * the record later on a fresh one. A malformed record cannot be fixed by retrying: it is kept as
 * {@link #fatal()} for the main thread to report, and skipped.
 */
final class KeyApplier implements AutoCloseable {
    /** One worker thread's connection and its prepared statement. */
    private record Writer(Connection connection, PreparedStatement apply) {}

    private final Database database;
    private final String applySql;
    private final EpochListener epochs;
    private final LagStats stats;
    private final ThreadLocal<Writer> writers = new ThreadLocal<>();
    private final Queue<Writer> opened = new ConcurrentLinkedQueue<>();
    private final AtomicReference<Fatal> fatal = new AtomicReference<>();

    KeyApplier(Database database, Schema schema, EpochListener epochs, LagStats stats) {
        this.database = database;
        this.applySql = schema.applyRecord();
        this.epochs = epochs;
        this.stats = stats;
    }

    /** Applies {@code record} to its key's row, fenced by offset and owner epoch. */
    void apply(ConsumerRecord<String, String> record) {
        TopicPartition partition = new TopicPartition(record.topic(), record.partition());
        Value value;
        try {
            value = Value.parse(record.value());
        } catch (IllegalArgumentException e) {
            fatal.compareAndSet(null, new Fatal(partition + " offset " + record.offset() + ": " + e.getMessage()));
            return;
        }
        boolean applied = write(record, value, epochs.epochOf(partition));
        if (applied) {
            stats.applied(value.producedMicros(), Value.nowMicros());
        } else {
            stats.fenced();
        }
    }

    /** The first malformed record met, if any. */
    Fatal fatal() {
        return fatal.get();
    }

    private boolean write(ConsumerRecord<String, String> record, Value value, long epoch) {
        Writer writer = writer();
        try {
            PreparedStatement apply = writer.apply();
            apply.setString(1, record.topic());
            apply.setString(2, record.key());
            apply.setLong(3, value.seq());
            apply.setLong(4, value.seq());
            apply.setLong(5, record.offset());
            apply.setLong(6, epoch);
            int rows = apply.executeUpdate();
            assert rows == 0 || rows == 1 : "one key, one row";
            return rows == 1;
        } catch (SQLException e) {
            drop(writer);
            throw new IllegalStateException("applying " + record.topic() + "-" + record.partition()
                    + " offset " + record.offset() + " failed; it will be retried", e);
        }
    }

    private Writer writer() {
        Writer writer = writers.get();
        if (writer != null) {
            return writer;
        }
        try {
            Connection connection = database.open();
            writer = new Writer(connection, connection.prepareStatement(applySql));
        } catch (SQLException e) {
            throw new IllegalStateException("cannot open a PostgreSQL connection; the record will be retried", e);
        }
        writers.set(writer);
        opened.add(writer);
        return writer;
    }

    private void drop(Writer writer) {
        writers.remove();
        opened.remove(writer);
        closeQuietly(writer);
    }

    private static void closeQuietly(Writer writer) {
        try {
            writer.connection().close();
        } catch (SQLException e) {
            // The connection is being thrown away; a failure to close it changes nothing.
        }
    }

    /** Closes every worker's connection; call once the workers have stopped. */
    @Override
    public void close() {
        Writer writer;
        while ((writer = opened.poll()) != null) {
            closeQuietly(writer);
        }
    }
}
