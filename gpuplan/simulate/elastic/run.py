"""One elastic run, from a workload to a verified run log: :func:`simulate_elastic`.

The run log is a v2 :class:`~gpuplan.core.schedule.Schedule`: every piece of every job
(one segment: its GPUs, its interval, the share of the job's iterations it did and the
restart overhead it paid), the events, the declined jobs listed as unplaced with the
instant they were declined, and a :class:`~gpuplan.core.schedule.RunRecord` whose metrics
hold the deadline satisfactory ratio. The independent verifier checks it before it is
returned (the iterations of each job are the integral of its speed over its pieces); a
violation is a bug of the engine or a policy and raises
:class:`~gpuplan.simulate.engine.SimulationError`, never repaired.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpuplan.core.errors import InputError
from gpuplan.core.instance import FloatArray, Instance
from gpuplan.core.objectives import time_objective
from gpuplan.core.options import part_options
from gpuplan.core.result import Result
from gpuplan.core.schedule import ResultSchedule, RunRecord
from gpuplan.core.settings import RunSettings
from gpuplan.simulate.elastic.engine import ElasticEngine, ElasticOutcome, Progress
from gpuplan.simulate.elastic.policies import ELASTIC_POLICIES
from gpuplan.simulate.run import verified

_HOUR = 3600.0


@dataclass(frozen=True)
class ElasticSpec:
    """The policy of one elastic run and its settings.

    Attributes
    ----------
    policy
        A name of :data:`~gpuplan.simulate.elastic.policies.ELASTIC_POLICIES`.
    options
        The policy's own options by name.
    settings
        Time limit per decision and threads, for a policy that calls a solver.
    seed
        Recorded with the run (the policies make no random choice).
    """

    policy: str = "elasticflow"
    options: Mapping[str, Any] = field(default_factory=dict)
    settings: RunSettings = field(default_factory=RunSettings)
    seed: int = 0


def check_elastic(instance: Instance) -> None:
    """Refuse what the elastic simulator does not model, before any work.

    Raises
    ------
    InputError
        Naming the first CPU-only job, or the GPU types when the fleet has several: the
        elastic simulator runs one GPU type (ElasticFlow's clusters).
    """
    types = np.flatnonzero(instance.node_gpus.sum(axis=0) > 0)
    if types.size != 1:
        raise InputError(instance.source, "gpu_types", "the elastic simulator runs a fleet "
                         f"of one GPU type; this one has {types.size} "
                         f"({', '.join(instance.type_ids[t] for t in types.tolist())})")
    idle = np.flatnonzero(instance.gang == 0)
    if idle.size:
        j = int(idle[0])
        raise InputError(instance.source, f"jobs[{j}].gpus", f"job {instance.job_ids[j]!r} "
                         "is CPU-only (gpus 0): the elastic simulator runs jobs on GPUs")


def build_policy(instance: Instance, spec: ElasticSpec) -> Any:
    """The policy part of the spec, with its typed options (settings for solver calls)."""
    part = ELASTIC_POLICIES.part(spec.policy)
    options = part_options(part, "policy", spec.options)
    if part.calls_solver:
        return part(instance, options, spec.settings)
    return part(instance, options)


def completion(instance: Instance, result: Result) -> FloatArray:
    """``(J,)`` when each job's last piece ends; NaN for a job that never ran."""
    done = np.full(instance.n_jobs, np.nan)
    if result.job.size:
        ends = np.full(instance.n_jobs, -np.inf)
        np.maximum.at(ends, result.job, result.end)
        ran = np.isfinite(ends)
        done[ran] = ends[ran]
    return done


def deadline_ratio(instance: Instance, result: Result) -> float:
    """ElasticFlow's deadline satisfactory ratio: jobs done by their due date, over all."""
    done = completion(instance, result)
    met = np.isfinite(done) & (done <= instance.due + 1e-6)
    return float(met.sum()) / max(instance.n_jobs, 1)


def alone_bound(instance: Instance) -> int:
    """Jobs that could meet their due date alone on the whole cluster: a bound on any run.

    A job could if, started at its release on its fastest count, it ends by its due date
    (its ``rescale_s`` paid once); a rigid job at its duration on its fastest type.
    """
    fastest = np.where(instance.eligible, instance.duration, np.inf).min(axis=1)
    if instance.counts.size:
        rates = instance.speed.reshape(instance.n_jobs, -1).max(axis=1)
        elastic = instance.elastic
        fastest[elastic] = (instance.rescale_s[elastic]
                            + instance.work[elastic] / rates[elastic])
    return int((instance.release + fastest <= instance.due + 1e-6).sum())


def elastic_metrics(instance: Instance, outcome: ElasticOutcome,
                    solves: list[float] | None = None) -> dict[str, float]:
    """The run's summary: ratio, jobs met and declined, JCT of the admitted, decisions.

    ``solves``: the wall seconds of each solver call of the policy, if it makes any.
    """
    result = outcome.result
    done = completion(instance, result)
    ran = np.isfinite(done)
    jct = (done - instance.release)[ran]
    decisions = np.asarray(outcome.decision_s) if outcome.decision_s else np.zeros(1)
    held = float(((result.end - result.start) * np.array([g.size for g in result.gpus]))
                 .sum()) if result.job.size else 0.0
    return {
        "jobs": float(instance.n_jobs),
        "deadline_ratio": deadline_ratio(instance, result),
        "met": float((ran & (done <= instance.due + 1e-6)).sum()),
        "declined": float(len(outcome.declined)),
        "mean_jct_h": float(jct.mean() / _HOUR) if jct.size else 0.0,
        "held_gpu_h": held / _HOUR,
        "decisions": float(len(outcome.decision_s)),
        "decision_p50_s": float(np.percentile(decisions, 50)),
        "decision_p99_s": float(np.percentile(decisions, 99)),
        "decision_max_s": float(decisions.max()),
        **({} if solves is None else {
            "solves": float(len(solves)),
            "solve_p50_s": float(np.percentile(solves, 50)) if solves else 0.0,
            "solve_p99_s": float(np.percentile(solves, 99)) if solves else 0.0,
            "solve_max_s": max(solves, default=0.0)}),
    }


def simulate_elastic(instance: Instance, spec: ElasticSpec = ElasticSpec(),
                     progress: Progress | None = None) -> ResultSchedule:
    """Play the workload out under an elastic policy; the verified run log.

    Raises
    ------
    InputError
        An unknown policy or option, or a workload the simulator does not model
        (:func:`check_elastic`).
    SimulationError
        If the policy asks for what the cluster cannot do
        (:class:`~gpuplan.simulate.elastic.engine.ElasticSimulationError`), or the verifier
        rejects the log (a bug, never bad input).
    """
    began = time.perf_counter()
    check_elastic(instance)
    policy = build_policy(instance, spec)
    outcome = ElasticEngine(instance, policy, progress).run()
    unplaced = {j: f"declined by admission control at {at:g} s: its deadline could not be "
                "met" for j, at in outcome.declined.items()}
    result = dataclasses.replace(outcome.result, unplaced=unplaced)
    result = dataclasses.replace(result, objective=time_objective(
        instance, result.job, result.gpu_type, result.end, work=result.work))
    options = part_options(ELASTIC_POLICIES.part(spec.policy), "policy", spec.options)
    record = RunRecord(
        scheduler=spec.policy, placement="buddy", admission=spec.policy,
        options={f.name: _plain(getattr(options, f.name))
                 for f in dataclasses.fields(options)},
        mode="event", round_s=None, restart_overhead_s=0.0, migration_overhead_s=0.0,
        window=[0, instance.n_jobs],
        metrics=elastic_metrics(instance, outcome, getattr(policy, "solves", None)),
        utilisation_by_type={}, solver_s=getattr(policy, "solver_s", None))
    log = ResultSchedule.make(instance, result, method=f"simulate:{spec.policy}",
                              wall_time_s=time.perf_counter() - began,
                              seed=spec.seed).with_head(run=record)
    return verified(instance, log, result, spec.policy)


def _plain(value: Any) -> Any:
    """An option's value as JSON holds it."""
    return list(value) if isinstance(value, tuple) else value


