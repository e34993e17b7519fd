"""What is left of a plan at time T, after changes: the residual instance, and the way back.

:meth:`Residual.build` splits a verified previous schedule at ``at``: segments that ended
are history; a job running then on GPUs that stay up keeps running there to the end of
its segment (its GPUs are held in the residual instance until then); a job running on a
GPU that fails is stopped at ``at`` and keeps the work it did (a job that is not
preemptible loses it and starts again); every other unfinished job is free, with the
work it has left and the restore (and, when it must move, migration) overhead it pays to
go on. The residual instance counts time from ``at``; :meth:`Residual.merge` puts a plan
of it back behind the history, as one plan of the changed instance, which the verifier
checks whole.

The previous schedule may also be a **record** of what a cluster ran, as ``gpuplan import
sacct`` or ``squeue`` reads it at ``at`` (:data:`~gpuplan.readers.slurm.RECORDS`, and
:data:`~gpuplan.readers.slurm.SLURM_STATES` for how each Slurm state is read): its done
jobs' segments are history, its running jobs' segments run to their planned end (and
are pinned where they run, as a plan's running jobs are), and its jobs placed nowhere
(not started, or ended unsuccessfully: failed, cancelled, timed out) are free, planned
from the start. A record is not a plan: its done jobs took what they took, which
:func:`as_ran` writes into the instance as their durations so that the history
verifies, and it may leave jobs unplaced (:func:`verify_previous`).
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpuplan.core.errors import InputError
from gpuplan.core.instance import Instance, IntArray, Outage
from gpuplan.core.keep import Keep
from gpuplan.core.result import Event, EventKind, Result
from gpuplan.core.schedule import Schedule, Verification, ViolationKind
from gpuplan.core.status import Status
from gpuplan.readers.changes import Changes
from gpuplan.readers.instance_file import instance_from_data
from gpuplan.readers.slurm import RECORDS

#: Work share below which a job counts as done (float noise of clipped segments).
_DONE = 1e-9


@dataclass(frozen=True)
class Costs:
    """What a re-plan pays to disturb the previous plan.

    Attributes
    ----------
    restore_s
        Checkpoint/restore seconds a job pays to go on after it was stopped.
    migrate_s
        Further seconds a stopped job pays to go on on other GPUs.
    move_s
        Seconds of objective a job that had not started is charged when its start or GPUs
        change (times its weight for weighted objectives).
    same_start_s
        A start that moves by at most this many seconds is no move.
    """

    restore_s: float = 30.0
    migrate_s: float = 60.0
    move_s: float = 60.0
    same_start_s: float = 60.0


@dataclass(frozen=True)
class _Piece:
    """One history segment, by index into the changed instance."""

    job: int
    gpu_type: int
    gpus: IntArray
    start: float
    end: float
    restore: float
    migrate: float
    lost: float = 0.0
    #: The end the previous plan gave it (before it was clipped at the re-plan's time).
    planned_end: float = 0.0
    #: Its (first) node: where a CPU-only job, which holds no GPU, runs.
    node: int = -1


@dataclass(frozen=True)
class Residual:
    """A previous plan split at ``at``: history, what runs on, and what is left to plan.

    Attributes
    ----------
    changed
        The instance as it now is (changes applied, GPUs down from ``at``).
    at
        The instant of the re-plan.
    plan
        The residual instance: the free jobs (job ``k`` is ``changed`` job ``jobs[k]``),
        times from ``at``, GPUs held (outages from 0) while they are down or run on.
    jobs
        The free jobs, by index into ``changed``.
    keep
        Each free job's previous slot, in the residual's time (where it had one and its
        GPUs are up), with the price of moving it.
    stopped
        Jobs running at ``at`` on GPUs that fail: stopped there.
    """

    changed: Instance
    at: float
    plan: Instance
    jobs: IntArray
    keep: Keep
    stopped: tuple[int, ...]
    history: tuple[_Piece, ...]
    #: Per free job, the restore and migration seconds included in its residual duration.
    overhead: tuple[tuple[float, float], ...]
    #: Per free job, the GPUs of its last segment before ``at`` (None: it never ran).
    last_gpus: tuple[IntArray | None, ...]

    @classmethod
    def build(cls, before: Instance, changed: Instance, previous: Schedule, at: float,
              changes: Changes, costs: Costs | None, source: tuple[str, str],
              max_changes: int | None = None) -> Residual:
        """Split ``previous`` (a plan of ``before``) at ``at`` for ``changed``.

        Parameters
        ----------
        before
            The instance the previous schedule plans.
        changed
            The instance with the changes applied and their outages from ``at``.
        previous
            The previous schedule; it must verify against ``before``.
        at
            The instant of the re-plan, in the schedules' time.
        changes
            The changes (to check that none rewrites the past).
        costs
            Overheads and the price of moving a job.
        source
            The previous schedule's file and the changes file, for messages.
        max_changes
            The most jobs with a previous slot the re-plan may move.

        Raises
        ------
        InputError
            If the previous schedule is not a verified plan of ``before``, ``at`` is before
            it starts, or a change rewrites what happened before ``at`` (a running job
            removed without ``running: true``, the duration of a finished job, the
            release of a started one).
        """
        plan_file, changes_file = source
        costs = costs or Costs()
        check_previous(before, previous, at, plan_file)
        pieces, running = _split(changed, previous, at)
        _check_changes(changes, previous, at, changes_file)
        down = np.zeros(changed.n_gpus, dtype=bool)
        for outage in changed.outages:
            if outage.start_s <= at < outage.end_s:
                down[outage.gpus] = True
        work = np.zeros(changed.n_jobs)
        history: list[_Piece] = []
        stopped, going_on = [], []
        held: list[Outage] = []
        last: dict[int, IntArray] = {}
        for piece in pieces:
            last[piece.job] = piece.gpus
        for piece in pieces:
            j = piece.job
            mine = running.get(j)
            if mine is piece and down[piece.gpus].any():
                stopped.append(j)
                whole = not changed.preemptible[j]
                share = _share(changed, piece)
                history.append(dataclasses.replace(piece, lost=share if whole else 0.0))
                work[j] += 0.0 if whole else share
                continue
            if mine is piece:
                # It goes on where it runs, to the end its segment was planned to have (or
                # to its end, if that comes first at the new estimate).
                going_on.append(j)
                left = 1.0 - work[j] - _share(changed, piece, until=at)
                length = _seconds(changed, piece)
                finish = at + max(0.0, left) * length
                end = min(piece.planned_end, finish) if changed.preemptible[j] else finish
                continued = dataclasses.replace(piece, end=max(end, at))
                history.append(continued)
                work[j] += _share(changed, continued)
                held.append(Outage.of_job(changed, j, piece.gpus, np.unique(
                    np.r_[changed.gpu_node[piece.gpus], piece.node]), end - at))
                continue
            history.append(piece)
            work[j] += _share(changed, piece)
        # Every job with work left, a job going on once its segment ends included.
        jobs = np.flatnonzero(work < 1.0 - _DONE)
        remaining = 1.0 - work[jobs]
        started = np.isin(jobs, [p.job for p in history])
        overhead = []
        last_gpus: list[IntArray | None] = []
        for k, j in enumerate(jobs.tolist()):
            before_gpus = last.get(j) if started[k] else None
            whole_restart = not changed.preemptible[j]
            restore = costs.restore_s if started[k] and not whole_restart else 0.0
            moves = (j in stopped and not whole_restart)
            migrate = costs.migrate_s if moves else 0.0
            overhead.append((restore, migrate))
            last_gpus.append(before_gpus)
            if whole_restart:
                remaining[k] = 1.0
        extra = np.array([r + m for r, m in overhead]) if overhead else np.zeros(0)
        ends: dict[int, float] = defaultdict(float)
        for piece in history:
            ends[piece.job] = max(ends[piece.job], piece.end)
        release = np.maximum(0.0, changed.release[jobs] - at)
        listed = set(jobs.tolist())
        for k, j in enumerate(jobs.tolist()):
            if j in going_on:
                # It goes on where it runs first: no second place before that ends.
                release[k] = max(release[k], ends[j] - at)
            for p in changed.predecessors[j]:
                if p not in listed:
                    release[k] = max(release[k], ends.get(p, at) - at)
        taken = changed.take(jobs).work_left(remaining, extra)
        down_outages = [Outage(o.gpus, max(0.0, o.start_s - at), o.end_s - at, o.reason)
                        for o in changed.outages if o.end_s > at]
        residual = dataclasses.replace(
            taken, name=f"{changed.name}@{at:g}s", release=release,
            deadline=changed.deadline[jobs] - at, due=changed.due[jobs] - at,
            outages=tuple(down_outages + held))
        keep = _slots(changed, previous, jobs, at, down, costs, residual, max_changes)
        return cls(changed, at, residual, jobs, keep, tuple(stopped), tuple(history),
                   tuple(overhead), tuple(last_gpus))

    def merge(self, plan: Result, solver: str) -> Result:
        """A plan of :attr:`plan` behind the history: one plan of :attr:`changed`.

        Segments of jobs that go on are joined to their history; a stopped job's next
        segment pays its restore and, on other GPUs, its migration; the events follow
        from the segments.
        """
        changed, at = self.changed, self.at
        rows: list[_Piece] = list(self.history)
        nodes = plan.nodes(self.plan)
        for i in range(plan.n_segments):
            k = int(plan.job[i])
            j = int(self.jobs[k])
            restore, migrate = self.overhead[k]
            previous = self.last_gpus[k]
            gpus = plan.gpus[i]
            if migrate and previous is not None and np.array_equal(np.sort(previous),
                                                                    np.sort(gpus)):
                # Its GPUs came back in time: it does not move, and the seconds planned
                # for the move are spent restoring.
                restore, migrate = restore + migrate, 0.0
            rows.append(_Piece(j, int(plan.gpu_type[i]), gpus, float(plan.start[i]) + at,
                               float(plan.end[i]) + at, restore, migrate,
                               node=int(nodes[i])))
        rows.sort(key=lambda p: (p.start, p.job))
        return _result(changed, rows, solver)


def _share(instance: Instance, piece: _Piece, until: float | None = None) -> float:
    """The share of its job's work a history piece does (to ``until``, if given)."""
    end = piece.end if until is None else min(piece.end, until)
    run = max(0.0, end - piece.start - piece.restore - piece.migrate)
    return run / _seconds(instance, piece)


