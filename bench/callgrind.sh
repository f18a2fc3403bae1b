#!/usr/bin/env bash
# Instructions per input on the steady path, counted by callgrind.
#
# Runs the fixed workload of bench/examples/steady.rs under
# `valgrind --tool=callgrind` for each case below, once with $INPUTS inputs
# and once with none (the same binary, threads and start-up), and prints
# (instructions with inputs - instructions without) / inputs. Unlike a
# timing, the count does not depend on what else the machine is doing.
# Twelve cases are ferry-load's keyed systems on its simulated store with
# no round trip, under the same callers, at two loads (1,000 keys drawn
# zipf:1, 100,000 keys drawn uniformly; the same keys for every system):
# what an input costs in each, the store's work included (the same for
# all). The last four are `ferry::entity`'s write path on its
# `MemoryStore` (one key's batch a request, then trips) at the same loads.
# Two exceptions are taken out of each run's total: the shards' clock
# calibrating itself once per process (`quanta::Clock::new`, a loop timed
# in wall-clock time, so as long as valgrind is slow), and the example
# drawing its keys before the run (`steady::pick_keys`).
#
# Each thread is counted in a file of its own (`--separate-threads=yes`);
# the caller threads are the files in which `steady::caller_thread`, which
# only they run, appears. Their share, counted the same way (with inputs
# less none), is the "callers" column: what an input costs the threads that
# submit it and await its answer (the `harness` case is the part of that
# the workload itself costs).
#
#   bash bench/callgrind.sh            # INPUTS=200000 by default
#   INPUTS=1000000 bash bench/callgrind.sh
#   RUNS=5 CASES="submit 100000" bash bench/callgrind.sh
#   RUNS=3 CASES="ferry 1000 zipf:1,multi-key 100000 uniform" bash bench/callgrind.sh
#
# RUNS counts each case that many times and prints the median with the
# range: valgrind runs one thread at a time and interleaves them a little
# differently from run to run, which moves a figure by about 20 an input
# (more when a caller's allocations take glibc's slow path), so a change
# smaller than that needs several runs of each build to be seen. CASES
# (comma-separated "mode keys [dist]" cases, dist cycle (the default: input
# i has key i % keys), uniform or zipf:S) counts only those cases.
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
# mode, keys and key distribution of each case (keys are unused by the
# unkeyed batcher and by the harness, the submit mode's callers with no
# engine behind them).
cases=("submit 1000" "submit 100000" "many 1000" "many 100000" "local 1000" "batcher 1000" "harness 1")
for load in "1000 zipf:1" "100000 uniform"; do
    for system in ferry ferry-trips single-lock multi-key batch-aint-one unbatched; do
        cases+=("$system $load")
    done
done
for load in "1000 zipf:1" "100000 uniform"; do
    cases+=("entities $load" "entities-trips $load")
done
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
    if ! [[ $case =~ ^(submit|many|local|batcher|harness|ferry|ferry-trips|single-lock|multi-key|batch-aint-one|unbatched|entities|entities-trips)\ [1-9][0-9]*(\ (cycle|uniform|zipf:[0-9.]+))?$ ]]; then
        echo "callgrind.sh: a case is a mode (submit, many, local, batcher, harness, a system: ferry, ferry-trips, single-lock, multi-key, batch-aint-one, unbatched, or entities, entities-trips), a key count and optionally a key distribution (cycle, uniform, zipf:S), not '$case'" >&2
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

# Inclusive instructions of the function named $2 in the callgrind file $1
# (0 when it is not there).
inclusive() {
    grep -q -F "$2" "$1" || { echo 0; return; }
    callgrind_annotate --inclusive=yes --auto=no --threshold=100 "$1" 2>/dev/null |
        awk -v name=":$2 [" '!found && index($0, name) { gsub(",", "", $1); found = $1 }
            END { print found ? found : 0 }'
}

# Prints the instructions of one run of the example with these arguments
# (mode, inputs, keys, distribution), all threads and then the caller
# threads': "total callers". Its callgrind files, log and report stay in
# $out.
instructions() {
    local name="$out/$1-$2-$3-$4"
    if ! valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$name.callgrind" \
        "$bin" "$1" "$2" "$3" "$runtime" "$4" >"$name.report" 2>"$name.log"; then
        echo "callgrind.sh: the run '$1 $2 $3 $4' failed; its log:" >&2
        cat "$name.log" >&2
        exit 1
    fi
    local total=0 callers=0 file count
    for file in "$name".callgrind-*; do
        count=$(awk '$1 == "totals:" || $1 == "summary:" { print $2; exit }' "$file")
        [[ -z $count ]] && continue
        count=$((count - $(inclusive "$file" quanta::Clock::new) - $(inclusive "$file" steady::pick_keys)))
        total=$((total + count))
        grep -q -F steady::caller_thread "$file" && callers=$((callers + count))
    done
    if ((total == 0)); then
        echo "callgrind.sh: no total in $name.callgrind-*" >&2
        exit 1
    fi
    echo "$total $callers"
}

# The batches of a run, from the example's report ("... in N batches").
batches() {
    sed -n 's/.* in \([0-9]*\) batches$/\1/p' "$out/$1-$2-$3-$4.report"
}

# The median of the numbers on stdin, with their range: "median low high".
median() {
    sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)], v[1], v[NR] }'
}

echo "callgrind: $inputs inputs per case, $runs run(s) each, 2 shards on $runtime, files in $out"
printf '%-14s %7s %-8s %19s %15s %13s\n' mode keys dist instructions/input callers/input inputs/batch
for case in "${cases[@]}"; do
    read -r mode keys dist <<<"$case"
    dist=${dist:-cycle}
    read -r baseline baseline_callers < <(instructions "$mode" 0 "$keys" "$dist")
    figures=() callers=()
    for ((run = 1; run <= runs; run++)); do
        read -r total total_callers < <(instructions "$mode" "$inputs" "$keys" "$dist")
        figures+=("$(((total - baseline + inputs / 2) / inputs))")
        callers+=("$(((total_callers - baseline_callers + inputs / 2) / inputs))")
    done
    sent=$(batches "$mode" "$inputs" "$keys" "$dist")
    [[ $mode == batcher || $mode == harness ]] && keys=- dist=-
    [[ $mode == local || $mode == many ]] && dist=cycle
    # The median of the runs, and their range when there are several.
    read -r median low high < <(printf '%s\n' "${figures[@]}" | median)
    read -r callers_median _ _ < <(printf '%s\n' "${callers[@]}" | median)
    figure=$median
    ((runs > 1)) && figure="$median ($low-$high)"
    # The local and many modes have callers of their own.
    [[ $mode == local || $mode == many ]] && callers_median=-
    awk -v mode="$mode" -v keys="$keys" -v dist="$dist" -v figure="$figure" -v callers="$callers_median" \
        -v inputs="$inputs" -v sent="$sent" \
        'BEGIN {
            per_batch = sent > 0 ? sprintf("%.2f", inputs / sent) : "-"
            printf "%-14s %7s %-8s %19s %15s %13s\n", mode, keys, dist, figure, callers, per_batch
        }'
done
