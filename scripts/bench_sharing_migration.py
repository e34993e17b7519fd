"""Defragmentation by migration on FGD's replay: moves against allocated GPU share (issue 18).

Usage:
    python scripts/bench_sharing_migration.py [--pods default] [--policies fgd,best-fit]
        [--seeds 42:52] [--configs 0,1:-,2:0.001,...] [--workers 2]
        [--out docs/results/sharing_migration.md]

Each policy replays the openb pod list under FGD's protocol (:func:`gpuplan.sharing.replay.
replay`, the paper's seeds, inflated to 130% of capacity) with a
:class:`gpuplan.sharing.migrate.Defragmenter` as the rescue of pods no node can take. A
config ``K:B[:one]`` allows at most ``K`` moved pods per failing pod and ``B`` moves per
arrived pod in all (``-``: no global budget); ``one`` keeps only moves that can run one pod at
a time (no swaps); ``0`` is the replay without migration, FGD's protocol. Every end state is
verified as a static max-weight schedule (:func:`gpuplan.harness.replay.replay_schedule`).

For each config the table gives, as means over the seeds, the moves made by the time the
arrived GPU demand reaches 100% (and 130%) of capacity as a % of the pods arrived by then,
the allocated GPU share at those points (FGD's curve, :meth:`ReplayResult.curves`), the
share won back of what the replay without migration leaves unallocated, and the proven upper
bound on what any placement of the arrived pods allocates (the fill LP,
:func:`gpuplan.sharing.bound.allocation_bound`, over the pods FGD's point counts). Seconds are
each replay loop's on a shared 2-core machine.
"""

from __future__ import annotations

import argparse
import functools
import shlex
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gpuplan.core.instance import Instance
from gpuplan.harness.bench import write_results
from gpuplan.harness.replay import replay_schedule
from gpuplan.readers.openb import gpu_specs, read_openb
from gpuplan.sharing.bound import allocation_bound
from gpuplan.sharing.migrate import Defragmenter
from gpuplan.sharing.replay import ReplayResult, replay

ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT.parent / "shared" / "benchmarks" / "gpu-traces" / "alibaba-gpu-v2023"
#: The arrived percents reported.
POINTS = (100, 130)
#: Default configs: none, one move, two moves under growing budgets, and live migration.
CONFIGS = "0,1:-,2:0.001,2:0.0025,2:0.005,2:0.01,2:-,2:0.01:one"


@dataclass(frozen=True)
class Config:
    """A migration setting: moves per failing pod, moves per arrived pod, one at a time."""

    max_moves: int
    budget: float | None
    one_at_a_time: bool

    @classmethod
    def parse(cls, text: str) -> Config:
        """``0``, or ``K:B`` with ``B`` a share or ``-``, optionally ``:one``."""
        parts = text.split(":")
        if parts == ["0"]:
            return cls(0, 0.0, False)
        return cls(int(parts[0]), None if parts[1] == "-" else float(parts[1]),
                   parts[2:] == ["one"])

    def cells(self) -> list[str]:
        """The table's cells for the config: moves per pod, budget, how moves run."""
        if self.max_moves == 0:
            return ["0 (no migration)", "-", "-"]
        budget = "-" if self.budget is None else f"{100 * self.budget:g}%"
        return [str(self.max_moves), budget,
                "one at a time" if self.one_at_a_time else "together"]


@dataclass(frozen=True)
class Row:
    """One replay's numbers at each reported point; the bound only without migration."""

    allocated: tuple[float, ...]
    moved: tuple[float, ...]
    seconds: float
    bound: tuple[float, ...] | None


@functools.cache
def _trace(pods: str) -> tuple[Instance, tuple[str, ...]]:
    """The trace and its pods' ``gpu_spec`` texts, read once per worker process."""
    path = TRACE / f"openb_pod_list_{pods}.csv"
    return read_openb(TRACE / "openb_node_list_gpu_node.csv", path), gpu_specs(path)


def _ends(result: ReplayResult) -> list[int]:
    """Pods arrived by each reported point.

    FGD's curve point ``a`` averages the rows whose arrived demand rounds to ``a`` percent
    of capacity (:meth:`ReplayResult.curves`); demand only grows, so they come first.
    """
    percent = [round(a / result.total_gpus / 10) for a in result.arrived_milli.tolist()]
    return [int(np.searchsorted(percent, a, side="right")) for a in POINTS]


