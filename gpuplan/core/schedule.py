"""Schedule JSON v2: the one result document every method produces.

The pydantic models are the format's definition (``gpuplan schema schedule`` publishes them)
and give a lossless JSON round trip. A schedule is only written once the verifier has
filled in :attr:`Schedule.verification`.

Version 2 lists *segments*: a job running on some GPUs of one type over an interval, with
the share of the job's work it does, the job it shares its GPUs with (space sharing), the
checkpoint/restore and migration overheads it paid at its start, and the GPUs it moved
from; and the *events* of the run (start, preempt, resume, migrate, complete). Version 1
files (``placements``, none of these facts) are still read, into the v2 model with the
facts left to the verifier to infer; gpuplan writes only version 2.
"""

from __future__ import annotations

import bisect
import dataclasses
import hashlib
import io
import json
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import IO, Any, Generic, Literal, Protocol, TypeVar

import numpy as np
from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
)

from gpuplan._version import __version__
from gpuplan.core.errors import InputError, json_path, validation_message
from gpuplan.core.files import atomic_writer, parse_json, read_text
from gpuplan.core.instance import FloatArray, Instance, IntArray, Outage
from gpuplan.core.result import Event as SolutionEvent
from gpuplan.core.result import EventKind, Result
from gpuplan.core.status import Status, relative_gap

FORMAT_VERSION = 2
#: The oldest format version gpuplan still reads (and checks); it writes only
#: :data:`FORMAT_VERSION`.
OLDEST_READ_VERSION = 1


class ViolationKind(StrEnum):
    """The constraint a violation breaks."""

    REFERENCE = "reference"
    DUPLICATE = "duplicate"
    UNPLACED = "unplaced"
    GANG = "gang"
    TYPE = "type"
    DURATION = "duration"
    #: A preemptible job's segments overlap, or do not add up to its work.
    SEGMENT = "segment"
    #: A segment declares a share of its job's work its interval does not give.
    WORK = "work"
    #: A declared space-sharing partner that does not share the segment's GPUs and
    #: interval, does not name it back, or is of a class pair the instance does not list.
    PARTNER = "partner"
    #: Restore or migration overheads that are negative, outlast their segment, or are
    #: paid by a job that is never paused.
    OVERHEAD = "overhead"
    #: ``migrated_from`` that does not name the job's previous GPUs, a "migration" that
    #: does not move, or migration overhead paid without a migration.
    MIGRATION = "migration"
    #: An event the segments do not show (wrong time, kind, job or GPUs), or a missing one.
    EVENT = "event"
    START = "start"
    RELEASE = "release"
    DEADLINE = "deadline"
    DEPENDENCY = "dependency"
    CAPACITY = "capacity"
    #: Two jobs (not a declared colocation pair) on one GPU at once, where its type is
    #: held whole (the instance does not declare it ``sharing``).
    EXCLUSIVE = "exclusive"
    #: A gang outside one domain of its required topology level.
    TOPOLOGY = "topology"
    #: A segment on a node outside its job's partition.
    PARTITION = "partition"
    #: An account's or QOS's running jobs holding more GPUs at once than its limit.
    GPU_LIMIT = "gpu-limit"
    OBJECTIVE = "objective"
    BOUND = "bound"
    #: The status claims what the schedule does not show (optimal without a proof, a plan
    #: in an infeasible file).
    STATUS = "status"
    #: A segment runs on a GPU while it is down (an outage of the instance), or declares
    #: work lost where no outage stopped it.
    OUTAGE = "outage"


class _Model(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, allow_inf_nan=False)


class Segment(_Model):
    """One job running on some GPUs of one type over an interval.

    A job run whole has one segment; a preempted, migrated or space-shared job has several,
    which never overlap and whose work adds up to the whole job.
    """

    job: str
    node: str
    gpu_type: str
    gpu_ids: list[str] = Field(description='GPU ids "<node>/<k>", one per GPU of the gang.')
    start_s: float
    end_s: float
    work: float | None = Field(
        default=None, ge=0, le=1,
        description="Share of the job's work this segment does, in [0, 1] (0 only for a "
        "run log's segment spent wholly on its restore and migration): its run time "
        "(length minus restore_s and migrate_s) over the job's duration on gpu_type, times "
        "the pair's colocation speed when it has a partner (for an elastic job's piece: its "
        "iterations, run time x its count's speed, over the job's); the job's segments add "
        "up to 1. "
        "Null (version 1 files): inferred from the interval.")
    partner: str | None = Field(
        default=None,
        description="Job id of the segment sharing these GPUs over this same interval "
        "(space sharing, at the instance's colocation speeds); null: none. Null in version "
        "1 files, where the verifier infers pairs.")
    restore_s: float = Field(
        default=0.0, ge=0,
        description="Checkpoint/restore overhead paid at the segment's start, in seconds: "
        "part of its interval, doing no work.")
    migrate_s: float = Field(
        default=0.0, ge=0,
        description="Migration overhead paid at the segment's start, in seconds: part of "
        "its interval, doing no work; only when the segment moved the job (migrated_from).")
    migrated_from: list[str] | None = Field(
        default=None,
        description="GPU ids of the job's previous segment when this segment moved it there "
        "by migration; null otherwise.")
    lost: float = Field(
        default=0.0, ge=0, le=1,
        description="Share of the job's work this segment did but lost at its end, when a "
        "failure of one of its GPUs stopped it before its next checkpoint: done again later. "
        "The job's segments' work less their lost work adds up to 1.")


