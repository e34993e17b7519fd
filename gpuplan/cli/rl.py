"""``gpuplan rl``: train learned scheduling policies (needs the optional extra ``rl``).

``gpuplan rl train --env ordering --trace TRACE.swf --steps N --seed S -o POLICY_DIR``
trains the ordering policy with masked PPO on sequences clear of the protocol's evaluation
sequences, and writes the policy folder with its learning curve; ``gpuplan hpc
TRACE.swf --policy rl:POLICY_DIR`` then runs it like any other
policy. ``--env placement`` trains on the FGD replay's pods (``--trace PODS.csv --nodes
NODES.csv``).

Everything from :mod:`gpuplan.rl` is imported inside the functions: without the extra,
``gpuplan rl`` says how to install it and exits 2, and the rest of gpuplan works.

Exit codes: 0 trained and written; 2 bad input or flags, or the extra is missing; 130
Ctrl-C (nothing written, and a policy folder the command made is removed again).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from gpuplan.cli.common import (
    Commands,
    ExitCode,
    bounded,
    console,
    fmt,
    positive,
    summary_table,
)
from gpuplan.core.errors import InputError
from gpuplan.core.files import output_folder
from gpuplan.readers.swf import is_swf, read_swf
from gpuplan.simulate.hpc import HpcWorkload, Protocol, QueuePolicy

if TYPE_CHECKING:
    from gpuplan.rl.ordering import OrderingConfig

#: The environments ``--env`` takes.
ENVS = ("ordering", "placement")
_ORDERING_FLAGS = (("backfill", "--backfill"), ("first_jobs", "--first-jobs"),
                   ("length", "--length"), ("window", "--window"), ("reward", "--reward"))
_PLACEMENT_FLAGS = (("nodes", "--nodes"),)


def register(commands: Commands) -> None:
    """Add ``rl`` and its ``train`` command."""
    parser = commands.add_parser(
        "rl", help="train learned scheduling policies (optional extra 'rl')",
        description="Learned policies with masked PPO over gpuplan's environments. Needs the "
        "optional extra: pip install -e '.[rl]'. Exit codes: 0 ok; 2 bad input or the extra "
        "missing; 130 Ctrl-C.")
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    sub = actions.add_parser("train", help="train a policy; writes POLICY_DIR",
                             description="Train with MaskablePPO and write the policy folder "
                             "(policy.json, weights.pt, curve.csv, learning_curve.png).")
    sub.add_argument("--env", choices=ENVS, required=True, help="ordering: which waiting job "
                     "of an SWF trace starts next; placement: which GPU the next pod of the "
                     "FGD replay takes")
    sub.add_argument("--trace", metavar="FILE", required=True, help="ordering: an SWF trace "
                     "(.swf, .swf.gz); placement: an openb pod list (PODS.csv)")
    sub.add_argument("--steps", type=bounded(int, 1, 10**9), metavar="N", required=True,
                     help="environment steps to train for")
    sub.add_argument("--seed", type=bounded(int, 0, 2**31 - 1), metavar="S", default=0,
                     help="seeds the episodes and the network (default: 0)")
    sub.add_argument("-o", "--output", metavar="POLICY_DIR", required=True,
                     help="the policy folder to write")
    sub.add_argument("--minutes", type=positive(10**6, "minutes"), metavar="M",
                     help="stop after M minutes of wall time if the steps are not done")
    sub.add_argument("--progress", action="store_true", help="show a progress bar")
    unset = argparse.SUPPRESS
    sub.add_argument("--backfill", action="store_true", default=unset,
                     help="ordering: train with backfilling")
    sub.add_argument("--first-jobs", dest="first_jobs", type=bounded(int, 0, 10**8),
                     metavar="N", default=unset, help="ordering: the protocol's --first-jobs, "
                     "whose evaluation sequences are held out of training (episodes come "
                     "from all other jobs; default: all)")
    sub.add_argument("--length", type=bounded(int, 2, 100_000), metavar="N", default=unset,
                     help="ordering: jobs per training episode (default: 256, RLScheduler's)")
    sub.add_argument("--window", type=bounded(int, 1, 4096), metavar="N", default=unset,
                     help="ordering: waiting jobs the policy sees (default: 128)")
    sub.add_argument("--reward", choices=("relative", "bsld"), default=unset,
                     help="ordering: relative to the better of SJF and F1 (default), or "
                     "minus the bounded slowdown (RLScheduler's)")
    sub.add_argument("--nodes", metavar="FILE", default=unset,
                     help="placement: the openb node list")
    sub.set_defaults(run=run_rl)
    parser.set_defaults(run=run_rl, action=None)


def _refuse(args: argparse.Namespace, flags: tuple[tuple[str, str], ...], env: str) -> None:
    for dest, flag in flags:
        if hasattr(args, dest):
            raise InputError(flag, "", f"is not a flag of --env {env}")


def ordering_config(args: argparse.Namespace, workload: HpcWorkload) -> OrderingConfig:
    """The ordering environment the flags describe, the protocol's sequences held out."""
    from gpuplan.rl.ordering import OrderingConfig, protocol_holdout

    first_jobs = getattr(args, "first_jobs", 0)
    backfill = getattr(args, "backfill", False)
    holdout = protocol_holdout(workload, Protocol(first_jobs=first_jobs, backfill=backfill))
    defaults = OrderingConfig()
    return OrderingConfig(window=getattr(args, "window", defaults.window),
                          length=getattr(args, "length", defaults.length),
                          backfill=backfill, reward=getattr(args, "reward", defaults.reward),
                          holdout=holdout)


