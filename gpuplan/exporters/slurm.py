"""Slurm: a verified plan as batch scripts and a submit script, and the fleet as slurm.conf.

``gpuplan export slurm`` writes one batch script per segment (a job run whole has one)
under ``jobs/`` and ``submit.sh``, which submits them in planned start order with
``sbatch --parsable``, chains them with ``--dependency`` and writes ``job-ids.csv``. Each
script starts where and when the plan says: ``--nodelist`` (every node of a multi-node
gang, ``--nodes`` of them, one task on each), the GPUs' type and count per node, the node
demand as ``--cpus-per-task`` and ``--mem`` (per node), ``--begin`` at the epoch plus the
planned start (UTC, which ``submit.sh`` sets), ``--time`` the planned length with a stated
margin, ``--switches=1`` for a gang that must stay under one leaf switch, and the job's
partition, account and QOS as ``--partition``, ``--account`` and ``--qos``. A job the
plan pauses (preempted or moved) is a chain of segments: each but the last is stopped at
its planned length (``timeout`` sends SIGTERM, for the job to checkpoint) and the next
waits for it (``afterany``) and its own ``--begin``; ``GPUPLAN_SEGMENT`` tells the command
which it is. A Slurm GPU belongs to one job at a time: a plan that gives one GPU to
several jobs at once is refused, unless its type is declared sharing and the export asks
for Slurm's shards (``--gpu-sharing shard``), as which those jobs then ask for their
share of one GPU.

``gpuplan export slurm-conf`` writes the fleet's ``NodeName``, partition (the default one
of all nodes, and the instance's) and ``gres.conf`` lines (shards on the sharing GPUs when
asked), ``topology.conf`` for the ``topology/tree`` plugin when the instance has a
topology, and ``accounts.sh``, whose ``sacctmgr`` commands create the instance's accounts
and QOS with their GPU limits (``GrpTRES=gres/gpu=N``); with ``--emulate`` a whole cluster
on one machine (every ``slurmd`` on localhost, fake GPU device files, the accounts created
and enforced), which is how the tests run plans on a real Slurm.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from gpuplan._version import __version__
from gpuplan.core.errors import InputError, setting
from gpuplan.core.instance import Instance
from gpuplan.core.options import option, parse_bool, parse_number
from gpuplan.core.schedule import Segment
from gpuplan.exporters.base import (
    CheckedPlan,
    command_of,
    domain_tree,
    epoch_option,
    limit_s,
    margin_option,
    refuse_crowd,
    refuse_elastic_pieces,
    rehearse_option,
    segment_nodes,
    slurm_name,
    slurm_safe,
)

#: Seconds a paused segment's command has to checkpoint after SIGTERM before SIGKILL.
KILL_AFTER_S = 30
#: The exit status of ``timeout`` when it stopped the command.
_TIMED_OUT = 124
#: Node resources that become ``--cpus-per-task`` and ``--mem``.
CPU_RESOURCE, MEMORY_RESOURCE = "cpu_milli", "memory_mib"


@dataclass(frozen=True)
class ShardOptions:
    """The GPU sharing options the scripts and the cluster's configuration must agree on."""

    gpu_sharing: str = option("none", "--gpu-sharing", "none: a GPU runs one job at a "
                              "time; shard: GPUs of types declared sharing carry "
                              "--shards-per-gpu shards, and jobs sharing one ask for "
                              "theirs (default: none)", choices=("none", "shard"))
    shards_per_gpu: int = option(100, "--shards-per-gpu", "with --gpu-sharing shard: shards "
                                 "per sharing GPU, the same in the scripts and the cluster's "
                                 "gres.conf (default: 100)",
                                 parse=parse_number(int, 1, 1_000_000), metavar="S")


@dataclass(frozen=True)
class SlurmOptions(ShardOptions):
    """Options of ``gpuplan export slurm``."""

    share_resource: str | None = option(
        None, "--share-resource", "with --gpu-sharing shard: the per-GPU resource whose "
        "share of the GPU a job's shards are (default: compute, else the first)",
        metavar="NAME")
    epoch: Any = epoch_option()
    time_margin: float = margin_option()
    rehearse: bool = rehearse_option()
    gpu_request: str = option("gres", "--gpu-request", "ask for GPUs with --gres=gpu:TYPE:N "
                              "or --gpus-per-node=TYPE:N (default: gres)",
                              choices=("gres", "gpus-per-node"))
    gpu_order: bool = option(False, "--gpu-order", "also make each job wait (afterany) for "
                             "the job planned before it on its GPUs, so that the order on "
                             "every GPU is the plan's (default: false)", parse=parse_bool,
                             metavar="true|false")
    partition: str | None = option(None, "--partition", "submit the jobs that name no "
                                   "partition to this one (default: the cluster's default; "
                                   "a job's own partition goes first)", metavar="NAME")