class Event(_Model):
    """One event of the run: at ``time_s``, ``kind`` happens to ``job`` on ``gpu_ids``."""

    time_s: float
    kind: EventKind = Field(
        description="start (first segment starts), preempt (a segment ends before the job "
        "is done), resume (a later segment starts), migrate (a later segment starts on other "
        "GPUs, moved there), complete (last segment ends), rescale (an elastic job's next "
        "piece starts on other GPUs, another count, the instant the one before ends).")
    job: str
    gpu_ids: list[str] = Field(
        description="The GPUs of the segment that starts (start, resume, migrate, rescale) "
        "or ends (preempt, complete).")


class Unplaced(_Model):
    """A job the schedule leaves out, and why."""

    job: str
    reason: str


class Violation(_Model):
    """One broken constraint, as one readable line."""

    kind: ViolationKind
    message: str

    def __str__(self) -> str:
        return f"[{self.kind.value}] {self.message}"


class GangSpan(_Model):
    """The domains of one topology level that a multi-node gang's nodes are in."""

    job: str
    level: str
    domains: list[str] = Field(description="Domain ids, sorted; '-' for a node with no "
                               "label at the level.")


class FreeDomains(_Model):
    """How many domains of one topology level the plan leaves wholly free, over its span.

    A domain is wholly free while none of its GPUs is held: it can take a gang as large as
    itself. Fewer of them is the fragmentation that makes large gangs wait.
    """

    level: str
    domains: int = Field(description="Domains of the level in the fleet.")
    least: int = Field(description="The fewest wholly free at any instant of the plan.")
    mean: float = Field(description="Wholly free on average over the plan's span (from 0 "
                        "to its last end; at once under a static objective).")


class TopologyFacts(_Model):
    """What a plan does to the network's topology, recomputed from the instance."""

    spans: list[GangSpan] = Field(
        default_factory=list, description="Per multi-node gang and level, the domains its "
        "nodes are in.")
    free: list[FreeDomains] = Field(default_factory=list,
                                    description="Per level, its wholly free domains.")


class Verification(_Model):
    """The verifier's verdict, recomputed from the instance alone."""

    ok: bool
    violations: list[Violation] = Field(default_factory=list)
    objective: float | None = Field(
        default=None, description="The objective value the verifier recomputed."
    )
    topology: TopologyFacts | None = Field(
        default=None, description="For an instance with topology levels: the domains each "
        "multi-node gang touches and how many domains stay wholly free.")


class Failure(_Model):
    """GPUs that failed during a run: down from ``start_s`` until ``end_s``."""

    gpu_ids: list[str] = Field(min_length=1)
    start_s: float
    end_s: float | None = Field(description="When they came back; null: never.")


