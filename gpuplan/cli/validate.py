"""``gpuplan validate``: check instance files and describe them."""

from __future__ import annotations

import argparse

from rich.text import Text

from gpuplan.cli.common import Commands, ExitCode, console, read, reading_parser
from gpuplan.core.instance import Instance


def register(commands: Commands) -> None:
    """Add ``validate``."""
    parser = commands.add_parser(
        "validate", help="check instance files and describe them", parents=[reading_parser()],
        description="Validate instance files; exit 2 at the first invalid one.",
    )
    parser.add_argument("instances", nargs="+", metavar="INSTANCE")
    parser.set_defaults(run=validate)


def describe(instance: Instance) -> str:
    """One line: jobs, gangs, dependencies, GPUs, types, nodes, resources, objective.

    Then how GPUs are held (:func:`gpu_mode`) and, where used, node resources, multi-node
    gangs, topology, partitions, elastic jobs, accounts and QOS (with their GPU limits).
    """
    gangs = int((instance.gang > 1).sum())
    deps = sum(1 for p in instance.predecessors if p)
    extra = [gpu_mode(instance)]
    if instance.node_resources:
        extra.append(f"node resources {', '.join(instance.node_resources)}")
    multi = int((instance.gang_nodes > 1).sum())
    if multi:
        extra.append(f"{multi} multi-node gangs (up to {int(instance.gang_nodes.max())} "
                     "nodes)")
    if instance.levels:
        counts = ", ".join(f"{len(ids)} {level}s" for level, ids in
                           zip(instance.levels, instance.domain_ids, strict=True))
        extra.append(f"topology {' > '.join(instance.levels)} ({counts})")
    if instance.partition_ids:
        sizes = instance.partition_nodes.sum(axis=1).tolist()
        extra.append("partitions " + ", ".join(
            f"{p} ({n} node{'s' if n > 1 else ''})"
            for p, n in zip(instance.partition_ids, sizes, strict=True)))
    elastic = int(instance.elastic.sum())
    if elastic:
        counts = instance.counts.tolist()
        extra.append(f"{elastic} elastic jobs (on {counts[0]} to {counts[-1]} GPUs)")
    for what, ids, caps in (("accounts", instance.account_ids, instance.account_gpus),
                            ("QOS", instance.qos_ids, instance.qos_gpus)):
        if ids:
            extra.append(f"{what} " + ", ".join(
                name + (f" (at most {cap} GPU{'s' if cap > 1 else ''} at once)"
                        if cap >= 0 else "")
                for name, cap in zip(ids, caps.tolist(), strict=True)))
    return (
        f"{instance.n_jobs} jobs ({gangs} gangs, {deps} with dependencies), "
        f"{instance.n_gpus} GPUs of {instance.n_types} types on {instance.n_nodes} nodes, "
        f"resources {', '.join(instance.resources)}, objective {instance.objective.value}; "
        + "; ".join(extra)
    )


def gpu_mode(instance: Instance) -> str:
    """How jobs hold GPUs: whole (exclusive), or shared on the types that declare it."""
    shared = [t for t, s in zip(instance.type_ids, instance.shared, strict=True) if s]
    pairs = " (declared colocation pairs share)" if instance.class_ids else ""
    if not shared:
        return f"GPUs held whole{pairs}"
    packing = f"jobs pack by {', '.join(instance.resources)}"
    if len(shared) == instance.n_types:
        return f"GPUs shared ({packing})"
    return f"GPUs shared on {', '.join(shared)} ({packing}), held whole elsewhere{pairs}"


def validate(args: argparse.Namespace) -> int:
    """Read each file in turn and describe it; an invalid one raises (exit 2)."""
    for path in args.instances:
        instance = read(args, path)
        console.print(Text.assemble(("ok", "green"), f" {path}: {describe(instance)}"))
    return ExitCode.OK
