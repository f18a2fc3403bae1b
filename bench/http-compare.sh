#!/usr/bin/env bash
# The HTTP service of engine/examples/http_accounts.rs, end to end: its two
# modes (--ferry: ferry::entity with trips; --pool: a deadpool of
# tokio-postgres connections, a read and a conditional UPDATE per request)
# on a private PostgreSQL, driven by oha, and checked.
#
#   bash bench/http-compare.sh
#   DURATION=5s RATE=1000 CONNECTIONS=128 bash bench/http-compare.sh
#
# For each load (100,000 accounts uniform; 1,000 accounts zipf:1), each
# pacing (a fixed rate of $RATE requests/s, oha correcting for coordinated
# omission; a closed loop of $CONNECTIONS connections, each one request at
# a time) and each mode, on a table of its own: the service starts, a
# warm-up of $WARMUP runs, then oha for $DURATION (waiting for the requests
# under way at the end). Measured: requests/s, p50 and p99 (oha), PostgreSQL
# commits/s (pg_stat_database.xact_commit), CPU of the service and of the
# server (utime + stime from /proc, in % of one core), errors (oha's, and
# answers other than 2xx). Then the check: oha cannot see the answers, so
# the service counts the amounts it answered 200
# (http_accounts_deposited_amount_total on /metrics), and the table's total
# balance must equal that sum, and its total version their count.
#
# The private server: initdb into a temporary directory, postgres on
# 127.0.0.1:$PG_PORT only (as `nobody` through setpriv when run as root),
# fsync on, stopped and removed at the end, also on failure. The only
# target of any request is 127.0.0.1. oha is installed with
# `cargo install oha` when it is missing (the script says so).
#
# Settings (environment): DURATION (10s), WARMUP (2s), RATE (2000),
# CONNECTIONS (256), SHARDS (Ferry's; its default), POOL_SIZE (16),
# PG_PORT (54391), FERRY_PG_BINDIR (else the newest
# /usr/lib/postgresql/*/bin, else $PATH), LOADS ("uniform zipf"), PACINGS
# ("rate closed"), MODES ("ferry pool").
set -euo pipefail
cd "$(dirname "$0")/.."

duration=${DURATION:-10s}
warmup=${WARMUP:-2s}
rate=${RATE:-2000}
connections=${CONNECTIONS:-256}
pool_size=${POOL_SIZE:-16}
pg_port=${PG_PORT:-54391}
loads=${LOADS:-uniform zipf}
pacings=${PACINGS:-rate closed}
modes=${MODES:-ferry pool}
shards_flag=()
[ -n "${SHARDS:-}" ] && shards_flag=(--shards "$SHARDS")
url="postgres://ferry@127.0.0.1:$pg_port/postgres"
work=$(mktemp -d /tmp/ferry-http-compare.XXXXXX)
chmod 755 "$work"
service_pid=""

say() { echo "http-compare: $*" >&2; }

# ---- Phase 1: the tools ---------------------------------------------------

if ! command -v oha >/dev/null; then
    say "oha is not installed: installing it with 'cargo install oha' (a few minutes)"
    cargo install oha --locked >&2
    export PATH="$HOME/.cargo/bin:$PATH"
fi
command -v python3 >/dev/null || { say "python3 is needed (JSON, /proc)"; exit 1; }
pg_bin=${FERRY_PG_BINDIR:-}
if [ -z "$pg_bin" ]; then
    pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
    [ -z "$pg_bin" ] && pg_bin=$(dirname "$(command -v initdb || echo /nonexistent/initdb)")
fi
[ -x "$pg_bin/initdb" ] && [ -x "$pg_bin/postgres" ] || {
    say "PostgreSQL's initdb and postgres were not found: apt-get install -y postgresql"
    exit 1
}
as_server=()
if [ "$(id -u)" = 0 ]; then
    # PostgreSQL refuses to run as root.
    as_server=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)
fi

# ---- Phase 2: the private server --------------------------------------------