def _check_fleet(instance: Instance) -> None:
    """Refuse ids that Slurm would read otherwise (:func:`slurm_name`).

    Node and GPU type ids, and the partitions, accounts and QOS the instance declares.
    """
    for n, node in enumerate(instance.node_ids):
        slurm_name(node, "node", instance.source, f"nodes[{n}].id")
    for t, gpu_type in enumerate(instance.type_ids):
        slurm_name(gpu_type, "GPU type", instance.source, f"gpu_types[{t}].id")
    for what, section, ids in (("partition", "partitions", instance.partition_ids),
                               ("account", "accounts", instance.account_ids),
                               ("QOS", "qos", instance.qos_ids)):
        for name in ids:
            slurm_name(name, what, instance.source, f"{section}.{name}")


def _groups(instance: Instance, j: int, partition: str | None) -> list[str]:
    """Job ``j``'s ``--partition``, ``--account`` and ``--qos`` lines, as far as it has them.

    Its own partition, else ``partition`` (the export's, for jobs that name none).
    """
    named = [(instance.partition_ids, instance.job_partition, "--partition"),
             (instance.account_ids, instance.job_account, "--account"),
             (instance.qos_ids, instance.job_qos, "--qos")]
    lines = []
    for ids, member, flag in named:
        own = ids[member[j]] if ids and member[j] >= 0 else None
        value = own if own is not None or flag != "--partition" else partition
        if value is not None:
            lines.append(f"#SBATCH {flag}={value}")
    return lines


def shards(plan: CheckedPlan, o: SlurmOptions) -> dict[tuple[str, float], int]:
    """The shards each segment that shares a GPU asks for, by job id and start.

    A segment holding a GPU with others at some time asks for its share of one GPU:
    its demand over the type's capacity on the share resource, times ``shards_per_gpu``,
    rounded up (at least 1). Every other segment holds whole GPUs.

    Raises
    ------
    InputError
        Without ``gpu_sharing`` shard, for a GPU held by several jobs at once (naming it,
        the jobs, the time and the flag); with it, for a GPU of a type not declared
        sharing, a job sharing more than one GPU per node (Slurm gives a job's shards on a
        node from one GPU), or a GPU whose jobs' shards at some time exceed
        ``shards_per_gpu`` (naming the GPU, the time and each job's shards).
    """
    instance, crowds = plan.instance, plan.crowds
    if not crowds:
        return {}
    why = "a Slurm GPU runs one job at a time"
    if o.gpu_sharing == "none":
        raise refuse_crowd(plan, crowds[0], why, "export with --gpu-sharing shard (jobs that "
                           "share then ask for shards of a GPU; give the cluster its shards "
                           "with export slurm-conf --gpu-sharing shard)")
    r = _share_resource(instance, o.share_resource)
    asked: dict[tuple[str, float], int] = {}
    for crowd in crowds:
        for segment in crowd.segments:
            key = (segment.job, segment.start_s)
            if key in asked:
                continue
            t = instance.type_index[segment.gpu_type]
            if not instance.shared[t]:
                raise refuse_crowd(plan, crowd, why, "")
            per_node = len(segment.gpu_ids) // len(segment_nodes(instance, segment))
            if per_node > 1:
                raise InputError(plan.source, f"segments of job {segment.job!r}", f"job "
                                 f"{segment.job!r} shares its {per_node} GPUs per node with "
                                 f"other jobs (GPU {crowd.gpu} from {crowd.start_s:g} s), but "
                                 "Slurm gives a job's shards on a node from one GPU: only "
                                 "jobs with one GPU per node can share")
            capacity = float(instance.capacity[t, r])
            share = float(instance.demand[instance.job_index[segment.job], t, r]) / capacity \
                if capacity > 0 else 0.0
            # The tolerance keeps a share such as 0.3 x 100 (30.000000000000004) at 30.
            asked[key] = max(1, math.ceil(share * o.shards_per_gpu - 1e-9))
        held = [(s.job, asked[(s.job, s.start_s)]) for s in crowd.segments]
        if sum(n for _, n in held) > o.shards_per_gpu:
            raise InputError(plan.source, f"segments of job {crowd.segments[0].job!r}",
                             f"GPU {crowd.gpu} would hold {sum(n for _, n in held)} shards "
                             f"of its {o.shards_per_gpu} from {crowd.start_s:g} s to "
                             f"{crowd.end_s:g} s ("
                             + ", ".join(f"{job!r} {n}" for job, n in held)
                             + f", their {instance.resources[r]} rounded up): give more "
                             "--shards-per-gpu, or another --share-resource")
    return asked


