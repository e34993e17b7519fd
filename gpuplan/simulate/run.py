"""One simulated run, from a workload to a verified run log: :func:`simulate`.

The run log is a v2 :class:`~gpuplan.core.schedule.Schedule` (segments with their overheads,
and the events of the run) with a :class:`~gpuplan.core.schedule.RunRecord` of how it was made
and what it measured. It is checked by the independent verifier before it is returned, so
nothing unchecked is ever written; a violation is an engine or policy bug and raises
:class:`~gpuplan.simulate.engine.SimulationError`, it is never repaired.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpuplan.core.errors import InputError, setting
from gpuplan.core.instance import FloatArray, Instance
from gpuplan.core.objectives import time_objective
from gpuplan.core.result import Result
from gpuplan.core.schedule import Failure, ResultSchedule, RunRecord, Schedule
from gpuplan.core.settings import RunSettings
from gpuplan.simulate.check import check_run
from gpuplan.simulate.engine import (
    Engine,
    Failures,
    Progress,
    SimulationConfig,
    SimulationError,
)
from gpuplan.simulate.metrics import run_metrics, utilisation_by_type
from gpuplan.simulate.policies import (
    SCHEDULERS,
    build_parts,
    chosen_options,
    options_record,
)
from gpuplan.simulate.policy import Mode, PolicyContext, SolverTimed
from gpuplan.verify import verify_schedule


@dataclass(frozen=True)
class RunSpec:
    """The policy and settings of one run.

    Attributes
    ----------
    scheduler, placement, admission
        Registered names (:data:`~gpuplan.simulate.policies.SCHEDULERS` and the others).
    config
        Mode, round length and overheads.
    seed
        Seed of any random choice a part makes.
    settings
        Time limit per solver call, threads and gap, for parts that call a solver.
    window
        The measured jobs, positions ``[first, last)`` in arrival order; None: all.
    options
        The parts' own options by name; each must be taken by one of the chosen parts.
    failures
        GPUs that fail during the run, and how often jobs checkpoint.
    duration_scale
        ``(J,)`` each job's actual duration over the instance's (its estimate): the run
        runs the actual durations, the policy sees the estimates; None: equal.
    """

    scheduler: str = "fifo"
    placement: str = "best-fit"
    admission: str = "all"
    config: SimulationConfig = field(default_factory=SimulationConfig)
    seed: int = 0
    settings: RunSettings = field(default_factory=RunSettings)
    window: tuple[int, int] | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    failures: Failures = field(default_factory=Failures)
    duration_scale: FloatArray | None = None


def check_window(instance: Instance, window: tuple[int, int] | None) -> tuple[int, int]:
    """The window, all jobs when None.

    Raises
    ------
    InputError
        Naming ``--window`` when it is empty or reaches past the last job.
    """
    if window is None:
        return 0, instance.n_jobs
    first, last = window
    if not 0 <= first < last <= instance.n_jobs:
        raise InputError(setting("window"), "", f"{first}:{last} is not a non-empty range of job "
                         f"positions within 0:{instance.n_jobs}")
    return first, last


#: Rounds a round-mode run may take at least before it is refused as too costly (about
#: ten minutes of decisions; Gavel's slowest published point takes 150,000).
MAX_ROUNDS = 2_000_000


def check_simulable(instance: Instance, config: SimulationConfig) -> None:
    """Refuse, before any work, what the simulator does not model or could not finish.

    Raises
    ------
    InputError
        Naming the first elastic job (the elastic policies run those:
        :mod:`gpuplan.simulate.elastic`), the first CPU-only job (``gpus`` 0: the
        simulator runs jobs on GPUs;
        ``gpuplan replay`` replays CPU-only pods), or ``round_s``
        when a round-mode run would take more than :data:`MAX_ROUNDS` rounds however
        it schedules: the span's lower bound (last arrival, or the work over all GPUs)
        over the round length.
    """
    elastic = np.flatnonzero(instance.elastic)
    if elastic.size:
        j = int(elastic[0])
        raise InputError(instance.source, f"jobs[{j}].elastic", f"job {instance.job_ids[j]!r} "
                         f"is elastic ({elastic.size} such job(s) in all): run it under an "
                         "elastic policy (gpuplan simulate --policy edf, tiresias, elasticflow "
                         "or optimizer), which choose each job's GPU count")
    cpu_only = np.flatnonzero(instance.gang == 0)
    if cpu_only.size:
        j = int(cpu_only[0])
        raise InputError(instance.source, f"jobs[{j}].gpus", f"job {instance.job_ids[j]!r} "
                         f"is CPU-only (gpus 0; {cpu_only.size} such job(s) in all): the "
                         "simulator runs jobs on GPUs and does not model CPU-only jobs; plan "
                         "the batch with gpuplan solve (greedy, cp), or leave them out")
    if config.mode is not Mode.ROUND:
        return
    work = float((instance.gang * instance.min_duration).sum()) / max(instance.n_gpus, 1)
    span = max(float(instance.release.max(initial=0.0)), work)
    rounds = span / config.round_s
    if rounds > MAX_ROUNDS:
        least = span / MAX_ROUNDS
        raise InputError(setting("round_s"), "", f"rounds of {config.round_s:g} s would be "
                         f"at least {rounds:,.0f} for this workload, which spans at least "
                         f"{span:g} s (more than {MAX_ROUNDS:,}); use rounds of at least "
                         f"{least:.3g} s")


def simulate(instance: Instance, spec: RunSpec = RunSpec(),
             progress: Progress | None = None) -> Schedule:
    """Simulate the workload under the policy; the verified run log, whole in memory.

    :func:`simulate_run` is the same run held as its result's columns, for runs too long
    to hold as a document (``gpuplan simulate`` and ``sweep`` write those).
    """
    return simulate_run(instance, spec, progress).schedule()


def simulate_run(instance: Instance, spec: RunSpec = RunSpec(),
                 progress: Progress | None = None) -> ResultSchedule:
    """Simulate the workload under the policy; the verified run log.

    The log's segments and events are made from the run's columns one at a time, as the
    verifier checks them and as :meth:`~gpuplan.core.schedule.ResultSchedule.write`
    writes them: a run is never held as a document.

    Parameters
    ----------
    instance
        Jobs (``release`` are arrival times) and the cluster.
    spec
        The policy, the settings and the measurement window.
    progress
        Called now and then with (simulated seconds, jobs finished, jobs in all).

    Raises
    ------
    InputError
        A part name that is not registered, a window out of range, a job that can run
        nowhere, what the simulator does not model (:func:`check_simulable`), too many
        rounds, a scheduler that does not work in the chosen mode, or failures for good
        that leave a job no node to run on (the run could never finish).
    SimulationError
        If the verifier finds the run log broken (a bug of the engine or a policy).
    """
    began = time.perf_counter()
    instance = instance.online()
    window = check_window(instance, spec.window)
    config = spec.config
    check_simulable(instance, config)
    context = PolicyContext(instance, config.mode, config.round_s, spec.seed, spec.settings,
                            restart_overhead_s=config.restart_overhead_s)
    modes = SCHEDULERS.part(spec.scheduler).modes
    if config.mode not in modes:
        raise InputError(setting("mode"), "", f"scheduler {spec.scheduler!r} does not work in "
                         f"{config.mode.value} mode; it takes `mode` "
                         f"{' or '.join(sorted(m.value for m in modes))}")
    names = {"scheduler": spec.scheduler, "placement": spec.placement,
             "admission": spec.admission}
    scheduler, placement, admission = build_parts(names, spec.options, context)
    scale = spec.duration_scale
    actual = instance if scale is None else instance.work_left(
        np.ones(instance.n_jobs), slower=np.asarray(scale, dtype=float)[:, None])
    engine = Engine(actual, config, scheduler, placement, admission, progress,
                    spec.failures, None if scale is None else instance)
    result = engine.run()
    actual = dataclasses.replace(actual, outages=tuple(engine.outages))
    result = dataclasses.replace(result, objective=time_objective(
        actual, result.job, result.gpu_type, result.end, work=result.work))
    record = RunRecord(
        scheduler=spec.scheduler, placement=spec.placement, admission=spec.admission,
        options=options_record(chosen_options(names, spec.options)), mode=config.mode.value,
        round_s=config.round_s if config.mode is Mode.ROUND else None,
        restart_overhead_s=config.restart_overhead_s,
        migration_overhead_s=config.migration_overhead_s,
        window=list(window), metrics=run_metrics(actual, result, window),
        utilisation_by_type=utilisation_by_type(actual, result, window),
        failures=[Failure(gpu_ids=[instance.gpu_ids[g] for g in o.gpus.tolist()],
                          start_s=o.start_s, end_s=o.end_s if np.isfinite(o.end_s) else None)
                  for o in engine.outages],
        checkpoint_s=spec.failures.checkpoint_s,
        duration_scale=None if scale is None else np.asarray(scale, dtype=float).tolist(),
        solver_s=scheduler.solver_s if isinstance(scheduler, SolverTimed) else None)
    # The record goes in before the check: the verifier holds the log to the overheads
    # it states.
    log = ResultSchedule.make(instance, result, method=f"simulate:{spec.scheduler}",
                              wall_time_s=time.perf_counter() - began,
                              seed=spec.seed).with_head(run=record)
    return verified(instance, log, result, spec.scheduler)


def verified(instance: Instance, log: ResultSchedule, result: Result,
             policy: str) -> ResultSchedule:
    """The run log with its verification, once the verifier and the run checks pass.

    Raises
    ------
    SimulationError
        Naming ``policy`` and the first rules the log breaks (a bug, never bad input).
    """
    verification = verify_schedule(instance, log)
    if not verification.ok:
        shown = "; ".join(str(v) for v in verification.violations[:5])
        raise SimulationError(f"the run log of {policy!r} breaks "
                              f"{len(verification.violations)} rule(s) of the verifier: {shown}")
    broken = check_run(instance, log, result)
    if broken:
        raise SimulationError(f"the run of {policy!r} does not keep what its record "
                              f"claims ({len(broken)} problem(s)): {'; '.join(broken[:5])}")
    return log.with_head(verification=verification)
