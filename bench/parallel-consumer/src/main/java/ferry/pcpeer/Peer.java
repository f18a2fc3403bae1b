package ferry.pcpeer;

import io.confluent.parallelconsumer.ParallelConsumerOptions;
import io.confluent.parallelconsumer.ParallelConsumerOptions.CommitMode;
import io.confluent.parallelconsumer.ParallelConsumerOptions.ProcessingOrder;
import io.confluent.parallelconsumer.ParallelEoSStreamProcessor;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.StickyAssignor;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * Consume mode: a Confluent Parallel Consumer in KEY order applies every record of a topic to its
 * key's row in PostgreSQL, one record per statement, until SIGTERM.
 *
 * <p>KEY order hands a worker one record of a key at a time and the next one of that key only once
 * it is done, across up to max-concurrency workers. Offsets are committed by the consumer
 * synchronously every commit interval (at least once: a record may be applied again after a
 * crash, and the row's offset fence then skips it).
 */
final class Peer {
    /** How long a drain on SIGTERM may take to finish the records already handed out. */
    static final Duration DRAIN_TIMEOUT = Duration.ofSeconds(20);
    /** How long the parallel consumer may take to stop once drained. */
    static final Duration SHUTDOWN_TIMEOUT = Duration.ofSeconds(10);

    private Peer() {}

    /** Runs until SIGTERM (the shutdown hook then reports and halts); throws {@link Fatal} on failure. */
    static void run(Args.Consume request) {
        Schema schema = new Schema(request.tablePrefix());
        Database database = new Database(request.jdbcUrl());
        preflight(request, schema, database);

        LagStats stats = new LagStats();
        EpochListener epochs = new EpochListener(openFor(database, "taking epochs"), schema);
        KeyApplier applier = new KeyApplier(database, schema, epochs, stats);
        ParallelEoSStreamProcessor<String, String> consumer = new ParallelEoSStreamProcessor<>(options(request));
        Run run = new Run(consumer, applier, epochs, stats);
        Runtime.getRuntime().addShutdownHook(new Thread(run::stopOnSignal, "ferry-pc-peer-stop"));

        consumer.subscribe(List.of(request.topic()), epochs);
        consumer.poll(context -> applier.apply(context.getSingleConsumerRecord()));
        run.watch();
    }

    private static void preflight(Args.Consume request, Schema schema, Database database) {
        database.prepare(schema);
        try (Broker broker = new Broker(request.bootstrap())) {
            broker.partitions(request.topic());
        }
    }

    private static java.sql.Connection openFor(Database database, String purpose) {
        try {
            return database.open();
        } catch (SQLException e) {
            throw new Fatal("cannot open a PostgreSQL connection for " + purpose, e);
        }
    }

    private static ParallelConsumerOptions<String, String> options(Args.Consume request) {
        return ParallelConsumerOptions.<String, String>builder()
                .consumer(new KafkaConsumer<>(consumerProperties(request)))
                .ordering(ProcessingOrder.KEY)
                .maxConcurrency(request.maxConcurrency())
                .commitMode(CommitMode.PERIODIC_CONSUMER_SYNC)
                .drainTimeout(DRAIN_TIMEOUT)
                .shutdownTimeout(SHUTDOWN_TIMEOUT)
                .build();
    }

    /**
     * The inner Kafka consumer's settings. The assignor is the sticky one of the eager protocol,
     * not the cooperative sticky one: under the cooperative protocol the consumer keeps polling
     * while a rebalance is under way, and a synchronous commit made then throws
     * RebalanceInProgressException, which this parallel consumer version does not catch: its
     * polling thread dies and the group never settles (seen when a second peer joined). Under the
     * eager protocol every rebalance happens inside poll, where the parallel consumer commits the
     * revoked partitions' offsets itself.
     */
    private static Properties consumerProperties(Args.Consume request) {
        Properties properties = new Properties();
        properties.setProperty(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, request.bootstrap());
        properties.setProperty(ConsumerConfig.GROUP_ID_CONFIG, request.group());
        properties.setProperty(ConsumerConfig.CLIENT_ID_CONFIG, "ferry-pc-peer");
        properties.setProperty(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        properties.setProperty(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        properties.setProperty(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG,
                StickyAssignor.class.getName());
        properties.setProperty(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        properties.setProperty(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        return properties;
    }
}