def _seconds(instance: Instance, piece: _Piece) -> float:
    """How long the piece's job takes where the piece runs (its spread slowdown too).

    An elastic job's run time on the piece's count of GPUs.
    """
    run = instance.run_seconds(np.array([piece.job]), np.array([piece.gpu_type]),
                               np.array([piece.gpus.size]))
    return float(run[0]) * instance.spread_factor(piece.job,
                                                  np.unique(instance.gpu_node[piece.gpus]))


def is_record(schedule: Schedule) -> bool:
    """Whether the schedule records what a cluster ran (``gpuplan import``), not a plan."""
    return schedule.method in RECORDS


def as_ran(document: dict[str, Any], source: str, record: Schedule,
           at: float) -> tuple[dict[str, Any], dict[str, float]]:
    """The instance file's document with the jobs a record did by ``at`` as long as they took.

    A job done in a record (placed, every segment ending by ``at``) did its whole work in
    its segments' run time, where the instance's durations give a share of it: its
    ``duration_s`` (on every type alike; an elastic job's work) is that share times what it
    was, so that the record verifies. Segments naming what the instance lacks are left for
    the verifier to report.

    Parameters
    ----------
    document
        The instance file's document (it stays as it is).
    source
        Its file, for messages.
    record
        A schedule of what ran (:func:`is_record`).
    at
        The instant the record was taken: segments that end later still run.

    Returns
    -------
    tuple
        The document as the record ran it (a new one), and each changed job's share:
        what it took over its estimate.
    """
    instance = instance_from_data(document, source)
    known = record.model_copy(update={"segments": [
        s for s in record.segments if s.job in instance.job_index
        and s.gpu_type in instance.type_index and s.node in instance.node_index
        and all(g in instance.gpu_index for g in s.gpu_ids)]})
    pieces, _ = _split(instance, known, np.inf)
    share: dict[str, float] = defaultdict(float)
    running = set()
    for piece in pieces:
        job = instance.job_ids[piece.job]
        share[job] += _share(instance, piece)
        if piece.end > at:
            running.add(job)
    took = {job: value for job, value in share.items()
            if job not in running and abs(value - 1.0) > _DONE}
    ran = copy.deepcopy(document)
    for job in ran.get("jobs", []):
        if job.get("id") not in took:
            continue
        factor = took[job["id"]]
        elastic = job.get("elastic")
        if isinstance(elastic, dict):
            # An elastic job did that share of its work: its work (iterations or seconds).
            key = "work" if "work" in elastic else "work_s"
            elastic[key] = elastic[key] * factor
            continue
        duration = job["duration_s"]
        job["duration_s"] = ({kind: seconds * factor for kind, seconds in duration.items()}
                             if isinstance(duration, dict) else duration * factor)
    return ran, took


