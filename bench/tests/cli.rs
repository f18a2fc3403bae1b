//! `ferry-load`'s command line, read without running anything: no
//! subcommand is compare with the defaults the README's comparison runs;
//! each subcommand reads its own flags and refuses another's; each one's
//! help lists its own options only, hidden plumbing none; a mode flag
//! (`--mode`, `--tune`, `--handover`, `--source`) is refused naming the
//! subcommand; and the checks of compare and unkeyed refuse what cannot
//! run together.

use std::time::Duration;

use clap::{CommandFactory, Parser};

use ferry_bench::cli::compare::CompareArgs;
use ferry_bench::cli::comparison::Compared;
use ferry_bench::cli::{Cli, Command};
use ferry_bench::sources::dist::KeyDist;
use ferry_bench::store::StoreAddress;

const PG: &str = "postgres://ferry@127.0.0.1:5432/postgres";

fn parse(argv: &[&str]) -> Command {
    let mut full = vec!["ferry-load"];
    full.extend_from_slice(argv);
    Cli::try_parse_from(full)
        .unwrap_or_else(|err| panic!("{argv:?} parses: {err}"))
        .chosen()
}

fn compare(argv: &[&str]) -> CompareArgs {
    match parse(argv) {
        Command::Compare(args) => args,
        other => panic!("{argv:?}: compare, not {other:?}"),
    }
}

fn refused(argv: &[&str]) -> String {
    let mut full = vec!["ferry-load"];
    full.extend_from_slice(argv);
    match Cli::try_from_args(full) {
        Ok(cli) => panic!("{argv:?} is refused, not read as {:?}", cli.chosen()),
        Err(err) => err.to_string(),
    }
}

/// One subcommand's whole help (`--help`), or the top one's.
fn help(subcommand: Option<&str>) -> String {
    let mut command = Cli::command();
    match subcommand {
        Some(name) => command
            .find_subcommand_mut(name)
            .unwrap_or_else(|| panic!("a subcommand {name}"))
            .render_long_help()
            .to_string(),
        None => command.render_long_help().to_string(),
    }
}

fn names(systems: Result<Vec<Compared>, String>) -> Result<Vec<&'static str>, String> {
    systems.map(|systems| systems.into_iter().map(Compared::name).collect())
}

#[test]
fn no_subcommand_is_compare_with_the_readme_defaults() {
    let args = compare(&[]);
    assert_eq!(args.load.keys, 1_000);
    assert_eq!(args.load.dist, KeyDist::Zipf { exponent: 1.0 });
    assert_eq!(args.load.clients, 2_000);
    assert_eq!(args.load.rate, 0.0);
    assert_eq!(args.store.store, StoreAddress::Sim);
    assert_eq!(args.store.store_rtt, Duration::from_millis(1));
    assert_eq!(args.duration(), Duration::from_secs(4));
    assert_eq!(args.load.warmup, Duration::from_secs(1));
    assert_eq!(args.check(), Ok(()));
    assert_eq!(
        names(args.systems()),
        Ok(vec![
            "ferry",
            "ferry-trips",
            "single-lock",
            "batch-aint-one",
            "multi-key",
            "unbatched"
        ])
    );
    let named = compare(&["compare"]);
    assert_eq!(names(named.systems()), names(args.systems()));
    assert_eq!(args.list.rounds, 1);
}

#[test]
fn rounds_repeat_the_list_and_are_at_least_one() {
    assert_eq!(compare(&["--rounds", "3"]).list.rounds, 3);
    let Command::Unkeyed(unkeyed) = parse(&["unkeyed", "--rounds", "2"]) else {
        panic!("unkeyed");
    };
    assert_eq!((unkeyed.list.rounds, unkeyed.check()), (2, Ok(())));
    assert_eq!(
        compare(&["--rounds", "0"]).check(),
        Err("--rounds must be at least 1".to_string())
    );
    let Command::Unkeyed(none) = parse(&["unkeyed", "--rounds", "0"]) else {
        panic!("unkeyed");
    };
    assert!(none.check().is_err());
    refused(&["tune", "--rounds", "2"]);
}