def _share_resource(instance: Instance, name: str | None) -> int:
    """The per-GPU resource a job's shards measure: ``name``, else compute or the first.

    Raises
    ------
    InputError
        For a name that is not a resource of the instance.
    """
    if name is None:
        return instance.resources.index("compute") if "compute" in instance.resources else 0
    if name not in instance.resources:
        raise InputError(setting("share_resource"), "", f"{name!r} is not a per-GPU "
                         f"resource of {instance.name!r} ({', '.join(instance.resources)})")
    return instance.resources.index(name)


def _clock(seconds: int) -> str:
    """Slurm's ``D-HH:MM:SS``."""
    days, rest = divmod(seconds, 86400)
    return f"{days}-{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"


@dataclass(frozen=True)
class _Script:
    """One batch script: a segment of a job, and the scripts it waits for."""

    path: str
    variable: str
    job: str
    segment: int
    after_ok: tuple[str, ...]
    after_any: tuple[str, ...]


class SlurmExporter:
    """Batch scripts and a submit script for a verified plan."""

    name: ClassVar[str] = "slurm"
    description: ClassVar[str] = ("one sbatch script per job (per segment of a paused job) "
                                  "and submit.sh, which submits them in order")
    options_type: ClassVar[type[Any]] = SlurmOptions
    needs_schedule: ClassVar[bool] = True

    def files(self, instance: Instance, plan: CheckedPlan | None,
              options: Any) -> dict[str, str]:
        """``jobs/*.sbatch`` and ``submit.sh``; see the module's description.

        Raises
        ------
        InputError
            For a plan without an epoch, a job without a command (unless rehearsing), an
            id Slurm cannot take, or GPUs shared by two jobs at once that shards cannot
            express (:func:`shards`).
        """
        assert plan is not None
        o: SlurmOptions = options
        _check_fleet(instance)
        refuse_elastic_pieces(plan, "a Slurm job")
        shard = shards(plan, o)
        files: dict[str, str] = {}
        scripts: list[tuple[float, _Script]] = []
        last: dict[str, str] = {}
        width = len(str(len(plan.jobs)))
        for k, job in enumerate(plan.jobs, start=1):
            slurm_name(job.id, "job", instance.source, f"jobs[{job.index}].id")
            command = command_of(instance, job.index, o.rehearse, instance.source)
            count = len(job.segments)
            for i, segment in enumerate(job.segments, start=1):
                suffix = f"-s{i}" if count > 1 else ""
                path = f"jobs/{k:0{width}d}-{job.id}{suffix}.sbatch"
                files[path] = self._script(instance, plan, o, job.index, i, count, segment,
                                           command, shard.get((job.id, segment.start_s)))
                variable = f"j{k}" + (f"_{i}" if count > 1 else "")
                after_ok = tuple(last[instance.job_ids[p]]
                                 for p in instance.predecessors[job.index]) if i == 1 else ()
                after_any = (f"j{k}_{i - 1}",) if i > 1 else ()
                scripts.append((segment.start_s, _Script(path, variable, job.id, i, after_ok,
                                                         after_any)))
            last[job.id] = variable
        if o.gpu_order:
            scripts = _gpu_order(plan, scripts)
        scripts.sort(key=lambda pair: pair[0])
        files["submit.sh"] = _submit(plan, [script for _, script in scripts])
        return files

    @staticmethod
    def _script(instance: Instance, plan: CheckedPlan, o: SlurmOptions, j: int, i: int,
                count: int, segment: Segment, command: str | None, shard: int | None) -> str:
        """The batch script of segment ``i`` of ``count`` of job ``j``.

        ``shard``: the shards it asks for instead of whole GPUs; None: whole GPUs.
        """
        length = segment.end_s - segment.start_s
        begin = plan.at(segment.start_s)
        final = i == count
        limit = limit_s(length, o.time_margin) + (0 if final else KILL_AFTER_S)
        what = f"segment {i} of {count} of job" if count > 1 else "job"
        nodes = segment_nodes(instance, segment)
        lines = [
            "#!/bin/bash",
            f"# gpuplan {__version__}: {what} {segment.job!r} of {instance.name!r}, planned on "
            f"{', '.join(nodes)} ({', '.join(segment.gpu_ids) or 'no GPU'})",
            f"# from {begin.isoformat()} for {length:g} s ({segment.start_s:g} s to "
            f"{segment.end_s:g} s after the epoch {plan.epoch.isoformat() if plan.epoch else ''}"
            f"). --time is that x {1 + o.time_margin:g} plus a minute"
            + ("" if final else f" and {KILL_AFTER_S} s to checkpoint") + ".",
            "# --begin is UTC: submit with TZ=UTC (submit.sh does).",
            f"#SBATCH --job-name={segment.job}",
            f"#SBATCH --begin={begin.strftime('%Y-%m-%dT%H:%M:%S')}",
            f"#SBATCH --nodes={len(nodes)}",
            # One task per node, so that --cpus-per-task (like --mem) is per node.
            "#SBATCH --ntasks=1" if len(nodes) == 1 else "#SBATCH --ntasks-per-node=1",
            f"#SBATCH --nodelist={','.join(nodes)}",
        ]
        per_node = len(segment.gpu_ids) // len(nodes)
        if shard is not None:
            lines.append(f"#SBATCH --gres=shard:{segment.gpu_type}:{shard}")
        elif per_node:
            request = "--gres=gpu:" if o.gpu_request == "gres" else "--gpus-per-node="
            lines.append(f"#SBATCH {request}{segment.gpu_type}:{per_node}")
        if len(instance.required_level) and instance.required_level[j] == len(
                instance.levels) - 1:
            # Within one leaf switch; a wider level has no flag, and --nodelist holds it.
            lines.append("#SBATCH --switches=1")
        for resource, flag, scale, unit in ((CPU_RESOURCE, "--cpus-per-task", 1000, ""),
                                            (MEMORY_RESOURCE, "--mem", 1, "M")):
            if resource in instance.node_resources:
                amount = instance.node_demand[j, instance.node_resources.index(resource)]
                if amount > 0:
                    lines.append(f"#SBATCH {flag}={math.ceil(amount / scale)}{unit}")
        lines.append(f"#SBATCH --time={_clock(limit)}")
        lines += _groups(instance, j, o.partition)
        work = "1" if segment.work is None else f"{segment.work:.6g}"
        lines.append(f"export GPUPLAN_JOB={shlex.quote(segment.job)} GPUPLAN_SEGMENT={i} "
                     f"GPUPLAN_SEGMENTS={count} GPUPLAN_WORK={work}")
        seconds = math.ceil(length)
        if command is None:
            lines.append(f"sleep {seconds}")
        elif final:
            lines.append(command)
        else:
            lines += [
                f"# The plan pauses the job after {length:g} s: SIGTERM then, SIGKILL "
                f"{KILL_AFTER_S} s later.",
                f"timeout --signal=TERM --kill-after={KILL_AFTER_S} {seconds} "
                f"bash -c {shlex.quote(command)}",
                "status=$?",
                f"if [ \"$status\" -eq {_TIMED_OUT} ]; then exit 0; fi  # paused as planned",
                "exit \"$status\"",
            ]
        return "\n".join(lines) + "\n"


