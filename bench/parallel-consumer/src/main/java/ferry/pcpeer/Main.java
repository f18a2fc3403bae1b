package ferry.pcpeer;

/**
 * Entry point of {@code ferry-pc-peer.jar}: consume mode ({@link Peer}) or, with {@code --produce},
 * produce mode ({@link Producer}). Any failure is one stderr line and exit status 1.
 *
 * <pre>
 * java -jar ferry-pc-peer.jar --bootstrap 127.0.0.1:9092 --topic t --group g \
 *     --postgres postgres://ferry@127.0.0.1:5432/postgres --table-prefix pc --max-concurrency 16
 * java -jar ferry-pc-peer.jar --bootstrap 127.0.0.1:9092 --topic t --produce 100000 --keys 1000 --partitions 12
 * </pre>
 */
public final class Main {
    private Main() {}

    /** Runs the mode the arguments ask for. */
    public static void main(String[] argv) {
        try {
            Object request = Args.parse(argv);
            if (request instanceof Args.Produce produce) {
                Producer.run(produce);
            } else {
                Peer.run((Args.Consume) request);
            }
        } catch (Fatal e) {
            fail(e.getMessage());
        } catch (RuntimeException | Error e) {
            fail("unexpected failure: " + Fatal.describe(e));
        }
    }

    private static void fail(String message) {
        System.err.println("ferry-pc-peer: " + message);
        System.err.flush();
        System.exit(Fatal.EXIT_CODE);
    }
}