class RunRecord(_Model):
    """How a simulated run was made and what it measured (``gpuplan simulate``).

    The schedule it belongs to is the run log: every segment and event of the run, checked
    by the verifier like any plan.
    """

    scheduler: str = Field(description="The registered scheduler that decided the run.")
    placement: str = Field(description="The registered placement that picked the GPUs.")
    admission: str = Field(description="The registered admission that let jobs in.")
    options: dict[str, Any] = Field(
        default_factory=dict, description="The chosen parts' options by name, defaults "
        "included (e.g. las's thresholds); a log without them ran on every default.")
    mode: str = Field(description="'event' (decide at every arrival and completion) or "
                      "'round' (decide at every round boundary).")
    round_s: float | None = Field(description="Round length in seconds; null in event mode.")
    restart_overhead_s: float = Field(ge=0, description="Seconds every resume paid.")
    migration_overhead_s: float = Field(ge=0, description="Further seconds a move paid.")
    window: list[int] = Field(
        min_length=2, max_length=2,
        description="The measured jobs: positions [first, last) in arrival order.")
    metrics: dict[str, float] = Field(
        description="Measurements over the window (JCT in hours, utilisation as a share).")
    utilisation_by_type: dict[str, float] = Field(
        description="Share of each GPU type's GPU-time held by jobs, first arrival to last "
        "completion.")
    failures: list[Failure] = Field(
        default_factory=list, description="The GPUs that failed during the run; a job on "
        "them stopped and lost the work since its last checkpoint.")
    checkpoint_s: float | None = Field(
        default=None, gt=0, description="Jobs checkpointed every this many seconds of "
        "work; null: only when preempted. A failure loses the work since the last one.")
    duration_scale: list[float] | None = Field(
        default=None, description="Per job of the instance, in its order: its actual "
        "duration over the instance's (its estimate); the run ran the actual durations, "
        "the policy saw the estimates. Null: they were equal.")
    solver_s: float | None = Field(
        default=None, description="Wall seconds the scheduler spent in solver calls "
        "(not charged to the simulated clock).")

    def actual(self, instance: Instance) -> Instance:
        """The instance as the run met it: its failures as outages, its actual durations.

        Raises
        ------
        InputError
            Naming ``run.failures`` or ``run.duration_scale`` when they do not fit the
            instance.
        """
        outages = []
        for k, failure in enumerate(self.failures):
            unknown = [g for g in failure.gpu_ids if g not in instance.gpu_index]
            if unknown:
                raise InputError("run", f"failures[{k}].gpu_ids", f"unknown GPU {unknown[0]!r}")
            gpus = np.array([instance.gpu_index[g] for g in failure.gpu_ids], dtype=np.int64)
            end = np.inf if failure.end_s is None else failure.end_s
            outages.append(Outage(gpus, failure.start_s, end, f"failure at {failure.start_s:g} s"))
        if self.duration_scale is not None:
            scale = np.asarray(self.duration_scale, dtype=float)
            if scale.size != instance.n_jobs or not (scale > 0).all():
                raise InputError("run", "duration_scale", f"{scale.size} positive factors "
                                 f"are needed, one per job ({instance.n_jobs})")
            instance = instance.work_left(np.ones(instance.n_jobs), slower=scale[:, None])
        if not outages:
            return instance
        return dataclasses.replace(instance, outages=instance.outages + tuple(outages))


def _stated(work: float, overheads: float) -> bool:
    """Whether a file states a segment's work share: in (0, 1], or 0 for overheads only."""
    return 0 < work < 1 + _SAME_INSTANT or (work == 0 and overheads > 0)


_EPOCH = TypeAdapter(AwareDatetime)


def parse_epoch(text: str, source: str) -> datetime:
    """Parse an ISO-8601 date-time with a UTC offset, such as ``2026-12-01T08:00:00+01:00``.

    Raises
    ------
    InputError
        Naming ``source`` (e.g. ``--epoch``) when the text is no such date-time.
    """
    try:
        return _EPOCH.validate_python(text, strict=False)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        raise InputError(source, "", f"{text!r} is not an ISO-8601 date-time with a UTC "
                         f"offset: {validation_message(error)}") from None


