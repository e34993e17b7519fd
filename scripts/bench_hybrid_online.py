"""Online hybrid scheduling on Gavel workloads: failures, and re-planning against the others.

Usage:
    python scripts/bench_hybrid_online.py --part failures|policies [--seeds 0,1,2]
        [--rates 2.8,4.8] [--jobs 6000] [--window 4000:5000] [--replan-method greedy]
        [--per-decision 2] [--parallel 2] [--cache DIR] [--out FILE.md]

Every point is Gavel's generator (36 V100 + 36 P100 + 36 K80, single-GPU jobs, the
seed's workload) simulated in event mode with the default overheads charged (30 s
restore, 60 s migration) and measured over ``--window``; every run log is verified (the
verifier holds it to its failures, checkpoints and lost work too).

Part ``failures`` (issue 33, "Failures"): one node down per simulated day on average
(seeded by the workload's seed), each for an hour, checkpoints every 30 minutes of work, at
2.8 jobs/h, beside the same runs without failures: failures, jobs completed, GPU-hours
lost, mean JCT.

Part ``policies`` (issue 33, "Online"): fifo, sjf, srtf, las and ``replan`` with
``--replan-method`` at ``--per-decision`` seconds, with and without
``--replan-disruption`` (a day of objective per stopped job), at each rate: mean JCT and
preemptions plus migrations per job.
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
THROUGHPUTS = (ROOT.parent / "shared" / "benchmarks" / "gpu-traces" / "gavel"
               / "simulation_throughputs.json")
CLUSTER = {"v100": 36, "p100": 36, "k80": 36}
#: Seconds of objective a stopped running job costs in the disruption runs: a day.
DISRUPTION_S = 86_400.0


def _point(key: str, rate: float, seed: int, jobs: int, window: tuple[int, int],
           scheduler: str, options: dict[str, str], failures: bool,
           per_decision: float) -> dict[str, Any]:
    """One run: its metrics, failures, lost GPU-hours and wall seconds."""
    import time

    import numpy as np

    from gpuplan.core.settings import RunSettings
    from gpuplan.simulate.engine import Failures
    from gpuplan.simulate.run import RunSpec, simulate_run
    from gpuplan.simulate.workload import gavel_workload_instance

    workload = gavel_workload_instance(THROUGHPUTS, CLUSTER, jobs, rate, seed=seed)
    spec = RunSpec(scheduler=scheduler, options=options, seed=seed, window=window,
                   settings=RunSettings(time_limit_s=per_decision, threads=1, seed=seed),
                   failures=Failures(per_day=1.0, down_s=3_600.0, checkpoint_s=1_800.0,
                                     seed=seed) if failures else Failures())
    began = time.perf_counter()
    log = simulate_run(workload, spec)
    assert log.verification is not None and log.verification.ok and log.run is not None
    result = log.result
    lost = result.lost_work()
    gang = workload.gang[result.job]
    seconds = np.where(lost > 0, workload.duration[result.job, result.gpu_type], 0.0)
    return {"key": key, "metrics": log.run.metrics, "failures": len(log.run.failures),
            "completed": int(np.unique(result.job).size), "jobs": workload.n_jobs,
            "lost_gpu_h": float((lost * seconds * gang).sum() / 3600.0),
            "solver_s": log.run.solver_s, "wall_s": time.perf_counter() - began}


def main() -> None:
    """Run the part's points (cached, in parallel) and write its table."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--part", choices=("failures", "policies"), required=True)
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--rates", default="2.8,4.8")
    parser.add_argument("--jobs", type=int, default=6000)
    parser.add_argument("--window", default="4000:5000")
    parser.add_argument("--replan-method", default="greedy")
    parser.add_argument("--per-decision", type=float, default=2.0)
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("--cache", default="/tmp/gpuplan_hybrid_online")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    first, last = (int(v) for v in args.window.split(":"))
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    points: list[tuple[Any, ...]] = []
    if args.part == "failures":
        for seed in seeds:
            for scheduler in ("fifo", "srtf", "las", "replan"):
                for failing in (False, True):
                    options = ({"replan_method": args.replan_method}
                               if scheduler == "replan" else {})
                    points.append((f"f-{scheduler}-{seed}-{failing}", 2.8, seed, scheduler,
                                   options, failing))
    else:
        for rate in (float(r) for r in args.rates.split(",")):
            for seed in seeds:
                for scheduler in ("fifo", "sjf", "srtf", "las"):
                    points.append((f"p-{scheduler}-{rate}-{seed}", rate, seed, scheduler, {},
                                   False))
                for price in (0.0, DISRUPTION_S):
                    options = {"replan_method": args.replan_method,
                               "replan_disruption": str(price)}
                    points.append((f"p-replan-{args.replan_method}-{price:g}-{args.per_decision:g}"
                                   f"-{rate}-{seed}", rate, seed, "replan", options, False))
    found: dict[str, dict[str, Any]] = {}
    todo = []
    for key, rate, seed, scheduler, options, failing in points:
        path = cache / f"{key}-{args.jobs}.json"
        if path.exists():
            found[key] = json.loads(path.read_text())
        else:
            todo.append((key, rate, seed, args.jobs, (first, last), scheduler, options, failing,
                         args.per_decision))
    with ProcessPoolExecutor(args.parallel) as pool:
        for got in pool.map(_point, *zip(*todo, strict=True)) if todo else []:
            (cache / f"{got['key']}-{args.jobs}.json").write_text(json.dumps(got))
            found[got["key"]] = got
    rows: list[str] = []
    if args.part == "failures":
        rows += [f"| policy | failures ({len(seeds)} seeds) | jobs completed | GPU-hours "
                 "lost | mean JCT without failures (h) | with (h) |", "|---|---|---|---|---|---|"]
        for scheduler in ("fifo", "srtf", "las", "replan"):
            without = [found[f"f-{scheduler}-{s}-False"] for s in seeds]
            with_ = [found[f"f-{scheduler}-{s}-True"] for s in seeds]
            rows.append(
                f"| {scheduler} | {sum(g['failures'] for g in with_)} | "
                f"{sum(g['completed'] for g in with_)} of {sum(g['jobs'] for g in with_)} | "
                f"{sum(g['lost_gpu_h'] for g in with_):.1f} | "
                f"{statistics.mean(g['metrics']['mean_jct_h'] for g in without):.2f} | "
                f"{statistics.mean(g['metrics']['mean_jct_h'] for g in with_):.2f} |")
    else:
        rows += ["| rate (jobs/h) | policy | mean JCT (h), mean of seeds | preemptions + "
                 "migrations per job | solver s per run |", "|---|---|---|---|---|"]
        for rate in (float(r) for r in args.rates.split(",")):
            names = ["fifo", "sjf", "srtf", "las"] + [
                f"replan-{args.replan_method}-{price:g}-{args.per_decision:g}"
                for price in (0.0, DISRUPTION_S)]
            for name in names:
                got = [found[f"p-{name}-{rate}-{s}"] for s in seeds]
                jct = statistics.mean(g["metrics"]["mean_jct_h"] for g in got)
                moves = statistics.mean(g["metrics"]["preemptions_per_job"]
                                        + g["metrics"]["migrations_per_job"] for g in got)
                solver = [g["solver_s"] for g in got if g["solver_s"] is not None]
                rows.append(f"| {rate:g} | {name} | {jct:.2f} | {moves:.3f} | "
                            f"{statistics.mean(solver):.0f} |" if solver else
                            f"| {rate:g} | {name} | {jct:.2f} | {moves:.3f} | - |")
    command = shlex.join(["scripts/bench_hybrid_online.py", *sys.argv[1:]])
    title = "Failures, online" if args.part == "failures" else "Re-planning online"
    text = (f"# {title}\n\nWritten by `python {command}` on this machine's 2 cores "
            "(shared). Gavel's generator, 36:36:36, single-GPU jobs, event mode, 30 s restore "
            f"and 60 s migration charged, jobs {args.window} measured of {args.jobs}, seeds "
            f"{args.seeds}; every run log verified.\n\n" + "\n".join(rows) + "\n")
    Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
