"""What every exporter to a cluster manager shares: the plug-in shape, the checked plan, writing.

An exporter is a :class:`~gpuplan.core.options.Part` whose :meth:`Exporter.files` turns a
:class:`CheckedPlan` (a schedule that verified against its instance, grouped by job) into
files by relative path. :func:`check_plan` is the only way to a :class:`CheckedPlan`, so
no exporter can write a plan the verifier has not passed; :func:`write_files` writes all
files or none.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, ClassVar, Protocol

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
