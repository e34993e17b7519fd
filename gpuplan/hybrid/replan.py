"""Re-plan a verified plan after changes, with the least disruption: :func:`replan`.

The previous plan is split at the re-plan's time (:class:`~gpuplan.hybrid.residual.Residual`);
the residual instance is planned by any method that plans around held GPUs and takes a
previous plan to stay close to (``plans_outages`` and ``keeps``: greedy, sa, ga and cp),
minimising the objective plus the price of every job it moves, with at most
``max_changes`` moves. Greedy's plan is the repair (every job that still fits stays);
the method starts from it and keeps it when it finds nothing better. The whole plan,
history and all, is verified against the changed instance before it is returned. The
previous schedule may be a record of what a cluster ran and runs (``gpuplan import sacct``
or ``squeue``) instead of a plan: its running jobs are pinned where they run, its done
jobs are history, and its jobs not started or to run again are planned.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpuplan.core.errors import InputError, VerificationError
from gpuplan.core.instance import Instance
from gpuplan.core.result import Result, plan_status
from gpuplan.core.schedule import Schedule
from gpuplan.core.settings import RunSettings, WarmStart
from gpuplan.hybrid.compare import Diff, diff
from gpuplan.hybrid.residual import Costs, Residual, check_previous, is_record
from gpuplan.methods import METHODS
from gpuplan.models.bounds import objective_bound
from gpuplan.planning import plan
from gpuplan.readers.changes import Changes, changed_document, outages
from gpuplan.readers.instance_file import instance_from_data
from gpuplan.verify import verify_schedule

#: The method that repairs: it keeps every job that still fits.
REPAIR = "greedy"


@dataclass(frozen=True)
class Disruption:
    """What a re-plan changes of the previous plan, by job id.

    ``moved`` and ``unchanged`` are :func:`~gpuplan.hybrid.compare.diff`'s of the previous
    plan and the new one (at the re-plan's ``same_start_s``), so ``gpuplan diff`` of the
    two files says the same.

    Attributes
    ----------
    stopped
        Jobs running at the re-plan's time that it stops (their GPUs fail, or removed).
    migrated
        Stopped jobs that go on on other GPUs.
    moved
        Jobs placed in both plans whose slot the new plan does not keep (other GPUs,
        another start, more or fewer pieces; a stopped job is among them).
    replanned
        Jobs planned anew without a slot to keep (they ran in pieces, their GPUs went
        down, or they had none: not started in a record of what ran).
    unchanged
        How many jobs placed in both plans keep their slot.
    move_cost
        What the moves of jobs that had a slot to keep add to the objective.
    overhead_s
        The restore and migration seconds the stopped jobs pay.
    """

    stopped: list[str] = field(default_factory=list)
    migrated: list[str] = field(default_factory=list)
    moved: list[str] = field(default_factory=list)
    replanned: list[str] = field(default_factory=list)
    unchanged: int = 0
    move_cost: float = 0.0
    overhead_s: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        """As JSON values."""
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class Replanned:
    """A re-plan's verified schedule, and what it changed.

    ``schedule`` is None when no plan of what is left was found; ``unplaced`` then says
    why, by job id.
    """

    schedule: Schedule | None
    disruption: Disruption
    wall_time_s: float
    unplaced: dict[str, str] = field(default_factory=dict)


def changed_instances(document: dict[str, Any], source: str, changes: Changes, at: float,
                      changes_file: str) -> tuple[Instance, Instance]:
    """The instance before and after the changes (GPUs down from ``at``).

    Raises
    ------
    InputError
        Naming the instance or changes file and the problem.
    """
    before = instance_from_data(document, source)
    changed = instance_from_data(changed_document(document, changes, changes_file),
                                 changes_file, default_name=before.name)
    changed = dataclasses.replace(changed, name=before.name,
                                  outages=outages(changed, changes, at, changes_file))
    return before, changed


def replan(before: Instance, changed: Instance, previous: Schedule, at: float,
           changes: Changes, method: str = "cp", settings: RunSettings | None = None,
           costs: Costs | None = None, max_changes: int | None = None,
           sources: tuple[str, str] = ("previous schedule", "changes"),
           options: Any = None, least_disruption: bool = True) -> Replanned:
    """Re-plan ``previous`` at ``at`` for the changed instance, moving as little as pays.

    Parameters
    ----------
    before, changed
        The instance the previous plan is for, and as it is after the changes
        (:func:`changed_instances`).
    previous
        A plan of ``before``, or a record of what ran by ``at`` (``gpuplan import sacct``
        or ``squeue``: its jobs placed nowhere are planned, even with no change); it is
        verified first. For a record, build ``before`` and ``changed`` from the
        document :func:`~gpuplan.hybrid.residual.as_ran` gives, in which its done jobs
        take what they took.
    at
        The instant of the re-plan, in the plan's time.
    changes
        What changed (to check that none rewrites the past).
    method
        A registered method that plans around held GPUs and keeps plans.
    options
        The method's options, as :func:`~gpuplan.planning.plan` takes them.
    least_disruption
        False: plan the residual instance from scratch (no previous slots kept, no
        moves priced), to measure what least disruption saves.
    settings
        Time limit, seed and threads of the method's solve.
    costs
        Overheads of stopped jobs and the price of a move (:class:`Costs`' defaults).
    max_changes
        The most jobs with a previous slot the plan may move.
    sources
        The previous schedule's file and the changes file, for messages.

    Raises
    ------
    InputError
        A static objective, a previous schedule of another instance or that does not
        verify, a time before it starts, a change that rewrites the past, or a method
        that cannot re-plan.
    VerificationError
        If the merged plan breaks a constraint: a bug, never repaired.
    """
    began = time.perf_counter()
    settings = settings or RunSettings()
    if before.objective.is_static:
        raise InputError(before.source, "objective", f"objective {before.objective.value!r} "
                         "places the batch at once, with no time to re-plan at; re-plan a "
                         "time-based objective (makespan, weighted-completion, tardiness, "
                         "cost), or plan the changed batch with gpuplan solve")
    if changes.empty and not is_record(previous):
        # Nothing changed: the verified previous plan is the plan.
        check_previous(before, previous, at, sources[0])
        return Replanned(previous, Disruption(unchanged=diff(previous, previous).unchanged),
                         time.perf_counter() - began)
    residual = Residual.build(before, changed, previous, at, changes, costs, sources,
                              max_changes)
    keep = residual.keep if least_disruption else None
    repair = plan(residual.plan, REPAIR, settings=settings, keep=keep)
    best = repair
    if method != REPAIR:
        chosen = METHODS.get(method)
        warm = repair if (chosen is not None and WarmStart.PLAN in chosen.warm_starts
                          and repair.status.has_plan) else None
        found = plan(residual.plan, method, options, settings=settings, warm=warm, keep=keep)
        if keep is None or _score(residual, found) < _score(residual, repair):
            best = found
    if not best.status.has_plan:
        return Replanned(None, Disruption(), time.perf_counter() - began,
                         {u.job: u.reason for u in best.unplaced})
    result = best.to_result(residual.plan, best.objective)
    merged = residual.merge(result, f"replan: {best.method} ({best.solver})")
    schedule = _verified(changed, merged, f"replan:{method}", time.perf_counter() - began,
                         settings.seed, previous)
    same_start_s = (costs or Costs()).same_start_s
    return Replanned(schedule, _disruption(residual, result, diff(previous, schedule,
                                                                   same_start_s)),
                     time.perf_counter() - began)


def _score(residual: Residual, schedule: Schedule) -> float:
    """The residual plan's objective plus its moves' cost; inf without a plan."""
    if not schedule.status.has_plan:
        return float(np.inf)
    return residual.keep.score(schedule.to_result(residual.plan, schedule.objective))


def _verified(instance: Instance, merged: Result, method: str, wall: float, seed: int,
              previous: Schedule) -> Schedule:
    """The merged plan with its objective and bound, verified; raises on a violation."""
    draft = Schedule.from_result(instance, merged, method, wall, seed, previous.epoch)
    verification = verify_schedule(instance, draft)
    if not verification.ok:
        raise VerificationError(method, [str(v) for v in verification.violations])
    bound = objective_bound(instance)
    value = verification.objective
    assert value is not None
    final = Schedule.from_result(instance, dataclasses.replace(
        merged, objective=value, bound=bound, status=plan_status(value, bound)), method, wall,
        seed, previous.epoch)
    verification = verify_schedule(instance, final)
    if not verification.ok:
        raise VerificationError(method, [str(v) for v in verification.violations])
    return final.model_copy(update={"verification": verification})


def _disruption(residual: Residual, result: Result, found: Diff) -> Disruption:
    """What the plan changes: stopped, migrated, moved (as ``found`` says) and re-planned."""
    changed, keep = residual.changed, residual.keep
    ids = changed.job_ids
    first_gpus: dict[int, np.ndarray] = {}
    for i in np.argsort(result.start, kind="stable").tolist():
        first_gpus.setdefault(int(result.job[i]), result.gpus[i])
    migrated = []
    overhead = 0.0
    for k, j in enumerate(residual.jobs.tolist()):
        restore, migrate = residual.overhead[k]
        if j in residual.stopped:
            overhead += restore + migrate
            last = residual.last_gpus[k]
            now = first_gpus.get(k)
            if last is not None and now is not None and not np.array_equal(
                    np.sort(last), np.sort(now)):
                migrated.append(ids[j])
    free = residual.jobs
    return Disruption(
        stopped=[ids[j] for j in residual.stopped],
        migrated=migrated,
        moved=found.moved,
        replanned=[ids[free[k]] for k in np.flatnonzero(~keep.has_slot).tolist()],
        unchanged=found.unchanged,
        move_cost=keep.cost(result),
        overhead_s=overhead)


@dataclass(frozen=True)
class WhatIf:
    """An instance planned as it is and with a changed fleet, both plans verified."""

    what: list[str]
    base: Schedule
    changed: Schedule

    def measures(self) -> dict[str, tuple[float | None, float | None]]:
        """Objective, makespan and mean completion of both plans."""
        def of(schedule: Schedule) -> tuple[float | None, float | None]:
            ends: dict[str, float] = {}
            for s in schedule.segments:
                ends[s.job] = max(ends.get(s.job, 0.0), s.end_s)
            if not ends:
                return None, None
            return max(ends.values()), sum(ends.values()) / len(ends)
        base, changed = of(self.base), of(self.changed)
        return {"objective": (self.base.objective, self.changed.objective),
                "makespan_s": (base[0], changed[0]),
                "mean_completion_s": (base[1], changed[1])}

    def as_dict(self) -> dict[str, Any]:
        """As JSON values."""
        return {"what": self.what, **{name: {"as_it_is": a, "changed": b}
                                      for name, (a, b) in self.measures().items()}}


def whatif(document: dict[str, Any], source: str, add_gpus: list[str], remove_nodes: list[str],
           method: str, settings: RunSettings | None = None, options: Any = None) -> WhatIf:
    """Plan the instance as it is and with GPUs added or nodes removed.

    Parameters
    ----------
    add_gpus
        ``TYPE:N`` each: a new node of ``N`` GPUs of type ``TYPE``.
    remove_nodes
        Node ids to take out, of the partitions too.

    Raises
    ------
    InputError
        Naming ``--add-gpus`` or ``--remove-node`` for an unknown type or node, or a
        partition whose every node it removes while jobs run only there; the instance for
        a job the changed fleet cannot run.
    """
    types = {t.get("id") for t in document.get("gpu_types", [])}
    nodes = [n.get("id") for n in document.get("nodes", [])]
    added = []
    for k, text in enumerate(add_gpus):
        kind, _, count = text.rpartition(":")
        if kind not in types or not count.isdigit() or int(count) < 1:
            raise InputError("--add-gpus", "", f"{text!r} is not TYPE:N with a GPU type of the "
                             f"instance ({', '.join(sorted(types))}) and N >= 1")
        added.append({"id": f"whatif-{kind}-{k}", "gpus": {kind: int(count)}})
    for name in remove_nodes:
        if name not in nodes:
            raise InputError("--remove-node", "", f"unknown node {name!r}")
    if not added and not remove_nodes:
        raise InputError("--add-gpus", "", "give --add-gpus TYPE:N or --remove-node ID")
    before = instance_from_data(document, source)
    changed_doc = {**document, "nodes": [n for n in document["nodes"]
                                         if n.get("id") not in remove_nodes] + added}
    if not changed_doc["nodes"]:
        raise InputError("--remove-node", "", "that removes every node")
    if before.partition_ids:
        changed_doc["partitions"] = _partitions_without(document, remove_nodes)
    after = dataclasses.replace(instance_from_data(changed_doc, source), name=before.name)
    what = [f"+{text} GPUs" for text in add_gpus] + [f"-node {n}" for n in remove_nodes]
    return WhatIf(what, plan(before, method, options, settings),
                  plan(after, method, options, settings))


def _partitions_without(document: dict[str, Any], removed: list[str]) -> dict[str, list[str]]:
    """The document's partitions without the removed nodes; one left with none is dropped.

    Raises
    ------
    InputError
        Naming ``--remove-node`` when that leaves no node to a partition that jobs name:
        they could not run anywhere.
    """
    kept: dict[str, list[str]] = {}
    for name, members in document["partitions"].items():
        left = [node for node in members if node not in removed]
        if left:
            kept[name] = left
            continue
        jobs = [str(job["id"]) for job in document["jobs"] if job.get("partition") == name]
        if jobs:
            more = f" and {len(jobs) - 3} more" if len(jobs) > 3 else ""
            raise InputError("--remove-node", "", f"that removes every node of partition "
                             f"{name!r} ({', '.join(members)}), and its jobs run only there: "
                             f"{', '.join(jobs[:3])}{more} could not run")
    return kept