def _gpu_order(plan: CheckedPlan, scripts: list[tuple[float, _Script]]
               ) -> list[tuple[float, _Script]]:
    """Each script also waits (afterany) for the segment that held one of its GPUs before."""
    holder: dict[str, tuple[float, str]] = {}
    waits: dict[str, set[str]] = {}
    segments = [s for job in plan.jobs for s in job.segments]
    by_start = sorted(zip(segments, scripts, strict=True), key=lambda pair: pair[0].start_s)
    for segment, (_, script) in by_start:
        waits[script.variable] = {holder[g][1] for g in segment.gpu_ids if g in holder}
        for gpu in segment.gpu_ids:
            holder[gpu] = (segment.end_s, script.variable)
    return [(start, _Script(s.path, s.variable, s.job, s.segment, s.after_ok,
                            tuple(sorted(set(s.after_any) | waits[s.variable]))))
            for start, s in scripts]


def _dependency(script: _Script) -> str:
    parts = [f"afterok:{':'.join(f'${v}' for v in script.after_ok)}"] if script.after_ok \
        else []
    if script.after_any:
        parts.append(f"afterany:{':'.join(f'${v}' for v in script.after_any)}")
    return f"--dependency={','.join(parts)} " if parts else ""


def _submit(plan: CheckedPlan, scripts: Sequence[_Script]) -> str:
    unplaced = [u.job for u in plan.schedule.unplaced]
    lines = [
        "#!/bin/bash",
        f"# gpuplan {__version__}: submits the plan {plan.source} of "
        f"{plan.instance.name!r} ({plan.schedule.method}), {len(scripts)} Slurm jobs for "
        f"{len(plan.jobs)} planned jobs, in planned start order, with sbatch --parsable;",
        "# writes job-ids.csv (job, segment, Slurm job id) once all are submitted.",
        "# ./submit.sh --test-only asks Slurm to check every script and submits nothing.",
        *([f"# Not planned, so not submitted: {', '.join(unplaced)}"] if unplaced else []),
        "set -euo pipefail",
        'cd "$(dirname "$0")"',
        "export TZ=UTC  # the scripts' --begin times are UTC",
        'if [ "${1:-}" = "--test-only" ]; then',
        "  failed=0",
        "  for script in jobs/*.sbatch; do",
        '    if ! out=$(sbatch --test-only "$script" 2>&1); then',
        '      echo "rejected: $script: $out" >&2; failed=1',
        "    fi",
        "  done",
        '  exit "$failed"',
        "fi",
        "ids=job-ids.csv.partial",
        "printf 'job,segment,slurm_job_id\\n' > \"$ids\"",
        'submit() { local out; out=$(sbatch --parsable "$@"); echo "${out%%;*}"; }',
    ]
    for script in scripts:
        lines.append(f"{script.variable}=$(submit {_dependency(script)}{script.path})")
        lines.append(f"echo \"{script.job},{script.segment},${script.variable}\" >> \"$ids\"")
    lines += ['mv "$ids" job-ids.csv',
              f'echo "submitted {len(scripts)} jobs; their ids are in job-ids.csv"']
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class SlurmConfOptions(ShardOptions):
    """Options of ``gpuplan export slurm-conf``."""

    emulate: str | None = option(
        None, "--emulate", "write a whole cluster for this machine: every slurmd on "
        "localhost, state, logs and fake GPU device files under DIR (an absolute path), "
        "start.sh and stop.sh (default: the fleet's lines for a real cluster)",
        metavar="DIR")
    port: int = option(6817, "--port", "with --emulate: slurmctld's port; the nodes' are "
                       "100 above it and up (default: 6817)",
                       parse=parse_number(int, 1024, 60000), metavar="N")
    cluster_name: str = option("gpuplan", "--cluster-name", "ClusterName, and the "
                               "partition's name (default: gpuplan)", metavar="NAME")