#[test]
fn compare_s_flags_without_a_subcommand_are_compare_s() {
    let args = compare(&["--keys", "100000", "--dist", "uniform", "--store-rtt", "0"]);
    assert_eq!(args.load.keys, 100_000);
    assert_eq!(args.load.dist, KeyDist::Uniform);
    assert_eq!(args.store.store_rtt, Duration::ZERO);
    let named = compare(&["compare", "--keys", "100000", "--sweep-shards", "1,2"]);
    assert_eq!(named.load.keys, 100_000);
    assert_eq!(named.list.sweep_shards, [1, 2]);
}

/// The idle-stage and batch-size flags default to the engine's own
/// defaults, so a run with no flags measures those as shipped (the
/// in-flight and queue bounds are the tool's own; see
/// docs/benchmarks.md).
#[test]
fn ferry_flags_default_to_the_engine_defaults() {
    let args = compare(&[]);
    assert_eq!(
        args.engine.spin_before_park,
        ferry::DEFAULT_SPIN_BEFORE_PARK
    );
    assert_eq!(
        args.engine.doze_before_park,
        ferry::DEFAULT_DOZE_BEFORE_PARK
    );
    assert_eq!(args.engine.sched_slice, ferry::DEFAULT_SCHED_SLICE);
    assert_eq!(
        args.engine.max_batch_size,
        ferry::QueueConfig::DEFAULT_MAX_BATCH_SIZE
    );
    assert_eq!(args.trips.max_trip_batches, ferry::DEFAULT_MAX_TRIP_BATCHES);
}

/// The two slot bounds read the same way, as the library's
/// `max_in_flight_batches`: batches for the systems of batches, trips for
/// ferry-trips; neither may be 0, and there is no other spelling.
#[test]
fn the_in_flight_bounds_are_named_alike() {
    let args = compare(&["--max-in-flight-batches", "8", "--max-in-flight-trips", "3"]);
    assert_eq!(args.engine.max_in_flight_batches, 8);
    assert_eq!(args.trips.max_in_flight_trips, 3);
    let settings = args.engine.settings(&[1], &args.trips);
    assert_eq!(
        (settings.max_in_flight_batches, settings.max_in_flight_trips),
        (8, 3)
    );
    assert_eq!(args.check(), Ok(()));
    let why = compare(&["--max-in-flight-trips", "0"])
        .check()
        .expect_err("no trip in flight");
    assert!(why.contains("--max-in-flight-trips"), "{why}");
    let old = refused(&["--max-trips-in-flight", "3"]);
    assert!(old.contains("--max-trips-in-flight"), "{old}");
}

/// A bound of the load reads as every other bound does, `--max-…`.
#[test]
fn the_open_loop_s_bound_is_a_max_flag() {
    let args = compare(&["--rate", "1000", "--max-outstanding", "50"]);
    assert_eq!(args.load.max_outstanding, 50);
    assert_eq!(args.check(), Ok(()));
    let why = compare(&["--rate", "1000", "--max-outstanding", "0"])
        .check()
        .expect_err("nothing awaited");
    assert!(why.contains("--max-outstanding"), "{why}");
    refused(&["--outstanding-max", "50"]);
}

#[test]
fn calls_of_many_inputs_are_for_a_closed_loop_without_timeout() {
    assert_eq!(compare(&["--per-call", "500"]).check(), Ok(()));
    for argv in [
        &["--per-call", "0"][..],
        &["--per-call", "2", "--rate", "1000"],
        &["--per-call", "2", "--timeout", "50ms"],
    ] {
        let why = compare(argv).check().expect_err("refused");
        assert!(why.contains("--per-call"), "{argv:?}: {why}");
    }
}