class Schedule(_Model):
    """A plan for one instance, with its status, quality certificate and verification."""

    format_version: int = Field(default=FORMAT_VERSION, ge=FORMAT_VERSION, le=FORMAT_VERSION)
    instance: str = Field(description="Name of the instance planned.")
    objective_kind: str = Field(description="The objective planned for.")
    status: Status
    objective: float | None = Field(description="Objective value of the plan; null if none.")
    bound: float | None = Field(
        description="Proven bound on the optimum (lower for minimisation); null if none."
    )
    gap: float | None = Field(description="|objective - bound| / |objective|; null if unknown.")
    method: str
    solver: str
    wall_time_s: float
    seed: int
    gpuplan_version: str
    epoch: AwareDatetime | None = Field(
        default=None,
        description="Absolute time of t = 0, an ISO-8601 date-time with a UTC offset (e.g. "
        "2026-12-01T08:00:00+01:00); exporters need it to start jobs at wall-clock times. "
        "Null: times are relative only.")
    segments: list[Segment] = Field(
        description="The plan: every segment of every placed job, ordered by start time.")
    events: list[Event] = Field(
        default_factory=list,
        description="What happens to the jobs, in time order; empty when the method does "
        "not simulate the run (the segments alone are the plan).")
    unplaced: list[Unplaced]
    verification: Verification | None = Field(
        default=None, description="Always present in written schedules."
    )
    run: RunRecord | None = Field(
        default=None, description="For a simulated run: how it was made and what it "
        "measured; null for a plan.")

    @classmethod
    def from_result(
        cls, instance: Instance, result: Result, method: str, wall_time_s: float, seed: int,
        epoch: datetime | None = None,
    ) -> Schedule:
        """Translate a method's result to an (unverified) schedule in ids, by start time.

        Every segment states its work, partner, overheads and ``migrated_from``, and the
        result's events come along. The facts the result leaves out are derived: the work
        from the segment's run time (length minus overheads) at the type's speed and, when
        shared, the pair's colocation speed (1 for a job in one segment); the partners, when
        the result names none, from segments of two pairable jobs on the same GPUs over the
        same interval. A work outside (0, 1] (a broken plan) is written as null, for the
        verifier to report what is wrong with the segment; 0 is stated only for a segment
        spent wholly on its overheads (a run's job preempted as its restore ends).

        Parameters
        ----------
        instance
            The instance the result is for.
        result
            The method's result.
        method
            The registry name of the method.
        wall_time_s
            Seconds the solve took.
        seed
            The seed the method was given.
        epoch
            Absolute time of t = 0 (timezone-aware); None for relative times only.
        """
        made = ResultSchedule.make(instance, result, method, wall_time_s, seed, epoch)
        return made.head.model_copy(update={"segments": list(made.segments),
                                            "events": list(made.events)})

    def to_result(self, instance: Instance, objective: float | None = None) -> Result:
        """The schedule's plan by index, every fact of its segments and events kept.

        The inverse of :meth:`from_result`, for a plan a method starts from. Call it on a
        schedule that verifies against ``instance`` (every id is then known).

        Parameters
        ----------
        instance
            The instance the schedule is for.
        objective
            The plan's objective as the verifier recomputed it.
        """
        segments = self.segments
        job = np.array([instance.job_index[s.job] for s in segments], dtype=np.int64)
        gpus = tuple(np.array([instance.gpu_index[g] for g in s.gpu_ids], dtype=np.int64)
                     for s in segments)
        # A partner is the other job's segment on the same GPUs over the same interval.
        spans = {(s.job, tuple(sorted(s.gpu_ids)), s.start_s, s.end_s): k
                 for k, s in enumerate(segments)}
        partner = np.array([-1 if s.partner is None else spans.get(
            (s.partner, tuple(sorted(s.gpu_ids)), s.start_s, s.end_s), -1) for s in segments],
            dtype=np.int64)
        declared = all(s.work is not None for s in segments)
        return Result(
            status=self.status, objective=objective, bound=None, solver=self.solver,
            job=job,
            gpu_type=np.array([instance.type_index[s.gpu_type] for s in segments],
                              dtype=np.int64),
            start=np.array([s.start_s for s in segments], dtype=float),
            end=np.array([s.end_s for s in segments], dtype=float),
            gpus=gpus,
            node=np.array([instance.node_index[s.node] for s in segments], dtype=np.int64),
            work=np.array([s.work for s in segments], dtype=float) if declared else None,
            partner=partner if (partner >= 0).any() else None,
            restore_s=np.array([s.restore_s for s in segments], dtype=float),
            migrate_s=np.array([s.migrate_s for s in segments], dtype=float),
            lost=(np.array([s.lost for s in segments], dtype=float)
                  if any(s.lost for s in segments) else None),
            events=tuple(SolutionEvent(
                time_s=e.time_s, kind=e.kind, job=instance.job_index[e.job],
                gpus=np.array([instance.gpu_index[g] for g in e.gpu_ids], dtype=np.int64))
                for e in self.events),
        )

    def to_json(self) -> str:
        """Serialise as JSON (always the current format version), as :meth:`write` does."""
        out = io.BytesIO()
        write_document(out, self, self.segments, self.events)
        return out.getvalue().decode("utf-8")

    @classmethod
    def from_json(cls, text: str, source: str) -> Schedule:
        """Parse a schedule document, of the current format version or version 1.

        Raises
        ------
        InputError
            Naming the file, the JSON path and the problem.
        """
        # Parsed once strictly for what pydantic's parser lets pass (keys given twice, deep
        # nesting, over-long integers), then validated from the text.
        document = parse_json(text, source)
        if isinstance(document, dict) and document.get("summary_of") == "run":
            raise InputError(source, "summary_of", "this is a run summary (written with "
                             "--metrics-only): it holds no segments or events to read or "
                             "check; simulate with -o and without --metrics-only for a run log")
        if _is_version_1(document):
            return validated(_ScheduleV1, text, source).upgraded()
        return validated(cls, text, source)

    @classmethod
    def read(cls, path: str | Path) -> Schedule:
        """Read a schedule file.

        Raises
        ------
        InputError
            If the file is missing, unreadable or not a valid schedule.
        """
        path = Path(path)
        return cls.from_json(read_text(path), str(path))

    def write(self, path: str | Path) -> None:
        """Write the schedule atomically: a failure never leaves a partial file.

        Raises
        ------
        ValueError
            If the schedule has not been verified: no unverified schedule is ever written.
        """
        if self.verification is None:
            raise ValueError("refusing to write a schedule that has not been verified")
        with atomic_writer(Path(path)) as handle:
            write_document(handle, self, self.segments, self.events)


