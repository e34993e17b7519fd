"""The time replay with departures on the openb traces: pending time and allocation per policy.

Usage:
    python scripts/bench_sharing_timeline.py [--pods default,gpushare100,gpuspec33,multigpu50]
        [--policies all] [--speedups 1,100000] [--seed 42] [--plot FILE.png]
        [--out docs/results/sharing_timeline.md]

Each pod list of ``../shared/benchmarks/gpu-traces/alibaba-gpu-v2023`` is replayed on
``openb_node_list_gpu_node.csv`` (1213 nodes, 6212 GPUs) by
:func:`gpuplan.harness.replay.time_run`: pods arrive at ``creation_time``, wait in a
FIFO queue with backfilling when they fit nowhere, run for ``deletion_time -
creation_time`` and leave; every run is verified as a time-based schedule before its row is
written. Speedup 1 is the trace as it is; a larger speedup divides every arrival time
(durations kept) to load the cluster. A pod list without times (multigpu50) is refused with
an input error, shown as such. One replay runs at a time, so the seconds are each replay's
own (on a shared machine).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from gpuplan.core.errors import InputError
from gpuplan.core.instance import FloatArray
from gpuplan.exporters.plot import write_figure
from gpuplan.harness.bench import write_results
from gpuplan.harness.replay import time_run
from gpuplan.readers.openb import read_openb
from gpuplan.sharing.policies import POLICIES
from gpuplan.sharing.timeline import TimelineResult, check_times

ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT.parent / "shared" / "benchmarks" / "gpu-traces" / "alibaba-gpu-v2023"

HEADER = ("| pod list | policy | pods | failed | waited % | pending mean s | p95 s | max s "
          "| allocated mean % | mean while arriving % | peak % | span days | replay s "
          "| wall s |")
ALIGN = "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"

NOTES = """Columns: pods in the list; failed: pods that fit no node of the empty cluster (left
out of the run); waited: share of the placed pods that started after they arrived; pending:
start minus arrival over the placed pods; allocated: time-weighted share of the cluster's GPU
milli held, from the first arrival to the last departure (mean), from the first to the last
arrival (while arriving), and its peak; span: first arrival to last departure; replay: the
event loop; wall: the whole call (typical pods, the loop, building and verifying the
schedule). Queue rule: at one instant departures come first, then the waiting pods in
arrival order (each placed if it fits; one that does not fit does not block those behind it),
then the arrivals. Ties between equal scores go to the smallest node name; the seed only
moves `random`."""


def row(pods: str, result: TimelineResult) -> str:
    """One table row of a replay."""
    m = result.metrics
    return (f"| {pods} | {result.policy} | {m['pods']:,.0f} | {m['failed']:,.0f} | "
            f"{100 * m['waited_share']:.2f} | {m['pending_mean_s']:.2f} | "
            f"{m['pending_p95_s']:.2f} | {m['pending_max_s']:.1f} | "
            f"{100 * m['allocated_mean']:.3f} | {100 * m['allocated_mean_arrivals']:.3f} | "
            f"{100 * m['allocated_peak']:.2f} | {m['span_days']:.2f} | {m['replay_s']:.2f} | "
            f"{m['wall_s']:.2f} |")


def plot(curves: dict[float, dict[str, tuple[FloatArray, FloatArray]]], out: Path) -> None:
    """Allocated share over time of each policy on the default list, one panel per speedup."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(10, 3.5 * len(curves)))
    axes = figure.subplots(len(curves), 1, squeeze=False)[:, 0]
    for ax, (speedup, series) in zip(axes, sorted(curves.items()), strict=True):
        # At speedup 1 the whole trace in days; sped up, the busy first 15 minutes.
        scale, unit, limit = (86400.0, "days", None) if speedup == 1 else (60.0, "minutes",
                                                                          15.0)
        for policy, (times, share) in series.items():
            ax.step(times / scale, 100 * share, where="post", label=policy, linewidth=0.8)
        if limit is not None:
            ax.set_xlim(0, limit)
        ax.set_xlabel(f"time ({unit})")
        ax.set_ylabel("GPU milli allocated (%)")
        ax.set_title(f"openb_pod_list_default, arrivals sped up {speedup:g}x")
        ax.legend(fontsize=7, loc="upper right")
    figure.tight_layout()
    write_figure(figure, out)


def main() -> None:
    """Replay every pod list under every policy at every speedup, one at a time."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", default="default,gpushare100,gpuspec33,multigpu50")
    parser.add_argument("--policies", default="all",
                        help="comma-separated registered policies, or all")
    parser.add_argument("--speedups", default="1,100000")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--plot", type=Path, help="draw the default list's allocation here")
    parser.add_argument("--out", type=Path,
                        default=ROOT / "docs" / "results" / "sharing_timeline.md")
    args = parser.parse_args()
    policies = list(POLICIES) if args.policies == "all" else args.policies.split(",")
    speedups = [float(s) for s in args.speedups.split(",")]
    command = shlex.join(["python", "scripts/bench_sharing_timeline.py", *sys.argv[1:]])
    nodes = TRACES / "openb_node_list_gpu_node.csv"
    tables: dict[float, list[str]] = {s: [HEADER, ALIGN] for s in speedups}
    refused: list[str] = []
    curves: dict[float, dict[str, tuple[FloatArray, FloatArray]]] = {s: {} for s in speedups}
    for pods in args.pods.split(","):
        name = f"openb_pod_list_{pods}"
        instance = read_openb(nodes, TRACES / f"{name}.csv")
        try:
            check_times(instance)
        except InputError as error:
            refused.append(f"- `{name}.csv`: refused with an input error (exit 2 in the "
                           f"CLI): {error.path}: {error.message}")
            print(refused[-1], flush=True)
            continue
        for speedup in speedups:
            for policy in policies:
                result = time_run(instance, policy, args.seed, speedup)
                tables[speedup].append(row(pods, result))
                print(tables[speedup][-1], flush=True)
                if pods == "default":
                    curves[speedup][policy] = result.series
    text = [f"# Time replay with departures (openb)\n\nWritten by `{command}` on this "
            "machine's 2 cores (shared with other work: seconds are indicative). Nodes: "
            "`openb_node_list_gpu_node.csv` (1213 nodes, 6212 GPUs); seed "
            f"{args.seed}; every run verified as a weighted-completion schedule.\n"]
    for speedup in speedups:
        title = ("The trace as it is (speedup 1)" if speedup == 1 else
                 f"Arrivals sped up {speedup:g}x (durations kept)")
        text += [f"## {title}\n", *tables[speedup], ""]
    if refused:
        text += ["## Refused\n", *refused, ""]
    text += [NOTES, ""]
    write_results(args.out, "\n".join(text))
    if args.plot is not None and any(curves.values()):
        plot({s: c for s, c in curves.items() if c}, args.plot)


if __name__ == "__main__":
    main()
