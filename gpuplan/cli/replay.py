"""``gpuplan replay fgd|time``: GPU-sharing replays of an openb trace, policies x seeds.

``replay fgd``: each (policy, seed) replays the pod list on the node list with the FGD
paper's protocol (:mod:`gpuplan.sharing.replay`), verifies the end state
(:func:`gpuplan.harness.replay.replay_schedule`) and writes it to
``OUTDIR/<pods>/<policy>-<seed>.json``; the tables (``results``, ``means`` beside the
published values, ``curves.csv``) and the allocation plot go to OUTDIR. ``replay time``
replays the pods over time instead (:func:`gpuplan.harness.replay.time_run`): its verified
runs, ``results`` and the held-share plot. Runs go to local processes or a Dask cluster.
Each kind takes its own flags, and the policies' own options are flags built from their
declarations; any other flag is exit 2.

``gpuplan simulate --replay KIND`` is kept for one release as an alias of ``gpuplan replay
KIND`` (:func:`alias`), and says so.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from gpuplan.cli.common import (
    Commands,
    ExitCode,
    add_workers,
    bounded,
    console,
    positive,
    run_with_table,
    summary_table,
)
from gpuplan.core.errors import InputError
from gpuplan.core.files import check_output_folder
from gpuplan.exporters.plot import write_figure
from gpuplan.harness.batch import Row, batch_plan, check_scheduler, run_tasks
from gpuplan.harness.replay import (
    REPLAYS,
    ReplayPoint,
    mean_rows,
    share_policy,
    write_results,
    write_time_results,
)
from gpuplan.readers.openb import read_openb
from gpuplan.sharing.plots import allocation_figure, held_share_figure
from gpuplan.sharing.policies import POLICIES, policy_option_takers
from gpuplan.sharing.replay import PAPER_RATIO, PAPER_SEEDS, check_pods
from gpuplan.sharing.timeline import check_times

#: Replays ``--replay`` offers: name and what it is.
REPLAY_KINDS = {"fgd": "the FGD paper's protocol: pods shuffled and inflated by seed, placed "
                "once in order, never leaving",
                "time": "pods arrive at creation_time and leave after their duration; one "
                "that fits nowhere waits (FIFO with backfilling)"}

#: Largest seed a replay takes (Go's source takes any int64; these are plenty).
MAX_SEED = 2**31 - 1
#: Most seeds one command replays (each is a run of its own).
MAX_SEEDS = 10_000


def _seeds(text: str) -> list[int]:
    """``A:B`` (half-open) or ``N,M,...`` as a list of seeds."""
    try:
        if ":" in text:
            first, last = (int(part) for part in text.split(":"))
            if last - first > MAX_SEEDS:
                raise ValueError
            seeds = list(range(first, last))
        else:
            seeds = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected A:B or N,M,... (whole numbers, at most "
                                         f"{MAX_SEEDS} seeds), got {text!r}") from None
    if (not seeds or len(seeds) > MAX_SEEDS or any(not 0 <= s <= MAX_SEED for s in seeds)
            or len(set(seeds)) < len(seeds)):
        raise argparse.ArgumentTypeError(f"expected distinct seeds in 0..{MAX_SEED}, got "
                                         f"{text!r}")
    return seeds


def _migrate(text: str) -> tuple[int, float | None]:
    """``K`` or ``K:SHARE`` as the moves per failing pod and the global share of pods."""
    moves, _, share = text.partition(":")
    try:
        k, cap = int(moves), (float(share) if share else None)
    except ValueError:
        k, cap = 0, None
    if not 1 <= k <= 8 or (cap is not None and not 0 <= cap <= 1):
        raise argparse.ArgumentTypeError(f"expected K (1 to 8 moves per failing pod) or "
                                         f"K:SHARE (SHARE from 0 to 1), got {text!r}")
    return k, cap


def register(commands: Commands) -> None:
    """Add ``replay`` with its kinds, each with its own flags."""
    parser = commands.add_parser(
        "replay", help="replay an openb pod list with GPU-sharing placement policies",
        description="Replay an Alibaba openb pod list (PODS.csv) on its node list with "
        "GPU-sharing placement policies, policies x seeds; every run is verified before it "
        "is written to OUTDIR with the tables and a plot. Exit codes: 0 ok; 1 a replay "
        "failed; 2 bad input; 130 Ctrl-C.")
    kinds = parser.add_subparsers(dest="kind", required=True, metavar="KIND")
    for kind, text in REPLAY_KINDS.items():
        sub = kinds.add_parser(kind, help=text, description=text)
        sub.add_argument("input", metavar="PODS.csv", help="the openb pod list")
        sub.add_argument("--nodes", metavar="FILE", required=True,
                         help="the openb node list (openb_node_list_gpu_node.csv)")
        sub.add_argument("-o", "--output", metavar="OUTDIR", required=True,
                         help="the folder of the verified runs, tables and plot")
        sub.add_argument("--policy", default="fgd", metavar="NAME,...",
                         help="sharing policies, comma-separated (default: fgd), or rl:DIR, "
                         "a trained placement policy (gpuplan rl train --env placement): "
                         + "; ".join(f"{name}: {cls.description}"
                                     for name, cls in POLICIES.items()).replace("%", "%%"))
        seeds = sub.add_mutually_exclusive_group()
        seeds.add_argument("--seed", type=bounded(int, 0, MAX_SEED), metavar="N",
                           default=argparse.SUPPRESS, help="replay one seed")
        seeds.add_argument("--seeds", type=_seeds, metavar="A:B|N,...",
                           default=argparse.SUPPRESS, help=f"replay seeds (default: the "
                           f"paper's {PAPER_SEEDS[0]}:{PAPER_SEEDS[-1] + 1})")
        if kind == "fgd":
            sub.add_argument("--ratio", type=positive(10, "a ratio"), metavar="R",
                             default=PAPER_RATIO, help=f"inflate the GPU request to R x "
                             f"capacity (default: {PAPER_RATIO}, the paper's 130%%)")
            sub.add_argument("--migrate", type=_migrate, metavar="K[:SHARE]",
                             default=(0, None), help="when no node takes a pod, move at "
                             "most K running pods so that it fits (chains included), and at "
                             "most SHARE of the pods arrived so far in all (e.g. 2:0.01); "
                             "every move is counted")
        else:
            sub.add_argument("--speedup", type=positive(1e9, "a factor"), metavar="X",
                             default=1.0, help="divide arrival times by X, durations kept "
                             "(default: 1, the trace as it is; openb's own times load the "
                             "cluster to ~1%%)")
        for flag, (f, takers) in policy_option_takers().items():
            sub.add_argument(flag, dest=f.name, metavar=f.metadata["metavar"],
                             default=argparse.SUPPRESS, help=f"{f.metadata['help']} (taken "
                             f"by: {', '.join(takers)})".replace("%", "%%"))
        add_workers(sub, "the replays")
        sub.set_defaults(run=run_replay)


def alias(argv: Sequence[str]) -> list[str] | None:
    """``simulate --replay KIND ...`` as ``replay KIND ...`` (kept one release); else None.

    Says on stderr that the alias goes, and which command to use instead.
    """
    command = next((k for k, word in enumerate(argv) if not word.startswith("-")), None)
    if command is None or argv[command] != "simulate":
        return None
    rest = list(argv[command + 1:])
    for k, word in enumerate(rest):
        if word == "--replay" and k + 1 < len(rest):
            kind, rest = rest[k + 1], rest[:k] + rest[k + 2:]
        elif word.startswith("--replay="):
            kind, rest = word.partition("=")[2], rest[:k] + rest[k + 1:]
        else:
            continue
        console.print(f"note: `gpuplan simulate --replay {kind}` is now `gpuplan replay "
                      f"{kind}`; the alias goes in the next release", markup=False)
        return [*argv[:command], "replay", kind, *rest]
    return None


def policy_names(text: str) -> list[str]:
    """``--policy`` of a replay: registered sharing policies or ``rl:DIR``, comma-separated.

    Raises
    ------
    InputError
        Naming an unknown policy and the registered ones; for ``rl:DIR``, the extra
        missing or a folder that is not a placement policy's (checked before any replay).
    """
    names = [name.strip() for name in text.split(",")]
    for name in names:
        if name.startswith("rl:"):
            share_policy(name)
        elif name not in POLICIES:
            raise InputError("--policy", "", f"unknown sharing policy {name!r}; choose from "
                             f"{', '.join(POLICIES)}")
    if len(set(names)) < len(names):
        raise InputError("--policy", "", f"{text!r} names a policy twice")
    return names


def _file_label(policy: str) -> str:
    """A policy's name in file names: ``rl:DIR`` as ``rl-<folder name>``."""
    return f"rl-{Path(policy[3:]).name}" if policy.startswith("rl:") else policy