#: The port of the emulated cluster's slurmdbd (Slurm's default), shared by all.
DBD_PORT = 6819


class SlurmConfExporter:
    """The fleet as Slurm configuration (nodes, partition, GRES, switches)."""

    name: ClassVar[str] = "slurm-conf"
    description: ClassVar[str] = ("the fleet as slurm.conf lines, gres.conf and "
                                  "topology.conf; with --emulate a whole cluster on this "
                                  "machine")
    options_type: ClassVar[type[Any]] = SlurmConfOptions
    needs_schedule: ClassVar[bool] = False

    def files(self, instance: Instance, plan: CheckedPlan | None,
              options: Any) -> dict[str, str]:
        """``slurm.conf`` (or ``nodes.conf``), ``gres.conf`` and ``topology.conf``.

        See the module's description; ``topology.conf`` only for an instance with a
        topology.

        Raises
        ------
        InputError
            For a node or GPU type id Slurm cannot take, an ``emulate`` folder that is
            not an absolute path, or shards asked of an instance without a sharing type.
        """
        o: SlurmConfOptions = options
        slurm_name(o.cluster_name, "cluster name", setting("cluster_name"), "")
        _check_fleet(instance)
        root = None if o.emulate is None else Path(o.emulate)
        if root is not None and (not root.is_absolute() or any(c in str(root) for c in
                                                              " \t\n'\"$\\")):
            raise InputError(setting("emulate"), "", f"{o.emulate!r}: give an absolute path "
                             "without spaces, quotes or $")
        if root is not None and o.port + 100 + instance.n_nodes > 65535:
            raise InputError(setting("port"), "", f"the {instance.n_nodes} nodes' slurmd "
                             f"ports from {o.port + 100} pass 65535: give a lower --port")
        sharing = o.gpu_sharing == "shard"
        if sharing and not instance.shared.any():
            raise InputError(setting("gpu_sharing"), "", f"no GPU type of {instance.name!r} "
                             "is declared sharing (gpu_types[].sharing: true): there is no "
                             "GPU to give shards")
        nodes = []
        gres = []
        devices: dict[str, str] = {}
        for n, node in enumerate(instance.node_ids):
            held = [(instance.type_ids[t], int(c)) for t, c in enumerate(instance.node_gpus[n])
                    if c]
            cpus = math.ceil(self._resource(instance, n, CPU_RESOURCE) / 1000) or sum(
                c for _, c in held)
            memory = math.floor(self._resource(instance, n, MEMORY_RESOURCE)) or 1024
            where = (f" NodeHostname=localhost Port={o.port + 100 + n}"
                     if root is not None else "")
            items = [f"gpu:{t}:{c}" for t, c in held]
            first = 0
            for gpu_type, count in held:
                if root is None:
                    gres.append(f"NodeName={node} Name=gpu Type={gpu_type} Count={count}")
                else:
                    gres.append(f"NodeName={node} Name=gpu Type={gpu_type} "
                                f"File={root}/dev/{node}/gpu[{first}-{first + count - 1}]")
                    devices.update({f"dev/{node}/gpu{first + k}": "" for k in range(count)})
                if sharing and instance.shared[instance.type_index[gpu_type]]:
                    gres += [f"NodeName={node} Name=shard Count={o.shards_per_gpu} "
                             f"File={_device(root, node, first + k)}" for k in range(count)]
                first += count
            shared = sum(c for t, c in held if instance.shared[instance.type_index[t]])
            if sharing and shared:
                items.append(f"shard:{o.shards_per_gpu * shared}")
            nodes.append(f"NodeName={node}{where} CPUs={cpus} RealMemory={memory} "
                         f"Gres={','.join(items)} State=UNKNOWN")
        tres = ",".join(["gres/gpu", *(f"gres/gpu:{t}" for t in instance.type_ids),
                         *(["gres/shard"] if sharing else [])])
        head = [f"# gpuplan {__version__}: the fleet of {instance.name!r} ({instance.source})."]
        fleet = [
            "GresTypes=gpu,shard" if sharing else "GresTypes=gpu",
            *(["TopologyPlugin=topology/tree"] if instance.levels else []),
            *nodes,
            f"PartitionName={o.cluster_name} Nodes=ALL Default=YES MaxTime=INFINITE State=UP",
            *_partitions(instance, o.cluster_name),
        ]
        topology = {"topology.conf": topology_conf(instance, head)} if instance.levels else {}
        limited = bool(instance.account_ids or instance.qos_ids)
        accounts = {"accounts.sh": accounts_script(instance, o.cluster_name)} if limited else {}
        if root is None:
            return {
                "nodes.conf": "\n".join([*head,
                    "# Include it from slurm.conf; add to AccountingStorageTRES so that "
                    "sacct shows each job's GPU type:",
                    f"#   AccountingStorageTRES={tres}",
                    *(["# topology.conf goes beside slurm.conf."] if topology else []),
                    *(["# accounts.sh creates the accounts and QOS; Slurm enforces their "
                       "GPU limits with", f"#   {ENFORCE}"] if accounts else []),
                    *fleet]) + "\n",
                "gres.conf": "\n".join([*head,
                    "# Add File= with each node's device files, or use AutoDetect=nvml.",
                    *(["# Shard lines name /dev/nvidiaK for the node's GPU K as the "
                       "instance numbers them (its types in order): correct them if the "
                       "devices are numbered otherwise."] if sharing else []),
                    *gres]) + "\n",
                **topology,
                **accounts,
            }
        return {"slurm.conf": _emulated_conf(o, root, head, fleet, tres, limited),
                "gres.conf": "\n".join(head + gres) + "\n",
                "slurmdbd.conf": _dbd_conf(root, head),
                "start.sh": _start(o, root, instance.node_ids, limited),
                "stop.sh": _stop(root),
                **topology,
                **accounts,
                **devices}

    @staticmethod
    def _resource(instance: Instance, n: int, name: str) -> float:
        if name not in instance.node_resources:
            return 0.0
        return float(instance.node_capacity[n, instance.node_resources.index(name)])


