"""What is left of a live batch, as an instance to plan: running jobs pinned, done jobs gone.

At the re-plan's instant ``now`` (seconds after the run's epoch) each job is

- done (its Slurm job COMPLETED, or given up): left out; a dependency on it is met;
- running: it holds the GPUs Slurm gave it until its predicted end (an outage of the
  residual instance from 0, with its node demand): its start plus its duration on its
  type times the type's observed correction (:func:`corrections`), and at least a tenth
  of that duration, or :data:`MIN_LEFT_S`, from now when it runs past the estimate;
- free (pending, never submitted, failed and to run again, or lost on a failed node): a
  job of the residual instance, released when its release comes and its running
  predecessors are predicted to end, with its durations corrected, and its slot in the
  plan in force (when its GPUs are up) kept at the price of a move.

Unavailable nodes are down from 0 for good (until a snapshot shows them back). The
residual instance counts time from ``now``; :func:`plan_residual` plans it with the
method, warm-started from a repair that keeps every slot that still fits, and starts every
job as early as that plan's order allows (a left shift).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Set
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpuplan.core.instance import FloatArray, Instance, IntArray, Outage
from gpuplan.core.keep import Keep
from gpuplan.core.result import plan_status
from gpuplan.core.schedule import Schedule
from gpuplan.core.settings import RunSettings, WarmStart
from gpuplan.core.status import relative_gap
from gpuplan.live.state import RunState, Slot
from gpuplan.methods import METHODS
from gpuplan.parts.left_shift import left_shift
from gpuplan.planning import plan
from gpuplan.verify import verify_schedule

#: Seconds a job running past its estimate is still predicted to hold its GPUs, at least.
MIN_LEFT_S = 2.0
#: The method whose plan is the repair: every slot that still fits stays.
REPAIR = "greedy"


@dataclass(frozen=True)
class Running:
    """A job running now: its type, GPUs (instance indices), nodes and start."""

    gpu_type: int
    gpus: IntArray
    nodes: IntArray
    start_s: float


@dataclass(frozen=True)
class Live:
    """The residual instance at ``now`` and how its jobs map back.

    Attributes
    ----------
    instance
        The residual instance (job ``k`` is ``jobs[k]`` of the run's instance); its time
        0 is ``now``.
    jobs
        The free jobs, by index into the run's instance.
    keep
        Each free job's slot in the plan in force, in the residual's time.
    ends
        Each running job's predicted end (run seconds), by index.
    """

    instance: Instance
    now: float
    jobs: IntArray
    keep: Keep
    ends: dict[int, float]


def corrections(instance: Instance, state: RunState) -> FloatArray:
    """``(T,)`` observed over planned duration, per GPU type, of the jobs completed so far.

    A type without a completed job takes the mean over all types'; without any, 1. The
    factors are kept within [0.25, 4] so that one odd job cannot swing the plan.
    """
    ratios: list[list[float]] = [[] for _ in range(instance.n_types)]
    for job, record in state.jobs.items():
        last = record.attempts[-1] if record.attempts else None
        if (record.outcome != "completed" or last is None or last.start_s is None
                or last.end_s is None):
            continue
        t = instance.type_index[last.gpu_type]
        planned = float(instance.duration[instance.job_index[job], t])
        if planned > 0:
            ratios[t].append((last.end_s - last.start_s) / planned)
    every = [r for rs in ratios for r in rs]
    overall = float(np.mean(every)) if every else 1.0
    factor = np.array([float(np.mean(rs)) if rs else overall for rs in ratios])
    clipped: FloatArray = np.clip(factor, 0.25, 4.0)
    return clipped


def stuck(instance: Instance, free: list[int], down: Set[int]) -> dict[int, str]:
    """The free jobs no node that is up can run, and those waiting for one, with why.

    A job fits a type when the nodes of that type that are up hold its gang (on one node,
    or ``gang_nodes`` nodes of ``gpus_per_node``); a job whose predecessor is stuck waits.
    """
    up = np.ones(instance.n_nodes, dtype=bool)
    up[list(down)] = False
    found: dict[int, str] = {}
    for j in free:
        per_node = int(instance.gpus_per_node[j]) or 0
        need = int(instance.gang_nodes[j])
        fits = [bool((instance.node_gpus[up, t] >= per_node).sum() >= need)
                for t in range(instance.n_types) if instance.eligible[j, t]]
        if not any(fits):
            found[j] = "no node that is up holds its gang: it waits for one to come back"
    waiting = True
    while waiting:
        waiting = False
        for j in free:
            late = [p for p in instance.predecessors[j] if p in found]
            if j not in found and late:
                found[j] = f"its predecessor {instance.job_ids[late[0]]} waits for a node"
                waiting = True
    return found


def build(instance: Instance, state: RunState, now: float, free: list[int],
          running: Mapping[int, Running], done: Set[int], down: Set[int], move_s: float,
          same_start_s: float, online: bool = False, earliest: float = 0.0) -> Live:
    """The residual instance of a live run at ``now``; see the module's description.

    Parameters
    ----------
    instance
        The run's instance (in the cluster's seconds).
    state
        The run so far (for the corrections and the plan in force).
    free
        The jobs to plan, by index.
    running
        The jobs running now, by index.
    done
        The jobs that need no more running (completed or given up), by index.
    down
        The nodes that take no new job, by index.
    move_s, same_start_s
        The price of moving a job's slot, and how far a start may move and stay.
    earliest
        No free job starts sooner than this many seconds from now (the time the re-plan
        itself takes).
    online
        Deadlines become due dates (a re-plan after a failure cannot promise them; a miss
        is tardiness, reported), as in a simulation.
    """
    factor = corrections(instance, state)
    ends: dict[int, float] = {}
    held: list[Outage] = []
    for j, run in running.items():
        estimate = instance.whole_seconds(j, run.gpu_type, run.gpus.size) * float(
            factor[run.gpu_type])
        ends[j] = max(run.start_s + estimate, now + max(0.1 * estimate, MIN_LEFT_S))
        held.append(Outage.of_job(instance, j, run.gpus, run.nodes, ends[j] - now))
    for n in sorted(down):
        gpus = np.flatnonzero(instance.gpu_node == n)
        held.append(Outage(gpus, 0.0, np.inf, f"node {instance.node_ids[n]} is down",
                           np.array([n], dtype=np.int64),
                           instance.node_capacity[n] if instance.node_resources
                           else np.zeros(0)))
    jobs = np.array(sorted(free), dtype=np.int64)
    release = np.maximum(earliest, instance.release[jobs] - now)
    for k, j in enumerate(jobs.tolist()):
        for p in instance.predecessors[j]:
            if p in ends:
                release[k] = max(release[k], ends[p] - now)
            elif p not in done and p not in free:
                raise AssertionError(f"job {instance.job_ids[j]}'s predecessor is neither "
                                     "done, running nor free")
    taken = instance.take(jobs)
    deadline, due = taken.deadline - now, taken.due - now
    if online:
        deadline, due = np.full(jobs.size, np.inf), np.minimum(due, deadline)
    residual = dataclasses.replace(
        taken.work_left(np.ones(jobs.size), slower=factor), name=f"{instance.name}@{now:g}s",
        release=release, deadline=deadline, due=due, outages=tuple(held))
    return Live(residual, now, jobs, _keep(instance, residual, state, jobs, now, down, move_s,
                                           same_start_s), ends)


def _keep(instance: Instance, residual: Instance, state: RunState, jobs: IntArray, now: float,
          down: Set[int], move_s: float, same_start_s: float) -> Keep:
    """The plan in force's slots of the free jobs, in the residual's time."""
    slots: dict[str, Slot] = state.last_plan()
    gpus: list[IntArray | None] = []
    start = np.full(jobs.size, np.nan)
    for k, j in enumerate(jobs.tolist()):
        slot = slots.get(instance.job_ids[j])
        mine = None if slot is None else np.array(
            sorted(instance.gpu_index[g] for g in slot.gpu_ids), dtype=np.int64)
        if slot is None or mine is None or any(int(instance.gpu_node[g]) in down
                                               for g in mine.tolist()):
            gpus.append(None)
            continue
        gpus.append(mine)
        start[k] = max(0.0, slot.start_s - now)
    weighted = residual.objective.value in ("weighted-completion", "tardiness")
    penalty = move_s * (residual.weight if weighted else np.ones(jobs.size))
    return Keep(tuple(gpus), start, penalty.astype(float), None, same_start_s)


def plan_residual(live: Live, method: str, options: Any, settings: RunSettings) -> Schedule:
    """A verified plan of the residual instance: the repair, or the method's if it scores less.

    The score is the objective plus the price of the slots moved (:meth:`Keep.score`).
    """
    repair = plan(live.instance, REPAIR, settings=settings, keep=live.keep)
    if method == REPAIR:
        return repair
    chosen = METHODS[method]
    warm = repair if WarmStart.PLAN in chosen.warm_starts and repair.status.has_plan else None
    found = plan(live.instance, method, options, settings=settings, warm=warm, keep=live.keep)
    return _shifted(live, found if _score(live, found) < _score(live, repair) else repair)


def _shifted(live: Live, schedule: Schedule) -> Schedule:
    """The plan left-shifted (:func:`~gpuplan.parts.left_shift.left_shift`), verified.

    Live, a job that can start sooner should: an idle GPU is time the batch loses, and a
    job started early absorbs a later overrun. Kept as it was when the shifted plan breaks
    a constraint the shift does not look at (node resources, account limits).
    """
    if not schedule.status.has_plan:
        return schedule
    shifted = left_shift(live.instance, schedule)
    verification = verify_schedule(live.instance, shifted)
    if not verification.ok or verification.objective is None:
        return schedule
    value = verification.objective
    return shifted.model_copy(update={
        "objective": value, "status": plan_status(value, schedule.bound),
        "gap": relative_gap(value, schedule.bound), "verification": verification})


def _score(live: Live, schedule: Schedule) -> float:
    if not schedule.status.has_plan:
        return float(np.inf)
    return live.keep.score(schedule.to_result(live.instance, schedule.objective))
