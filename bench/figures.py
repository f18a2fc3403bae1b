#!/usr/bin/env python3
"""The simulated-store figures of docs/benchmarks.md, run and rendered.

Each scenario below is one `ferry-load` command. This script runs it with
`--json docs/figures/NAME.json`, adds to that file when and where it ran
(`taken`), and writes its command and table into docs/benchmarks.md
between `<!-- figures:NAME -->` and `<!-- /figures -->`. A section whose
JSON file does not exist is left as it is.

    python3 bench/figures.py                   # build, run every scenario, render
    python3 bench/figures.py overhead contended  # only these (render all)
    python3 bench/figures.py --render-only     # render from the saved JSON

Python 3.8 or later, standard library only. Runs take the machine's
cores: run them on a machine that is otherwise idle.
"""

import argparse
import datetime
import json
import math
import os
import platform
import re
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "benchmarks.md"
FIGURES = ROOT / "docs" / "figures"

# name -> ferry-load's arguments (the simulated store only: these need no
# server and take seconds to a minute each).
SCENARIOS = {
    "contended": "--keys 1000 --dist zipf:1.0 --store-rtt 1ms --clients 2000 --duration 5s",
    "overhead": "--keys 100000 --dist uniform --store-rtt 0 --clients 4000 --duration 5s"
    " --sweep-shards 1,2",
    "unkeyed-overhead": "unkeyed --store-rtt 0 --duration 3s",
    "unkeyed-rtt": "unkeyed --store-rtt 1ms --duration 3s",
    "trips-sim": "--keys 100000 --dist uniform --clients 2000 --store-rtt 1ms --duration 5s"
    " --max-in-flight-batches 4 --compare ferry,ferry-trips,multi-key",
}

SECTION = re.compile(
    r"(<!-- figures:(?P<name>[a-z0-9-]+) -->\n)(?P<body>.*?)(<!-- /figures -->)",
    re.DOTALL,
)


def main():
    args = parse_args()
    if not args.render_only:
        binary = build()
        FIGURES.mkdir(parents=True, exist_ok=True)
        for name in args.scenarios or list(SCENARIOS):
            run(binary, name)
    render()


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--render-only",
        action="store_true",
        help="run nothing: render docs/benchmarks.md from docs/figures/*.json",
    )
    parser.add_argument("scenarios", nargs="*", metavar="NAME", help=", ".join(SCENARIOS))
    args = parser.parse_args()
    unknown = [name for name in args.scenarios if name not in SCENARIOS]
    if unknown:
        parser.error(f"no scenario {', '.join(unknown)}; the scenarios: {', '.join(SCENARIOS)}")
    return args


def build():
    """Builds ferry-load in release and returns its path."""
    subprocess.run(["cargo", "build", "--release", "-p", "ferry-bench"], cwd=ROOT, check=True)
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    if not target.is_absolute():
        target = ROOT / target
    return target / "release" / "ferry-load"


def run(binary, name):
    """Runs one scenario into docs/figures/NAME.json, with when and where."""
    path = FIGURES / f"{name}.json"
    taken = machine()
    command = [str(binary), *SCENARIOS[name].split(), "--json", str(path)]
    print(f"figures: {name}: {' '.join(command)}", file=sys.stderr)
    done = subprocess.run(command, cwd=ROOT)
    if done.returncode != 0 or not path.exists():
        sys.exit(f"figures: {name}: ferry-load exited with status {done.returncode}; "
                 f"its output above says why (nothing rendered)")
    report = json.loads(path.read_text())
    report["command"] = portable(report["command"])
    report["taken"] = taken
    path.write_text(json.dumps(report, indent=2) + "\n")


def portable(command):
    """The recorded command line with this checkout's directory taken out
    of its paths (`ferry-load` and its `--json` file), so that the saved
    file reads the same wherever it was made."""
    words = command.split()
    words[0] = "ferry-load"
    return " ".join(os.path.relpath(w, ROOT) if w.startswith(str(ROOT) + "/") else w
                    for w in words)


def machine():
    """When and where a run is taken, read before it starts."""
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        "cpus": os.cpu_count(),
        "cpu_model": cpu_model(),
        "kernel": platform.release(),
        "load_average": round(os.getloadavg()[0], 2),
    }


def cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def render():
    """Rewrites every section of the doc whose JSON file exists."""
    text = DOC.read_text()
    rendered, kept = [], []

    def section(match):
        name = match.group("name")
        path = FIGURES / f"{name}.json"
        if not path.exists():
            kept.append(name)
            return match.group(0)
        rendered.append(name)
        body = render_report(name, json.loads(path.read_text()))
        return match.group(1) + body + match.group(4)

    new = SECTION.sub(section, text)
    if new != text:
        DOC.write_text(new)
    print(f"figures: rendered {', '.join(rendered) or 'nothing'}"
          f"; as typed (no JSON): {', '.join(kept) or 'none'}", file=sys.stderr)


def render_report(name, report):
    """A section's body: the command and its table, then the ratios and
    where it ran."""
    runs = report["runs"]
    lines = ["```", shown_command(report["command"]), *table(runs), "```", ""]
    words = ratios(runs)
    taken = report.get("taken")
    if taken:
        words += (
            f"Taken {taken['date']} on {taken['cpus']} CPUs ({taken['cpu_model']}), "
            f"Linux {taken['kernel']}, load average {taken['load_average']} at the start; "
        )
    words += f"`bench/figures.py {name}` writes it."
    lines += textwrap.wrap(words, width=72, break_on_hyphens=False)
    return "\n".join(lines) + "\n"


def shown_command(command):
    """The recorded command line as a cargo command, without --json."""
    words = command.split()[1:]
    if "--json" in words:
        at = words.index("--json")
        del words[at:at + 2]
    return " ".join(["cargo run --release -p ferry-bench --", *words])


def table(runs):
    """The table ferry-load prints (bench/src/report.rs, `table`)."""
    width = max([15] + [len(run["system"]) for run in runs])
    head = ("system", "shards", "inputs/s", "batch", "p50 µs", "p90 µs", "p99 µs", "p99.9 µs",
            "max µs", "conflicts", "refused", "failed", "lost", "cpu µs/in")
    rows = [row(width, head)]
    for run in runs:
        rows.append(row(width, (
            run["system"],
            "-" if run["shards"] is None else str(run["shards"]),
            thousands(whole(run["throughput"])),
            f"{run['mean_batch']:.2f}",
            micros(run["p50_us"]),
            micros(run["p90_us"]),
            micros(run["p99_us"]),
            micros(run["p999_us"]),
            micros(run["max_us"]),
            thousands(run["conflicts"]),
            thousands(run["refused"]),
            thousands(run["failed"]),
            thousands(run["lost"]),
            f"{run['cpu_us_per_input']:.2f}",
        )))
    return rows


def row(width, cells):
    widths = (width, 6, 11, 6, 9, 9, 9, 9, 9, 9, 8, 7, 5, 9)
    first = f"{cells[0]:<{widths[0]}}"
    rest = [f"{cell:>{w}}" for cell, w in zip(cells[1:], widths[1:])]
    return " ".join([first, *rest]).rstrip()


def ratios(runs):
    """The reference's best throughput over each other system's, as
    ferry-load prints them, in one sentence ("" without a reference)."""
    systems = {run["system"] for run in runs}
    reference = "ferry" if "ferry" in systems else "batcher" if "batcher" in systems else None
    if reference is None:
        return ""
    best = max((run for run in runs if run["system"] == reference), key=lambda r: r["throughput"])
    others = [
        f"{label(other)} {best['throughput'] / other['throughput']:.2f}×"
        for other in runs
        if other["system"] != reference and other["throughput"] > 0
    ]
    if not others:
        return ""
    return f"{label(best)} / " + ", / ".join(others) + ". "


def label(run):
    shards = run["shards"]
    if shards is None:
        return run["system"]
    return f"{run['system']} ({shards} shard{'' if shards == 1 else 's'})"


def thousands(n):
    return f"{n:,}"


def micros(us):
    """One decimal below 100, whole and grouped above (report.rs, `micros`)."""
    return f"{us:.1f}" if us < 100 else thousands(whole(us))


def whole(x):
    """Rounded half away from zero, as Rust's `f64::round` (Python's
    `round` goes to the even neighbour)."""
    return int(math.copysign(math.floor(abs(x) + 0.5), x))


if __name__ == "__main__":
    main()
