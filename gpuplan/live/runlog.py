"""A live run checked: what ran as a verified schedule, the plan against reality, the figures.

:func:`realised` turns a run log into the schedule of what ran, over the instance as it
was observed (:func:`observed`): each job's duration on the type it completed on is how
long it ran, each node that went down is an outage from when the operator saw it, and
deadlines are due dates (a miss after a failure is tardiness, counted in the figures). The
verifier then checks every constraint of what Slurm did (GPUs and nodes never overbooked,
gangs on one type, dependencies, nothing on a node while it was down, a job lost on a
failed node counted as lost work). :func:`check_log` re-derives the log's own claims:
which starts were the plan's and which Slurm's, and that every job's outcome is what
its Slurm jobs show. :func:`figures` gives the table ``gpuplan run`` and the benchmark
print.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal

import numpy as np

from gpuplan._version import __version__
from gpuplan.core.instance import Instance, Outage
from gpuplan.core.schedule import Schedule, Segment, Unplaced, Verification
from gpuplan.core.status import Status
from gpuplan.live.residual import corrections
from gpuplan.live.state import Attempt, PlanRecord, RunState
from gpuplan.verify import verify_schedule

#: Slurm states of a job lost with its node: lost work, not the job's failure.
LOST = frozenset({"NODE_FAIL"})


def _completing(state: RunState, job: str) -> Attempt | None:
    record = state.jobs.get(job)
    if record is None or record.outcome != "completed" or not record.attempts:
        return None
    return record.attempts[-1]


def observed(instance: Instance, state: RunState) -> Instance:
    """The instance as the run found it: observed durations, nodes down when seen down."""
    duration = instance.duration.copy()
    for job in instance.job_ids:
        last = _completing(state, job)
        if last is not None and last.start_s is not None and last.end_s is not None:
            duration[instance.job_index[job], instance.type_index[last.gpu_type]] = max(
                last.end_s - last.start_s, 1e-3)
    outages = [Outage(np.flatnonzero(instance.gpu_node == instance.node_index[d.node]),
                      d.from_s, np.inf if d.until_s is None else d.until_s,
                      f"node {d.node} down") for d in state.down
               if d.node in instance.node_index]
    # Online, as in a simulation, a deadline is a due date: after a failure it may be out
    # of reach, and a miss is tardiness (reported), not a run that breaks a constraint.
    return dataclasses.replace(instance, duration=duration, outages=tuple(outages),
                               preemptible=np.zeros(instance.n_jobs, dtype=bool),
                               deadline=np.full(instance.n_jobs, np.inf),
                               due=np.minimum(instance.due, instance.deadline))


def realised(instance: Instance, state: RunState) -> Schedule:
    """What ran, as a schedule of :func:`observed`'s instance.

    A completed job's last Slurm job is its run; one lost with its node is a segment whose
    work is lost; Slurm jobs that failed on their own or were cancelled before they ran
    are in the log, not in the schedule. Jobs given up are unplaced, with why.
    """
    seen = observed(instance, state)
    segments: list[Segment] = []
    unplaced: list[Unplaced] = []
    for job, record in state.jobs.items():
        if job not in seen.job_index:
            continue
        j = seen.job_index[job]
        for attempt in record.attempts:
            if attempt.start_s is None or attempt.end_s is None or not attempt.ran_on:
                continue
            final = record.outcome == "completed" and attempt is record.attempts[-1]
            if not final and attempt.state not in LOST:
                continue
            length = attempt.end_s - attempt.start_s
            share = 1.0 if final else min(1.0, length / float(
                seen.duration[j, seen.type_index[attempt.gpu_type]]))
            segments.append(Segment(job=job, node=attempt.ran_on[0], gpu_type=attempt.gpu_type,
                                    gpu_ids=list(attempt.gpu_ids), start_s=attempt.start_s,
                                    end_s=attempt.end_s, work=None if final else share,
                                    lost=0.0 if final else share))
        if record.outcome != "completed":
            unplaced.append(Unplaced(job=job, reason=record.why or "did not complete"))
    segments.sort(key=lambda s: (s.start_s, s.job))
    return Schedule(
        instance=instance.name, objective_kind=instance.objective.value,
        status=Status.FEASIBLE, objective=None, bound=None, gap=None,
        method=f"run:{state.method}", solver="slurm", wall_time_s=0.0, seed=0,
        gpuplan_version=__version__, epoch=state.epoch, segments=segments, unplaced=unplaced)


def verify_run(instance: Instance, state: RunState) -> tuple[Schedule, Verification]:
    """The realised schedule and its verification against the observed instance."""
    schedule = realised(instance, state)
    return schedule, verify_schedule(observed(instance, state), schedule)


def in_force(instance: Instance, state: RunState) -> Schedule:
    """The live plan as it stands, for reading (``gpuplan eta``), not for running.

    Jobs that ended as they ran; jobs that run from their start to their predicted end
    (their duration on their type, corrected by what ran: :func:`corrections`); jobs not
    started yet where the plan in force puts them. Jobs given up, or waiting for a node,
    are unplaced with why.
    """
    factor = corrections(instance, state)
    slots = state.last_plan()
    held = state.plans[-1].held if state.plans else {}
    segments: list[Segment] = []
    unplaced: list[Unplaced] = []
    for job, record in state.jobs.items():
        last = record.attempts[-1] if record.attempts else None
        if last is not None and last.start_s is not None and last.state in ("RUNNING",
                                                                            "COMPLETED"):
            t = instance.type_index[last.gpu_type]
            end = last.end_s if last.end_s is not None else last.start_s + float(
                instance.duration[instance.job_index[job], t] * factor[t])
            segments.append(Segment(job=job, node=last.ran_on[0], gpu_type=last.gpu_type,
                                    gpu_ids=list(last.gpu_ids), start_s=last.start_s,
                                    end_s=end))
        elif record.outcome is None and job in slots and job not in held:
            slot = slots[job]
            segments.append(Segment(job=job, node=slot.nodes[0], gpu_type=slot.gpu_type,
                                    gpu_ids=list(slot.gpu_ids), start_s=slot.start_s,
                                    end_s=slot.end_s))
        else:
            unplaced.append(Unplaced(job=job, reason=record.why or held.get(
                job, "not in the plan in force")))
    return Schedule(
        instance=instance.name, objective_kind=instance.objective.value,
        status=Status.FEASIBLE, objective=None, bound=None, gap=None,
        method=f"run:{state.method}", solver="slurm", wall_time_s=0.0, seed=0,
        gpuplan_version=__version__, epoch=state.epoch, segments=segments, unplaced=unplaced)


def plan_at(state: RunState, when: float) -> PlanRecord | None:
    """The plan in force at run second ``when``: the last one made by then."""
    found = None
    for plan in state.plans:
        if plan.at_s <= when + 1e-9:
            found = plan
    return found


def decided_by(state: RunState, job: str, attempt: Attempt) -> Literal["plan", "slurm"] | None:
    """``plan`` if the Slurm job started where and when the plan in force said, else ``slurm``.

    Where: on the plan's nodes; when: within the log's tolerance of the planned start.
    None for a Slurm job that never started.
    """
    if attempt.start_s is None:
        return None
    plan = plan_at(state, attempt.start_s)
    slot = None if plan is None else next((s for s in plan.slots if s.job == job), None)
    if slot is None:
        return "slurm"
    on_plan = (sorted(attempt.ran_on) == sorted(slot.nodes)
               and abs(attempt.start_s - slot.start_s) <= state.tolerance_s)
    return "plan" if on_plan else "slurm"


def check_log(instance: Instance, state: RunState) -> list[str]:
    """The log's claims that its own records contradict, one line each.

    Checked: the log is of this instance and lists its jobs; each Slurm id once; a start
    credited to the plan (or to Slurm) is what the plan in force then says; a completed
    job's last Slurm job completed; a given-up job has none that did; a finished log has
    an outcome for every job.
    """
    problems: list[str] = []
    if state.instance_name != instance.name:
        problems.append(f"the log is of instance {state.instance_name!r}, not "
                        f"{instance.name!r}")
    missing = [job for job in instance.job_ids if job not in state.jobs]
    if missing:
        problems.append(f"{len(missing)} job(s) of the instance are not in the log "
                        f"({', '.join(missing[:5])})")
    ids: dict[str, str] = {}
    for job, record in state.jobs.items():
        for attempt in record.attempts:
            if attempt.slurm_id in ids:
                problems.append(f"Slurm job {attempt.slurm_id} is listed for "
                                f"{ids[attempt.slurm_id]} and {job}")
            ids[attempt.slurm_id] = job
            derived = decided_by(state, job, attempt)
            if attempt.decided_by != derived:
                problems.append(f"job {job}: Slurm job {attempt.slurm_id} is credited to "
                                f"{attempt.decided_by}, but the plan in force at its start "
                                f"says {derived}")
        completed = [a for a in record.attempts if a.state == "COMPLETED"]
        if record.outcome == "completed" and (not completed
                                              or record.attempts[-1] is not completed[-1]):
            problems.append(f"job {job} is completed, but its last Slurm job is not")
        if record.outcome == "given_up" and completed:
            problems.append(f"job {job} is given up, but Slurm job {completed[0].slurm_id} "
                            "completed it")
        if state.finished and record.outcome is None:
            problems.append(f"the log is finished, but job {job} has no outcome")
    return problems


@dataclass(frozen=True)
class Figures:
    """What a live run achieved, in run seconds.

    Attributes
    ----------
    makespan
        The last completion.
    planned_makespan
        The first plan's last planned end.
    mean_completion, weighted_completion
        The mean completion time, and weighted by the jobs' weights (sum w C / sum w).
    idle_share
        GPU-seconds up and idle over GPU-seconds up, from the epoch to the makespan.
    start_error_p50, start_error_p90
        The absolute gap between each Slurm job's start and the start the plan in force
        gave it.
    replans
        Plans put in force after the first.
    moved
        Pending Slurm jobs moved in all.
    by_plan, by_slurm
        Starts the plan decided, and Slurm.
    completed, given_up
        Jobs.
    late
        Completed jobs that ended after their deadline or due date.
    """

    makespan: float
    planned_makespan: float
    mean_completion: float
    weighted_completion: float
    idle_share: float
    start_error_p50: float
    start_error_p90: float
    replans: int
    moved: int
    by_plan: int
    by_slurm: int
    completed: int
    given_up: int
    late: int


def figures(instance: Instance, state: RunState) -> Figures:
    """The run's figures (:class:`Figures`)."""
    ends = {job: a.end_s for job in state.jobs
            if (a := _completing(state, job)) is not None and a.end_s is not None}
    makespan = max(ends.values(), default=0.0)
    weights = np.array([float(instance.weight[instance.job_index[j]]) for j in ends])
    values = np.array(list(ends.values()))
    busy = sum(len(a.gpu_ids) * ((a.end_s or makespan) - a.start_s)
               for record in state.jobs.values() for a in record.attempts
               if a.start_s is not None)
    up = float(instance.n_gpus) * makespan
    for d in state.down:
        if d.node in instance.node_index:
            gpus = int(instance.node_gpus[instance.node_index[d.node]].sum())
            up -= gpus * max(0.0, min(makespan, d.until_s or makespan) - d.from_s)
    errors = np.array([abs(a.start_s - a.planned_start_s) for record in state.jobs.values()
                       for a in record.attempts
                       if a.start_s is not None and a.planned_start_s is not None])
    starts = [a.decided_by for record in state.jobs.values() for a in record.attempts]
    first = state.plans[0].slots if state.plans else []
    return Figures(
        makespan=makespan,
        planned_makespan=max((s.end_s for s in first), default=0.0),
        mean_completion=float(values.mean()) if values.size else 0.0,
        weighted_completion=float((weights * values).sum() / weights.sum())
        if values.size and weights.sum() > 0 else 0.0,
        idle_share=1.0 - busy / up if up > 0 else 0.0,
        start_error_p50=float(np.percentile(errors, 50)) if errors.size else 0.0,
        start_error_p90=float(np.percentile(errors, 90)) if errors.size else 0.0,
        replans=max(0, len(state.plans) - 1),
        moved=sum(len(p.moved) for p in state.plans[1:]),
        by_plan=starts.count("plan"), by_slurm=starts.count("slurm"),
        completed=sum(r.outcome == "completed" for r in state.jobs.values()),
        given_up=sum(r.outcome == "given_up" for r in state.jobs.values()),
        late=sum(end > min(float(instance.deadline[instance.job_index[job]]),
                           float(instance.due[instance.job_index[job]])) + 1e-9
                 for job, end in ends.items()))
