#!/usr/bin/env bash
# Instructions per input of ferry-load's systems on a real store, counted
# by callgrind: what the system's threads and the load's threads execute
# for an input, the store's client library included (the server runs
# outside valgrind and is not counted).
#
# Each system runs twice under `valgrind --tool=callgrind`, after the same
# warm-up, measuring $SHORT and then $LONG seconds; the figure is the
# difference of the two runs' instructions over the difference of their
# inputs (every input the store read back), so start-up, the warm-up's
# first reads of each key and the read-back cancel out. Each thread is
# counted in a file of its own: the load's are those that run
# `sources::load::generate`, the main thread (`ferry_load::main`: the
# set-up and the read-back) is left out, every other thread is the
# system's. Shards neither spin nor doze before they park (a shard looking
# for work would count instructions that are no input's).
#
#   bash bench/callgrind-store.sh                       # a private Redis
#   STORE=postgres SYSTEMS=ferry-trips bash bench/callgrind-store.sh
#   STORE=redis://127.0.0.1:6379 KEYS=1000 DIST=zipf:1 bash bench/callgrind-store.sh
#
# STORE is what `--store` takes (a bare `redis` or `postgres` starts a
# private server, as ferry-load does); SYSTEMS a comma-separated list;
# WARMUP, SHORT and LONG are seconds. Under valgrind a system runs about a
# twentieth as fast: the 20 s warm-up lets a shard learn most of 100,000
# keys, as it has in the first second of a real run.
set -euo pipefail
cd "$(dirname "$0")/.."

store=${STORE:-redis}
systems=${SYSTEMS:-ferry-trips,multi-key}
keys=${KEYS:-100000}
dist=${DIST:-uniform}
warmup=${WARMUP:-20}
short=${SHORT:-2}
long=${LONG:-30}

if ! command -v valgrind >/dev/null; then
    echo "callgrind-store.sh: valgrind is not installed (on Debian or Ubuntu: apt-get install valgrind)" >&2
    exit 1
fi
for number in "$warmup" "$short" "$long"; do
    if ! [[ $number =~ ^[0-9]+$ ]]; then
        echo "callgrind-store.sh: WARMUP, SHORT and LONG are whole seconds, not '$number'" >&2
        exit 1
    fi
done
if ((long <= short)); then
    echo "callgrind-store.sh: LONG ($long) must be more than SHORT ($short)" >&2
    exit 1
fi

built=$(cargo build --release -p ferry-bench --bin ferry-load --message-format=json-render-diagnostics)
bin=$(sed -n 's/.*"executable":"\([^"]*\/ferry-load\)".*/\1/p' <<<"$built" | tail -n 1)
if [[ ! -x $bin ]]; then
    echo "callgrind-store.sh: cargo built no ferry-load" >&2
    exit 1
fi
out=$(mktemp -d "${TMPDIR:-/tmp}/ferry-callgrind-store.XXXXXX")

# Runs `system` measuring `seconds` and prints "system load inputs": the
# system's and the load's instructions, and the inputs read back.
count() {
    local system=$1 seconds=$2 name="$out/$1-$2"
    if ! valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$name.callgrind" \
        "$bin" compare --store "$store" --keys "$keys" --dist "$dist" \
        --warmup "${warmup}s" --duration "${seconds}s" \
        --spin-before-park 0 --doze-before-park 0 --compare "$system" >"$name.report" 2>"$name.log"; then
        echo "callgrind-store.sh: the run of $system for ${seconds}s failed; its report:" >&2
        cat "$name.report" "$name.log" >&2
        exit 1
    fi
    local own=0 load=0 file total
    for file in "$name".callgrind-*; do
        total=$(awk '$1 == "totals:" || $1 == "summary:" { print $2; exit }' "$file")
        [[ -z $total ]] && continue
        if grep -q -F sources::load::generate "$file"; then
            load=$((load + total))
        elif ! grep -q -F ferry_load::main "$file"; then
            own=$((own + total))
        fi
    done
    local inputs
    inputs=$(sed -n 's/^read back.*: \([0-9,]*\) inputs summing.*/\1/p' "$name.report" | tr -d ,)
    if [[ -z $inputs ]]; then
        echo "callgrind-store.sh: the run of $system for ${seconds}s read nothing back; its report is $name.report" >&2
        exit 1
    fi
    echo "$own $load $inputs"
}

echo "callgrind on $store: $keys keys $dist, ${warmup}s warm-up, ${long}s less ${short}s measured, files in $out"
printf '%-14s %12s %18s %16s\n' system inputs system/input load/input
IFS=, read -r -a list <<<"$systems"
for system in "${list[@]}"; do
    short_run=$(count "$system" "$short")
    long_run=$(count "$system" "$long")
    read -r own_short load_short inputs_short <<<"$short_run"
    read -r own_long load_long inputs_long <<<"$long_run"
    inputs=$((inputs_long - inputs_short))
    if ((inputs <= 0)); then
        echo "callgrind-store.sh: $system answered no more in ${long}s than in ${short}s; raise LONG" >&2
        exit 1
    fi
    printf '%-14s %12s %18s %16s\n' "$system" "$inputs" \
        "$(((own_long - own_short + inputs / 2) / inputs))" \
        "$(((load_long - load_short + inputs / 2) / inputs))"
done
