//! The scenarios' options: overload (`compare`, `unkeyed`), event time and
//! store faults (`compare`), with their checks and what they add to a run's
//! heading and report.

use std::time::Duration;

use clap::Args;

use crate::base::duration::{format_duration, parse_duration};
use crate::report;
use crate::run::faults::Faults;
use crate::scenarios::event_time;
use crate::scenarios::faults::{Fault, FaultKind};
use crate::scenarios::overload::Slowdown;
use crate::store::{Fence, Store};

use super::store::StoreArgs;

/// The overload scenario: callers that give up, a store that slows down.
#[derive(Clone, Debug, Default, Args)]
#[command(next_help_heading = "Overload")]
pub struct OverloadArgs {
    /// The overload scenario: callers give up on an input not answered
    /// within D
    ///
    /// They drop its future; a closed-loop client sends its next
    /// one). Such inputs count as timed out, not lost. Adds ferry-withdraw
    /// to the default systems, and an overload section to the report
    #[arg(long, value_name = "D", value_parser = parse_duration, allow_hyphen_values = true)]
    pub timeout: Option<Duration>,

    /// The overload scenario: the simulated store's round trips take FACTOR
    /// times as long from AFTER into the measured window, for LENGTH (e.g.
    /// 10x@2s+2s)
    ///
    /// Reports goodput before, during and after, and recovery
    #[arg(long, value_name = "FACTORx@AFTER+LENGTH", value_parser = parse_slowdown)]
    pub store_slowdown: Option<Slowdown>,
}

/// The event-time scenario: inputs out of order, and ferry's hold.
#[derive(Clone, Debug, Default, Args)]
#[command(next_help_heading = "Event time")]
pub struct EventTimeArgs {
    /// The event-time scenario: each input carries an event time up to D
    /// older than its sending (closed loop or --rate)
    ///
    /// Ferry ranks a key's inputs by it; the others keep arrival order.
    /// Reports, per system, the inputs that reached the store after one of
    /// the same key with a later event time
    #[arg(long, value_name = "D", value_parser = parse_duration, allow_hyphen_values = true)]
    pub disorder: Option<Duration>,

    /// With --disorder: ferry holds each input until its event time plus
    /// LATENESS (Order::event_time), so that inputs out of order by less
    /// than that reach the store in order, at LATENESS of latency
    #[arg(long, value_name = "LATENESS", value_parser = parse_duration, allow_hyphen_values = true)]
    pub event_time: Option<Duration>,

    /// With --event-time: ferry refuses an input whose hold had already
    /// ended when it arrived (FerryError::Late, counted as refused) instead
    /// of sending it
    #[arg(long)]
    pub refuse_late: bool,
}

/// Faults at a real store, and what a lost write's outcome does.
#[derive(Clone, Debug, Args)]
#[command(next_help_heading = "Faults")]
pub struct FaultArgs {
    /// A fault at the real --store during each system's run, AT after its
    /// measured window starts; repeatable
    ///
    /// restart@AT: the server stopped
    /// hard and started again by --restart-command, then waited for.
    /// kill-connections@AT: every client connection ended by the server
    /// (pg_terminate_backend, CLIENT KILL). stall:D@AT: the systems'
    /// traffic held for D (with any fault, their connections go through a
    /// loopback proxy of ferry-load's own). Reports, per system, the faults,
    /// the inputs answered with success, an error or an unknown outcome,
    /// the time from each fault to the first success after it, and the
    /// read-back verdict (every success applied, nothing applied twice)
    #[arg(long, value_name = "KIND@AT")]
    pub fault: Vec<Fault>,

    /// --fault restart@…: the command that stops the store's server hard
    /// and starts it again (run through sh -c; ferry-load then waits until
    /// the server answers again)
    #[arg(long, hide_short_help = true, value_name = "CMD")]
    pub restart_command: Option<String>,

    /// How long a ferry batch whose write's outcome was lost (the
    /// connection broke after it was sent) retries it, fenced, before its
    /// callers get an unknown outcome; 0 answers unknown at once
    #[arg(long, hide_short_help = true, value_name = "D", value_parser = parse_duration, default_value = "10s")]
    pub retry_unknown: Duration,

    /// Turn the fence off (the control): with --fault, a ferry batch whose
    /// write's outcome was lost sends it again without looking whether it
    /// landed. The read-back then counts what was applied twice
    #[arg(long, hide_short_help = true)]
    pub no_fence: bool,
}

fn parse_slowdown(text: &str) -> Result<Slowdown, String> {
    text.parse()
}