class RunSummary(_Model):
    """A simulated run without its segments and events: what ``--metrics-only`` writes.

    The run was verified, as every run is, before its summary was made.
    """

    summary_of: Literal["run"] = Field(
        default="run", description="What this document summarises: a simulated run.")
    format_version: int = Field(default=FORMAT_VERSION, ge=FORMAT_VERSION, le=FORMAT_VERSION)
    instance: str = Field(description="Name of the instance simulated.")
    method: str
    seed: int
    gpuplan_version: str
    wall_time_s: float
    objective: float | None = Field(description="The run's weighted completion time.")
    verification: Verification
    run: RunRecord

    @classmethod
    def read(cls, path: str | Path) -> RunSummary:
        """Read a run summary file.

        Raises
        ------
        InputError
            If the file is missing, unreadable or not a run summary.
        """
        text = read_text(Path(path))
        parse_json(text, str(path))
        return validated(cls, text, str(path))

    def write(self, path: str | Path) -> None:
        """Write the summary atomically."""
        with atomic_writer(Path(path)) as handle:
            handle.write((self.model_dump_json(indent=2) + "\n").encode("utf-8"))


class Plan(Protocol):
    """What the verifier reads of a schedule: a :class:`Schedule`, or a :class:`ResultSchedule`."""

    @property
    def objective_kind(self) -> str:
        """The objective planned for."""
    @property
    def status(self) -> Status:
        """Status of the plan."""
    @property
    def objective(self) -> float | None:
        """Objective value claimed."""
    @property
    def bound(self) -> float | None:
        """Bound claimed."""
    @property
    def gap(self) -> float | None:
        """Gap claimed."""
    @property
    def run(self) -> RunRecord | None:
        """A simulated run's record."""
    @property
    def segments(self) -> Collection[Segment]:
        """Every segment, by start time."""
    @property
    def events(self) -> Collection[Event]:
        """The events, in time order."""
    @property
    def unplaced(self) -> Collection[Unplaced]:
        """The jobs left out."""


_T = TypeVar("_T")
_Model_T = TypeVar("_Model_T", bound=BaseModel)


def validated(model: type[_Model_T], text: str, source: str) -> _Model_T:
    """JSON text validated as ``model`` (strict JSON mode: ISO times read as datetimes).

    Raises
    ------
    InputError
        Naming ``source``, the JSON path of the first bad field and the problem.
    """
    try:
        return model.model_validate_json(text)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        raise InputError(source, json_path(error["loc"]), validation_message(error)) from None


@dataclass(frozen=True)
class _Made(Collection[_T], Generic[_T]):
    """Items made one at a time each time they are walked, never held all at once."""

    count: int
    make: Callable[[], Iterator[_T]]

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[_T]:
        return self.make()

    def __contains__(self, item: object) -> bool:
        return any(item == mine for mine in self)


