"""``gpuplan run``: carry a verified plan out on Slurm and keep it true as the cluster changes.

The operator plans the batch (or takes a verified plan), submits each job through the Slurm
exporter's batch script (its nodes, GPU type and count, ``--begin`` at its planned start,
``--time`` with a margin, ``afterok`` on its unfinished predecessors, ``--no-requeue``),
then polls the cluster (:class:`~gpuplan.live.cluster.Cluster`) until every job has ended.
On a change it re-plans what is left from the running state
(:mod:`gpuplan.live.residual`), verifies the plan, and applies only the difference: a
pending job whose begin time moved gets ``scontrol update StartTime``, one whose nodes or
GPU type changed is cancelled and submitted again, a job that must run again (failed, or
lost on a failed node) is submitted anew, and nothing else is touched. The changes:

- a node that takes no new job (DOWN, DRAIN, FAIL, not responding), or comes back; jobs
  running on a failed node are cancelled and run again elsewhere (nothing is lost);
- a job that ends more than ``tolerance_s`` off its plan (early or late), fails (run again
  up to ``retries`` times, then given up with its dependants), or runs past its estimate;
- a job Slurm did not start within ``tolerance_s`` of its planned start;
- with ``watch``, new jobs in the instance file.

Every step is written to the state file (:class:`~gpuplan.live.state.RunState`) before
the next poll; after Ctrl-C the jobs stay queued in Slurm with their planned begin times
and the run resumes from that file.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from gpuplan.core.errors import InputError
from gpuplan.core.files import write_text_atomic
from gpuplan.core.instance import Instance
from gpuplan.core.options import option, parse_bool, parse_number
from gpuplan.core.schedule import Schedule
from gpuplan.core.settings import RunSettings
from gpuplan.exporters.base import check_plan
from gpuplan.exporters.slurm import SlurmExporter, SlurmOptions
from gpuplan.live.cluster import ENDED, HOLDING, Cluster, SlurmError, Snapshot
from gpuplan.live.residual import Live, Running, build, plan_residual, stuck
from gpuplan.live.runlog import LOST, decided_by, plan_at
from gpuplan.live.state import Attempt, JobRecord, NodeDown, PlanRecord, RunState, Slot

#: Failed Slurm states a job is run again after, without counting against its retries:
#: the cluster's fault, not the job's.
NOT_THE_JOBS_FAULT = frozenset({"NODE_FAIL", "BOOT_FAIL", "PREEMPTED"})


@dataclass(frozen=True)
class OperatorOptions:
    """The options of ``gpuplan run``."""

    replan_limit_s: float = option(2.0, "--replan-limit", "seconds each re-plan's method may "
                                   "take (default: 2)",
                                   parse=parse_number(float, 0.1, 3600), metavar="S")
    poll_s: float = option(1.0, "--poll", "seconds between looks at the cluster (default: 1)",
                           parse=parse_number(float, 0.1, 3600), metavar="S")
    tolerance_s: float = option(5.0, "--tolerance", "seconds a job may start or end off its "
                                "plan before the plan is re-made, and within which a start "
                                "counts as the plan's (default: 5: Slurm's scheduling "
                                "granularity here)", parse=parse_number(float, 0, 3600),
                                metavar="S")
    move_s: float = option(10.0, "--move-s", "seconds of objective each moved pending job "
                           "costs a re-plan, as gpuplan replan's (default: 10: live, a move "
                           "is one scontrol update, and a job left waiting costs more)",
                           parse=parse_number(float, 0, 1e6), metavar="S")
    same_start_s: float = option(2.0, "--same-start-s", "a begin time moved by at most S "
                                 "seconds is left as it is (default: 2)",
                                 parse=parse_number(float, 0, 3600), metavar="S")
    retries: int = option(1, "--retries", "times a job that fails on its own is run again "
                          "before it and its dependants are given up (default: 1)",
                          parse=parse_number(int, 0, 100), metavar="N")
    time_margin: float = option(0.5, "--time-margin", "each job's --time is its planned "
                                "length x (1 + M) plus a minute (default: 0.5)",
                                parse=parse_number(float, 0, 100), metavar="M")
    lead_s: float = option(10.0, "--lead", "seconds from the first plan to the batch's start "
                           "(the epoch), for the submissions (default: 10)",
                           parse=parse_number(float, 0, 86400), metavar="S")
    speedup: float = option(1.0, "--speedup", "run the batch K times faster than the "
                            "instance's seconds (with --rehearse: a demo of a long batch; "
                            "default: 1)", parse=parse_number(float, 1, 1e6), metavar="K")
    rehearse: bool = option(False, "--rehearse", "each job sleeps its planned length instead "
                            "of running its command (default: false)", parse=parse_bool,
                            metavar="true|false")
    improve_s: float = option(0.0, "--improve", "once the first plan is submitted, and once "
                              "a node failed or came back, spend S more seconds improving the "
                              "plan of the jobs it starts S seconds or more later, while the "
                              "first ones run (default: 0, off)",
                              parse=parse_number(float, 0, 3600), metavar="S")
    watch: bool = option(False, "--watch", "re-read the instance file when it changes and "
                         "plan the jobs added to it (default: false)", parse=parse_bool,
                         metavar="true|false")


def scaled(instance: Instance, speedup: float) -> Instance:
    """The instance in the cluster's seconds: every time divided by ``speedup``."""
    if speedup == 1.0:
        return instance
    return dataclasses.replace(instance, duration=instance.duration / speedup,
                               release=instance.release / speedup,
                               deadline=instance.deadline / speedup,
                               due=instance.due / speedup)


