package ferry.pcpeer;

import io.confluent.parallelconsumer.ParallelEoSStreamProcessor;
import io.confluent.parallelconsumer.internal.DrainingCloseable.DrainingMode;
import java.io.PrintStream;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One consume run from start to end. It ends one of two ways, and only the first to claim the end
 * acts: SIGTERM (the shutdown hook drains, prints the JSON report and halts with 0, or 1 if the
 * drain failed) or a failure seen by the main thread (it stops the consumer without draining and
 * throws, and the process exits 1 without a report).
 */
final class Run {
    private static final long WATCH_MILLIS = 200;

    private final ParallelEoSStreamProcessor<String, String> consumer;
    private final KeyApplier applier;
    private final EpochListener epochs;
    private final LagStats stats;
    private final AtomicBoolean ending = new AtomicBoolean();

    Run(ParallelEoSStreamProcessor<String, String> consumer, KeyApplier applier, EpochListener epochs,
            LagStats stats) {
        this.consumer = consumer;
        this.applier = applier;
        this.epochs = epochs;
        this.stats = stats;
    }

    /** Watches for a failure until the run ends; throws {@link Fatal} if a failure ended it. */
    void watch() {
        while (true) {
            sleep();
            Fatal failure = failure();
            if (failure != null && ending.compareAndSet(false, true)) {
                stop(DrainingMode.DONT_DRAIN);
                throw failure;
            }
        }
    }

    /** The shutdown hook: drain, report, halt. */
    void stopOnSignal() {
        if (!ending.compareAndSet(false, true)) {
            return;
        }
        boolean drained = stop(DrainingMode.DRAIN);
        report(System.out, System.err);
        Runtime.getRuntime().halt(drained ? 0 : Fatal.EXIT_CODE);
    }

    private Fatal failure() {
        if (applier.fatal() != null) {
            return applier.fatal();
        }
        if (!consumer.isClosedOrFailed()) {
            return null;
        }
        Exception cause = consumer.getFailureCause();
        for (Throwable t = cause; t != null; t = t.getCause()) {
            if (t instanceof Fatal fatal) {
                return fatal;
            }
        }
        return cause == null ? new Fatal("the parallel consumer stopped")
                : new Fatal("the parallel consumer stopped", cause);
    }

    /** Closes the consumer, then the connections; false (said on stderr) if the close failed. */
    private boolean stop(DrainingMode mode) {
        boolean clean = true;
        try {
            consumer.close(Peer.SHUTDOWN_TIMEOUT, mode);
        } catch (Exception e) {
            System.err.println("ferry-pc-peer: closing the parallel consumer failed: " + Fatal.describe(e));
            clean = false;
        }
        applier.close();
        try {
            epochs.close();
        } catch (Exception e) {
            // Only the epoch connection is left behind; the server drops it when the process ends.
        }
        return clean;
    }

    private void report(PrintStream out, PrintStream err) {
        out.println(stats.json());
        out.flush();
        err.printf(Locale.ROOT, "ferry-pc-peer: applied %d, fenced %d, %.0f records/s between first and last commit%n",
                stats.applied(), stats.fencedCount(), stats.recordsPerSecond());
        err.flush();
    }

    private static void sleep() {
        try {
            Thread.sleep(WATCH_MILLIS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