def _partitions(instance: Instance, default: str) -> list[str]:
    """A ``PartitionName`` line per partition of the instance, beside the default one.

    Raises
    ------
    InputError
        For a partition named as the default one (``cluster_name``).
    """
    lines = []
    for p, name in enumerate(instance.partition_ids):
        if name == default:
            raise InputError(setting("cluster_name"), "", f"{name!r} names the default "
                             "partition of all nodes, and a partition of the instance: give "
                             "another --cluster-name")
        nodes = [instance.node_ids[n] for n in np.flatnonzero(instance.partition_nodes[p])]
        lines.append(f"PartitionName={name} Nodes={','.join(nodes)} MaxTime=INFINITE "
                     "State=UP")
    return lines


#: What makes Slurm hold jobs to their accounts, QOS and GPU limits.
ENFORCE = "AccountingStorageEnforce=associations,limits,qos"


def accounts_script(instance: Instance, cluster: str) -> str:
    """``accounts.sh``: the instance's accounts and QOS in Slurm's accounting database.

    Each with its GPU limit as ``GrpTRES=gres/gpu=N`` (cleared where it has none, so that
    running it again sets what the instance says), and the users it is given (by default
    the one running it) in every account, allowed every QOS. What is there already is left
    as it is (``sacctmgr add`` fails on it).
    """
    def limit(gpus: int) -> str:
        return f"GrpTRES=gres/gpu={gpus if gpus >= 0 else -1}"

    lines = [
        "#!/bin/bash",
        f"# gpuplan {__version__}: the accounts and QOS of {instance.name!r} in Slurm's "
        f"accounting database (cluster {cluster!r}),",
        "# each with its GPU limit (GrpTRES=gres/gpu=N; -1: none), and the users who submit "
        "the plan,",
        f"# in every account and allowed every QOS. Slurm enforces them with {ENFORCE}",
        "# in slurm.conf. Run it as a Slurm administrator, and again when the instance "
        "changes:",
        "#   ./accounts.sh [USER...]    (default: the user running it)",
        "set -euo pipefail",
        f"cluster={shlex.quote(cluster)}",
        'users=("$@")',
        '[ ${#users[@]} -gt 0 ] || users=("$(id -un)")',
        "# Whether sacctmgr lists something (stdin closed: a list never waits for a yes).",
        'listed() { [ -n "$(sacctmgr -n -P list "$@" </dev/null)" ]; }',
        'apply() { sacctmgr -i "$@" </dev/null >/dev/null; }',
    ]
    for name, gpus in zip(instance.account_ids, instance.account_gpus.tolist(), strict=True):
        lines += [f"listed association where account={name} cluster=$cluster format=account "
                  f"|| apply add account {name} cluster=$cluster",
                  f"apply modify account where name={name} cluster=$cluster set {limit(gpus)}"]
    for name, gpus in zip(instance.qos_ids, instance.qos_gpus.tolist(), strict=True):
        lines += [f"listed qos where name={name} format=name || apply add qos {name}",
                  f"apply modify qos where name={name} set {limit(gpus)}"]
    lines.append('for user in "${users[@]}"; do')
    for name in instance.account_ids:
        lines.append(f'  listed association where user="$user" account={name} '
                     f'cluster=$cluster format=user || apply add user "$user" account={name} '
                     "cluster=$cluster")
    if instance.qos_ids:
        lines.append(f'  apply modify user where name="$user" cluster=$cluster set '
                     f'qos+={",".join(instance.qos_ids)}')
    lines += ["done",
              f'echo "accounts {" ".join(instance.account_ids) or "-"}, QOS '
              f'{" ".join(instance.qos_ids) or "-"}: set on cluster $cluster for ${{users[*]}}"']
    return "\n".join(lines) + "\n"