@dataclass(frozen=True)
class ResultSchedule:
    """A schedule held as the result it comes from, its segments and events made on demand.

    They are made from the result's columns one at a time, as the verifier reads them or
    :meth:`write` writes them, so a run of millions of segments is never held as models.

    Reads like a :class:`Schedule` (:class:`Plan`); :meth:`schedule` makes the whole
    document.

    Attributes
    ----------
    head
        Everything but the segments and events (those lists are empty there).
    instance, result
        What the segments and events are made from.
    """

    head: Schedule
    instance: Instance
    result: Result

    @classmethod
    def make(cls, instance: Instance, result: Result, method: str, wall_time_s: float,
             seed: int, epoch: datetime | None = None) -> ResultSchedule:
        """The (unverified) schedule of a result; see :meth:`Schedule.from_result`."""
        unplaced = [Unplaced(job=instance.job_ids[j], reason=reason)
                    for j, reason in sorted(result.unplaced.items())]
        head = Schedule(
            instance=instance.name, objective_kind=instance.objective.value,
            status=result.status, objective=result.objective, bound=result.bound,
            gap=relative_gap(result.objective, result.bound), method=method,
            solver=result.solver, wall_time_s=round(wall_time_s, 6), seed=seed,
            gpuplan_version=__version__, epoch=epoch, segments=[], events=[],
            unplaced=unplaced)
        return cls(head, instance, result)

    @property
    def objective_kind(self) -> str:
        """The objective planned for."""
        return self.head.objective_kind

    @property
    def status(self) -> Status:
        """The result's status."""
        return self.head.status

    @property
    def objective(self) -> float | None:
        """The objective the result claims."""
        return self.head.objective

    @property
    def bound(self) -> float | None:
        """The bound the result claims."""
        return self.head.bound

    @property
    def gap(self) -> float | None:
        """The gap of the claimed objective and bound."""
        return self.head.gap

    @property
    def run(self) -> RunRecord | None:
        """For a simulated run, its record."""
        return self.head.run

    @property
    def verification(self) -> Verification | None:
        """The verifier's verdict, once given."""
        return self.head.verification

    @property
    def unplaced(self) -> Collection[Unplaced]:
        """The jobs left out."""
        return self.head.unplaced

    @property
    def segments(self) -> Collection[Segment]:
        """The segments by start time, made as they are walked."""
        return _Made(self.result.n_segments, lambda: _segments(self.instance, self.result))

    @property
    def events(self) -> Collection[Event]:
        """The events in time order, made as they are walked."""
        ids, gpu_ids = self.instance.job_ids, self.instance.gpu_ids
        return _Made(len(self.result.events), lambda: (
            Event(time_s=float(e.time_s), kind=e.kind, job=ids[e.job],
                  gpu_ids=[gpu_ids[g] for g in e.gpus]) for e in self.result.events))

    def with_head(self, **update: Any) -> ResultSchedule:
        """The same segments and events under a head with ``update`` applied."""
        return ResultSchedule(self.head.model_copy(update=update), self.instance, self.result)

    def summary(self) -> RunSummary:
        """The run without its segments and events (a verified run log only).

        Raises
        ------
        ValueError
            If this is no verified run log.
        """
        head = self.head
        if head.run is None or head.verification is None:
            raise ValueError("only a verified run log has a run summary")
        return RunSummary(instance=head.instance, method=head.method, seed=head.seed,
                          gpuplan_version=head.gpuplan_version, wall_time_s=head.wall_time_s,
                          objective=head.objective, verification=head.verification,
                          run=head.run)

    def schedule(self) -> Schedule:
        """The whole document in memory."""
        return self.head.model_copy(update={"segments": list(self.segments),
                                            "events": list(self.events)})

    def write(self, path: str | Path, before_commit: Callable[[bytes], None] | None = None
              ) -> None:
        """Write the schedule atomically, a segment at a time.

        Parameters
        ----------
        path
            The file.
        before_commit
            Called with the SHA-256 of the content once it is written in full, before the
            file replaces ``path`` (a batch writes its resume key then).

        Raises
        ------
        ValueError
            If the schedule has not been verified.
        """
        if self.head.verification is None:
            raise ValueError("refusing to write a schedule that has not been verified")
        with atomic_writer(Path(path)) as handle:
            digest = write_document(handle, self.head, self.segments, self.events)
            if before_commit is not None:
                before_commit(digest)


def write_document(out: IO[bytes], head: Schedule, segments: Iterable[Segment],
                   events: Iterable[Event]) -> bytes:
    """Write a schedule document to ``out``: its fields in order, a segment or event a line.

    A plan's document has no ``run`` key: only simulated runs carry one.

    Returns
    -------
    bytes
        The SHA-256 digest of what was written.
    """
    digest = hashlib.sha256()

    def put(text: str) -> None:
        data = text.encode("utf-8")
        digest.update(data)
        out.write(data)

    fields = head.model_dump(mode="json", exclude={"segments", "events"}
                             | ({"run"} if head.run is None else set()))
    verification = fields.get("verification")
    if isinstance(verification, dict) and verification.get("topology") is None:
        # An instance without topology: written as before plans reported topology facts.
        del verification["topology"]
    put("{\n")
    for k, (name, value) in enumerate(fields.items()):
        if name == "unplaced":
            for listed, items in (("segments", segments), ("events", events)):
                put(f'  "{listed}": [')
                count = 0
                for item in items:
                    # A segment that lost nothing is written as before lost work was a field.
                    put(("," if count else "") + "\n    " + item.model_dump_json(
                        exclude={"lost"} if getattr(item, "lost", None) == 0 else None))
                    count += 1
                put("\n  ],\n" if count else "],\n")
        text = json.dumps(value, indent=2, allow_nan=False).replace("\n", "\n  ")
        put(f'  "{name}": {text}' + (",\n" if k < len(fields) - 1 else "\n"))
    put("}\n")
    return digest.digest()


