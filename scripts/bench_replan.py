"""Node failure, offline: re-plan with least disruption against re-planning from scratch.

Issue 33's protocol: a plan of ``instances/gavel_cluster_500_long.json`` by cp at 60 s; at
30% of its makespan one 8-GPU node fails. The residual is planned by cp at the same limit
twice, with the moves priced (least disruption, ``--move-s``) and from scratch; both whole
plans are verified. Moves are counted the same way for both (a job with a slot in the
previous plan that runs elsewhere or more than ``--same-start-s`` away from it). The
unchanged world is timed too. Writes a Markdown table.

Usage: python scripts/bench_replan.py PREVIOUS.json [PREVIOUS.json ...] --out FILE.md
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

from gpuplan.core.schedule import Schedule
from gpuplan.core.settings import RunSettings
from gpuplan.hybrid.replan import changed_instances, replan
from gpuplan.hybrid.residual import Costs
from gpuplan.readers import load_data
from gpuplan.readers.changes import Changes

INSTANCE = "instances/gavel_cluster_500_long.json"


def main() -> None:
    """Run the protocol on each previous plan and write the table."""
    parser = argparse.ArgumentParser()
    parser.add_argument("previous", nargs="+")
    parser.add_argument("--node", default="v100-0")
    parser.add_argument("--limit", type=float, default=60.0)
    parser.add_argument("--tick", type=float, default=1.0)
    parser.add_argument("--move-s", type=float, nargs="+", default=[60.0],
                        help="prices of a move to run least disruption with")
    parser.add_argument("--max-changes", type=int, default=None)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--same-start-s", type=float, default=60.0,
                        help="a start moved by at most this is no move")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    document = load_data(Path(INSTANCE))
    lines = [f"Node {args.node} fails for good at 30% of the previous plan's makespan; a "
             f"start moved by at most {args.same_start_s:g} s is no move.", "",
             "| previous plan | at (s) | how | makespan | stopped | moved (of slots) | "
             "re-planned | wall (s) |", "|---|---|---|---|---|---|---|---|"]
    for path in args.previous:
        previous = Schedule.read(path)
        assert previous.objective is not None
        at = round(0.3 * previous.objective, 3)
        nothing = Changes()
        before, same = changed_instances(document, INSTANCE, nothing, at, "none")
        began = time.perf_counter()
        kept = replan(before, same, previous, at, nothing, "cp")
        lines.append(f"| {Path(path).name} ({previous.objective:,.0f}) | {at:,.0f} | no change "
                     f"| {previous.objective:,.0f} (unchanged: "
                     f"{kept.disruption.unchanged}) | 0 | 0 | 0 | "
                     f"{time.perf_counter() - began:.3f} |")
        changes = Changes.parse({"down": [{"node": args.node}]}, "bench")
        before, changed = changed_instances(document, INSTANCE, changes, at, "bench")
        runs = [(move, True) for move in args.move_s] + [(0.0, False)]
        for move, least in runs:
            done = replan(before, changed, previous, at, changes, "cp",
                          RunSettings(time_limit_s=args.limit, threads=args.threads),
                          Costs(move_s=move, same_start_s=args.same_start_s),
                          args.max_changes if least else None, options={"tick_s": args.tick},
                          least_disruption=least)
            assert done.schedule is not None and done.schedule.verification is not None
            assert done.schedule.verification.ok
            hurt = done.disruption
            cap = "" if args.max_changes is None else f", at most {args.max_changes} moves"
            how = f"least disruption (move {move:g} s{cap})" if least else "from scratch"
            lines.append(f"| {Path(path).name} | {at:,.0f} | {how} | "
                         f"{done.schedule.objective:,.0f} | {len(hurt.stopped)} | "
                         f"{len(hurt.moved)} of {len(hurt.moved) + hurt.unchanged} | "
                         f"{len(hurt.replanned)} | {done.wall_time_s:.1f} |")
    head = (f"# Node failure, offline re-plan\n\nWritten by `python "
            f"{shlex.join(['scripts/bench_replan.py', *sys.argv[1:]])}` on this machine's 2 "
            "cores (shared); cp at the stated limit and threads, tick 1 s.\n\n")
    Path(args.out).write_text(head + "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