def _device(root: Path | None, node: str, k: int) -> str:
    """The device file of GPU ``k`` of ``node``: NVIDIA's, or the emulated cluster's."""
    return f"/dev/nvidia{k}" if root is None else f"{root}/dev/{node}/gpu{k}"


def topology_conf(instance: Instance, head: list[str]) -> str:
    """``topology.conf`` for Slurm's ``topology/tree``: a switch per domain of every level.

    Leaf switches (the narrowest level's domains) list their nodes, the others the
    switches under them (:func:`~gpuplan.exporters.base.domain_tree`); nodes without any
    label hang from a switch ``unlabelled``, and a switch ``top`` joins the widest
    switches when there are several, so that every two nodes have a common switch and a
    job the plan spreads over them can run. The names (``rack-b1-r3``) cannot be a
    domain's, which all hold the level's name and a ``-``.
    """
    domains = domain_tree(instance, slurm_safe)
    lines = [*head,
             "# Slurm's topology/tree plugin (TopologyPlugin=topology/tree): a switch per "
             "topology domain; 22.05 has no topology/block (23.11 does).",
             *(f"SwitchName={d.name} Nodes={','.join(d.nodes)}" if d.nodes else
               f"SwitchName={d.name} Switches={','.join(d.children)}" for d in domains)]
    tops = [d.name for d in domains if d.tier == len(instance.levels)]
    bare = [node for n, node in enumerate(instance.node_ids) if instance.node_domain[n, 0] < 0]
    if bare:
        lines.append(f"SwitchName=unlabelled Nodes={','.join(bare)}")
        tops.append("unlabelled")
    if len(tops) > 1:
        lines.append(f"SwitchName=top Switches={','.join(tops)}")
    return "\n".join(lines) + "\n"