cleanup() {
    if [ -n "$service_pid" ]; then kill "$service_pid" 2>/dev/null || true; wait "$service_pid" 2>/dev/null || true; fi
    if [ -f "$work/pg/data/postmaster.pid" ]; then
        "${as_server[@]}" "$pg_bin/pg_ctl" -D "$work/pg/data" -m fast -w -t 30 stop >/dev/null 2>&1 || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

mkdir "$work/pg"
[ "$(id -u)" = 0 ] && chown nobody:nogroup "$work/pg"
"${as_server[@]}" "$pg_bin/initdb" -D "$work/pg/data" -U ferry --auth=trust -E UTF8 \
    --no-locale >"$work/initdb.log" 2>&1 || { cat "$work/initdb.log" >&2; exit 1; }
"${as_server[@]}" "$pg_bin/pg_ctl" -D "$work/pg/data" -l "$work/pg/log" -w -t 60 \
    -o "-p $pg_port -c listen_addresses=127.0.0.1 -c unix_socket_directories=$work/pg -c max_connections=200" \
    start >/dev/null || { cat "$work/pg/log" >&2; exit 1; }
psql() { "$pg_bin/psql" -X -q -At -h 127.0.0.1 -p "$pg_port" -U ferry -d postgres -c "$1"; }
postmaster=$(head -1 "$work/pg/data/postmaster.pid")
say "PostgreSQL $(psql 'SHOW server_version') on 127.0.0.1:$pg_port (fsync $(psql 'SHOW fsync'))"

# ---- Phase 3: the service, in release ---------------------------------------

cargo build --release -q -p ferry-engine --features postgres --example http_accounts
service_bin=target/release/examples/http_accounts

# ---- Phase 4: the loads as URL lists (oha picks a line at random per request)

python3 - "$work" <<'EOF'
import sys
work = sys.argv[1]
base = "http://127.0.0.1:PORT/accounts/{}/deposit\n"
with open(f"{work}/uniform.urls", "w") as f:
    f.writelines(base.format(k) for k in range(100_000))
# zipf:1 over 1,000 accounts: account k (from 1) on a share 1/k of the lines.
harmonic = sum(1 / k for k in range(1, 1001))
with open(f"{work}/zipf.urls", "w") as f:
    for k in range(1, 1001):
        f.writelines([base.format(k - 1)] * max(1, round(100_000 / (k * harmonic))))
EOF

# ---- Phase 5: each run ------------------------------------------------------

# CPU ticks (utime + stime) of a process; with "tree", of a process, its
# children now and its children that exited (PostgreSQL's backends).
cpu_ticks() {
    python3 - "$@" <<'EOF'
import os, sys
pid, tree = sys.argv[1], len(sys.argv) > 2
def fields(p):
    with open(f"/proc/{p}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()
total = 0
for p in os.listdir("/proc"):
    if not p.isdigit():
        continue
    try:
        f = fields(p)
    except OSError:
        continue
    # After the ")": state is [0], ppid [1], utime [11], stime [12], cutime [13], cstime [14].
    if p == pid:
        total += int(f[11]) + int(f[12]) + (int(f[13]) + int(f[14]) if tree else 0)
    elif tree and f[1] == pid:
        total += int(f[11]) + int(f[12])
print(total)
EOF
}
commits() { psql "SELECT xact_commit FROM pg_stat_database WHERE datname = 'postgres'"; }
figure() { grep -E "^$1 " "$work/metrics" | awk '{print $2}' | head -1; }
seconds() { python3 -c "import re,sys; v,u=re.fullmatch(r'([0-9.]+)(ms|s|m)',sys.argv[1]).groups(); print(float(v)*{'ms':0.001,'s':1,'m':60}[u])" "$1"; }
run_seconds=$(seconds "$duration")
ticks_per_second=$(getconf CLK_TCK)

start_service() { # mode table
    "$service_bin" "--$1" --listen 127.0.0.1:0 --database "$url" --table "$2" \
        --pool-size "$pool_size" "${shards_flag[@]}" >"$work/service.out" 2>"$work/service.err" &
    service_pid=$!
    for _ in $(seq 600); do
        grep -q "listening on" "$work/service.out" 2>/dev/null && break
        kill -0 "$service_pid" 2>/dev/null || { cat "$work/service.err" >&2; exit 1; }
        sleep 0.1
    done
    address=$(sed -n 's/.*listening on http:\/\///p' "$work/service.out")
    [ -n "$address" ] || { say "the service did not start within 60 s"; exit 1; }
}

stop_service() {
    kill "$service_pid"
    wait "$service_pid" 2>/dev/null || true
    service_pid=""
}

oha_run() { # out.json length urls pacing...
    local out=$1 length=$2 urls=$3
    shift 3
    local seconds_bound
    seconds_bound=$(python3 -c "print(int($(seconds "$length")) + 120)")
    timeout "$seconds_bound" oha --no-tui -z "$length" -w -m POST -T application/json \
        -d '{"amount":7}' -t 30s "$@" --urls-from-file "$urls" --output-format json >"$out"
}

printf '%s\n' "load pacing mode requests/s p50_ms p99_ms pg_commits/s service_cpu% server_cpu% errors balances" >"$work/table"
for load in $loads; do
    for pacing in $pacings; do
        for mode in $modes; do
            table="http_${load}_${pacing}_${mode}"
            psql "DROP TABLE IF EXISTS $table, ${table}_events"
            start_service "$mode" "$table"
            sed "s/127.0.0.1:PORT/$address/" "$work/$load.urls" >"$work/run.urls"
            case $pacing in
                rate) pace=(-c "$connections" -q "$rate" --latency-correction) ;;
                closed) pace=(-c "$connections") ;;
            esac
            say "$load, $pacing, $mode: warm-up $warmup, then $duration"
            oha_run "$work/warmup.json" "$warmup" "$work/run.urls" "${pace[@]}"
            sleep 1.5 # PostgreSQL's backends publish their counts within a second of going idle
            commits_before=$(commits)
            service_before=$(cpu_ticks "$service_pid")
            server_before=$(cpu_ticks "$postmaster" tree)
            oha_run "$work/run.json" "$duration" "$work/run.urls" "${pace[@]}"
            service_after=$(cpu_ticks "$service_pid")
            server_after=$(cpu_ticks "$postmaster" tree)
            sleep 1.5
            commits_after=$(commits)
            curl -sf "http://$address/metrics" >"$work/metrics"
            stop_service
            applied_sum=$(figure http_accounts_deposited_amount_total)
            applied_count=$(figure 'http_requests_total\{route="deposit",status="200"\}')
            read -r held_sum held_versions < <(psql "SELECT coalesce(sum((convert_from(state, 'UTF8')::jsonb->>'balance')::bigint), 0), coalesce(sum(version), 0) FROM $table" | tr '|' ' ')
            python3 - "$work/run.json" "$run_seconds" "$ticks_per_second" \
                "$load" "$pacing" "$mode" "$commits_before" "$commits_after" \
                "$service_before" "$service_after" "$server_before" "$server_after" \
                "${applied_sum:-0}" "${applied_count:-0}" "$held_sum" "$held_versions" >>"$work/table" <<'EOF'
