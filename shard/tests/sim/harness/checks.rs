//! The checks every discipline's run keeps: after every event, the core's
//! gauges and counters are the reference's and the accounting adds up; at
//! each quiet moment, nothing was left undone; at the end, every input was
//! resolved exactly once and the shard is quiet.

use std::collections::BTreeSet;

use super::super::arrival::Played;
use super::{ensure, Counts, Discipline, Model, Script, Sim};

impl<D: Discipline> Sim<D> {
    /// After every event: the shard's gauges and counters are the
    /// reference's, within their bounds (G5, G6), and each load in flight
    /// holds one slot.
    pub(super) fn check_counts(&self) -> Result<(), String> {
        let stats = self.core.stats();
        let expected = self.reference.counts();
        let got = Counts {
            lanes: stats.lanes,
            waiting: stats.waiting,
            waiting_weight: stats.waiting_weight,
            in_flight: stats.in_flight,
            admitted: stats.admitted,
            refused: stats.refused,
            batches: stats.batches,
            sent: stats.sent,
            answered: stats.answered,
            expired: stats.expired,
            withdrawn: stats.withdrawn,
        };
        ensure!(
            got == expected,
            "G5/G6: the shard's counts are {got:?}, the reference says {expected:?}"
        );
        self.check_accounting()?;
        let (waiting_max, waiting_weight_max) = self.reference.waiting_bounds();
        ensure!(
            stats.waiting <= waiting_max as u64 && stats.waiting_weight <= waiting_weight_max,
            "G6: {} waiting (weight {}) past the bounds",
            stats.waiting,
            stats.waiting_weight
        );
        let slots = self.reference.slots();
        ensure!(
            self.core.in_flight() <= slots,
            "slots: {} loads in flight with {slots} slots",
            self.core.in_flight()
        );
        ensure!(
            stats.trips == self.trip_next,
            "the shard counts {} trips, {} were taken",
            stats.trips,
            self.trip_next
        );
        // Each load holds one slot, whatever it carries.
        ensure!(
            self.running.len() as u64 == expected.in_flight,
            "{} loads running, the reference has {} slots busy",
            self.running.len(),
            expected.in_flight
        );
        Ok(())
    }

    /// After every event, the accounting of
    /// docs/guarantees.md#flush-overload-and-withdrawal: every input
    /// submitted so far is answered, refused, expired, withdrawn or still
    /// open, and the open ones are exactly those waiting and those in
    /// flight; the shard's own counters say the same.
    fn check_accounting(&self) -> Result<(), String> {
        let in_flight: usize = self
            .running
            .iter()
            .flat_map(|r| &r.batches)
            .map(|b| b.inputs.len())
            .sum();
        let waiting = self.reference.waiting();
        ensure!(
            self.open.len() == waiting + in_flight,
            "accounting: {} inputs open, but {waiting} wait and {in_flight} are in flight",
            self.open.len()
        );
        let (answered, refused, expired, withdrawn, open) = (
            self.answered.len(),
            self.refused.len(),
            self.expired.len(),
            self.withdrawn.len(),
            self.open.len(),
        );
        ensure!(
            self.submitted as usize == answered + refused + expired + withdrawn + open,
            "accounting: {} submitted, but {answered} answered + {refused} refused + {expired} \
             expired + {withdrawn} withdrawn + {open} open",
            self.submitted
        );
        let stats = self.core.stats();
        ensure!(
            stats.admitted + stats.refused + self.refused_at_intake == self.submitted,
            "accounting: the shard admitted {} and refused {} (and the intake {}) of {} submitted",
            stats.admitted,
            stats.refused,
            self.refused_at_intake,
            self.submitted
        );
        ensure!(
            stats.admitted
                == stats.answered
                    + stats.expired
                    + stats.withdrawn
                    + stats.waiting
                    + (stats.sent - stats.answered)
                && stats.sent - stats.answered == in_flight as u64,
            "accounting: the shard admitted {}, answered {}, expired {}, withdrawn {}, has {} \
             waiting and {} sent but unanswered ({in_flight} in flight)",
            stats.admitted,
            stats.answered,
            stats.expired,
            stats.withdrawn,
            stats.waiting,
            stats.sent - stats.answered
        );
        Ok(())
    }

    /// Inputs just sent were admitted, are not sent twice, and come to the
    /// batch function as their callers gave them.
    pub fn check_sent(&self, inputs: &[D::Input]) -> Result<(), String> {
        for input in inputs {
            let id = input.id();
            ensure!(
                *input == self.arrival(id).input,
                "input {id} changed on its way: {input:?}"
            );
            ensure!(
                self.open.contains(&id),
                "G4: input {id} sent but not open (sent twice, or never admitted)"
            );
        }
        Ok(())
    }

    /// When nothing more happens at this moment: the core has nothing to
    /// dispatch, no slot is left free while a load is ready (G8, by the
    /// discipline), and callers still waiting have heard nothing.
    pub(super) fn check_quiet_moment(&mut self) -> Result<(), String> {
        ensure!(
            !self.core.can_dispatch(),
            "the core says it can dispatch, but dispatch gave nothing"
        );
        D::check_quiet(self)?;
        self.look_at_callers(D::CALLERS_LOOKED_AT_WHEN_QUIET)
    }

    /// G4, G9 at the end: every input accounted for exactly once, the
    /// shard quiet, and what the discipline asks besides.
    pub(super) fn check_end(&self) -> Result<(), String> {
        ensure!(
            self.core.is_quiet(),
            "G9: the shard is not quiet at the end"
        );
        ensure!(
            self.open.is_empty(),
            "G4: inputs never answered: {:?}",
            self.open
        );
        ensure!(
            self.callers.is_empty(),
            "G4: callers still waiting: {:?}",
            self.callers.keys().collect::<Vec<_>>()
        );
        let total = self.scenario.arrivals().len();
        let resolved = [
            &self.answered,
            &self.refused,
            &self.expired,
            &self.withdrawn,
        ];
        let mut all: BTreeSet<u64> = BTreeSet::new();
        for ids in resolved {
            all.extend(ids);
        }
        ensure!(
            resolved.iter().map(|ids| ids.len()).sum::<usize>() == total && all.len() == total,
            "G4: {} answered + {} refused + {} expired + {} withdrawn for {total} inputs",
            self.answered.len(),
            self.refused.len(),
            self.expired.len(),
            self.withdrawn.len()
        );
        let stats = self.core.stats();
        ensure!(
            stats.admitted == stats.answered + stats.expired + stats.withdrawn
                && stats.sent == stats.answered,
            "quiet, but admitted {}, sent {}, answered {}, expired {}, withdrawn {}",
            stats.admitted,
            stats.sent,
            stats.answered,
            stats.expired,
            stats.withdrawn
        );
        ensure!(
            self.flushes.untold().is_empty(),
            "flushes never told: {:?}",
            self.flushes.untold()
        );
        ensure!(
            self.gone.is_empty(),
            "inputs of gone callers never resolved: {:?}",
            self.gone
        );
        D::check_end(self)
    }
}
