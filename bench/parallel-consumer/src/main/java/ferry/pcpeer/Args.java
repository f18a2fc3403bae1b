package ferry.pcpeer;

import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * The command line: {@code --name value} pairs, read into either a {@link Consume} or a
 * {@link Produce} request. Unknown, repeated or missing flags are a {@link Fatal} error.
 */
final class Args {
    /** How to use the tool, printed with every command-line error. */
    static final String USAGE = "usage: java -jar ferry-pc-peer.jar --bootstrap B --topic T --group G"
            + " --postgres postgres://user@host:port/db --table-prefix P [--max-concurrency C]"
            + " | --bootstrap B --topic T --produce N [--keys K] [--partitions P]";

    private static final Set<String> CONSUME_FLAGS =
            Set.of("bootstrap", "topic", "group", "postgres", "table-prefix", "max-concurrency");
    private static final Set<String> PRODUCE_FLAGS = Set.of("bootstrap", "topic", "produce", "keys", "partitions");
    private static final Pattern PREFIX = Pattern.compile("[a-z_][a-z0-9_]{0,40}");
    private static final int DEFAULT_CONCURRENCY = 16;
    private static final int DEFAULT_KEYS = 1000;
    private static final int DEFAULT_PARTITIONS = 12;

    /** A request to consume {@code topic} into PostgreSQL tables named {@code tablePrefix_*}. */
    record Consume(String bootstrap, String topic, String group, String jdbcUrl, String tablePrefix,
            int maxConcurrency) {}

    /** A request to fill {@code topic} with {@code records} keyed records over {@code keys} keys. */
    record Produce(String bootstrap, String topic, long records, int keys, int partitions) {}

    private final Map<String, String> values;

    private Args(Map<String, String> values) {
        this.values = values;
    }

    /** Reads {@code argv}; the result is a {@link Consume} or a {@link Produce}. */
    static Object parse(String[] argv) {
        Args args = new Args(pairs(argv));
        return args.values.containsKey("produce") ? args.produce() : args.consume();
    }

    private Consume consume() {
        onlyKnown(CONSUME_FLAGS);
        String bootstrap = required("bootstrap");
        String topic = required("topic");
        String group = required("group");
        String jdbcUrl = PgUrl.toJdbc(required("postgres"));
        String prefix = required("table-prefix");
        if (!PREFIX.matcher(prefix).matches()) {
            throw new Fatal("--table-prefix " + prefix + ": use lower-case letters, digits and _ (at most 41)");
        }
        return new Consume(bootstrap, topic, group, jdbcUrl, prefix,
                (int) positive("max-concurrency", DEFAULT_CONCURRENCY));
    }

    private Produce produce() {
        onlyKnown(PRODUCE_FLAGS);
        return new Produce(required("bootstrap"), required("topic"), positive("produce", 0),
                (int) positive("keys", DEFAULT_KEYS), (int) positive("partitions", DEFAULT_PARTITIONS));
    }

    private static Map<String, String> pairs(String[] argv) {
        Map<String, String> values = new HashMap<>();
        for (int i = 0; i < argv.length; i += 2) {
            if (!argv[i].startsWith("--") || i + 1 >= argv.length) {
                throw new Fatal("expected --flag value at '" + argv[i] + "'; " + USAGE);
            }
            if (values.put(argv[i].substring(2), argv[i + 1]) != null) {
                throw new Fatal(argv[i] + " given twice; " + USAGE);
            }
        }
        return values;
    }

    private void onlyKnown(Set<String> known) {
        for (String name : values.keySet()) {
            if (!known.contains(name)) {
                throw new Fatal("unknown flag --" + name + "; " + USAGE);
            }
        }
    }

    private String required(String name) {
        String value = values.get(name);
        if (value == null || value.isEmpty()) {
            throw new Fatal("missing --" + name + "; " + USAGE);
        }
        return value;
    }

    private long positive(String name, long fallback) {
        String text = values.get(name);
        if (text == null && fallback > 0) {
            return fallback;
        }
        try {
            long value = Long.parseLong(required(name));
            if (value <= 0 || value > Integer.MAX_VALUE && !name.equals("produce")) {
                throw new NumberFormatException();
            }
            return value;
        } catch (NumberFormatException e) {
            throw new Fatal("--" + name + " " + text + ": expected a positive whole number");
        }
    }
}