def verify_previous(before: Instance, previous: Schedule) -> Verification:
    """The previous schedule verified as a plan of ``before``.

    A record of what ran (:func:`is_record`) places only what ran and runs: the jobs it
    lists unplaced (not started, or to run again) break nothing.
    """
    from gpuplan.verify import verify_schedule

    verification = verify_schedule(before, previous)
    if not is_record(previous):
        return verification
    broken = [v for v in verification.violations if v.kind is not ViolationKind.UNPLACED]
    return verification.model_copy(update={"violations": broken, "ok": not broken})


def check_previous(before: Instance, previous: Schedule, at: float, source: str) -> None:
    """The previous schedule is a verified plan of ``before``, and ``at`` is not before it.

    A record of what ran (:func:`is_record`) is checked as what ran: ``before`` gives its
    done jobs the durations they ran (:func:`as_ran`), and it may leave jobs unplaced.

    Raises
    ------
    InputError
        Naming ``source``: a schedule of another instance, one that does not verify or
        holds no plan, or ``at`` before its first start.
    """
    if previous.instance != before.name:
        raise InputError(source, "instance", f"this schedule plans instance "
                         f"{previous.instance!r}, not {before.name!r}")
    verification = verify_previous(before, previous)
    if not previous.status.has_plan or not verification.ok:
        problem = (f"status {previous.status.value} holds no plan" if not
                   previous.status.has_plan else str(verification.violations[0]))
        raise InputError(source, "", f"cannot re-plan from this schedule: {problem}")
    first = min((s.start_s for s in previous.segments), default=0.0)
    if at < first:
        raise InputError(source, "", f"--at {at:g} s is before the plan starts ({first:g} s): "
                         "nothing has happened yet; plan the changed instance with gpuplan "
                         "solve instead")


