package ferry.pcpeer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class ArgsTest {
    private static final String[] CONSUME = {"--bootstrap", "127.0.0.1:9092", "--topic", "t", "--group", "g",
        "--postgres", "postgres://ferry@127.0.0.1:54331/postgres", "--table-prefix", "pc"};

    @Test
    void consumeDefaultsToSixteenWorkers() {
        Args.Consume consume = (Args.Consume) Args.parse(CONSUME);
        assertEquals(16, consume.maxConcurrency());
        assertEquals("jdbc:postgresql://127.0.0.1:54331/postgres?user=ferry", consume.jdbcUrl());
        assertEquals("pc", consume.tablePrefix());
    }

    @Test
    void maxConcurrencyIsRead() {
        String[] argv = concat(CONSUME, "--max-concurrency", "4");
        assertEquals(4, ((Args.Consume) Args.parse(argv)).maxConcurrency());
    }

    @Test
    void produceModeIsChosenByProduce() {
        Args.Produce produce = (Args.Produce) Args.parse(new String[] {"--bootstrap", "b", "--topic", "t",
            "--produce", "100000", "--keys", "1000", "--partitions", "12"});
        assertEquals(new Args.Produce("b", "t", 100_000, 1000, 12), produce);
    }

    @Test
    void badInputIsRefusedWithAReason() {
        assertMessage("missing --group", "--bootstrap", "b", "--topic", "t");
        assertMessage("unknown flag --nope", concat(CONSUME, "--nope", "1"));
        assertMessage("expected a positive whole number", concat(CONSUME, "--max-concurrency", "0"));
        assertMessage("given twice", concat(CONSUME, "--topic", "u"));
        assertMessage("expected --flag value", "--bootstrap");
        String[] badPrefix = CONSUME.clone();
        badPrefix[9] = "x; DROP TABLE y";
        assertMessage("--table-prefix", badPrefix);
    }

    private static void assertMessage(String expected, String... argv) {
        String message = assertThrows(Fatal.class, () -> Args.parse(argv)).getMessage();
        assertTrue(message.contains(expected), message);
    }

    private static String[] concat(String[] head, String... tail) {
        String[] all = java.util.Arrays.copyOf(head, head.length + tail.length);
        System.arraycopy(tail, 0, all, head.length, tail.length);
        return all;
    }
}
