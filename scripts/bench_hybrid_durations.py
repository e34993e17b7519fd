"""Uncertain durations: a plan made on estimates, run against actual durations.

Issue 33's protocol: the 700-job makespan batch of docs/benchmarks.md ("Gavel's static
makespan batches": Gavel's generator, every job at time 0, multi-GPU jobs, 36:36:36 with
one node per type) for seeds 0-2, actual durations log-normal around the estimates
(median 1, sigma 0.3, seeded by the batch's seed). Three ways, each verified:

- *clairvoyant*: cp plans the actual durations offline (``--limit`` seconds);
- *static*: the simulator's ``replan`` with cp plans the estimates once when the run starts
  (``--limit`` seconds) and the run follows that plan's order and types
  (``--replan-strict true``), never re-planning;
- *hybrid*: the same first plan, then cp re-plans what is left at every completion
  (``--per-decision`` seconds each);
- *hybrid-kept*: the same first plan, then greedy re-plans at every completion with the
  least disruption: each running job a re-plan would stop or move costs
  :data:`KEPT_PRICE_S` seconds of makespan (``--replan-disruption``), and greedy's repair
  keeps every running job where it runs.

The simulated runs pay the default overheads (30 s restore, 60 s migration). Each point
runs in its own process (``--point``), ``--parallel`` at a time, one solver thread each;
results are cached as JSON in ``--cache``. Writes a Markdown table.

Usage: python scripts/bench_hybrid_durations.py [--seeds 0,1,2] [--limit 60]
           [--per-decision 2] [--parallel 2] [--out docs/results/hybrid_durations.md]
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
THROUGHPUTS = (ROOT.parent / "shared" / "benchmarks" / "gpu-traces" / "gavel"
               / "simulation_throughputs.json")
WAYS = ("clairvoyant", "static", "hybrid", "hybrid-kept")
#: Seconds of makespan a running job stopped or moved costs in ``hybrid-kept``.
KEPT_PRICE_S = 600.0
#: The method of each way's re-plans after the first plan.
REPLANNER = {"static": "cp", "hybrid": "cp", "hybrid-kept": "greedy"}


def _point(seed: int, way: str, limit: float, per_decision: float) -> dict[str, float]:
    """One way on one seed: the makespan it reaches and its wall seconds."""
    from gpuplan.core.objectives import ObjectiveKind
    from gpuplan.core.settings import RunSettings
    from gpuplan.planning import plan
    from gpuplan.simulate.run import RunSpec, simulate_run
    from gpuplan.simulate.workload import gavel_workload_instance

    batch = gavel_workload_instance(THROUGHPUTS, {"v100": 36, "p100": 36, "k80": 36}, 700,
                                    0.0, gpus_per_node=36, seed=seed, multi_gpu=True)
    batch = batch.with_objective(ObjectiveKind.MAKESPAN)
    scale = np.random.default_rng(seed).lognormal(0.0, 0.3, batch.n_jobs)
    began = time.perf_counter()
    if way == "clairvoyant":
        actual = batch.__class__(**{**batch.__dict__,
                                    "duration": batch.duration * scale[:, None]})
        schedule = plan(actual, "cp", settings=RunSettings(time_limit_s=limit, threads=1))
        assert schedule.verification is not None and schedule.verification.ok
        assert schedule.objective is not None
        return {"makespan_s": schedule.objective, "wall_s": time.perf_counter() - began}
    options = {"replan_method": REPLANNER[way], "replan_first_method": "cp",
               "replan_objective": "makespan",
               "replan_first": str(limit), "replan_strict": "true",
               "replan_every": "1e9" if way == "static" else "0"}
    if way == "hybrid-kept":
        options["replan_disruption"] = str(KEPT_PRICE_S)
    log = simulate_run(batch, RunSpec(scheduler="replan", options=options,
                                      settings=RunSettings(time_limit_s=per_decision,
                                                           threads=1),
                                      duration_scale=scale))
    assert log.verification is not None and log.verification.ok and log.run is not None
    end = float(log.result.end.max())
    return {"makespan_s": end, "wall_s": time.perf_counter() - began,
            "solver_s": log.run.solver_s or 0.0,
            "preemptions_per_job": log.run.metrics["preemptions_per_job"]}


def _longest(seed: int) -> tuple[int, float, float]:
    """The batch's job of longest actual duration: index, estimate and actual (fastest type)."""
    from gpuplan.simulate.workload import gavel_workload_instance

    batch = gavel_workload_instance(THROUGHPUTS, {"v100": 36, "p100": 36, "k80": 36}, 700,
                                    0.0, gpus_per_node=36, seed=seed, multi_gpu=True)
    scale = np.random.default_rng(seed).lognormal(0.0, 0.3, batch.n_jobs)
    actual = batch.min_duration * scale
    j = int(np.argmax(actual))
    return j, float(batch.min_duration[j]), float(actual[j])


