package ferry.pcpeer;

import java.util.Locale;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Produce mode: fills a topic with keyed records for the comparison. Record i (from 0) has key
 * {@code key-(i mod K)} and value {@code "<seq> <produce_unix_micros>"} with seq = i div K + 1, so
 * each key's seqs run 1, 2, 3, ... in produce order. The idempotent producer keeps that order
 * within each partition across retries.
 */
final class Producer {
    private Producer() {}

    /** Creates the topic if absent, sends every record, waits for all acks; prints one JSON line. */
    static void run(Args.Produce request) {
        try (Broker broker = new Broker(request.bootstrap())) {
            broker.createIfAbsent(request.topic(), request.partitions());
            int partitions = broker.partitions(request.topic());
            if (partitions != request.partitions()) {
                throw new Fatal("topic " + request.topic() + " already exists with " + partitions
                        + " partitions, not " + request.partitions() + "; delete it or use another topic");
            }
        }
        long started = System.nanoTime();
        send(request);
        double seconds = (System.nanoTime() - started) / 1e9;
        System.out.printf(Locale.ROOT, "{\"produced\":%d,\"seconds\":%.3f}%n", request.records(), seconds);
    }

    private static void send(Args.Produce request) {
        AtomicReference<Exception> failure = new AtomicReference<>();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(properties(request.bootstrap()))) {
            for (long i = 0; i < request.records() && failure.get() == null; i++) {
                String key = "key-" + (i % request.keys());
                Value value = new Value(i / request.keys() + 1, Value.nowMicros());
                producer.send(new ProducerRecord<>(request.topic(), key, value.render()), (metadata, error) -> {
                    if (error != null) {
                        failure.compareAndSet(null, error);
                    }
                });
            }
            producer.flush();
        }
        if (failure.get() != null) {
            throw new Fatal("producing to " + request.topic() + " on " + request.bootstrap() + " failed",
                    unwrap(failure.get()));
        }
    }

    private static Throwable unwrap(Exception error) {
        return error instanceof ExecutionException && error.getCause() != null ? error.getCause() : error;
    }

    private static Properties properties(String bootstrap) {
        Properties properties = new Properties();
        properties.setProperty(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        properties.setProperty(ProducerConfig.CLIENT_ID_CONFIG, "ferry-pc-peer-producer");
        properties.setProperty(ProducerConfig.ACKS_CONFIG, "all");
        properties.setProperty(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        properties.setProperty(ProducerConfig.LINGER_MS_CONFIG, "5");
        properties.setProperty(ProducerConfig.BATCH_SIZE_CONFIG, String.valueOf(256 * 1024));
        properties.setProperty(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "60000");
        properties.setProperty(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        properties.setProperty(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        return properties;
    }
}
