#!/usr/bin/env bash
# Instructions per input on the steady path, counted by callgrind.
#
# Runs the fixed workload of bench/examples/steady.rs under
# `valgrind --tool=callgrind` for each case below, once with $INPUTS inputs
# and once with none (the same binary, threads and start-up), and prints
# (instructions with inputs - instructions without) / inputs. Unlike a
# timing, the count does not depend on what else the machine is doing.
# The last four cases are ferry-load's systems on its simulated store with
# no round trip, under the same callers: what an input costs in each, the
# store's work included (the same for all).
# The one exception, the shards' clock calibrating itself once per process
# (`quanta::Clock::new`, a loop timed in wall-clock time, so as long as
# valgrind is slow), is taken out of each run's total.
#
#   bash bench/callgrind.sh            # INPUTS=200000 by default
#   INPUTS=1000000 bash bench/callgrind.sh
#   RUNS=5 CASES="submit 100000" bash bench/callgrind.sh
#
# RUNS counts each case that many times and prints the median with the
# range: valgrind runs one thread at a time and interleaves them a little
# differently from run to run, which moves a figure by about 20 an input
# (more when a caller's allocations take glibc's slow path), so a change
# smaller than that needs several runs of each build to be seen. CASES
# (comma-separated "mode keys" pairs) counts only those cases.
#
# It builds with the release profile as it stands; cargo's environment
# variables override it. With the default 16 codegen units, what gets
# inlined can shift with a change elsewhere, by up to about 100 an input;
# count a small change with one unit as well (docs/benchmarks.md, "The
# count under other builds"):
#
#   CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1 CARGO_TARGET_DIR=/tmp/cgu1 bash bench/callgrind.sh
#
# The shards run on tokio: under valgrind (3.19 here) a glommio shard
# never finishes starting; the run hangs without using any CPU.
set -euo pipefail
cd "$(dirname "$0")/.."

inputs=${INPUTS:-200000}
runs=${RUNS:-1}
runtime=tokio
# mode and keys of each case (keys are unused by the unkeyed batcher and
# by the harness, the submit mode's callers with no engine behind them).
cases=("submit 1000" "submit 100000" "many 1000" "many 100000" "local 1000" "batcher 1000" "harness 1"
    "ferry 1000" "single-lock 1000" "batch-aint-one 1000" "unbatched 1000")
if [[ -n ${CASES:-} ]]; then
    IFS=, read -r -a cases <<<"$CASES"
fi

if ! command -v valgrind >/dev/null; then
    echo "callgrind.sh: valgrind is not installed (on Debian or Ubuntu: apt-get install valgrind)" >&2
    exit 1
fi
if ! [[ $inputs =~ ^[1-9][0-9]*$ ]]; then
    echo "callgrind.sh: INPUTS must be a positive number, not '$inputs'" >&2
    exit 1
fi
if ! [[ $runs =~ ^[1-9][0-9]*$ ]]; then
    echo "callgrind.sh: RUNS must be a positive number, not '$runs'" >&2
    exit 1
fi
for case in "${cases[@]}"; do
    if ! [[ $case =~ ^(submit|many|local|batcher|harness|ferry|single-lock|batch-aint-one|unbatched)\ [1-9][0-9]*$ ]]; then
        echo "callgrind.sh: a case is a mode (submit, many, local, batcher, harness, or a system: ferry, single-lock, batch-aint-one, unbatched) and a key count, not '$case'" >&2
        exit 1
    fi
done

# Where cargo put the example, whatever the target directory is.
built=$(cargo build --release -p ferry-bench --example steady --message-format=json-render-diagnostics)
bin=$(sed -n 's/.*"executable":"\([^"]*\/steady\)".*/\1/p' <<<"$built" | tail -n 1)
if [[ ! -x $bin ]]; then
    echo "callgrind.sh: cargo built no steady example" >&2
    exit 1
fi

out=$(mktemp -d "${TMPDIR:-/tmp}/ferry-callgrind.XXXXXX")

# Prints the instructions of one run of the example with these arguments;
# its callgrind output, log and report stay in $out.
instructions() {
    local name="$out/$1-$2-$3"
    if ! valgrind --tool=callgrind --callgrind-out-file="$name.callgrind" \
        "$bin" "$1" "$2" "$3" "$runtime" >"$name.report" 2>"$name.log"; then
        echo "callgrind.sh: the run '$1 $2 $3' failed; its log:" >&2
        cat "$name.log" >&2
        exit 1
    fi
    local total calibration
    total=$(awk '$1 == "totals:" || $1 == "summary:" { print $2; exit }' "$name.callgrind")
    if [[ -z $total ]]; then
        echo "callgrind.sh: no total in $name.callgrind" >&2
        exit 1
    fi
    # Inclusive instructions of the clock's calibration (none if absent).
    calibration=$(callgrind_annotate --inclusive=yes "$name.callgrind" 2>/dev/null |
        awk '/:quanta::Clock::new \[/ { gsub(",", "", $1); print $1; exit }')
    echo $((total - ${calibration:-0}))
}

# The batches of a run, from the example's report ("... in N batches").
batches() {
    sed -n 's/.* in \([0-9]*\) batches$/\1/p' "$out/$1-$2-$3.report"
}

echo "callgrind: $inputs inputs per case, $runs run(s) each, 2 shards on $runtime, files in $out"
printf '%-14s %7s %19s %13s\n' mode keys instructions/input inputs/batch
for case in "${cases[@]}"; do
    read -r mode keys <<<"$case"
    baseline=$(instructions "$mode" 0 "$keys")
    figures=()
    for ((run = 1; run <= runs; run++)); do
        total=$(instructions "$mode" "$inputs" "$keys")
        figures+=("$(((total - baseline + inputs / 2) / inputs))")
    done
    sent=$(batches "$mode" "$inputs" "$keys")
    [[ $mode == batcher || $mode == harness ]] && keys=-
    # The median of the runs, and their range when there are several.
    read -r median low high < <(printf '%s\n' "${figures[@]}" | sort -n |
        awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)], v[1], v[NR] }')
    figure=$median
    ((runs > 1)) && figure="$median ($low-$high)"
    awk -v mode="$mode" -v keys="$keys" -v figure="$figure" -v inputs="$inputs" -v sent="$sent" \
        'BEGIN {
            per_batch = sent > 0 ? sprintf("%.2f", inputs / sent) : "-"
            printf "%-14s %7s %19s %13s\n", mode, keys, figure, per_batch
        }'
done