class NoPlan(Exception):  # noqa: N818 (a result, not an error of the code)
    """The batch has no plan to carry out: nothing was submitted."""

    def __init__(self, schedule: Schedule) -> None:
        super().__init__(schedule.status.value)
        self.schedule = schedule


class Operator:
    """One live run: its instance, cluster, folder and state; :meth:`run` carries it out.

    Parameters
    ----------
    instance
        The batch, in the cluster's seconds (:func:`scaled`).
    cluster
        The Slurm cluster (or a :class:`~gpuplan.live.cluster.DryRun`).
    folder
        Where the state file (``state.json``), batch scripts and job outputs go.
    state
        The run so far (a new one from :meth:`start`, or read back to resume).
    options
        The operator's options.
    settings
        The method's settings for the first plan; re-plans take ``replan_limit_s``.
    say
        Where progress lines go.
    reread
        With ``watch``: the instance file read again when it changed, else None.
    """

    def __init__(self, instance: Instance, cluster: Cluster, folder: Path, state: RunState,
                 options: OperatorOptions, settings: RunSettings, method_options: Any,
                 say: Callable[[str], None],
                 reread: Callable[[], Instance | None] | None = None) -> None:
        self.instance = instance
        self.cluster = cluster
        self.folder = folder.resolve()
        self.state = state
        self.options = options
        self.settings = settings
        self.method_options = method_options
        self.say = say
        self.reread = reread
        self.predicted: dict[str, float] = {}
        self.flagged: set[tuple[str, int]] = set()
        self.failures: dict[str, int] = {}
        self.down: set[str] = {d.node for d in state.down if d.until_s is None}
        #: Why the plan in force deserves --improve seconds more, once (None: it does not).
        self.improve: str | None = "the first plan"

    @property
    def path(self) -> Path:
        """The state file."""
        return self.folder / "state.json"

    def now(self, when: datetime | None = None) -> float:
        """Seconds after the epoch."""
        return ((when or datetime.now(UTC)) - self.state.epoch).total_seconds()

    def at(self, seconds: float) -> datetime:
        """The UTC time ``seconds`` after the epoch."""
        return self.state.epoch + timedelta(seconds=seconds)

    def save(self) -> None:
        """Write the state file (not in a dry run's folder-less run)."""
        self.state.write(self.path)

    # -- the first plan -------------------------------------------------------------------

    def start(self, plan: Schedule | None, plan_source: str) -> None:
        """Put the first plan in force: ``plan`` (verified), or the method's; submit it all."""
        began = time.monotonic()
        if plan is not None:
            checked = check_plan(self.instance, plan, plan_source)
            if any(len(job.segments) > 1 for job in checked.jobs):
                raise InputError(plan_source, "segments", "the plan pauses some jobs, but a "
                                 "Slurm job runs whole: give gpuplan run a plan without "
                                 "preemption (or let it plan: it plans every job whole)")
            self.state.epoch = datetime.now(UTC).replace(microsecond=0) + timedelta(
                seconds=self.options.lead_s)
            live = build(self._whole(), self.state, 0.0, list(range(self.instance.n_jobs)),
                         {}, set(), set(), self.options.move_s, self.options.same_start_s)
            self._apply(live, plan, "the given plan", plan.method, began, 0.0)
            return
        live = build(self._whole(), self.state, 0.0, list(range(self.instance.n_jobs)), {},
                     set(), set(), self.options.move_s, self.options.same_start_s)
        schedule = plan_residual(live, self.state.method, self.method_options, self.settings)
        if not schedule.status.has_plan:
            raise NoPlan(schedule)
        seconds = time.monotonic() - began
        # The batch starts once planned, so that no planned start is already past.
        self.state.epoch = datetime.now(UTC).replace(microsecond=0) + timedelta(
            seconds=self.options.lead_s)
        self._apply(live, schedule, "the first plan", schedule.method, began, seconds)

    def _whole(self) -> Instance:
        """The instance with every job run whole (a Slurm job is not paused and resumed)."""
        return dataclasses.replace(self.instance,
                                   preemptible=np.zeros(self.instance.n_jobs, dtype=bool))

    # -- the loop -------------------------------------------------------------------------

    def run(self) -> RunState:
        """Watch and re-plan until every job has ended.

        Raises
        ------
        KeyboardInterrupt
            After writing the state, marked interrupted: the jobs stay queued in Slurm.
        """
        try:
            while not self.state.finished:
                self.step()
                self.save()
                if self.state.finished:
                    break
                time.sleep(self.options.poll_s)
        except KeyboardInterrupt:
            self.state.interrupted = True
            self.save()
            raise
        return self.state

    def step(self) -> None:
        """Look at the cluster once; re-plan and apply when something changed."""
        snapshot = self.cluster.snapshot()
        began = time.monotonic()
        reasons = self._new_jobs() + self._observe(snapshot)
        if all(r.outcome is not None for r in self.state.jobs.values()):
            self.state.finished = True
            self.state.interrupted = False
            self.say(f"every job has ended at {self.now(snapshot.time):.0f} s")
            return
        if reasons:
            self.replan(self.now(snapshot.time), "; ".join(reasons), began)
            if any("node" in reason for reason in reasons):
                # A fleet that changed was re-planned in the short re-plan limit: worth more.
                self.improve = f"the re-plan at {self.now(snapshot.time):.0f} s"
        elif self.options.improve_s > 0 and self.improve is not None and self.state.plans:
            why, self.improve = self.improve, None
            self.replan(self.now(snapshot.time), f"improving {why}", began,
                        self.options.improve_s)

    def replan(self, now: float, reason: str, began: float, ahead: float = 0.0) -> None:
        """Re-plan what is left at ``now`` and apply the difference.

        With ``ahead``, the re-plan takes that many seconds (its method's limit) and keeps
        every job the plan in force starts before ``now + ahead`` where it is: it plans
        only the jobs that start later, from ``now + ahead`` on, so that nothing it plans is
        already past when it is applied.
        """
        index = self.instance.job_index
        slots = self.state.last_plan()
        free: list[int] = []
        running: dict[int, Running] = {}
        done: set[int] = set()
        staying: list[Slot] = []
        for job, record in self.state.jobs.items():
            j = index[job]
            last = record.attempts[-1] if record.attempts else None
            slot = slots.get(job)
            if record.outcome is not None:
                done.add(j)
            elif last is not None and last.state == "RUNNING" and not last.cancelled_because:
                running[j] = self._running(last.gpu_type, last.gpu_ids, last.ran_on,
                                           now if last.start_s is None else last.start_s)
            elif (ahead and slot is not None and last is not None
                  and last.state == "PENDING" and not last.cancelled_because
                  and slot.start_s < now + ahead):
                # It starts while this re-plan is made: it stays where the plan has it.
                running[j] = self._running(slot.gpu_type, slot.gpu_ids, slot.nodes,
                                           slot.start_s)
                staying.append(slot)
            else:
                free.append(j)
        down = {self.instance.node_index[n] for n in self.down
                if n in self.instance.node_index}
        waiting = stuck(self.instance, free, down)
        live = build(self._whole(), self.state, now,
                     [j for j in free if j not in waiting], running, done | set(waiting),
                     down, self.options.move_s, self.options.same_start_s, online=True,
                     earliest=ahead)
        self.predicted.update({self.instance.job_ids[j]: end for j, end in live.ends.items()})
        if not free:
            return
        settings = dataclasses.replace(
            self.settings, time_limit_s=ahead or self.options.replan_limit_s)
        planned = time.monotonic()
        schedule = plan_residual(live, self.state.method, self.method_options, settings)
        if not schedule.status.has_plan:
            why = "; ".join(f"{u.job}: {u.reason}" for u in schedule.unplaced[:3])
            self.say(f"{now:7.0f} s  NO PLAN for what is left ({reason}): "
                     f"{schedule.status.value} ({why}); the jobs stay as they are in Slurm "
                     "until the next change")
            return
        self._apply(live, schedule, reason, schedule.method, began,
                    time.monotonic() - planned,
                    {self.instance.job_ids[j]: why for j, why in waiting.items()}, staying)

    # -- what the cluster shows -----------------------------------------------------------

    def _running(self, gpu_type: str, gpu_ids: list[str], nodes: list[str],
                 start: float) -> Running:
        """A job that holds these GPUs from ``start``, by instance index."""
        instance = self.instance
        return Running(instance.type_index[gpu_type], np.array(
            sorted(instance.gpu_index[g] for g in gpu_ids), dtype=np.int64),
            np.array([instance.node_index[n] for n in nodes], dtype=np.int64), start)

    def _new_jobs(self) -> list[str]:
        """With ``watch``: the jobs added to the instance file since the last look."""
        if self.reread is None:
            return []
        fresh = self.reread()
        if fresh is None:
            return []
        if (fresh.node_ids, fresh.type_ids) != (self.instance.node_ids, self.instance.type_ids):
            self.say("the instance file's fleet changed: gpuplan run takes jobs added to it, "
                     "not a new fleet; going on with the jobs as they were")
            return []
        added = [job for job in fresh.job_ids if job not in self.state.jobs]
        self.instance = fresh
        for job in added:
            self.state.jobs[job] = JobRecord()
        return [f"{len(added)} job(s) added ({', '.join(added[:5])})"] if added else []

    def _observe(self, snapshot: Snapshot) -> list[str]:
        """Update the state from a snapshot; the changes that call for a re-plan."""
        now = self.now(snapshot.time)
        reasons: list[str] = []
        unavailable = {n for n in snapshot.unavailable if n in self.instance.node_index}
        for node in sorted(unavailable - self.down):
            self.state.down.append(NodeDown(node=node, from_s=now))
            reasons.append(f"node {node} takes no new job")
        for node in sorted(self.down - unavailable):
            for outage in self.state.down:
                if outage.node == node and outage.until_s is None:
                    outage.until_s = now
            reasons.append(f"node {node} is back")
        self.down = unavailable
        slots = self.state.last_plan()
        plan_number = len(self.state.plans)
        for job, record in self.state.jobs.items():
            last = record.attempts[-1] if record.attempts else None
            if record.outcome is not None or last is None:
                continue
            seen = snapshot.jobs.get(last.slurm_id)
            if seen is None:
                continue  # not submitted in this look, or Slurm forgot it: the next look
            if last.start_s is None and seen.start is not None:
                self._started(job, last, seen.start, seen.nodes, seen.gpus)
                if last.decided_by == "slurm" and last.start_s is not None and (
                        last.planned_start_s is None
                        or last.start_s > last.planned_start_s + self.options.tolerance_s):
                    reasons.append(f"job {job} started at {last.start_s:.0f} s, not at its "
                                   f"planned {last.planned_start_s or 0:.0f} s")
            if seen.state in ENDED and last.state not in ENDED:
                last.state = seen.state
                last.end_s = self.now(seen.end) if seen.end is not None else now
                if last.state in LOST:
                    self._node_failed(last, now)
                reasons += self._ended(job, record, last)
            elif seen.state in HOLDING and last.state != "RUNNING":
                last.state = "RUNNING"
            if last.state == "RUNNING" and not last.cancelled_because:
                if set(last.ran_on) & self.down:
                    # Slurm kills it with its node; cancel it now and run it again elsewhere.
                    # It ends here, as its node's outage begins.
                    last.cancelled_because = f"node {', '.join(set(last.ran_on) & self.down)}" \
                        " failed"
                    last.state, last.end_s = "NODE_FAIL", now
                    self._quietly(self.cluster.cancel, last.slurm_id)
                    reasons.append(f"job {job} lost on a failed node")
                elif now > self.predicted.get(job, math.inf) + self.options.tolerance_s \
                        and (job, plan_number) not in self.flagged:
                    self.flagged.add((job, plan_number))
                    reasons.append(f"job {job} runs past its estimate")
            slot = slots.get(job)
            if (seen.state == "PENDING" and slot is not None
                    and now > slot.start_s + self.options.tolerance_s
                    and (job, plan_number) not in self.flagged):
                self.flagged.add((job, plan_number))
                reasons.append(f"job {job} did not start at {slot.start_s:.0f} s "
                               f"({seen.reason})")
        return reasons

    def _started(self, job: str, attempt: Attempt, when: datetime, nodes: tuple[str, ...],
                 gpus: dict[str, tuple[int, ...]]) -> None:
        """Record a Slurm job's start, and whether it was the plan's (:func:`decided_by`)."""
        attempt.start_s = self.now(when)
        attempt.ran_on = list(nodes)
        attempt.gpu_ids = [f"{node}/{k}" for node in nodes for k in gpus.get(node, ())]
        if len(attempt.gpu_ids) != int(self.instance.gang[self.instance.job_index[job]]):
            attempt.gpu_ids = self._first_gpus(job, nodes, attempt.gpu_type)
        attempt.state = "RUNNING"
        plan = plan_at(self.state, attempt.start_s)
        slot = None if plan is None else next((s for s in plan.slots if s.job == job), None)
        attempt.planned_start_s = None if slot is None else slot.start_s
        attempt.decided_by = decided_by(self.state, job, attempt)
        self.predicted[job] = attempt.start_s + float(self.instance.duration[
            self.instance.job_index[job], self.instance.type_index[attempt.gpu_type]])

    def _node_failed(self, attempt: Attempt, now: float) -> None:
        """Record the outage a job lost with its node shows, from the job's end.

        The failed nodes are those of the job that take no new job now; when all are back
        already (a node set DOWN that re-registered between two looks), all of the job's,
        down from its end to now.
        """
        assert attempt.end_s is not None
        failed = [n for n in attempt.ran_on if n in self.down] or attempt.ran_on
        for node in failed:
            record = next((d for d in self.state.down if d.node == node
                           and (d.until_s is None or d.until_s >= attempt.end_s)), None)
            if record is None:
                self.state.down.append(NodeDown(node=node, from_s=attempt.end_s,
                                                until_s=None if node in self.down else now))
            elif record.from_s > attempt.end_s:
                record.from_s = attempt.end_s

    def _first_gpus(self, job: str, nodes: tuple[str, ...], gpu_type: str) -> list[str]:
        """The lowest GPUs of the type on each node: Slurm named no GPU index."""
        instance = self.instance
        t = instance.type_index[gpu_type]
        per_node = int(instance.gang[instance.job_index[job]]) // max(1, len(nodes))
        found = []
        for node in nodes:
            n = instance.node_index[node]
            first = int(instance.node_gpus[n, :t].sum())
            found += [f"{node}/{first + k}" for k in range(per_node)]
        return found

    def _ended(self, job: str, record: JobRecord, attempt: Attempt) -> list[str]:
        """A Slurm job ended: done, run again, or given up; the reason to re-plan, if any."""
        if attempt.state == "COMPLETED":
            record.outcome = "completed"
            off = (attempt.end_s or 0.0) - self.predicted.get(job, attempt.end_s or 0.0)
            return ([f"job {job} ended {off:+.0f} s off its plan"]
                    if abs(off) > self.options.tolerance_s else [])
        if attempt.state in NOT_THE_JOBS_FAULT or attempt.cancelled_because:
            return [f"job {job} {attempt.state} ({attempt.cancelled_because or 'its node'}): "
                    "run again"]
        self.failures[job] = self.failures.get(job, 0) + 1
        if self.failures[job] <= self.options.retries:
            return [f"job {job} {attempt.state}: run again"]
        self._give_up(job, f"{attempt.state} {self.failures[job]} time(s)")
        return [f"job {job} {attempt.state}: given up"]

    def _give_up(self, job: str, why: str) -> None:
        """Give the job up, and every job that waits for it."""
        record = self.state.jobs[job]
        record.outcome, record.why = "given_up", why
        last = record.attempts[-1] if record.attempts else None
        if last is not None and last.state == "PENDING":
            last.cancelled_because, last.state = "given up", "CANCELLED"
            self._quietly(self.cluster.cancel, last.slurm_id)
        j = self.instance.job_index[job]
        for k in range(self.instance.n_jobs):
            other = self.instance.job_ids[k]
            if j in self.instance.predecessors[k] and self.state.jobs[other].outcome is None:
                self._give_up(other, f"its predecessor {job} was given up")

    def _quietly(self, action: Callable[..., None], *args: Any) -> bool:
        """Run a Slurm change; a job that moved on meanwhile is seen at the next look."""
        try:
            action(*args)
        except SlurmError as exc:
            self.say(f"slurm: {exc}")
            return False
        return True

    # -- applying a plan ------------------------------------------------------------------

    def _apply(self, live: Live, schedule: Schedule, reason: str, method: str,
               began: float, plan_seconds: float,
               waiting: dict[str, str] | None = None,
               staying: list[Slot] | None = None) -> None:
        """Put a verified plan of the residual instance in force: only what changed.

        ``waiting``: free jobs left out because no node that is up can run them, with why;
        their pending Slurm jobs are cancelled (held, as the plan's unplaced jobs).
        ``staying``: slots of pending jobs the re-plan kept as they were (they start while
        it is made); they stay in the plan in force, untouched in Slurm.
        """
        now = live.now
        record = PlanRecord(at_s=now, reason=reason, method=method,
                            status=schedule.status.value, objective=schedule.objective,
                            bound=schedule.bound, plan_seconds=plan_seconds,
                            applied_after_s=0.0, slots=[])
        by_job = {s.job: s for s in schedule.segments}
        scripts = self._scripts(live, schedule) if by_job else {}
        for s in schedule.segments:
            record.slots.append(Slot(job=s.job, start_s=now + s.start_s, end_s=now + s.end_s,
                                     gpu_type=s.gpu_type, nodes=sorted(
                                         {g.rsplit("/", 1)[0] for g in s.gpu_ids} or {s.node}),
                                     gpu_ids=list(s.gpu_ids)))
        if not self.state.plans:
            self._refused(scripts)
        record.kept += len(staying or [])
        record.slots += staying or []
        self.state.plans.append(record)
        for slot in record.slots:
            if slot.job in scripts:
                self._carry_out(slot, scripts[slot.job], record)
        held = {u.job: u.reason for u in schedule.unplaced} | (waiting or {})
        for job, why in held.items():
            last = self.state.current(job)
            record.held[job] = why
            if last is not None and last.state == "PENDING" and not last.cancelled_because:
                last.cancelled_because, last.state = "not placed by the plan", "CANCELLED"
                self._quietly(self.cluster.cancel, last.slurm_id)
        self._dependencies()
        record.applied_after_s = time.monotonic() - began
        self.say(f"{now:7.0f} s  plan {len(self.state.plans)} ({reason}): {method} "
                 f"{schedule.status.value}, {len(record.slots)} jobs: {record.kept} kept, "
                 f"{len(record.moved)} moved ({len(record.resubmitted)} resubmitted), "
                 f"{len(record.submitted)} submitted, {len(record.held)} not placed; applied "
                 f"{record.applied_after_s:.2f} s after the change was seen")

    def _scripts(self, live: Live, schedule: Schedule) -> dict[str, str]:
        """Each planned job's batch script, from the Slurm exporter, by job id."""
        checked = check_plan(live.instance, schedule, "the live plan", self.at(live.now))
        options = SlurmOptions(time_margin=self.options.time_margin,
                               rehearse=self.state.rehearse)
        files = SlurmExporter().files(live.instance, checked, options)
        scripts = {}
        for path, text in files.items():
            if path.startswith("jobs/"):
                name = next(line.split("=", 1)[1] for line in text.splitlines()
                            if line.startswith("#SBATCH --job-name="))
                scripts[name] = text
        return scripts

    def _refused(self, scripts: dict[str, str]) -> None:
        """Before anything is submitted: every script is one Slurm would take.

        Raises
        ------
        InputError
            Naming the first job Slurm refuses (an unknown partition, account or node, a
            GPU type it lacks...) and Slurm's reason; nothing is submitted.
        """
        with scratch_folder() as folder:
            for job, text in scripts.items():
                path = folder / f"{job}.sbatch"
                path.write_text(text)
                why = self.cluster.refuses(path)
                if why is not None:
                    raise InputError(self.state.instance,
                                     f"jobs[{self.instance.job_index[job]}]",
                                     f"Slurm refuses job {job!r} as planned: {why}; nothing "
                                     "was submitted")

    def _carry_out(self, slot: Slot, script: str, record: PlanRecord) -> None:
        """Submit, move or keep one job's Slurm job for its new slot."""
        job_record = self.state.jobs[slot.job]
        last = job_record.attempts[-1] if job_record.attempts else None
        pending = last is not None and last.state == "PENDING" and not last.cancelled_because
        if pending and last is not None:
            if sorted(last.nodes) != slot.nodes or last.gpu_type != slot.gpu_type:
                last.cancelled_because = f"moved by plan {len(self.state.plans)}"
                last.state = "CANCELLED"
                if self._quietly(self.cluster.cancel, last.slurm_id):
                    record.moved.append(slot.job)
                    record.resubmitted.append(slot.job)
                    self._submit(slot, script)
                return
            if abs(last.begin_s - slot.start_s) > self.options.same_start_s:
                if self._quietly(self.cluster.set_begin, last.slurm_id, self.at(slot.start_s)):
                    last.begin_s = slot.start_s
                    record.moved.append(slot.job)
                return
            record.kept += 1
            return
        record.submitted.append(slot.job)
        self._submit(slot, script)

    def _after(self, job: str) -> list[str]:
        """The Slurm ids of the job's predecessors that have not completed."""
        j = self.instance.job_index[job]
        ids = []
        for p in self.instance.predecessors[j]:
            other = self.state.jobs[self.instance.job_ids[p]]
            last = other.attempts[-1] if other.attempts else None
            if other.outcome != "completed" and last is not None:
                ids.append(last.slurm_id)
        return ids

    def _submit(self, slot: Slot, script: str) -> None:
        record = self.state.jobs[slot.job]
        path = self.folder / "scripts" / f"{slot.job}-{len(record.attempts) + 1}.sbatch"
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, script)
        after = self._after(slot.job)
        slurm_id = self.cluster.submit(path, after)
        record.attempts.append(Attempt(slurm_id=slurm_id, submitted_s=self.now(),
                                       nodes=slot.nodes, gpu_type=slot.gpu_type,
                                       begin_s=slot.start_s, dependency=after))

    def _dependencies(self) -> None:
        """Point every pending job's ``afterok`` at its predecessors' current Slurm jobs."""
        for job, record in self.state.jobs.items():
            last = record.attempts[-1] if record.attempts else None
            if record.outcome is None and last is not None and last.state == "PENDING" \
                    and not last.cancelled_because:
                after = self._after(job)
                if after != last.dependency and self._quietly(
                        self.cluster.set_dependency, last.slurm_id, after):
                    last.dependency = after


@contextlib.contextmanager
def scratch_folder() -> Iterator[Path]:
    """A folder for a dry run's scripts, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="gpuplan-run-") as folder:
        yield Path(folder)