def run_rl(args: argparse.Namespace) -> int:
    """Check the extra, the flags and the output; train; summarise."""
    from gpuplan.rl import require

    require()
    if args.action is None:
        raise InputError("gpuplan rl", "", "name an action: gpuplan rl train --help")
    # A folder made for the policy goes again, empty, when training fails or is stopped.
    with output_folder(args.output, [args.trace]) as folder:
        if args.env == "ordering":
            record = _train_ordering(args, folder)
        else:
            record = _train_placement(args, folder)
    rows = [*training_rows(record), ("written to", str(folder))]
    console.print(summary_table(f"trained {args.env}", rows))
    return ExitCode.OK


#: Most items of a list the summary shows.
_LISTED = 10
#: Units of the record's keys, by suffix: shown after the value, not in the name.
_UNITS = (("_minutes", "minutes"), ("_s", "s"))


def training_rows(record: Mapping[str, object]) -> list[tuple[str, str]]:
    """The training record (``policy.json``'s ``training``) as the summary's rows.

    Names in words, units after the value, yes or no, lists joined; PPO's settings stay in
    ``policy.json``, and a setting that did not apply (no time limit reached) is left out.
    """
    rows = []
    for key, value in record.items():
        if key == "ppo" or value is None:
            continue
        if key == "validation" and isinstance(value, Mapping):
            rows.append(("validation", _kept_weights(value)))
            continue
        name, unit = key, ""
        for suffix, unit_name in _UNITS:
            if key.endswith(suffix):
                name, unit = key.removesuffix(suffix), f" {unit_name}"
                break
        rows.append((name.replace("_", " "), _shown(value) + unit))
    return rows


def _kept_weights(validation: Mapping[str, object]) -> str:
    """Which weights were kept, and their validation score among the checks'."""
    checks = validation["checks"]
    assert isinstance(checks, list)
    best = min(score for _, score in checks)
    return (f"weights from step {validation['weights_from_step']}, score {fmt(best)}: the "
            f"best of {len(checks)} check{'s' * (len(checks) > 1)} (lower is better)")


def _shown(value: object) -> str:
    """A value as a reader writes it: yes or no, numbers short, a long list cut."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return fmt(value)
    if isinstance(value, list):
        more = len(value) - _LISTED
        return ", ".join(map(_shown, value[:_LISTED])) + (f" and {more} more" if more > 0
                                                          else "")
    return str(value)


def _train_ordering(args: argparse.Namespace, folder: Path) -> dict[str, object]:
    from gpuplan.rl.ordering import FEATURES, OrderingEnv, validation
    from gpuplan.rl.policy import FORMAT, PolicyDescription
    from gpuplan.rl.train import train

    _refuse(args, _PLACEMENT_FLAGS, "ordering")
    if not is_swf(args.trace):
        raise InputError(args.trace, "", "--env ordering trains on an SWF trace (.swf, "
                         ".swf.gz)")
    workload = HpcWorkload.from_trace(read_swf(args.trace))
    try:
        config = ordering_config(args, workload)
        OrderingEnv(workload, config)
    except ValueError as exc:
        raise InputError(args.trace, "", str(exc)) from None
    description = PolicyDescription(
        format=FORMAT, env="ordering", rows=config.window, features=list(FEATURES),
        hidden=[1], training={"trace": workload.name, "reward": config.reward,
                              "length": config.length, "backfill": config.backfill,
                              "protocol_first_jobs": getattr(args, "first_jobs", 0),
                              "held_out_starts": [first for first, _ in config.holdout]})
    return train(lambda: OrderingEnv(workload, config), description, args.steps, args.seed,
                 folder, progress=args.progress, minutes=args.minutes,
                 fields=("bounded_slowdown", "baseline_bsld"),
                 validate=validation(workload, config))


def _train_placement(args: argparse.Namespace, folder: Path) -> dict[str, object]:
    from gpuplan.rl.placement import train_placement

    _refuse(args, _ORDERING_FLAGS, "placement")
    if not hasattr(args, "nodes"):
        raise InputError("--nodes", "", "--env placement needs the openb node list")
    return train_placement(args.trace, args.nodes, args.steps, args.seed, folder,
                           progress=args.progress, minutes=args.minutes)


def load_queue_policy(folder: str, workload: HpcWorkload) -> QueuePolicy:
    """A trained ordering policy for ``--policy rl:DIR``.

    Raises
    ------
    InputError
        The extra is missing, or the folder is not a safe, matching policy folder.
    """
    from gpuplan.rl import require

    require("--policy rl:DIR")
    from gpuplan.rl.ordering import LearnedOrder

    return LearnedOrder.load(folder, workload)