def main() -> None:
    """Run the points (cached) and write the table."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--limit", type=float, default=60.0)
    parser.add_argument("--per-decision", type=float, default=2.0)
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("--cache", default="/tmp/gpuplan_hybrid_durations")
    parser.add_argument("--out", default=str(ROOT / "docs" / "results" / "hybrid_durations.md"))
    parser.add_argument("--point", nargs=2, metavar=("SEED", "WAY"))
    args = parser.parse_args()
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    if args.point:
        seed, way = int(args.point[0]), args.point[1]
        found = _point(seed, way, args.limit, args.per_decision)
        (cache / f"{seed}-{way}-{args.limit:g}-{args.per_decision:g}.json").write_text(
            json.dumps(found))
        return
    seeds = [int(s) for s in args.seeds.split(",")]
    todo = [(s, w) for s in seeds for w in WAYS
            if not (cache / f"{s}-{w}-{args.limit:g}-{args.per_decision:g}.json").exists()]
    running: list[subprocess.Popen[bytes]] = []
    while todo or running:
        while todo and len(running) < args.parallel:
            seed, way = todo.pop(0)
            running.append(subprocess.Popen([
                sys.executable, __file__, "--point", str(seed), way, "--limit",
                str(args.limit), "--per-decision", str(args.per_decision), "--cache",
                str(cache)]))
        time.sleep(1.0)
        running = [p for p in running if p.poll() is None]
    rows = ["| seed | way | makespan (s) | over clairvoyant | ahead of static | preemptions "
            "per job | solver s | wall s |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    over: dict[str, list[float]] = {w: [] for w in WAYS}
    ahead: dict[str, list[float]] = {w: [] for w in WAYS}
    for seed in seeds:
        got = {w: json.loads((cache / f"{seed}-{w}-{args.limit:g}-{args.per_decision:g}.json")
                             .read_text()) for w in WAYS}
        best, static = got["clairvoyant"]["makespan_s"], got["static"]["makespan_s"]
        for way in WAYS:
            value = got[way]["makespan_s"]
            over[way].append(value / best - 1)
            ahead[way].append(1 - value / static)
            moves = got[way].get("preemptions_per_job")
            rows.append(f"| {seed} | {way} | {value:,.0f} | {value / best - 1:+.1%} | "
                        f"{1 - value / static:+.1%} | "
                        f"{'-' if moves is None else f'{moves:.2f}'} | "
                        f"{got[way].get('solver_s', got[way]['wall_s']):.0f} | "
                        f"{got[way]['wall_s']:.0f} |")
    for way in WAYS:
        rows.append(f"| mean | {way} | | {statistics.mean(over[way]):+.1%} | "
                    f"{statistics.mean(ahead[way]):+.1%} | | | |")
    rows += ["", "Each batch's job of longest actual duration (on its fastest type):", "",
             "| seed | job | estimated (s) | actual (s) | actual / estimated |",
             "|---|---:|---:|---:|---:|"]
    for seed in seeds:
        j, estimated, actual = _longest(seed)
        rows.append(f"| {seed} | {j} | {estimated:,.0f} | {actual:,.0f} | "
                    f"{actual / estimated:.2f} |")
    command = shlex.join(["scripts/bench_hybrid_durations.py",
                          *(a for a in sys.argv[1:] if a != "--point")])
    text = (f"# Uncertain durations\n\nWritten by `python {command}` on this machine's 2 "
            "cores (shared). Makespans in seconds of the 700-job batches, actual durations "
            "log-normal (median 1, sigma 0.3).\n\n" + "\n".join(rows) + "\n")
    Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