def _emulated_conf(o: SlurmConfOptions, root: Path, head: list[str], fleet: list[str],
                   tres: str, limited: bool) -> str:
    return "\n".join([*head,
        "# An emulated cluster: every slurmd runs on this machine (slurmd -N NODE).",
        f"ClusterName={o.cluster_name}",
        "SlurmctldHost=localhost",
        f"SlurmctldPort={o.port}",
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        f"StateSaveLocation={root}/state",
        f"SlurmdSpoolDir={root}/spool/%n",
        f"SlurmctldPidFile={root}/run/slurmctld.pid",
        f"SlurmdPidFile={root}/run/slurmd-%n.pid",
        f"SlurmctldLogFile={root}/log/slurmctld.log",
        f"SlurmdLogFile={root}/log/slurmd-%n.log",
        # The nodes' CPUs and memory are the fleet's, not this machine's.
        "SlurmdParameters=config_overrides",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "SchedulerType=sched/backfill",
        # Pending jobs are looked at every second (Slurm's defaults: 60 s, backfill 30 s),
        # so that a job starts within a second or two of its --begin.
        "SchedulerParameters=sched_interval=1,bf_interval=1",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        "ReturnToService=2",
        "MpiDefault=none",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/slurmdbd",
        "AccountingStorageHost=localhost",
        f"AccountingStoragePort={DBD_PORT}",
        f"AccountingStorageTRES={tres}",
        # Jobs are held to their accounts, QOS and GPU limits (accounts.sh) where it has them.
        *([ENFORCE] if limited else []),
        # Completed jobs stay in scontrol for an hour, for tests that read them back.
        "MinJobAge=3600",
        *fleet]) + "\n"


def _dbd_conf(root: Path, head: list[str]) -> str:
    return "\n".join([*head,
        "# slurmdbd for the emulated cluster: MariaDB on this machine, as root over its "
        "socket.",
        "AuthType=auth/munge",
        "DbdHost=localhost",
        f"DbdPort={DBD_PORT}",
        "SlurmUser=root",
        f"LogFile={root}/log/slurmdbd.log",
        f"PidFile={root}/run/slurmdbd.pid",
        "StorageType=accounting_storage/mysql",
        "StorageHost=localhost",
        "StorageUser=root",
        "StorageLoc=gpuplan_slurm_acct"]) + "\n"


def _start(o: SlurmConfOptions, root: Path, nodes: Sequence[str], limited: bool) -> str:
    # The accounts are in the database before slurmctld, which enforces them, starts.
    accounts = "./accounts.sh\n" if limited else ""
    return f"""#!/bin/bash
# gpuplan {__version__}: starts the emulated cluster {o.cluster_name!r} written here, as
# root: munged, MariaDB and slurmdbd (once per machine), slurmctld and one slurmd per
# node. Needs Debian's slurm-wlm, slurmdbd, munge and mariadb-server. Then:
#   export SLURM_CONF={root}/slurm.conf
set -euo pipefail
export SLURM_CONF={root}/slurm.conf
cd {root}
mkdir -p state spool log run
chmod 600 slurmdbd.conf
wait_for() {{  # wait_for SECONDS WHAT COMMAND...
  local until=$((SECONDS + $1)) what=$2; shift 2
  until "$@" >/dev/null 2>&1; do
    if [ "$SECONDS" -ge "$until" ]; then echo "start.sh: $what did not come up" >&2; exit 1; fi
    sleep 0.5
  done
}}
if ! pgrep -x munged >/dev/null; then
  mkdir -p /run/munge && chown munge: /run/munge
  if [ ! -s /etc/munge/munge.key ]; then
    mungekey --create --force && chown munge: /etc/munge/munge.key && chmod 600 /etc/munge/munge.key
  fi
  runuser -u munge -- /usr/sbin/munged
fi
if ! pgrep -x mariadbd >/dev/null; then
  mkdir -p /run/mysqld && chown mysql: /run/mysqld
  (mariadbd --user=mysql >log/mariadb.log 2>&1 &)
  wait_for 60 MariaDB mariadb -e 'select 1'
fi
if ! pgrep -x slurmdbd >/dev/null; then
  slurmdbd
  wait_for 60 slurmdbd sacctmgr -n list cluster
fi
sacctmgr -i add cluster {o.cluster_name} >/dev/null 2>&1 || true
{accounts}if scontrol ping 2>/dev/null | grep -q ' is UP'; then
  echo "start.sh: a slurmctld already answers on port {o.port}: stop it (its stop.sh) first" >&2
  exit 1
fi
slurmctld
wait_for 60 slurmctld scontrol ping
for node in {' '.join(nodes)}; do
  slurmd -N "$node"
done
idle() {{ [ -z "$(sinfo -h -N -o '%N %t' | grep -v ' idle$')" ]; }}
wait_for 120 "every node" idle
echo "cluster {o.cluster_name} is up: export SLURM_CONF={root}/slurm.conf"
"""


def _stop(root: Path) -> str:
    return f"""#!/bin/bash
# gpuplan {__version__}: stops the emulated cluster written here (slurmctld and its slurmd;
# slurmdbd, MariaDB and munged serve every emulated cluster and stay up).
export SLURM_CONF={root}/slurm.conf
scontrol shutdown
"""