import json, sys
(path, seconds, hz, load, pacing, mode, c0, c1, s0, s1, p0, p1,
 applied_sum, applied_count, held_sum, held_versions) = sys.argv[1:]
run = json.load(open(path))
seconds, hz = float(seconds), float(hz)
statuses = run.get("statusCodeDistribution", {})
errors = sum(run.get("errorDistribution", {}).values())
errors += sum(n for code, n in statuses.items() if not code.startswith("2"))
ok = sum(n for code, n in statuses.items() if code.startswith("2"))
wall = run["summary"]["total"]
pct = run["latencyPercentiles"]
wrong = abs(int(float(applied_sum)) - int(held_sum))
check = "ok" if wrong == 0 and int(float(applied_count)) == int(held_versions) else \
    f"WRONG:table_{held_sum}/{held_versions}_answered_{applied_sum}/{applied_count}"
print(load, pacing, mode, f"{ok / wall:,.0f}", f"{pct['p50'] * 1000:.2f}", f"{pct['p99'] * 1000:.2f}",
      f"{(int(c1) - int(c0)) / wall:,.0f}", f"{(int(s1) - int(s0)) / hz / wall * 100:.0f}",
      f"{(int(p1) - int(p0)) / hz / wall * 100:.0f}", errors, check)
EOF
            tail -1 "$work/table" >&2
        done
    done
done

# ---- Phase 6: the table -------------------------------------------------------

echo
echo "oha ${duration} a run (after ${warmup} of warm-up), fixed rate ${rate}/s or closed loop; ${connections} connections; pool of ${pool_size}; machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
column -t "$work/table"
if grep -q WRONG "$work/table"; then
    say "some balances did not add up"
    exit 1
fi