@dataclass(frozen=True)
class SegmentFacts:
    """What a result's segments state in a schedule document, by segment index.

    :meth:`ResultSchedule.segments` writes these; the verifier reads them from here
    when it checks an in-memory run without making every segment a model.

    Attributes
    ----------
    order
        The segments in the document's order: by start, then job.
    node
        ``(S,)`` each segment's node.
    work
        ``(S,)`` the work share a segment states; NaN where it states none (a segment
        that does what its run time gives, or a job run whole).
    partner
        ``(S,)`` the segment it shares its GPUs with, -1 for none.
    moved_from
        Per segment, the GPUs of the job's previous segment when it migrated; else None.
    restore
        ``(S,)`` the restore seconds each segment states: the result's, raised for a
        piece of an elastic job to the ``rescale_s`` it owes (:func:`owed_rescale`).
    """

    order: IntArray
    node: IntArray
    work: FloatArray
    partner: IntArray
    moved_from: list[IntArray | None]
    restore: FloatArray


def segment_facts(instance: Instance, result: Result) -> SegmentFacts:
    """The facts a result's segments state in a document (see :class:`SegmentFacts`)."""
    order = np.lexsort((result.job, result.start))
    restore, migrate = result.overheads()
    restore = np.maximum(restore, owed_rescale(instance, result) - migrate)
    partner = result.partners() if result.partner is not None else _paired(instance, result)
    work = (result.work if result.work is not None
            else _work(instance, result, partner, restore))
    migrated: dict[int, list[float]] = {}
    for e in result.events:
        if e.kind is EventKind.MIGRATE:
            migrated.setdefault(int(e.job), []).append(float(e.time_s))
    for times in migrated.values():
        times.sort()
    previous: dict[int, IntArray] = {}
    moved_from: list[IntArray | None] = [None] * result.n_segments
    stated = np.full(result.n_segments, np.nan)
    for i in order.tolist():
        j, gpus, start = int(result.job[i]), result.gpus[i], float(result.start[i])
        before = previous.get(j)
        previous[j] = gpus
        if before is not None and (migrate[i] > 0 or _migrates_at(migrated.get(j, []), start)
                                   ) and set(before.tolist()) != set(gpus.tolist()):
            moved_from[i] = before
        share = float(work[i])
        if _stated(share, restore[i] + migrate[i]):
            stated[i] = min(share, 1.0)
    return SegmentFacts(order, result.nodes(instance), stated, partner, moved_from, restore)


def owed_rescale(instance: Instance, result: Result) -> FloatArray:
    """``(S,)`` the overhead seconds each segment owes as a piece of an elastic job.

    ``rescale_s`` (at most the piece's length) where the piece starts its job, resumes it
    after a pause, or holds other GPUs than the piece ending at its start; 0 elsewhere and
    for rigid jobs (under a static objective, which has no time, none).
    """
    owed = np.zeros(result.n_segments)
    if not instance.elastic.any() or instance.objective.is_static:
        return owed
    mine = np.flatnonzero(instance.elastic[result.job])
    last: dict[int, int] = {}
    for i in mine[np.lexsort((result.job[mine], result.start[mine]))].tolist():
        j = int(result.job[i])
        before = last.get(j)
        last[j] = i
        if before is not None and abs(result.end[before] - result.start[i]) <= (
                _SAME_INSTANT * max(1.0, abs(float(result.start[i])))) and set(
                result.gpus[before].tolist()) == set(result.gpus[i].tolist()):
            continue
        owed[i] = min(float(instance.rescale_s[j]), float(result.end[i] - result.start[i]))
    return owed


def _segments(instance: Instance, result: Result) -> Iterator[Segment]:
    """A result's segments in ids, by start time, stating every fact.

    See :meth:`Schedule.from_result`.
    """
    facts = segment_facts(instance, result)
    restore, migrate = facts.restore, result.overheads()[1]
    lost = result.lost_work()
    gpu_ids = instance.gpu_ids
    for i in facts.order.tolist():
        gpus, before, share, mate = (result.gpus[i], facts.moved_from[i], facts.work[i],
                                     int(facts.partner[i]))
        yield Segment(
            job=instance.job_ids[result.job[i]],
            node=instance.node_ids[facts.node[i]],
            gpu_type=instance.type_ids[result.gpu_type[i]],
            gpu_ids=[gpu_ids[g] for g in gpus],
            start_s=float(result.start[i]),
            end_s=float(result.end[i]),
            work=None if np.isnan(share) else float(share),
            partner=instance.job_ids[result.job[mate]] if mate >= 0 else None,
            restore_s=float(restore[i]),
            migrate_s=float(migrate[i]),
            lost=float(lost[i]),
            migrated_from=None if before is None else [gpu_ids[g] for g in before],
        )


