//! What happened in one run, summed over seeds to show the simulation
//! reached every case it claims to check: the counts every discipline
//! keeps, and beside them (`more`) those of the discipline alone.

use super::seeds::Tally;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary<T> {
    pub admitted: u64,
    pub refused_full: u64,
    pub refused_too_heavy: u64,
    pub refused_closed: u64,
    pub batches: u64,
    pub failed: u64,
    pub panicked: u64,
    pub wrong_count: u64,
    pub hung_until_close: u64,
    pub dropped_callers: u64,
    /// Inputs still waiting or in flight when close came.
    pub open_at_close: u64,
    pub end_tick: u64,
    /// Seeds with none of the overload settings.
    pub plain_seeds: u64,
    pub expired: u64,
    pub withdrawn_by_notice: u64,
    pub withdrawn_at_take: u64,
    /// Takes whose whole batch was withdrawn, so nothing was sent.
    pub batches_withdrawn_whole: u64,
    /// Notices that left an input whose caller was gone, past the part of
    /// the queue a notice looks at.
    pub notices_past_their_scan: u64,
    /// Notices while `withdraw_on_drop` is off: they withdraw nothing.
    pub notices_ignored: u64,
    /// Inputs sent and answered although their callers dropped their
    /// futures once they were taken.
    pub sent_after_drop: u64,
    pub flushes: u64,
    pub flushes_told: u64,
    /// Of those, flushes that had inputs to wait for.
    pub flushes_told_after_waiting: u64,
    /// Trips that returned the wrong number of results.
    pub trips_wrong_results: u64,
    /// Trips that panicked, of several batches.
    pub trips_panicked_with_mates: u64,
    /// Trips of several batches in flight when the shard was closed.
    pub trips_in_flight_at_close: u64,
    /// The discipline's own counts.
    pub more: T,
}

impl<T: Tally> Tally for Summary<T> {
    fn add(&mut self, other: &Self) {
        self.admitted += other.admitted;
        self.refused_full += other.refused_full;
        self.refused_too_heavy += other.refused_too_heavy;
        self.refused_closed += other.refused_closed;
        self.batches += other.batches;
        self.failed += other.failed;
        self.panicked += other.panicked;
        self.wrong_count += other.wrong_count;
        self.hung_until_close += other.hung_until_close;
        self.dropped_callers += other.dropped_callers;
        self.open_at_close += other.open_at_close;
        self.end_tick += other.end_tick;
        self.plain_seeds += other.plain_seeds;
        self.expired += other.expired;
        self.withdrawn_by_notice += other.withdrawn_by_notice;
        self.withdrawn_at_take += other.withdrawn_at_take;
        self.batches_withdrawn_whole += other.batches_withdrawn_whole;
        self.notices_past_their_scan += other.notices_past_their_scan;
        self.notices_ignored += other.notices_ignored;
        self.sent_after_drop += other.sent_after_drop;
        self.flushes += other.flushes;
        self.flushes_told += other.flushes_told;
        self.flushes_told_after_waiting += other.flushes_told_after_waiting;
        self.trips_wrong_results += other.trips_wrong_results;
        self.trips_panicked_with_mates += other.trips_panicked_with_mates;
        self.trips_in_flight_at_close += other.trips_in_flight_at_close;
        self.more.add(&other.more);
    }
}

impl<T: std::fmt::Debug> Summary<T> {
    /// Fails unless the seeds reached every case every discipline checks,
    /// and each of `more`; otherwise a passing run would prove little.
    pub fn assert_reached(&self, more: &[(&str, u64)]) {
        let reached = [
            ("admitted", self.admitted),
            ("refused Full", self.refused_full),
            ("refused TooHeavy", self.refused_too_heavy),
            ("refused Closed", self.refused_closed),
            ("failed batches", self.failed),
            ("panicked batches", self.panicked),
            ("miscounted batches", self.wrong_count),
            ("batches hung until close", self.hung_until_close),
            ("dropped callers", self.dropped_callers),
            ("inputs open at close", self.open_at_close),
            ("plain seeds (no overload setting)", self.plain_seeds),
            ("expired inputs", self.expired),
            ("inputs withdrawn by a notice", self.withdrawn_by_notice),
            ("inputs withdrawn at a take", self.withdrawn_at_take),
            ("whole batches withdrawn", self.batches_withdrawn_whole),
            ("notices past their scan", self.notices_past_their_scan),
            ("notices without withdraw_on_drop", self.notices_ignored),
            ("inputs sent after their callers left", self.sent_after_drop),
            ("flushes told", self.flushes_told),
            (
                "flushes told after waiting",
                self.flushes_told_after_waiting,
            ),
        ];
        for (what, count) in reached.iter().chain(more) {
            assert!(*count > 0, "no seed reached {what}: {self:?}");
        }
    }
}