#[test]
fn faults_need_a_real_store_a_restart_command_and_a_time_in_the_window() {
    let check = |argv: &[&str]| {
        let mut full = vec!["--duration", "4s"];
        full.extend_from_slice(argv);
        compare(&full).check()
    };
    let pg = ["--store", PG];
    let with = |more: &[&'static str]| [&pg[..], more].concat();
    assert_eq!(check(&with(&["--fault", "kill-connections@1s"])), Ok(()));
    assert_eq!(
        check(&with(&[
            "--fault",
            "restart@1s",
            "--fault",
            "stall:500ms@2s",
            "--restart-command",
            "systemctl restart postgresql"
        ])),
        Ok(())
    );
    for (argv, said) in [
        (vec!["--fault", "restart@1s"], "real store"),
        (with(&["--fault", "restart@1s"]), "--restart-command"),
        (with(&["--fault", "stall:100ms@4s"]), "measured window"),
        (with(&["--restart-command", "true"]), "--fault restart@AT"),
    ] {
        let refused = check(&argv).expect_err("refused");
        assert!(refused.contains(said), "{argv:?}: {refused}");
    }
    refused(&["--fault", "reboot@1s"]);
    refused(&["unkeyed", "--store", PG, "--fault", "kill-connections@1s"]);
}

#[test]
fn each_comparison_has_its_own_systems_and_points_to_the_other() {
    let Command::Unkeyed(unkeyed) = parse(&["unkeyed"]) else {
        panic!("unkeyed");
    };
    assert_eq!(unkeyed.check(), Ok(()));
    assert_eq!(
        names(unkeyed.systems()),
        Ok(vec!["batcher", "batch-aint-one", "single-lock-fifo"])
    );
    let Command::Unkeyed(chosen) = parse(&["unkeyed", "--compare", "single-lock-fifo,batcher"])
    else {
        panic!("unkeyed");
    };
    assert_eq!(
        names(chosen.systems()),
        Ok(vec!["single-lock-fifo", "batcher"])
    );
    let Command::Unkeyed(ferry) = parse(&["unkeyed", "--compare", "ferry"]) else {
        panic!("unkeyed");
    };
    let ferry = names(ferry.systems());
    assert!(
        ferry.as_ref().is_err_and(|p| p.contains("`batcher`")),
        "{ferry:?}"
    );
    let batcher = names(compare(&["--compare", "batcher"]).systems());
    assert!(
        batcher
            .as_ref()
            .is_err_and(|p| p.contains("ferry-load unkeyed")),
        "{batcher:?}"
    );
}

#[test]
fn unkeyed_reads_the_shared_groups_and_the_overload_scenario() {
    let argv = [
        "unkeyed",
        "--keys",
        "10",
        "--store-rtt",
        "0",
        "--shards",
        "2",
        "--max-in-flight-batches",
        "8",
        "--timeout",
        "50ms",
        "--json",
        "out.json",
    ];
    let Command::Unkeyed(args) = parse(&argv) else {
        panic!("unkeyed");
    };
    assert_eq!(args.load.keys, 10);
    assert_eq!(args.engine.shards, Some(2));
    assert_eq!(args.engine.max_in_flight_batches, 8);
    assert_eq!(args.overload.timeout, Some(Duration::from_millis(50)));
    assert_eq!(args.check(), Ok(()));
    assert!(
        args.describe().starts_with("unkeyed, "),
        "{}",
        args.describe()
    );
}

#[test]
fn tune_reads_its_search_and_the_shared_groups() {
    let argv = [
        "tune",
        "--tune-p99",
        "20ms",
        "--tune-points",
        "6",
        "--tune-slots",
        "1,2",
        "--tune-trip-batches",
        "16",
        "--sweep-shards",
        "1,2",
        "--max-in-flight-trips",
        "2",
        "--keys",
        "100",
    ];
    let Command::Tune(args) = parse(&argv) else {
        panic!("tune");
    };
    assert_eq!(args.tune_p99, Some(Duration::from_millis(20)));
    assert_eq!(args.tune_points, 6);
    assert_eq!(args.tune_slots, [1, 2]);
    assert_eq!(args.trips.max_in_flight_trips, 2);
    assert_eq!(args.load.keys, 100);
    assert_eq!(args.duration(), Duration::from_secs(2));
    assert_eq!(args.check(), Ok(()));
    assert!(
        args.describe().contains(" per point"),
        "{}",
        args.describe()
    );
}

#[test]
fn handover_reads_its_flags_and_needs_a_real_store() {
    let Command::Handover(defaults) = parse(&["handover"]) else {
        panic!("handover");
    };
    assert_eq!((defaults.keys, defaults.shards), (32, 2));
    assert_eq!(defaults.duration, Duration::from_secs(6));
    let refused = defaults.check().expect_err("no store");
    assert!(refused.contains("real store"), "{refused}");
    let argv = [
        "handover",
        "--store",
        PG,
        "--instances",
        "3",
        "--moves",
        "2",
        "--handover-lag",
        "0",
        "--no-fence",
    ];
    let Command::Handover(args) = parse(&argv) else {
        panic!("handover");
    };
    assert_eq!(args.instances, 3);
    assert_eq!(args.handover_lag, Duration::ZERO);
    assert!(args.no_fence);
    assert_eq!(args.check(), Ok(()));
    let Command::Handover(worker) = parse(&["handover", "--handover-worker=1", "--store", PG])
    else {
        panic!("handover");
    };
    assert_eq!(worker.handover_worker, Some(1));
}

#[cfg(feature = "kafka")]
#[test]
fn kafka_reads_its_flags_and_its_hidden_member_flags() {
    let argv = [
        "kafka",
        "--kafka-bootstrap",
        "127.0.0.1:9092",
        "--store",
        PG,
        "--members",
        "2",
        "--kill-member-at",
        "30%",
        "--systems",
        "ferry",
    ];
    let Command::Kafka(args) = parse(&argv) else {
        panic!("kafka");
    };
    assert_eq!(args.check(), Ok(()));
    let member = [
        "kafka",
        "--kafka-member=0",
        "--kafka-system=ferry",
        "--group=g",
    ];
    assert!(matches!(parse(&member), Command::Kafka(_)));
}

#[cfg(not(feature = "kafka"))]
#[test]
fn kafka_without_its_feature_says_how_to_build_it() {
    let Command::Kafka(args) = parse(&["kafka", "--kafka-bootstrap", "127.0.0.1:9092"]) else {
        panic!("kafka");
    };
    let refused = args.run().expect_err("not built");
    assert!(refused.contains("--features kafka"), "{refused}");
    assert!(help(Some("kafka")).contains("--features kafka"));
}

#[test]
fn a_flag_of_another_subcommand_is_refused() {
    for argv in [
        &["tune", "--compare", "ferry"][..],
        &["tune", "--timeout", "50ms"],
        &["unkeyed", "--disorder", "5ms"],
        &["unkeyed", "--max-trip-batches", "4"],
        &["compare", "--tune-p99", "5ms"],
        &["--instances", "3"],
        &["handover", "--rate", "100"],
        &["handover", "--store-rtt", "1ms"],
        &["--keys", "5", "unkeyed"],
        &["--kafka-bootstrap", "127.0.0.1:9092"],
    ] {
        refused(argv);
    }
    #[cfg(feature = "kafka")]
    for argv in [
        &["kafka", "--store-rtt", "1ms"][..],
        &["kafka", "--clients", "5"],
    ] {
        refused(argv);
    }
}

#[test]
fn a_mode_flag_is_refused_naming_the_subcommand() {
    for (argv, said) in [
        (&["--mode", "unkeyed"][..], "ferry-load unkeyed"),
        (&["--mode=unkeyed", "--keys", "5"], "ferry-load unkeyed"),
        (&["--tune"], "ferry-load tune"),
        (&["--keys", "5", "--handover"], "ferry-load handover"),
        (&["--source", "kafka"], "ferry-load kafka"),
        (&["--source=kafka"], "ferry-load kafka"),
    ] {
        let refused = refused(argv);
        assert!(refused.contains(said), "{argv:?}: {refused}");
        let mut full = vec!["ferry-load"];
        full.extend_from_slice(argv);
        assert!(Cli::try_parse_from(full).is_err(), "{argv:?}");
    }
    refused(&["--handover-worker", "0"]);
}

#[test]
fn the_top_help_lists_the_subcommands_and_compare_s_options() {
    let top = help(None);
    for subcommand in ["compare", "unkeyed", "tune", "handover", "kafka"] {
        assert!(
            top.lines()
                .any(|line| line.trim_start().starts_with(subcommand)),
            "{subcommand} in:\n{top}"
        );
    }
    for option in ["--keys", "--store", "--compare", "--fault"] {
        assert!(top.contains(option), "{option} in:\n{top}");
    }
}

#[test]
fn each_subcommand_s_help_has_its_own_options_only() {
    let compare = help(Some("compare"));
    for own in [
        "--compare",
        "--keys",
        "--store-rtt",
        "--disorder",
        "--fault",
    ] {
        assert!(compare.contains(own), "compare shows {own}");
    }
    let tune = help(Some("tune"));
    let handover = help(Some("handover"));
    let unkeyed = help(Some("unkeyed"));
    for (help, others) in [
        (
            &compare,
            &["--tune-p99", "--instances", "--kafka-bootstrap"][..],
        ),
        (&tune, &["--compare", "--fault", "--instances"]),
        (&unkeyed, &["--disorder", "--fault", "--max-trip-batches"]),
        (&handover, &["--clients", "--store-rtt", "--compare"]),
    ] {
        for other in others {
            assert!(!help.contains(other), "{other} left out of:\n{help}");
        }
    }
    for plumbing in ["--handover-worker", "--kafka-member"] {
        for help in [&help(None), &compare, &handover, &help(Some("kafka"))] {
            assert!(!help.contains(plumbing), "{plumbing} hidden in:\n{help}");
        }
    }
}

#[cfg(feature = "kafka")]
#[test]
fn kafka_s_help_has_kafka_s_options_only() {
    let kafka = help(Some("kafka"));
    for own in ["--kafka-bootstrap", "--members", "--kill-member-at"] {
        assert!(kafka.contains(own), "kafka shows {own}");
    }
    for other in ["--clients", "--store-rtt", "--sweep-shards", "--runtime"] {
        assert!(!kafka.contains(other), "{other} left out of:\n{kafka}");
    }
    let compare = help(Some("compare"));
    for other in ["--kafka-bootstrap", "--members", "--kill-member-at"] {
        assert!(!compare.contains(other), "{other} left out of:\n{compare}");
    }
}

#[test]
fn a_runs_heading_says_its_keys_and_its_loop() {
    let args = compare(&["--keys", "100000", "--dist", "uniform", "--clients", "2000"]);
    assert_eq!(args.load.describe_keys(), "100,000 keys uniform");
    assert_eq!(args.load.describe_loop(), "closed loop 2,000 clients");
    let calls = compare(&["--clients", "8", "--per-call", "16"]);
    assert_eq!(
        calls.load.describe_loop(),
        "closed loop 8 clients, 16 inputs a call"
    );
    let open = compare(&["--rate", "25000", "--dist", "zipf:1"]);
    assert_eq!(open.load.describe_loop(), "open loop 25,000 inputs/s");
    // The distribution as the flag reads it back.
    assert_eq!(open.load.describe_keys(), "1,000 keys zipf:1.0");
    assert_eq!(
        "zipf:1.0".parse::<KeyDist>(),
        Ok(KeyDist::Zipf { exponent: 1.0 })
    );
}
