package ferry.pcpeer;

import java.util.concurrent.atomic.LongAccumulator;
import java.util.concurrent.atomic.LongAdder;
import org.HdrHistogram.ConcurrentHistogram;

/**
 * What this process applied: how many records, and the lag of each (the time its row write
 * committed minus the produce time the record carries), safe to record from many threads.
 *
 * <p>Invariant: {@link #applied()} equals the number of lags recorded. Percentiles are exact to
 * three significant digits.
 */
final class LagStats {
    private static final int SIGNIFICANT_DIGITS = 3;

    private final ConcurrentHistogram lagMicros = new ConcurrentHistogram(SIGNIFICANT_DIGITS);
    private final LongAdder fenced = new LongAdder();
    private final LongAccumulator firstCommit = new LongAccumulator(Math::min, Long.MAX_VALUE);
    private final LongAccumulator lastCommit = new LongAccumulator(Math::max, Long.MIN_VALUE);

    /**
     * Records one applied record, produced at {@code producedMicros}, whose write committed at
     * {@code committedMicros} (both in microseconds since the Unix epoch).
     */
    void applied(long producedMicros, long committedMicros) {
        // A clock step back can make the lag negative; it counts as no lag at all.
        lagMicros.recordValue(Math.max(0, committedMicros - producedMicros));
        firstCommit.accumulate(committedMicros);
        lastCommit.accumulate(committedMicros);
    }

    /** Records one record its key's row refused: a redelivery or a write of a former owner. */
    void fenced() {
        fenced.increment();
    }

    /** How many records this process applied. */
    long applied() {
        return lagMicros.getTotalCount();
    }

    /** How many records the fence refused. */
    long fencedCount() {
        return fenced.sum();
    }

    /** Applied records per second between the first and the last commit (0 with fewer than two). */
    double recordsPerSecond() {
        long spanMicros = lastCommit.get() - firstCommit.get();
        return applied() < 2 || spanMicros <= 0 ? 0.0 : (applied() - 1) * 1e6 / spanMicros;
    }

    /** The one-line JSON report: {@code {"records":n,"lag_p50_us":x,"lag_p99_us":y}}. */
    String json() {
        long records = applied();
        long p50 = records == 0 ? 0 : lagMicros.getValueAtPercentile(50.0);
        long p99 = records == 0 ? 0 : lagMicros.getValueAtPercentile(99.0);
        return "{\"records\":" + records + ",\"lag_p50_us\":" + p50 + ",\"lag_p99_us\":" + p99 + "}";
    }
}