def _points(args: argparse.Namespace, policies: Sequence[str], out: Path) -> list[ReplayPoint]:
    seeds = args.seeds if hasattr(args, "seeds") else (
        [args.seed] if hasattr(args, "seed") else list(PAPER_SEEDS))
    migrate = getattr(args, "migrate", (0, None))
    options = {f.name: getattr(args, f.name) for f, _ in policy_option_takers().values()
               if hasattr(args, f.name)}
    folder = out / Path(args.input).stem
    folder.mkdir(exist_ok=True)
    return [ReplayPoint(nodes=args.nodes, pods=args.input, policy=policy, seed=seed,
                        ratio=getattr(args, "ratio", PAPER_RATIO),
                        target=str(folder / f"{_file_label(policy)}-{seed}.json"),
                        kind=args.kind,
                        speedup=getattr(args, "speedup", 1.0), migrate=migrate[0],
                        migrate_budget=migrate[1], options=options)
            for policy in policies for seed in seeds]


def _fgd_summary(rows: Sequence[Row], out: Path, name: str) -> list[str]:
    """Write the allocation plot; the summary lines of an fgd replay."""
    done = [r for r in rows if r["status"] == "ok"]
    if done:
        # Every policy sees the same pods at a seed, so their mean bounds agree.
        means = mean_rows(done)
        bound = {100.0: min(r["bound_100"] for r in means),
                 130.0: min(r["bound_130"] for r in means)}
        write_figure(allocation_figure(done, title=name, bound=bound), out / "allocation.png")
    console.print(summary_table(
        f"{name}: GPUs allocated (% of capacity) against arrived GPU demand, mean over seeds",
        [(row["policy"], f"{row['allocated_100']:.2f} at 100%, {row['allocated_130']:.2f} at "
          f"130% ({row['seeds']} seeds"
          + ("" if row["published_100"] is None else
             f"; published {row['published_100']:.2f} / {row['published_130']:.2f}")
          + f"; bound {row['bound_100']:.2f} / {row['bound_130']:.2f}"
          + (f"; {row['moves']:.0f} moves" if row["moves"] else "")
          + f"; {row['seconds']:.1f} s per seed)") for row in mean_rows(rows)]))
    return ["allocation.png"] if done else []


