"""Learned policies against heuristics and optimizers (issue 34), each run verified.

Parts (``--part``):

- ``reproduce``: RLScheduler's heuristics (FCFS, WFP3, UNICEP, SJF, F1) under its protocol
  (10 sequences of 1024 jobs from seed 1, each on an empty machine; SDSC-SP2 and HPC2N
  drawn from their first 10,000 jobs) with and without backfilling, beside its published
  means; with each protocol's wall seconds.
- ``ordering``: on Lublin-1 and SDSC-SP2, the heuristics, ``replan`` with greedy (every
  decision, all 10 sequences) and with cp (``--cp-limit`` seconds per decision on the
  first ``--cp-sequences`` sequences, the others' numbers given on the same ones), and
  trained policies (``--policy TRACE=DIR``, trained by ``gpuplan rl train`` on sequences
  clear of the protocol's: the 10 are held out); one table and one plot per trace.
- ``placement``: FGD's replay of ``openb_pod_list_default`` on its 10 paper seeds (never
  trained on), allocated GPU share at 100% arrived for Random, BestFit, FGD, gpuplan's
  cutting-stock and a trained policy (``--placement-policy DIR``), beside the published.
- ``speed``: raw environment steps per second (no network; random masked actions).

Points are cached as JSON in ``--cache`` so that long ones (cp) run apart; every protocol
sequence and every replay is verified before its number counts.

Usage: python scripts/bench_rl.py --part reproduce|ordering|placement|speed
           [--policy lublin_256=policies/lublin_256] [--placement-policy DIR]
           [--cp-limit 1] [--cp-sequences 2] [--only NAME] [--cache DIR]
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "benchmarks"
SWF = SHARED / "hpc-traces" / "swf"
RESULTS = ROOT / "docs" / "results"
#: RLScheduler's traces: file, its name in the paper, the protocol's first jobs.
TRACES = {
    "lublin_256": ("lublin_256.swf", "Lublin-1", 0),
    "SDSC-SP2-1998-4.2-cln": ("SDSC-SP2-1998-4.2-cln.swf.gz", "SDSC-SP2", 10_000),
    "HPC2N-2002-2.2-cln": ("HPC2N-2002-2.2-cln.swf.gz", "HPC2N", 10_000),
    "lublin_256_new2": ("lublin_256_new2", "Lublin-2", 0),
}
HEURISTICS = ("fifo", "wfp3", "unicep", "sjf", "f1")
#: RLScheduler's published mean bounded slowdown (../shared/benchmarks/README.md, section 6):
#: (paper name, backfill) -> FCFS, WFP3, UNI, SJF, F1, RL.
PUBLISHED = {
    ("Lublin-1", False): (7273.77, 19753.53, 22274.74, 277.35, 258.37, 254.67),
    ("SDSC-SP2", False): (1727.54, 3000.88, 1848.45, 2680.55, 1232.06, 466.44),
    ("HPC2N", False): (297.18, 426.99, 609.77, 157.71, 118.01, 117.01),
    ("Lublin-2", False): (7842.47, 9523.18, 11265.31, 787.89, 698.34, 724.51),
    ("Lublin-1", True): (235.82, 133.87, 307.23, 73.31, 75.07, 58.64),
    ("SDSC-SP2", True): (1595.12, 1083.12, 548.01, 2167.84, 1098.22, 397.82),
    ("HPC2N", True): (127.38, 97.39, 175.12, 122.04, 71.95, 86.14),
    ("Lublin-2", True): (247.61, 318.35, 379.59, 91.99, 148.25, 118.79),
}
PUBLISHED_UTIL = {
    ("Lublin-1", False): (0.657, 0.747, 0.691, 0.762, 0.816, 0.714),
    ("SDSC-SP2", False): (0.670, 0.658, 0.688, 0.645, 0.674, 0.671),
    ("HPC2N", False): (0.638, 0.636, 0.636, 0.640, 0.637, 0.640),
    ("Lublin-2", False): (0.404, 0.543, 0.510, 0.562, 0.478, 0.562),
    ("Lublin-1", True): (0.868, 0.864, 0.883, 0.778, 0.840, 0.850),
    ("SDSC-SP2", True): (0.682, 0.681, 0.706, 0.661, 0.677, 0.707),
    ("HPC2N", True): (0.639, 0.637, 0.638, 0.641, 0.638, 0.642),
    ("Lublin-2", True): (0.587, 0.583, 0.587, 0.593, 0.552, 0.593),
}
#: FGD's published allocation at 100% arrived, openb_pod_list_default (section of the README).
PUBLISHED_PLACEMENT = {"best-fit": 92.86, "fgd": 95.23}


def _published(value: float | None) -> str:
    return "-" if value is None else f"{value:,.2f}"


def _workload(trace: str) -> Any:
    from gpuplan.readers.swf import read_swf
    from gpuplan.simulate.hpc import HpcWorkload

    return HpcWorkload.from_trace(read_swf(SWF / TRACES[trace][0]))


def _policy(name: str, workload: Any, cp_limit: float) -> Any:
    from gpuplan.core.settings import RunSettings
    from gpuplan.simulate.hpc import QUEUE_POLICIES, ReplanOrder

    if name.startswith("rl:"):
        from gpuplan.rl.ordering import LearnedOrder

        return LearnedOrder.load(name[3:], workload)
    if name.startswith("replan:"):
        method = name.split(":", 1)[1]
        limit = cp_limit if method == "cp" else 1.0
        return ReplanOrder(method, RunSettings(time_limit_s=limit, threads=1, seed=0))
    return QUEUE_POLICIES[name]


def _point(cache: Path, trace: str, name: str, backfill: bool, sequences: int,
           cp_limit: float) -> dict[str, Any]:
    """One protocol run (cached): per-sequence bsld and utilization, verified."""
    from gpuplan.simulate.hpc import Protocol, run_protocol

    label = name.replace("/", "_").replace(":", "-")
    path = cache / f"{trace}-{label}-{int(backfill)}-{sequences}-{cp_limit:g}.json"
    if path.exists():
        return json.loads(path.read_text())  # type: ignore[no-any-return]
    workload = _workload(trace)
    protocol = Protocol(sequences=sequences, first_jobs=TRACES[trace][2], backfill=backfill)
    report = run_protocol(workload, protocol, _policy(name, workload, cp_limit))
    found = report.document()
    path.write_text(json.dumps(found))
    return found


def _reproduce(cache: Path) -> str:
    rows = ["| trace | backfilling | policy | bsld (gpuplan) | bsld (published) | diff | "
            "utilization (gpuplan / published) | protocol s |",
            "|---|---|---|---:|---:|---:|---|---:|"]
    for trace, (_, paper, _) in TRACES.items():
        for backfill in (False, True):
            for k, name in enumerate(HEURISTICS):
                got = _point(cache, trace, name, backfill, 10, 0.0)
                mine, theirs = got["bounded_slowdown"], PUBLISHED[paper, backfill][k]
                util = PUBLISHED_UTIL[paper, backfill][k]
                rows.append(f"| {paper} | {'yes' if backfill else 'no'} | {name} | "
                            f"{mine:,.2f} | {theirs:,.2f} | {mine / theirs - 1:+.2%} | "
                            f"{got['utilization']:.3f} / {util:.3f} | "
                            f"{got['wall_time_s']:.1f} |")
    return "\n".join(rows)


def _ordering(cache: Path, policies: dict[str, str], cp_limit: float, cp_sequences: int,
              only: str | None) -> str:
    from matplotlib.figure import Figure

    from gpuplan.exporters.plot import write_figure

    parts = []
    for trace in ("lublin_256", "SDSC-SP2-1998-4.2-cln"):
        paper = TRACES[trace][1]
        names = [*HEURISTICS, "replan:greedy"]
        if trace in policies:
            names.append(f"rl:{policies[trace]}")
        if only is not None:
            names = [n for n in names if n == only]
        got = {n: _point(cache, trace, n, False, 10, cp_limit) for n in names}
        if only in (None, "replan:cp"):
            got["replan:cp"] = _point(cache, trace, "replan:cp", False, cp_sequences, cp_limit)
        if only is not None:
            continue
        few = got["replan:cp"]["runs"]
        rows = [f"## {paper} (no backfilling)", "",
                f"| policy | bsld, 10 held-out sequences | utilization | bsld, first "
                f"{len(few)} sequences | published bsld | protocol s |",
                "|---|---:|---:|---:|---:|---:|"]
        published = dict(zip((*HEURISTICS, "rl"), PUBLISHED[paper, False], strict=True))
        means = {}
        for name, found in got.items():
            runs = found["runs"]
            first = np.mean([r["bounded_slowdown"] for r in runs[:len(few)]])
            full = found["bounded_slowdown"] if len(runs) == 10 else None
            means[name] = (full, first)
            key = "rl" if name.startswith("rl:") else name
            label = (f"{name} ({found.get('planning', {}).get('time_limit_s', '')} s per "
                     "decision)" if name.startswith("replan") else name)
            rows.append(f"| {label} | {'-' if full is None else f'{full:,.2f}'} | "
                        f"{found['utilization']:.3f} | {first:,.2f} | "
                        f"{_published(published.get(key))} | "
                        f"{found['wall_time_s']:.0f} |")
        parts.append("\n".join(rows))
        figure = Figure(figsize=(8, 4))
        axes = figure.add_subplot()
        labels = list(means)
        axes.bar(range(len(labels)), [means[n][1] for n in labels])
        axes.set_xticks(range(len(labels)), [n.split("/")[-1] for n in labels], rotation=30,
                        ha="right")
        axes.set_yscale("log")
        axes.set_ylabel(f"mean bsld, {len(few)} held-out seqs")
        axes.set_title(f"{paper}: queue policies under RLScheduler's protocol")
        figure.tight_layout()
        write_figure(figure, RESULTS / f"rl_ordering_{trace}.png")
    return "\n\n".join(parts)


def _placement(cache: Path, folder: str | None) -> str:
    from gpuplan.harness.replay import replay_schedule
    from gpuplan.readers.openb import gpu_specs, read_openb
    from gpuplan.sharing.replay import PAPER_SEEDS, replay

    alibaba = SHARED / "gpu-traces" / "alibaba-gpu-v2023"
    pods = alibaba / "openb_pod_list_default.csv"
    instance = read_openb(alibaba / "openb_node_list_gpu_node.csv", pods)
    specs = gpu_specs(pods)
    names: list[Any] = ["random", "best-fit", "fgd", "cutting-stock"]
    if folder is not None:
        from gpuplan.rl.placement import learned_share_policy

        names.append(learned_share_policy(folder))
    rows = ["| policy | allocated at 100% arrived, mean of seeds 42-51 | min | max | "
            "published | s per replay |", "|---|---:|---:|---:|---:|---:|"]
    for name in names:
        label = name if isinstance(name, str) else name.name
        path = cache / f"placement-{label.replace('/', '_').replace(':', '-')}.json"
        if not path.exists():
            values, seconds = [], []
            for seed in PAPER_SEEDS:
                began = time.perf_counter()
                result = replay(instance, name, seed, specs=specs)
                replay_schedule(result)  # verified, or VerificationError
                seconds.append(time.perf_counter() - began)
                values.append(float(result.curves()["allocated"][100]))
            path.write_text(json.dumps({"values": values, "seconds": seconds}))
        found = json.loads(path.read_text())
        values = found["values"]
        rows.append(f"| {label} | {np.mean(values):.2f} | {min(values):.2f} | "
                    f"{max(values):.2f} | {_published(PUBLISHED_PLACEMENT.get(label))} "
                    f"| {np.mean(found['seconds']):.1f} |")
    return "\n".join(rows)


def _speed() -> str:
    from gpuplan.rl.ordering import OrderingConfig, OrderingEnv, protocol_holdout
    from gpuplan.rl.placement import PlacementEnv, read_trace
    from gpuplan.simulate.hpc import Protocol

    rows = ["| environment | trace | steps | seconds | steps/s |", "|---|---|---:|---:|---:|"]
    lublin = _workload("lublin_256")
    alibaba = SHARED / "gpu-traces" / "alibaba-gpu-v2023"
    instance, typical = read_trace(alibaba / "openb_pod_list_default.csv",
                                   alibaba / "openb_node_list_gpu_node.csv")
    envs = {
        ("ordering", "Lublin-1"): OrderingEnv(lublin, OrderingConfig(
            holdout=protocol_holdout(lublin, Protocol()))),
        ("placement", "openb_pod_list_default"): PlacementEnv(instance, typical),
    }
    for (kind, trace), env in envs.items():
        rng = np.random.default_rng(0)
        env.reset(seed=0)
        steps, began = 0, time.perf_counter()
        while time.perf_counter() - began < 30.0:
            _, _, done, _, _ = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
            steps += 1
            if done:
                env.reset()
        seconds = time.perf_counter() - began
        rows.append(f"| {kind} | {trace} | {steps:,} | {seconds:.1f} | {steps / seconds:,.0f} |")
    return "\n".join(rows)


def main() -> None:
    """Run one part and write its results file."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--part", choices=("reproduce", "ordering", "placement", "speed"),
                        required=True)
    parser.add_argument("--policy", action="append", default=[], metavar="TRACE=DIR")
    parser.add_argument("--placement-policy", metavar="DIR")
    parser.add_argument("--cp-limit", type=float, default=1.0)
    parser.add_argument("--cp-sequences", type=int, default=2)
    parser.add_argument("--only", help="ordering: compute this policy's points only")
    parser.add_argument("--cache", default="/tmp/gpuplan_bench_rl")
    args = parser.parse_args()
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    command = shlex.join(["scripts/bench_rl.py", *sys.argv[1:]])
    if args.part == "reproduce":
        title, body = "RLScheduler's heuristics, reproduced", _reproduce(cache)
    elif args.part == "ordering":
        policies = dict(p.split("=", 1) for p in args.policy)
        body = _ordering(cache, policies, args.cp_limit, args.cp_sequences, args.only)
        title = "Queue ordering: learned, heuristic and optimizing policies"
        if args.only is not None:
            return
    elif args.part == "placement":
        title, body = "Placement: learned against FGD's policies", _placement(
            cache, args.placement_policy)
    else:
        title, body = "Environment speed", _speed()
    text = (f"# {title}\n\nWritten by `python {command}` on this machine's 2 cores (shared "
            "with other runs).\n\n" + body + "\n")
    out = RESULTS / f"rl_{args.part}.md"
    out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
