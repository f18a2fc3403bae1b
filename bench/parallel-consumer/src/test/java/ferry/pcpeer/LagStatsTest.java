package ferry.pcpeer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class LagStatsTest {
    @Test
    void emptyReportHasZeros() {
        assertEquals("{\"records\":0,\"lag_p50_us\":0,\"lag_p99_us\":0}", new LagStats().json());
    }

    @Test
    void reportCountsAppliedRecordsAndTheirLagPercentiles() {
        LagStats stats = new LagStats();
        for (long lag = 1; lag <= 100; lag++) {
            stats.applied(1_000_000, 1_000_000 + lag * 1000);
        }
        stats.fenced();
        assertEquals(100, stats.applied());
        assertEquals(1, stats.fencedCount());
        String json = stats.json();
        assertTrue(json.startsWith("{\"records\":100,\"lag_p50_us\":50"), json);
        assertTrue(json.contains("\"lag_p99_us\":99"), json);
        // 99 gaps of 1 ms between the first and the last commit.
        assertEquals(1000.0, stats.recordsPerSecond(), 1e-6);
    }

    @Test
    void negativeLagCountsAsZero() {
        LagStats stats = new LagStats();
        stats.applied(2_000, 1_000);
        assertEquals("{\"records\":1,\"lag_p50_us\":0,\"lag_p99_us\":0}", stats.json());
    }
}