#: Relative tolerance for "the same instant" and for float noise in a work share.
_SAME_INSTANT = 1e-9


def _migrates_at(times: list[float], start: float) -> bool:
    """Whether a migrate event among ``times`` (sorted) is at the instant ``start``."""
    near = _SAME_INSTANT * max(1.0, abs(start))
    # Candidates from a window twice as wide, so the exact test decides, not the search.
    k = bisect.bisect_left(times, start - 2 * near)
    while k < len(times) and times[k] <= start + 2 * near:
        if abs(times[k] - start) <= near:
            return True
        k += 1
    return False


def _paired(instance: Instance, result: Result) -> IntArray:
    """``(S,)`` each segment's space-sharing partner segment, -1 for none.

    Two segments share when they hold the same GPUs over the same interval, their jobs are
    preemptible with the same gang size, and the instance lists their classes as a pair
    on the type (the form every method plans pairs in). Static objectives place the batch
    at once: nothing is paired there.
    """
    partner = np.full(result.n_segments, -1, dtype=np.int64)
    if not instance.class_ids or instance.objective.is_static:
        return partner
    waiting: dict[tuple[tuple[int, ...], float, float], int] = {}
    for k in range(result.n_segments):
        j = int(result.job[k])
        if not instance.preemptible[j] or instance.job_class[j] < 0:
            continue
        key = (tuple(sorted(result.gpus[k].tolist())), round(float(result.start[k]), 6),
               round(float(result.end[k]), 6))
        other = waiting.get(key)
        if other is None:
            waiting[key] = k
            continue
        a, b = instance.job_class[result.job[other]], instance.job_class[j]
        t = result.gpu_type[k]
        if (min(instance.colocation_speed[a, b, t], instance.colocation_speed[b, a, t]) > 0
                and instance.gang[j] == instance.gang[result.job[other]]):
            partner[other], partner[k] = k, other
            del waiting[key]
    return partner


def _work(instance: Instance, result: Result, partner: IntArray,
          restore: FloatArray) -> FloatArray:
    """``(S,)`` each segment's share of its job's work, from its run time and speed.

    ``restore`` are the restore seconds the segments state. A piece of an elastic job
    does its run time at its count's speed, even alone.
    """
    job, kind = result.job, result.gpu_type
    migrate = result.overheads()[1]
    run = result.end - result.start - restore - migrate
    speed = np.ones(result.n_segments)
    shared = np.flatnonzero(partner >= 0)
    if shared.size:
        klass = instance.job_class
        speed[shared] = instance.colocation_speed[klass[job[shared]],
                                                  klass[job[partner[shared]]], kind[shared]]
    duration = np.where(instance.eligible[job, kind], instance.duration[job, kind], np.nan)
    elastic = instance.elastic[job]
    if elastic.any():
        counts = np.array([g.size for g in result.gpus], dtype=np.int64)
        duration[elastic] = instance.run_seconds(job[elastic], kind[elastic], counts[elastic])
    work: FloatArray = run * speed / (duration * instance.spread_factors(job, result.gpus))
    alone = (np.bincount(job, minlength=instance.n_jobs)[job] == 1) & (
        ~elastic | instance.objective.is_static)
    work[alone] = 1.0
    return work


def _is_version_1(document: Any) -> bool:
    """Whether a parsed document is a version-1 schedule (it says so, or lists placements)."""
    if not isinstance(document, dict):
        return False
    if "format_version" in document:
        version = document["format_version"]
        return type(version) is int and version == OLDEST_READ_VERSION
    return "placements" in document and "segments" not in document


class _PlacementV1(_Model):
    """A placement of a version-1 file: where and when one job (or segment) runs."""

    job: str
    node: str
    gpu_type: str
    gpu_ids: list[str]
    start_s: float
    end_s: float


class _ScheduleV1(_Model):
    """A version-1 schedule file, read only to be upgraded."""

    format_version: int = Field(default=OLDEST_READ_VERSION, ge=OLDEST_READ_VERSION,
                                le=OLDEST_READ_VERSION)
    instance: str
    objective_kind: str
    status: Status
    objective: float | None
    bound: float | None
    gap: float | None
    method: str
    solver: str
    wall_time_s: float
    seed: int
    gpuplan_version: str
    placements: list[_PlacementV1]
    unplaced: list[Unplaced]
    verification: Verification | None = None

    def upgraded(self) -> Schedule:
        """The same schedule in the current model, with no events.

        Its placements become segments whose work, partners and overheads the verifier
        infers.
        """
        kept = {name: getattr(self, name) for name in type(self).model_fields
                if name not in ("format_version", "placements")}
        return Schedule(**kept, segments=[Segment(**p.model_dump()) for p in self.placements])