def run(pods: str, policy: str, seed: int, config: Config) -> Row:
    """Replay one seed with the config's rescue, verify the end state, count the moves."""
    instance, specs = _trace(pods)
    rescue = (None if config.max_moves == 0 else
              Defragmenter(config.max_moves, config.budget, one_at_a_time=config.one_at_a_time))
    result = replay(instance, policy, seed, specs=specs, rescue=rescue)
    replay_schedule(result)   # raises if the verifier finds anything wrong
    ends = _ends(result)
    curve = result.curves()["allocated"]
    rescued = np.array([move.rescued for move in result.moves], dtype=np.int64)
    return Row(
        allocated=tuple(float(curve[a]) for a in POINTS),
        moved=tuple(100 * int((rescued < end).sum()) / end for end in ends),
        seconds=result.seconds,
        bound=None if rescue else tuple(
            allocation_bound(instance, result.source_job[:end], "fill").percent
            for end in ends))


def main() -> None:
    """Run every policy, config and seed on local processes; write the results file."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", default="default")
    parser.add_argument("--policies", default="fgd,best-fit")
    parser.add_argument("--seeds", default="42:52")
    parser.add_argument("--configs", default=CONFIGS)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path,
                        default=ROOT / "docs" / "results" / "sharing_migration.md")
    args = parser.parse_args()
    command = shlex.join(["python", "scripts/bench_sharing_migration.py", *sys.argv[1:]])
    first, end = (int(part) for part in args.seeds.split(":"))
    seeds, policies = list(range(first, end)), args.policies.split(",")
    configs = [Config.parse(text) for text in args.configs.split(",")]
    if configs[0].max_moves != 0:
        parser.error("the first config must be 0, the replay without migration")
    with ProcessPoolExecutor(args.workers) as pool:
        runs = {(policy, config, seed): pool.submit(run, args.pods, policy, seed, config)
                for policy in policies for config in configs for seed in seeds}
        rows = {key: future.result() for key, future in runs.items()}
    limits = np.array([rows[(policies[0], configs[0], seed)].bound for seed in seeds])
    bound_mean = limits.mean(axis=0)
    lines = ["| policy | moves per failing pod | budget (moves per arrived pod) | moves run | "
             "moves, % of pods arrived by 100% | allocated % at 100% | won back | of the gap | "
             "moves % by 130% | allocated % at 130% | won back | of the gap | s per seed |",
             "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for policy in policies:
        base = np.mean([rows[(policy, configs[0], s)].allocated for s in seeds], axis=0)
        for config in configs:
            mine = [rows[(policy, config, s)] for s in seeds]
            allocated = np.mean([r.allocated for r in mine], axis=0)
            moved = np.mean([r.moved for r in mine], axis=0)
            cells = [policy, *config.cells()]
            for k in range(len(POINTS)):
                gained = allocated[k] - base[k]
                cells += [f"{moved[k]:.2f}", f"{allocated[k]:.2f}",
                          f"{100 * gained / (100 - base[k]):.0f}%",
                          f"{100 * gained / (bound_mean[k] - base[k]):.0f}%"]
            cells.append(f"{np.mean([r.seconds for r in mine]):.1f}")
            lines.append("| " + " | ".join(cells) + " |")
            print(lines[-1], flush=True)
    text = "\n".join([
        "# Defragmentation by migration on FGD's replay (issue 18)", "",
        f"Written by `{command}`: openb_pod_list_{args.pods}, seeds {args.seeds}, means over "
        "the seeds. A pod no node can take is rescued by moving at most *moves per failing "
        "pod* running pods (`gpuplan.sharing.migrate.Defragmenter`; chains as deep as that), "
        "while all moves so far stay within the *budget* times the pods arrived so far; "
        "*together*: a rescue's moved pods stop, then start at their targets (swaps allowed), "
        "*one at a time*: only moves that can run pod by pod (live migration). *won back*: "
        "the share of the GPUs the same policy leaves unallocated without migration that "
        "the moves allocate; *of the gap*: the same, of the gap between the replay without "
        "migration and the bound below. Every end state verifies as a static max-weight schedule. "
        "Seconds: the replay loop, on a shared, loaded 2-core machine.", "",
        *lines, "",
        "No placement of the pods arrived by then can allocate more than the proven bound "
        f"(fill LP, mean over the seeds): {bound_mean[0]:.2f}% at 100% arrived "
        f"({limits[:, 0].min():.2f}-{limits[:, 0].max():.2f}), {bound_mean[1]:.2f}% at 130% "
        f"({limits[:, 1].min():.2f}-{limits[:, 1].max():.2f}), moves or not.", ""])
    write_results(args.out, text)


if __name__ == "__main__":
    main()
