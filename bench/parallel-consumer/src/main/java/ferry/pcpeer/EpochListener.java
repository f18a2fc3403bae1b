package ferry.pcpeer;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Collection;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.common.TopicPartition;

/**
 * Takes a partition's owner epoch in PostgreSQL each time the partition is assigned to this
 * process, and hands it to the workers that apply the partition's records.
 *
 * <p>The parallel consumer calls this listener on its polling thread, after its own bookkeeping and
 * before it hands out any record polled under the new assignment; so a worker always finds the
 * epoch of the assignment its record came from, or a later one of this process.
 *
 * <p>A revoked or lost partition keeps its last epoch here: a write still in flight for it then
 * carries that epoch, and the fence in {@link Schema#applyRecord()} refuses it once a newer owner has
 * taken a higher epoch and written the key.
 */
final class EpochListener implements ConsumerRebalanceListener, AutoCloseable {
    private final Connection connection;
    private final String takeEpochSql;
    private final Map<TopicPartition, Long> epochs = new ConcurrentHashMap<>();

    /** A listener writing epochs over {@code connection}, which it owns and closes. */
    EpochListener(Connection connection, Schema schema) {
        this.connection = connection;
        this.takeEpochSql = schema.takeEpoch();
    }

    @Override
    public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
        for (TopicPartition partition : partitions) {
            epochs.put(partition, take(partition));
        }
    }

    @Override
    public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
        // Kept on purpose: see the class comment.
    }

    /** The epoch of the latest assignment of {@code partition} to this process. */
    long epochOf(TopicPartition partition) {
        Long epoch = epochs.get(partition);
        if (epoch == null) {
            throw new IllegalStateException("record of " + partition + " before its assignment took an epoch");
        }
        return epoch;
    }

    private long take(TopicPartition partition) {
        try (PreparedStatement statement = connection.prepareStatement(takeEpochSql)) {
            statement.setString(1, partition.topic());
            statement.setInt(2, partition.partition());
            try (ResultSet row = statement.executeQuery()) {
                if (!row.next()) {
                    throw new IllegalStateException("taking the epoch of " + partition + " returned no row");
                }
                return row.getLong(1);
            }
        } catch (SQLException e) {
            throw new Fatal("cannot take the epoch of " + partition + " in PostgreSQL", e);
        }
    }

    @Override
    public void close() throws SQLException {
        connection.close();
    }
}
