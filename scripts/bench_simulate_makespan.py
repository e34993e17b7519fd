"""Gavel's static makespan batches, gpuplan's offline plans of them, and replan's first numbers.

Usage:
    python scripts/bench_simulate_makespan.py [--seeds 0,1,2] [--jobs 700]
        [--time-limit 60] [--part makespan,replan] [--replan-jobs 6000]
        [--replan-window 4000:5000] [--replan-limit 1]
        [--out docs/results/simulate_makespan.md]

Part ``makespan``: Gavel's makespan figure (``run_sweep_static.py``: every job at time 0,
multi-GPU jobs, cluster 36:36:36). Each seed's batch is ``gpuplan generate --cluster
36:36:36 --arrival-rate 0 --multi-gpu --gpus-per-node 36`` (Gavel's generator, Gavel's
jobs). Gavel's simulator ignores servers, so a gang may use any GPUs of one type; gpuplan
keeps a gang on one node, so one node per type (``--gpus-per-node 36``) gives Gavel's
model. The batch is simulated with Gavel's FIFO baseline (``gavel-fifo-agnostic``) and
Gavel's makespan policy (``gavel-makespan``) under ``--preset gavel``, and planned offline
by gpuplan (``gpuplan solve --objective makespan``): greedy list scheduling, simulated
annealing and CP-SAT plan start times (a job runs once, whole, on one type); balance plans
Gavel-style time fractions rounded to 360 s rounds (jobs are preempted and migrated, as
in Gavel's simulator). Every number is the command's own output, from the file it wrote.

Part ``replan``: Gavel's continuous protocol at 2.8 jobs/h, seed 0 (single-GPU jobs,
36:36:36, window of job ids): the ``replan`` hook with CP-SAT and with greedy beside
Gavel's LAS (round mode, ``--preset gavel``) and fifo, las, srtf in event mode with the
same zero overheads. Seconds are each command's wall time, including generating nothing
(the workload is written once), simulating, verifying and writing the run log.

One command runs at a time (the machine is shared).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuplan.harness.bench import write_results

ROOT = Path(__file__).resolve().parent.parent
THROUGHPUTS = (ROOT.parent / "shared" / "benchmarks" / "gpu-traces" / "gavel"
               / "simulation_throughputs.json")
GPUPLAN = [sys.executable, "-m", "gpuplan.cli"]

#: Gavel's published makespans (``makespan.ipynb``, mean over seeds 0-2, 700 jobs), hours.
PUBLISHED = {"fifo": 619.518, "gavel": 244.231}
PUBLISHED_JOBS = 700
#: Gavel's base FIFO at its HEAD, 700 jobs, per seed (run by hand with stubs), hours.
GAVEL_HEAD_FIFO = {0: 1756.7, 1: 574.5, 2: 668.8}

MAKESPAN_NOTES = """FIFO is Gavel's base FIFO (`gavel-fifo-agnostic`, its type-choice quirk
over-subscribing V100s included), Gavel is `gavel-makespan` (Gavel's
`min_total_duration_perf`, solved exactly instead of Gavel's 5% bisection), both in round
mode with `--preset gavel`. FIFO published is the mean of Gavel's logs; FIFO Gavel HEAD is
Gavel's simulator at its HEAD on the same seeds (run by hand, docs/gavel_protocol.md §5):
the base FIFO is seed-sensitive, and the published 619.5 h is not reproducible from the
HEAD code. One node of 36 GPUs per type (`--gpus-per-node 36`): Gavel's simulator lets a
gang take any GPUs of a type, gpuplan keeps a gang on one node. A start-time plan runs each
job once, whole, on one type (no preemption); balance plans time fractions, rounded to
360 s rounds, preempting and migrating as Gavel does. The bound is the work-over-capacity
LP (the same optimum as Gavel's makespan LP), a lower bound for both kinds of plan; the
gap is the start-time plan's.
"""

#: Offline plans: (label, ``gpuplan solve`` flags after the instance); the time limit is
#: appended to the anytime methods.
PLANS: list[tuple[str, list[str], bool]] = [
    ("greedy", ["--method", "greedy"], False),
    ("sa", ["--method", "sa"], True),
    ("cp (tick 600 s)", ["--method", "cp", "--tick", "600"], True),
    ("balance (time fractions)", ["--method", "balance", "--policy", "makespan"], False),
]

#: Replan part: (label, ``gpuplan simulate`` flags after the workload).
EVENT = ["--mode", "event", "--restart-overhead", "0", "--migration-overhead", "0"]
REPLAN_RUNS: list[tuple[str, list[str]]] = [
    ("gavel-las (round)", ["--policy", "gavel-las", "--preset", "gavel"]),
    ("replan cp", ["--policy", "replan", "--replan-method", "cp", "--replan-every", "1920",
                   "--preset", "gavel"]),
    ("replan greedy", ["--policy", "replan", "--replan-method", "greedy",
                       "--replan-every", "1920", "--preset", "gavel"]),
    ("fifo (event)", ["--policy", "fifo", *EVENT]),
    ("las (event)", ["--policy", "las", *EVENT]),
    ("srtf (event)", ["--policy", "srtf", *EVENT]),
]


@dataclass(frozen=True)
class Timed:
    """A finished command: wall seconds, its peak resident memory and its output."""

    seconds: float
    peak_mib: float
    output: str


def run_timed(args: list[str]) -> Timed:
    """Run one command to completion; its wall time and its own peak memory.

    The peak is the child's maximum resident set (``wait4``'s rusage, KiB on Linux), so
    the benchmark's own memory is not counted.

    Raises
    ------
    RuntimeError
        If the command exits non-zero (its output is in the message).
    """
    began = time.perf_counter()
    with subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, cwd=ROOT) as child:
        output = child.stdout.read() if child.stdout is not None else ""
        _, status, usage = os.wait4(child.pid, 0)
        # Popen must not wait for a child wait4 has already reaped.
        child.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - began
    if child.returncode != 0:
        raise RuntimeError(f"{shlex.join(args)} exited {child.returncode}:\n{output}")
    return Timed(seconds, usage.ru_maxrss / 1024, output)


def shown(args: list[str]) -> str:
    """A command as a reader would type it (``gpuplan`` instead of the interpreter)."""
    words = ["gpuplan", *args[len(GPUPLAN):]] if args[:len(GPUPLAN)] == GPUPLAN else args
    return shlex.join(str(w) for w in words)


def generate(out: Path, jobs: int, seed: int, rate: float, extra: list[str],
             cluster: str = "36:36:36") -> list[str]:
    """Write a Gavel workload (on 36:36:36 unless told); the command that wrote it."""
    args = [*GPUPLAN, "generate", "--cluster", cluster, "--arrival-rate", f"{rate:g}",
            "--jobs", str(jobs), "--throughputs", str(THROUGHPUTS), "--seed", str(seed),
            *extra, "-o", str(out)]
    run_timed(args)
    return args


def simulate(workload: Path, flags: list[str], out: Path) -> tuple[dict[str, Any], Timed]:
    """Simulate a workload; the run's metrics and the timed command."""
    timed = run_timed([*GPUPLAN, "simulate", str(workload), *flags, "-o", str(out)])
    metrics: dict[str, Any] = json.loads(out.read_text())["run"]["metrics"]
    return metrics, timed


def solve(workload: Path, flags: list[str], out: Path) -> tuple[dict[str, Any], Timed]:
    """Plan a workload for makespan; the verified schedule file and the timed command."""
    timed = run_timed([*GPUPLAN, "solve", str(workload), "--objective", "makespan", *flags,
                       "-o", str(out)])
    schedule: dict[str, Any] = json.loads(out.read_text())
    return schedule, timed


def hours(seconds: float | None) -> str:
    """Seconds as hours to one decimal, or a dash."""
    return "-" if seconds is None else f"{seconds / 3600:.1f}"


def makespan_part(seeds: list[int], jobs: int, limit: float, work: Path) -> str:
    """The makespan tables (per seed and per method) as Markdown."""
    summary: list[list[str]] = []
    methods: list[str] = []
    fifo_all, gavel_all, best_all, start_all, bound_all = [], [], [], [], []
    heads: list[float | None] = []
    for seed in seeds:
        workload = work / f"static_{seed}.json"
        made = generate(workload, jobs, seed, 0.0, ["--multi-gpu", "--gpus-per-node", "36"])
        fifo, _ = simulate(workload, ["--policy", "gavel-fifo-agnostic", "--preset", "gavel"],
                           work / "fifo.json")
        gavel, _ = simulate(workload, ["--policy", "gavel-makespan", "--preset", "gavel"],
                            work / "gavel.json")
        plans: list[tuple[str, float, float, float]] = []
        for label, flags, anytime in PLANS:
            extra = ["--time-limit", f"{limit:g}"] if anytime else []
            schedule, timed = solve(workload, [*flags, *extra], work / "plan.json")
            plans.append((label, schedule["objective"], schedule["bound"], timed.seconds))
            methods.append(f"| {seed} | {label} | {hours(schedule['objective'])} | "
                           f"{hours(schedule['bound'])} | {100 * schedule['gap']:.2f}% | "
                           f"{timed.seconds:.1f} |")
            print(methods[-1], flush=True)
        starts = [p for p in plans if not p[0].startswith("balance")]
        best = min(plans, key=lambda p: p[1])
        start_best = min(starts, key=lambda p: p[1])
        fifo_all.append(fifo["makespan_h"])
        gavel_all.append(gavel["makespan_h"])
        best_all.append(best[1] / 3600)
        start_all.append(start_best[1] / 3600)
        bound_all.append(start_best[2] / 3600)
        head = GAVEL_HEAD_FIFO.get(seed) if jobs == PUBLISHED_JOBS else None
        heads.append(head)
        summary.append([str(seed), "-", "-" if head is None else f"{head:.1f}",
                        f"{fifo['makespan_h']:.1f}", "-", f"{gavel['makespan_h']:.1f}",
                        f"{hours(best[1])} ({best[0]})",
                        f"{hours(start_best[1])} ({start_best[0]})", hours(start_best[2]),
                        f"{100 * (start_best[1] - start_best[2]) / start_best[1]:.2f}%",
                        f"{start_best[3]:.1f}"])
        print(summary[-1], "workload:", shown(made), flush=True)

    def mean(values: list[float]) -> str:
        return f"{sum(values) / len(values):.1f}"

    summary.append([f"mean ({', '.join(map(str, seeds))})", f"{PUBLISHED['fifo']:.1f}",
                    "-" if None in heads else mean([h for h in heads if h is not None]),
                    mean(fifo_all),
                    f"{PUBLISHED['gavel']:.1f}", mean(gavel_all), mean(best_all),
                    mean(start_all), mean(bound_all), "", ""])
    rows = ["| seed | FIFO published | FIFO Gavel HEAD | FIFO ours | Gavel published | "
            "Gavel ours | best gpuplan plan (method) | best start-time plan (method) | "
            "bound | start-time gap | start-time s |", "|---|" + "---:|" * 10]
    rows += ["| " + " | ".join(row) + " |" for row in summary]
    per_method = ["| seed | method | makespan h | bound h | gap | seconds |",
                  "|---|---|---:|---:|---:|---:|", *methods]
    return ("\n".join(rows) + "\n\n" + MAKESPAN_NOTES + "\nEach offline plan:\n\n"
            + "\n".join(per_method))


def replan_part(jobs: int, window: str, limit: float, work: Path) -> tuple[str, str]:
    """The replan table at 2.8 jobs/h, seed 0, and the command that made its workload."""
    workload = work / "continuous.json"
    made = generate(workload, jobs, 0, 2.8, [])
    rows = ["| policy | mean JCT h | p95 JCT h | makespan h | utilisation | wall s | "
            "peak MiB |", "|---|---:|---:|---:|---:|---:|---:|"]
    for label, flags in REPLAN_RUNS:
        extra = ["--time-limit", f"{limit:g}"] if "--replan-method" in flags else []
        metrics, timed = simulate(workload, [*flags, *extra, "--window", window],
                                  work / "run.json")
        rows.append(f"| {label} | {metrics['mean_jct_h']:.2f} | {metrics['p95_jct_h']:.2f} | "
                    f"{metrics['makespan_h']:.1f} | {metrics['utilisation_share']:.3f} | "
                    f"{timed.seconds:.0f} | {timed.peak_mib:.0f} |")
        print(rows[-1], flush=True)
    return "\n".join(rows), shown(made)


TITLE = "# Makespan batches and replan\n\n"
#: Opens each part's section (with the part's name and " -->"), so a run of one part keeps
#: the other's section.
PART_OPEN = "<!-- part: "


def kept_sections(out: Path) -> dict[str, str]:
    """The sections of an earlier results file by part name (none if there is no file)."""
    if not out.exists():
        return {}
    sections: dict[str, str] = {}
    for piece in out.read_text().split(PART_OPEN)[1:]:
        name, body = piece.split(" -->\n", 1)
        sections[name] = body
    return sections


def main() -> None:
    """Run the chosen parts and write the results file."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--jobs", type=int, default=700)
    parser.add_argument("--time-limit", type=float, default=60.0,
                        help="seconds per anytime offline plan (sa, cp)")
    parser.add_argument("--part", default="makespan,replan")
    parser.add_argument("--replan-jobs", type=int, default=6000)
    parser.add_argument("--replan-window", default="4000:5000")
    parser.add_argument("--replan-limit", type=float, default=1.0,
                        help="seconds per replan solve")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "results" /
                        "simulate_makespan.md")
    args = parser.parse_args()
    parts = args.part.split(",")
    seeds = [int(s) for s in args.seeds.split(",")]
    command = shlex.join(["python", "scripts/bench_simulate_makespan.py", *sys.argv[1:]])
    written = f"Written by `{command}`."
    sections = kept_sections(args.out)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if "makespan" in parts:
            sections["makespan"] = (
                f"## Gavel's static makespan batch ({args.jobs} jobs, 36:36:36)\n\n{written} "
                f"Workloads: `gpuplan generate --cluster 36:36:36 --arrival-rate 0 --jobs "
                f"{args.jobs} --multi-gpu --throughputs simulation_throughputs.json --seed S "
                f"--gpus-per-node 36`; simulations with `--preset gavel`; offline plans with "
                f"`gpuplan solve W.json --objective makespan ...`, `--time-limit "
                f"{args.time_limit:g}` for sa and cp. Makespans in hours.\n\n"
                + makespan_part(seeds, args.jobs, args.time_limit, work) + "\n")
        if "replan" in parts:
            table, made = replan_part(args.replan_jobs, args.replan_window,
                                      args.replan_limit, work)
            sections["replan"] = (
                f"## Replan at 2.8 jobs/h, seed 0 (window {args.replan_window})\n\n{written} "
                f"Workload: `{made}`. Replan solves with `--time-limit "
                f"{args.replan_limit:g}` per call.\n\n{table}\n")
    write_results(args.out, TITLE + "".join(f"{PART_OPEN}{name} -->\n{body}"
                                            for name, body in sorted(sections.items())))


if __name__ == "__main__":
    main()
