package ferry.pcpeer;

import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;

/**
 * Questions to the Kafka broker asked before any work starts, so that an unreachable broker or a
 * missing topic is a clear error within seconds rather than a consumer that waits forever.
 */
final class Broker implements AutoCloseable {
    private static final long TIMEOUT_SECONDS = 15;

    private final String bootstrap;
    private final Admin admin;

    /** An admin connection to the cluster at {@code bootstrap} (host:port[,host:port...]). */
    Broker(String bootstrap) {
        this.bootstrap = bootstrap;
        Properties properties = new Properties();
        properties.setProperty(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        properties.setProperty(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        properties.setProperty(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "15000");
        properties.setProperty(AdminClientConfig.CLIENT_ID_CONFIG, "ferry-pc-peer-admin");
        this.admin = Admin.create(properties);
    }

    /** The number of partitions of {@code topic}; a {@link Fatal} error if it does not exist. */
    int partitions(String topic) {
        try {
            Map<String, TopicDescription> topics =
                    admin.describeTopics(List.of(topic)).allTopicNames().get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
            return topics.get(topic).partitions().size();
        } catch (ExecutionException e) {
            if (e.getCause() instanceof UnknownTopicOrPartitionException) {
                throw new Fatal("topic " + topic + " does not exist on " + bootstrap + "; fill it first (--produce)");
            }
            if (e.getCause() instanceof org.apache.kafka.common.errors.TimeoutException) {
                throw unreachable();
            }
            throw new Fatal("cannot describe topic " + topic + " on " + bootstrap, e);
        } catch (TimeoutException e) {
            throw unreachable();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new Fatal("interrupted while asking " + bootstrap + " about topic " + topic);
        }
    }

    /** Creates {@code topic} with {@code partitions} partitions (replication 1) unless it exists. */
    void createIfAbsent(String topic, int partitions) {
        try {
            admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all()
                    .get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof org.apache.kafka.common.errors.TimeoutException) {
                throw unreachable();
            }
            if (!(e.getCause() instanceof TopicExistsException)) {
                throw new Fatal("cannot create topic " + topic + " on " + bootstrap, e);
            }
        } catch (TimeoutException e) {
            throw unreachable();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new Fatal("interrupted while creating topic " + topic + " on " + bootstrap);
        }
    }

    private Fatal unreachable() {
        return new Fatal("cannot reach Kafka at " + bootstrap + " within " + TIMEOUT_SECONDS
                + " s (is the broker running and is --bootstrap right?)");
    }

    @Override
    public void close() {
        admin.close();
    }
}
