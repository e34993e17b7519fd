"""What every exporter to a cluster manager shares: the plug-in shape, the checked plan, writing.

An exporter is a :class:`~gpuplan.core.options.Part` whose :meth:`Exporter.files` turns a
:class:`CheckedPlan` (a schedule that verified against its instance, grouped by job) into
files by relative path. :func:`check_plan` is the only way to a :class:`CheckedPlan`, so
no exporter can write a plan the verifier has not passed; :func:`write_files` writes all
files or none.

What the targets share beyond that: the GPUs the plan gives to several jobs at once
(:attr:`CheckedPlan.crowds`, which every exporter refuses unless it can express them),
the nodes of a multi-node gang (:func:`segment_nodes`), an elastic job run at one count
(:func:`refuse_elastic_pieces`: its gang is its plan's GPUs), the instance's topology as a tree
of named domains (:func:`domain_tree`: Slurm's switches, Volcano's HyperNodes) and names
a target takes (:func:`safe_name`).
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import re
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar, Protocol

import numpy as np

from gpuplan.core.errors import InputError, RejectedScheduleError, setting
from gpuplan.core.files import check_output_folder, write_files_atomic
from gpuplan.core.instance import Instance
from gpuplan.core.options import option, parse_bool, parse_number
from gpuplan.core.schedule import Schedule, Segment, parse_epoch
from gpuplan.verify import verify_schedule

#: Slurm node, GPU type and job names gpuplan writes as they are: no character that a
#: host list, a GRES string, a shell word or a CSV cell would read otherwise.
SLURM_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+@-]{0,199}$")


@dataclass(frozen=True)
class PlannedJob:
    """One job of a checked plan: its index in the instance and its segments by start."""

    index: int
    id: str
    segments: tuple[Segment, ...]

    @property
    def start_s(self) -> float:
        """When the job first starts."""
        return self.segments[0].start_s

    @property
    def end_s(self) -> float:
        """When the job ends."""
        return self.segments[-1].end_s


@dataclass(frozen=True)
class CheckedPlan:
    """A schedule that verified against its instance, by job in planned start order.

    Attributes
    ----------
    instance
        The instance.
    schedule
        The schedule, as read.
    source
        The schedule file, for messages.
    jobs
        The placed jobs, by first start (ties by instance order).
    epoch
        The absolute time of t = 0 (the ``epoch`` option, else the schedule's); None when
        neither gives one.
    """

    instance: Instance
    schedule: Schedule
    source: str
    jobs: tuple[PlannedJob, ...]
    epoch: datetime | None

    @cached_property
    def crowds(self) -> tuple[Crowd, ...]:
        """Every interval over which several segments hold one GPU, earliest first.

        Back-to-back segments (one ends as the next starts) do not overlap, as in the
        verifier.
        """
        return _crowds(self.instance, [s for job in self.jobs for s in job.segments])

    def at(self, seconds: float) -> datetime:
        """The UTC wall-clock time ``seconds`` after the epoch, to the whole second after.

        Rounding up keeps every start at or after its planned one.

        Raises
        ------
        InputError
            When the plan has no epoch.
        """
        if self.epoch is None:
            raise InputError(self.source, "epoch", "the schedule has no epoch, and times on "
                             "a cluster are absolute: give the plan's start with --epoch "
                             "ISO-8601 (e.g. 2026-12-01T08:00:00+00:00)")
        exact = self.epoch.astimezone(UTC) + timedelta(seconds=seconds)
        whole = exact.replace(microsecond=0)
        return whole if whole == exact else whole + timedelta(seconds=1)


@dataclass(frozen=True)
class Crowd:
    """An interval over which the same several segments hold one GPU at once.

    Attributes
    ----------
    gpu
        The GPU's id.
    start_s, end_s
        The interval, in seconds from the epoch.
    segments
        The segments holding the GPU over it (two or more), by job id.
    """

    gpu: str
    start_s: float
    end_s: float
    segments: tuple[Segment, ...]

    @property
    def holders(self) -> str:
        """The jobs holding the GPU, for messages: ``'a' and 'b'``."""
        names = [repr(s.job) for s in self.segments]
        return f"{', '.join(names[:-1])} and {names[-1]}"


def _crowds(instance: Instance, segments: Sequence[Segment]) -> tuple[Crowd, ...]:
    """The :class:`Crowd` of every GPU that two of ``segments`` hold at once."""
    counts = [len(s.gpu_ids) for s in segments]
    owner = np.repeat(np.arange(len(segments)), counts)
    if not owner.size:
        return ()
    gpu = np.fromiter((instance.gpu_index[g] for s in segments for g in s.gpu_ids),
                      dtype=np.int64, count=owner.size)
    start = np.array([s.start_s for s in segments])[owner]
    end = np.array([s.end_s for s in segments])[owner]
    # A sweep over every GPU's events at once finds the GPUs ever held twice: ends sort
    # before starts at the same instant, and each GPU's running count returns to zero.
    keys, times = np.concatenate([gpu, gpu]), np.concatenate([start, end])
    step = np.concatenate([np.ones(gpu.size), -np.ones(gpu.size)])
    order = np.lexsort((step, times, keys))
    busy = np.unique(keys[order][np.cumsum(step[order]) > 1])
    found: list[Crowd] = []
    for g in busy.tolist():
        mine = np.flatnonzero(gpu == g)
        events = sorted([(float(end[k]), 0, int(owner[k])) for k in mine]
                        + [(float(start[k]), 1, int(owner[k])) for k in mine])
        held: set[int] = set()
        for (time, is_start, k), after in zip(events, [*events[1:], None], strict=True):
            if is_start:
                held.add(k)
            else:
                held.discard(k)
            if after is not None and after[0] > time and len(held) > 1:
                found.append(Crowd(instance.gpu_ids[g], time, after[0], tuple(
                    sorted((segments[m] for m in held), key=lambda s: s.job))))
    return tuple(sorted(found, key=lambda crowd: crowd.start_s))


def refuse_elastic_pieces(plan: CheckedPlan, target: str) -> None:
    """Refuse an elastic job planned in several pieces (paused, or resized).

    A job is submitted once with a fixed gang: the count of its one piece, as ``gpuplan
    solve`` plans elastic jobs (read from the segment's GPUs, not the count it asked for).
    ``target`` names what submits it (``a Slurm job``).

    Raises
    ------
    InputError
        Naming the job and its pieces' GPU counts.
    """
    elastic = plan.instance.elastic
    for job in plan.jobs:
        if elastic[job.index] and len(job.segments) > 1:
            sizes = ", ".join(str(len(s.gpu_ids)) for s in job.segments)
            raise InputError(plan.source, f"segments of job {job.id!r}", f"elastic job "
                             f"{job.id!r} is planned in {len(job.segments)} pieces (paused or "
                             f"rescaled, on {sizes} GPUs): {target} holds one GPU count for "
                             "its whole run; plan the batch with gpuplan solve (greedy or cp "
                             "give each elastic job one count), or replay it in the simulator")


def refuse_crowd(plan: CheckedPlan, crowd: Crowd, target: str, how: str) -> InputError:
    """The refusal of a plan that gives ``crowd``'s GPU to several jobs at once.

    Parameters
    ----------
    plan
        The plan.
    crowd
        The GPU, the jobs and the interval.
    target
        What cannot run it as it is (``a Slurm GPU runs one job at a time``).
    how
        How the export can express it, for a GPU type declared sharing (the flag to use).
    """
    instance = plan.instance
    gpu_type = instance.type_ids[instance.gpu_type[instance.gpu_index[crowd.gpu]]]
    if instance.shared[instance.type_index[gpu_type]]:
        fix = f"{gpu_type} is declared sharing: {how}"
    else:
        fix = (f"{gpu_type} GPUs are held whole (these are colocation partners): plan "
               "without space sharing, or declare the type sharing: true")
    return InputError(plan.source, f"segments of job {crowd.segments[0].job!r}",
                      f"GPU {crowd.gpu} is held by {crowd.holders} at once from "
                      f"{crowd.start_s:g} s to {crowd.end_s:g} s: {target}; {fix}")


def segment_nodes(instance: Instance, segment: Segment) -> tuple[str, ...]:
    """The nodes a segment runs on, by node index: its GPUs' (its own for a CPU-only job).

    A multi-node gang's segment names the first of them as its ``node``.
    """
    if not segment.gpu_ids:
        return (segment.node,)
    nodes = np.unique(instance.gpu_node[[instance.gpu_index[g] for g in segment.gpu_ids]])
    return tuple(instance.node_ids[n] for n in nodes.tolist())


def check_plan(instance: Instance, schedule: Schedule, source: str,
               epoch: datetime | None = None) -> CheckedPlan:
    """Refuse a schedule that names what the instance lacks or fails verification.

    Parameters
    ----------
    instance
        The instance the schedule is for.
    schedule
        The schedule.
    source
        The schedule file, for messages.
    epoch
        Overrides the schedule's epoch when given.

    Raises
    ------
    InputError
        (exit 2) For a job, node or GPU type the instance does not have, or a schedule
        that holds no plan.
    RejectedScheduleError
        (exit 1) When the verifier finds any violation.
    """
    for k, segment in enumerate(schedule.segments):
        for what, value, known in (("job", segment.job, instance.job_index),
                                   ("node", segment.node, instance.node_index),
                                   ("gpu_type", segment.gpu_type, instance.type_index)):
            if value not in known:
                raise InputError(source, f"segments[{k}].{what}", f"{what.replace('_', ' ')} "
                                 f"{value!r} is not in {instance.source}")
    if not schedule.status.has_plan:
        raise InputError(source, "status", f"{schedule.status.value}: the file holds no plan "
                         "to export")
    verification = verify_schedule(instance, schedule)
    if not verification.ok:
        raise RejectedScheduleError(source, instance.source,
                                    [str(v) for v in verification.violations])
    by_job: dict[str, list[Segment]] = {}
    for segment in schedule.segments:
        by_job.setdefault(segment.job, []).append(segment)
    jobs = sorted((PlannedJob(instance.job_index[job], job,
                              tuple(sorted(segments, key=lambda s: s.start_s)))
                   for job, segments in by_job.items()),
                  key=lambda p: (p.start_s, p.index))
    return CheckedPlan(instance, schedule, source, tuple(jobs),
                       schedule.epoch if epoch is None else epoch)


def slurm_name(name: str, what: str, source: str, path: str) -> str:
    """``name`` when Slurm, a shell and a CSV file all take it as it is.

    Raises
    ------
    InputError
        Naming the id otherwise: renaming it would break the way back (``gpuplan import
        sacct`` matches jobs by name).
    """
    if SLURM_NAME.match(name) is None:
        raise InputError(source, path, f"{what} {name!r} cannot be written for Slurm as it "
                         "is: use letters, digits and . _ + @ - (at most 200, starting "
                         "with a letter or digit)")
    return name


def safe_name(text: str, valid: re.Pattern[str], unsafe: str, limit: int,
              lower: bool = False) -> str:
    """``text`` as a name a target takes; when it has to change, a hash keeps it unique.

    Parameters
    ----------
    text
        The name wanted.
    valid
        What the target takes.
    unsafe
        A character class of what it does not (``[^a-z0-9]``): runs of it become ``-``.
    limit
        The longest name it takes.
    lower
        Whether the target takes lower case only.
    """
    if len(text) <= limit and valid.match(text):
        return text
    digest = hashlib.sha256(text.encode()).hexdigest()[:8]
    stem = re.sub(f"{unsafe}+", "-", text.lower() if lower else text).strip("-")
    stem = stem[:limit - 9].strip("-")
    return f"{stem}-{digest}" if stem else f"x-{digest}"


def slurm_safe(text: str) -> str:
    """``text`` as a Slurm name (:data:`SLURM_NAME`), hashed apart when it has to change."""
    return safe_name(text, SLURM_NAME, r"[^A-Za-z0-9._+@-]", 200)


@dataclass(frozen=True)
class Domain:
    """One domain of the instance's topology as a target names it: a switch, a HyperNode.

    Attributes
    ----------
    name
        Its name for the target.
    tier
        1 for the narrowest level, up to the number of levels for the widest.
    level
        Its level's name.
    nodes
        A leaf's nodes (empty for a domain over others).
    children
        The names of the domains under it (empty for a leaf).
    """

    name: str
    tier: int
    level: str
    nodes: tuple[str, ...]
    children: tuple[str, ...]


def domain_tree(instance: Instance, name: Callable[[str], str]) -> tuple[Domain, ...]:
    """The topology as a tree of domains, leaves first: each holds nodes or domains, not both.

    A domain of each level, named by ``name`` from its level and id (``rack-b1-r3`` for
    rack ``b1/r3``); the narrowest level's list their nodes, wider ones the domains under
    them. A node labelled down to a wider level only sits in a leaf of its own under its
    deepest domain (``rack-b1-unlabelled``), since Slurm's switches and Volcano's
    HyperNodes hold nodes or other domains but not both. A node without any label is in
    none.

    Raises
    ------
    InputError
        When two domains get one name.
    """
    levels, last = instance.levels, len(instance.levels) - 1
    flat = [[domain.replace("/", "-") for domain in row] for row in instance.domain_ids]
    leaves: dict[tuple[int, int], list[str]] = {}
    for n, node in enumerate(instance.node_ids):
        labelled = np.flatnonzero(instance.node_domain[n] >= 0)
        if labelled.size:
            deepest = int(labelled[-1])
            leaves.setdefault((deepest, int(instance.node_domain[n, deepest])), []).append(node)
    # Leaves of their own, under the domain their nodes' labels end at.
    extra: dict[tuple[int, int], str] = {}
    domains: list[Domain] = []
    for (i, d), nodes in sorted(leaves.items()):
        if i < last:
            extra[(i, d)] = name(f"{levels[last]}-{flat[i][d]}-unlabelled")
            domains.append(Domain(extra[(i, d)], 1, levels[last], tuple(nodes), ()))
    under: dict[tuple[int, int], list[str]] = {}
    for i in range(last, -1, -1):
        # A domain's wider domain is any of its nodes' (a domain is named by its path).
        wider = np.zeros(len(instance.domain_ids[i]), dtype=np.int64)
        if i:
            inside = instance.node_domain[:, i] >= 0
            wider[instance.node_domain[inside, i]] = instance.node_domain[inside, i - 1]
        for d in range(len(instance.domain_ids[i])):
            own = name(f"{levels[i]}-{flat[i][d]}")
            children = under.get((i, d), []) + ([extra[(i, d)]] if (i, d) in extra else [])
            domains.append(Domain(own, len(levels) - i, levels[i],
                                  tuple(leaves.get((i, d), [])) if i == last else (),
                                  tuple(children)))
            if i:
                under.setdefault((i - 1, int(wider[d])), []).append(own)
    named: dict[str, Domain] = {}
    for domain in domains:
        other = named.setdefault(domain.name, domain)
        if other is not domain:
            raise InputError(instance.source, "topology", f"a {other.level} and a "
                             f"{domain.level} both become the name {domain.name!r}: rename "
                             "one of their labels")
    return tuple(domains)


def limit_s(length_s: float, margin: float) -> int:
    """A time limit for ``length_s`` seconds of planned work: the margin and a minute more.

    The minute covers Slurm's resolution (time limits are whole minutes) and the delay
    between the planned start and the job's own start.
    """
    return math.ceil(length_s * (1 + margin)) + 60


def epoch_option() -> Any:
    """The ``epoch`` option every exporter of times takes."""
    return option(None, "--epoch", "the plan's t = 0 as ISO-8601 with a UTC offset "
                  "(default: the schedule's epoch)",
                  parse=lambda text: parse_epoch(text, setting("epoch")), metavar="ISO")


def margin_option() -> Any:
    """The ``time_margin`` option: how much longer than planned a job may run."""
    return option(0.1, "--time-margin", "time limits are the planned time x (1 + F) plus a "
                  "minute (default: 0.1)", parse=parse_number(float, 0, 100), metavar="F")


def rehearse_option() -> Any:
    """The ``rehearse`` option: jobs sleep their planned time instead of their command."""
    return option(False, "--rehearse", "each job sleeps for its planned time instead of "
                  "running its command: a dry run of the plan on the cluster",
                  parse=parse_bool, metavar="true|false")


class Exporter(Protocol):
    """A registered exporter: its name, a line of help, its options and what it writes."""

    #: The name ``gpuplan export`` takes.
    name: ClassVar[str]
    #: One line for ``--help``.
    description: ClassVar[str]
    #: Its options: a frozen dataclass of :func:`~gpuplan.core.options.option` fields.
    options_type: ClassVar[type[Any]]
    #: Whether it writes a plan (else only the fleet).
    needs_schedule: ClassVar[bool]

    def files(self, instance: Instance, plan: CheckedPlan | None,
              options: Any) -> dict[str, str]:
        """The files to write, by path relative to the output folder.

        Raises
        ------
        InputError
            For what the target cannot take, naming the job or node.
        """


def command_of(instance: Instance, job: int, rehearse: bool, source: str) -> str | None:
    """Job ``job``'s command; None when rehearsing.

    Raises
    ------
    InputError
        When the job has no command and the export is no rehearsal.
    """
    if rehearse:
        return None
    command = instance.command[job] if len(instance.command) else None
    if command is None:
        raise InputError(source, f"jobs[{job}].command", f"job {instance.job_ids[job]!r} has "
                         "no command to run: give each job a command in the instance, or "
                         "export with --rehearse true (each job sleeps its planned time)")
    return str(command)


def write_files(files: Mapping[str, str], folder: str | Path, inputs: list[str | Path],
                executable: tuple[str, ...] = ()) -> list[Path]:
    """Write the files under ``folder``: all of them are checked before any is written.

    Parameters
    ----------
    files
        Text by path relative to ``folder`` (sub-folders are made).
    folder
        The output folder; made when missing.
    inputs
        The files the export read: none of them is overwritten.
    executable
        Paths among ``files`` to mark executable.

    Raises
    ------
    InputError
        For an output folder that cannot be written, or a path in it that is an input or
        not a regular file; nothing is written then.
    """
    root = check_output_folder(folder, inputs)
    sources = {os.path.realpath(source) for source in inputs}
    for name in files:
        target = root / name
        if os.path.realpath(target) in sources:
            raise InputError(str(target), "", f"-o {folder} would write over {target}, an "
                             "input of this command; choose another output folder")
        with contextlib.suppress(FileNotFoundError):
            if not stat.S_ISREG(target.lstat().st_mode):
                raise InputError(str(target), "", "exists and is not a regular file: "
                                 "gpuplan writes only regular files")
    return write_files_atomic(root, files, executable)