def _split(changed: Instance, previous: Schedule,
           at: float) -> tuple[list[_Piece], dict[int, _Piece]]:
    """The previous segments that start before ``at``, clipped there, by changed index.

    Returns the pieces and, per job running at ``at``, its running piece (clipped). Jobs
    the changes removed are left out.
    """
    pieces: list[_Piece] = []
    running: dict[int, _Piece] = {}
    for s in previous.segments:
        j = changed.job_index.get(s.job)
        if s.start_s >= at or j is None:
            continue
        piece = _Piece(j, changed.type_index[s.gpu_type],
                       np.array(sorted(changed.gpu_index[g] for g in s.gpu_ids), dtype=np.int64),
                       s.start_s, min(s.end_s, at), s.restore_s, s.migrate_s,
                       planned_end=s.end_s, node=changed.node_index[s.node])
        pieces.append(piece)
        if s.end_s > at:
            running[j] = piece
    return pieces, running


def _check_changes(changes: Changes, previous: Schedule, at: float, source: str) -> None:
    """No change rewrites what happened before ``at``.

    Raises
    ------
    InputError
        Naming the entry of the changes file: a job removed while it runs without
        ``running: true``, a new duration for a job done by ``at``, a new release for a
        job that started.
    """
    first: dict[str, float] = {}
    last: dict[str, float] = {}
    runs: set[str] = set()
    for s in previous.segments:
        first[s.job] = min(first.get(s.job, np.inf), s.start_s)
        last[s.job] = max(last.get(s.job, -np.inf), s.end_s)
        if s.start_s < at < s.end_s:
            runs.add(s.job)
    for k, gone in enumerate(changes.jobs_removed):
        if gone.job in runs and not gone.running:
            raise InputError(source, f"jobs_removed[{k}].running", f"job {gone.job!r} runs at "
                             f"{at:g} s: say `running: true` to stop it")
    for k, edit in enumerate(changes.jobs_changed):
        done_at = last.get(edit.job, np.inf)
        if edit.duration_s is not None and done_at <= at:
            raise InputError(source, f"jobs_changed[{k}].duration_s", f"job {edit.job!r} was "
                             f"done at {done_at:g} s, before {at:g} s: its duration is known")
        if edit.release_s is not None and first.get(edit.job, np.inf) < at:
            raise InputError(source, f"jobs_changed[{k}].release_s", f"job {edit.job!r} started "
                             f"at {first[edit.job]:g} s, before {at:g} s: its release is past")