impl OverloadArgs {
    /// A timeout above 0, and a slowdown only of a simulated store with a
    /// round trip to slow.
    pub fn check(&self, store: &StoreArgs) -> Result<(), String> {
        if self.store_slowdown.is_some() && (store.store.is_real() || store.store_rtt.is_zero()) {
            return Err("--store-slowdown slows the simulated store's round trips: use it with --store sim and a --store-rtt above 0".to_string());
        }
        if self.timeout.is_some_and(|t| t.is_zero()) {
            return Err("--timeout and --max-queue-time must be more than 0".to_string());
        }
        Ok(())
    }

    /// The scenario's part of a run's heading (empty without it).
    pub fn describe(&self) -> String {
        let mut described = String::new();
        if let Some(timeout) = self.timeout {
            described += &format!(", callers give up after {}", format_duration(timeout));
        }
        if let Some(slow) = self.store_slowdown {
            described += &format!(", store slowdown {slow}");
        }
        described
    }
}

impl EventTimeArgs {
    /// `--disorder`, `--event-time` and `--refuse-late` go together, in
    /// order, and with no other scenario whose inputs carry their own
    /// value (`other`: `--timeout` or `--per-call` is given).
    pub fn check(&self, other: bool) -> Result<(), String> {
        if self.event_time.is_some() && self.disorder.is_none() {
            return Err(
                "--event-time holds inputs that carry an event time: add --disorder".to_string(),
            );
        }
        if self.refuse_late && self.event_time.is_none() {
            return Err(
                "--refuse-late refuses inputs past their hold: add --event-time".to_string(),
            );
        }
        if self.disorder.is_some() && other {
            return Err("--disorder is for runs without --timeout or --per-call".to_string());
        }
        Ok(())
    }

    /// Sets the scenario for every system of the run.
    pub fn set(&self) {
        event_time::set_scenario(self.disorder, self.event_time, self.refuse_late);
    }

    /// Before each system's run: watch what it applies to `keys` keys.
    pub fn watch(&self, keys: u64) {
        event_time::watch(self.disorder.is_some(), keys);
    }

    /// With `--disorder`: what the system of `label` applied out of order
    /// per key.
    pub fn report(&self, label: &str) {
        let Some(disorder) = self.disorder else {
            return;
        };
        let seen = event_time::disorder();
        if seen.applied == 0 {
            eprintln!("{label}: event time: not watched (its writes do not report their inputs)");
            return;
        }
        let hold = self.event_time.map_or("no hold".to_string(), |lateness| {
            format!("hold {}", format_duration(lateness))
        });
        let late = seen.late.filter(|_| self.event_time.is_some());
        let late = late.map_or(String::new(), |(admitted, refused)| {
            format!(
                "; arrived after their hold had ended: {} sent unheld, {} refused Late",
                report::thousands(admitted),
                report::thousands(refused)
            )
        });
        eprintln!(
            "{label}: event time (disorder up to {}, ferry: {hold}{}): {} of {} inputs applied out of order per key{late}",
            format_duration(disorder),
            if self.refuse_late { ", late refused" } else { "" },
            report::thousands(seen.out_of_order),
            report::thousands(seen.applied),
        );
    }
}

impl FaultArgs {
    /// Faults need a real store, a restart its command, and each a time
    /// within the measured window of `duration`.
    pub fn check(&self, store: &StoreArgs, duration: Duration) -> Result<(), String> {
        let restarts = self.fault.iter().any(|f| f.kind == FaultKind::Restart);
        if self.restart_command.is_some() && !restarts {
            return Err("--restart-command is for --fault restart@AT".to_string());
        }
        if self.fault.is_empty() {
            return Ok(());
        }
        if !store.store.is_real() {
            return Err("--fault injects faults at a real store: use it with --store postgres://… or --store redis://…".to_string());
        }
        if restarts
            && self
                .restart_command
                .as_deref()
                .is_none_or(|c| c.trim().is_empty())
        {
            return Err("--fault restart@…: ferry-load does not own the server; give the command that stops it hard and starts it again with --restart-command 'CMD' (run through sh -c)".to_string());
        }
        if let Some(late) = self.fault.iter().find(|f| f.at >= duration) {
            return Err(format!(
                "--fault {late}: AT must fall within the measured window (--duration {})",
                format_duration(duration)
            ));
        }
        Ok(())
    }

    /// `--no-fence`, or the fence on.
    pub fn fence(&self) -> Fence {
        if self.no_fence {
            Fence::Off
        } else {
            Fence::On
        }
    }

    /// The faults made ready on `store` (`None` without any).
    pub fn prepare(&self, store: Store) -> Result<Option<Faults>, String> {
        Faults::prepare(self.fault.clone(), self.restart_command.clone(), store)
    }

    /// The faults' part of a run's heading (empty without any).
    pub fn describe(&self) -> String {
        if self.fault.is_empty() {
            return String::new();
        }
        let faults: Vec<String> = self.fault.iter().map(Fault::to_string).collect();
        format!(", faults {}", faults.join(", "))
    }
}