def _time_summary(rows: Sequence[Row], out: Path, name: str) -> list[str]:
    """Write the held-share plot; the summary lines of a time replay."""
    done = [r for r in rows if r["status"] == "ok"]
    if done:
        write_figure(held_share_figure(done, title=name), out / "held_share.png")
    console.print(summary_table(
        f"{name}: pods over time (waiting when they fit nowhere)",
        [(f"{row['policy']} seed {row['seed']}",
          f"{row['waited_share']:.2%} waited (mean {row['pending_mean_s']:.3g} s, max "
          f"{row['pending_max_s']:.3g} s); GPU share held {row['allocated_mean']:.2%} mean, "
          f"{row['allocated_peak']:.2%} peak; {int(row['failed'])} failed; "
          f"{row['seconds']:.1f} s") for row in done]))
    return ["held_share.png"] if done else []


def run_replay(args: argparse.Namespace) -> int:
    """Replay every (policy, seed), write the verified runs, tables and plot; summarise."""
    policies = policy_names(args.policy)
    if args.scheduler is not None:
        check_scheduler(args.scheduler)
    workers, _ = batch_plan(args.workers, args.scheduler)
    # Read here first: a bad row (or a pod list without times for a time replay) is exit 2
    # before any folder or replay is made.
    trace = read_openb(args.nodes, args.input)
    check_pods(trace, getattr(args, "ratio", None))
    if args.kind == "time":
        check_times(trace)
    out = check_output_folder(args.output, [args.input, args.nodes])
    tasks = _points(args, policies, out)
    writer = write_time_results if args.kind == "time" else write_results
    rows, written = run_with_table(
        "replaying", [t.target for t in tasks],
        lambda on_row: run_tasks(tasks, REPLAYS, workers, args.scheduler, on_row=on_row),
        lambda finished: writer(finished, out))
    summary = _time_summary if args.kind == "time" else _fgd_summary
    pictures = summary(rows, out, Path(args.input).stem)
    done = sum(r["status"] == "ok" for r in rows)
    console.print(f"{len(rows)} replays, {done} verified; tables in {out} ("
                  + ", ".join([p.name for p in written] + pictures) + ")", markup=False)
    for row in [r for r in rows if r["status"] != "ok"][:10]:
        console.print(f"  {row['file']}: {row['error']}", markup=False)
    return ExitCode.OK if done == len(rows) else ExitCode.FAILED