def _slots(changed: Instance, previous: Schedule, jobs: IntArray, at: float, down: np.ndarray,
           costs: Costs, residual: Instance, max_changes: int | None) -> Keep:
    """Each free job's previous slot in the residual's time: its one segment after ``at``."""
    after: dict[int, list[tuple[IntArray, float]]] = defaultdict(list)
    for s in previous.segments:
        j = changed.job_index.get(s.job)
        if j is not None and s.start_s >= at:
            after[j].append((np.array(sorted(changed.gpu_index[g] for g in s.gpu_ids),
                                      dtype=np.int64), s.start_s))
    gpus: list[IntArray | None] = []
    start = np.full(jobs.size, np.nan)
    for k, j in enumerate(jobs.tolist()):
        future = after.get(j, [])
        if len(future) == 1 and not down[future[0][0]].any():
            gpus.append(future[0][0])
            start[k] = future[0][1] - at
        else:
            gpus.append(None)
    weighted = not residual.objective.is_static and residual.objective.value in (
        "weighted-completion", "tardiness")
    penalty = costs.move_s * (residual.weight if weighted else np.ones(jobs.size))
    return Keep(tuple(gpus), start, penalty.astype(float), max_changes, costs.same_start_s)


def _result(instance: Instance, rows: list[_Piece], solver: str) -> Result:
    """The rows as a plan of ``instance``, with the events its segments show."""
    events: list[Event] = []
    by_job: dict[int, list[_Piece]] = defaultdict(list)
    for row in rows:
        by_job[row.job].append(row)
    for j, mine in by_job.items():
        events.append(Event(mine[0].start, EventKind.START, j, mine[0].gpus))
        for a, b in itertools.pairwise(mine):
            same = np.array_equal(a.gpus, b.gpus)
            if same and abs(a.end - b.start) <= 1e-9 * max(1.0, abs(a.end)):
                continue
            events.append(Event(a.end, EventKind.PREEMPT, j, a.gpus))
            events.append(Event(b.start, EventKind.RESUME if same or b.migrate == 0
                                else EventKind.MIGRATE, j, b.gpus))
        events.append(Event(mine[-1].end, EventKind.COMPLETE, j, mine[-1].gpus))
    events.sort(key=lambda e: (e.time_s, int(e.kind != EventKind.COMPLETE
                                             and e.kind != EventKind.PREEMPT), e.job))
    return Result(
        status=Status.FEASIBLE, objective=None, bound=None, solver=solver,
        job=np.array([r.job for r in rows], dtype=np.int64),
        gpu_type=np.array([r.gpu_type for r in rows], dtype=np.int64),
        start=np.array([r.start for r in rows]), end=np.array([r.end for r in rows]),
        gpus=tuple(r.gpus for r in rows),
        node=np.array([r.node for r in rows], dtype=np.int64),
        restore_s=np.array([r.restore for r in rows]),
        migrate_s=np.array([r.migrate for r in rows]),
        lost=np.array([r.lost for r in rows]),
        events=tuple(events))
