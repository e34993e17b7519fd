"""What a run measured, computed from its verified segments and the workload alone.

Metrics are computed from the run log (a :class:`~gpuplan.core.result.Result` that the
verifier accepted), never from the engine's internal state, so that they describe exactly
the schedule that is written. Everything is vectorised over segments: a sweep measures
runs of 10^5 segments.

Per job (:func:`job_stats`), with arrival ``a_j`` (the job's ``release``), first start
``s_j`` and completion ``C_j`` (its last segment's end):

- JCT ``C_j - a_j`` and queueing delay ``s_j - a_j``;
- preemptions and migrations: the run's PREEMPT and MIGRATE events of the job;
- GPU-hours held: segment length times gang size, half of it for each job of a
  space-shared pair (the pair holds the GPUs once); of which overheads: the restore and
  migration seconds the segments paid, times the GPUs held;
- finish-time fairness ``rho_j = (C_j - a_j) / T_iso_j`` (Themis, NSDI'20; Gavel,
  OSDI'20), where ``T_iso_j`` is the time the job would take alone on an equal share of
  the cluster. It follows Gavel's finish-time-fairness policy
  (``scheduler/policies/finish_time_fairness.py`` with ``isolated.py``): with ``n``
  jobs active (arrived and not finished), the isolated share gives the job the time
  fraction ``x_t = (N_t / n) / g_j`` of each type ``t`` (``N_t`` GPUs of the type, gang
  ``g_j``), scaled down together so that ``sum_t x_t <= 1``; its isolated speed is
  ``r_j(n) = sum_t x_t / d_jt`` (``d_jt`` its run time on ``t``, no speed where it
  cannot run). As Gavel accumulates the isolated time of the work done between
  allocations, ``T_iso_j = sum_s w_s / r_j(n_s)`` over the job's segments, ``w_s`` the
  share of the work segment ``s`` does and ``n_s`` the mean number of active jobs while
  it does it. With ``n`` constant over the job's life this is Themis' definition, the
  run time on a ``1/n`` share of the cluster. ``rho > 1``: the job finished later than
  on its fair share.

Over the cluster, as step series (:func:`utilisation_series`, :func:`queue_series`):
the share of each type's GPUs held, and the number of jobs that have arrived, have not
finished and do not run.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpuplan.core.instance import FloatArray, Instance, IntArray
from gpuplan.core.result import EventKind, Result

_HOUR = 3600.0


def window_jobs(instance: Instance, window: tuple[int, int]) -> IntArray:
    """The jobs at positions ``[first, last)`` of the arrival order (release, then index)."""
    order = np.lexsort((np.arange(instance.n_jobs), instance.release))
    jobs: IntArray = order[window[0]:window[1]]
    return jobs


def completion_times(instance: Instance, result: Result) -> FloatArray:
    """``(J,)`` when each job's last segment ends; NaN for a job with none."""
    finish = np.full(instance.n_jobs, -np.inf)
    np.maximum.at(finish, result.job, result.end)
    done: FloatArray = np.where(np.isfinite(finish), finish, np.nan)
    return done


def _first_starts(instance: Instance, result: Result) -> FloatArray:
    """``(J,)`` when each job's first segment starts; NaN for a job with none."""
    start = np.full(instance.n_jobs, np.inf)
    np.minimum.at(start, result.job, result.start)
    first: FloatArray = np.where(np.isfinite(start), start, np.nan)
    return first


def held_gpus(instance: Instance, result: Result) -> FloatArray:
    """``(S,)`` GPUs each segment holds; each job of a space-shared pair holds half.

    Gangs are whole in a verified run, so a segment holds its job's gang.
    """
    share = np.where(result.partners() >= 0, 0.5, 1.0)
    held: FloatArray = instance.gang[result.job].astype(float) * share
    return held


def _segment_work(instance: Instance, result: Result) -> FloatArray:
    """``(S,)`` the share of its job's work each segment does."""
    if result.work is not None:
        return result.work
    restore, migrate = result.overheads()
    duration = instance.duration[result.job, result.gpu_type]
    work: FloatArray = (result.end - result.start - restore - migrate) / duration
    return work


def _steps(times: FloatArray, deltas: FloatArray, column: IntArray,
           columns: int) -> tuple[FloatArray, FloatArray]:
    """A step function from its changes: ``deltas[k]`` to ``column[k]`` at ``times[k]``.

    Returns the distinct instants ``(K,)`` and the value of each column from each instant
    to the next, ``(K, columns)``. Changes at one instant are netted first, so a job that
    ends as another starts draws no dip.
    """
    instants, slot = np.unique(times, return_inverse=True)
    net = np.bincount(slot * columns + column, weights=deltas,
                      minlength=instants.size * columns)
    values: FloatArray = np.cumsum(net.reshape(instants.size, columns), axis=0)
    return instants, values


def _count_series(rise: FloatArray, fall: FloatArray) -> tuple[FloatArray, FloatArray]:
    """``(K,)`` instants and ``(K,)`` counts of the intervals ``[rise_k, fall_k)`` open."""
    times = np.concatenate((rise, fall))
    deltas = np.concatenate((np.ones(rise.size), -np.ones(fall.size)))
    instants, values = _steps(times, deltas, np.zeros(times.size, dtype=np.int64), 1)
    return instants, values[:, 0]


def active_series(instance: Instance, result: Result) -> tuple[FloatArray, FloatArray]:
    """Jobs active (arrived and not finished) over time, as a step series.

    Returns
    -------
    times, values
        ``(K,)`` instants in seconds and ``(K,)`` the count from each instant to the next.
    """
    finish = completion_times(instance, result)
    done = np.isfinite(finish)
    return _count_series(instance.release, finish[done])


def queue_series(instance: Instance, result: Result) -> tuple[FloatArray, FloatArray]:
    """Queue length over time: jobs arrived and not finished that do not run.

    A job paying a restore or migration overhead holds its GPUs and counts as running.

    Returns
    -------
    times, values
        ``(K,)`` instants in seconds and ``(K,)`` the queue length from each instant on.
    """
    finish = completion_times(instance, result)
    done = np.isfinite(finish)
    # Arrivals and segment ends join the queue; completions and segment starts leave it.
    return _count_series(np.concatenate((instance.release, result.end)),
                         np.concatenate((finish[done], result.start)))


def utilisation_series(instance: Instance, result: Result) -> tuple[FloatArray, FloatArray]:
    """The share of each GPU type's GPUs held over time, as a step series.

    Returns
    -------
    times, values
        ``(K,)`` instants in seconds and ``(K, T)`` the share of each type's GPUs (in
        the order of ``instance.type_ids``) held from each instant to the next.
    """
    held = held_gpus(instance, result)
    instants, values = _steps(
        np.concatenate((result.start, result.end)), np.concatenate((held, -held)),
        np.concatenate((result.gpu_type, result.gpu_type)), instance.n_types)
    total = instance.node_gpus.sum(axis=0)
    shares: FloatArray = values / np.maximum(total, 1)
    return instants, shares


def _mean_over(times: FloatArray, values: FloatArray, begin: FloatArray,
               end: FloatArray) -> FloatArray:
    """The mean of a step series over each interval ``[begin_k, end_k]``.

    Its value at ``begin_k`` where the interval is empty.
    """
    area = np.concatenate(([0.0], np.cumsum(values[:-1] * np.diff(times))))

    def integral(at: FloatArray) -> FloatArray:
        k = np.clip(np.searchsorted(times, at, side="right") - 1, 0, times.size - 1)
        inside: FloatArray = area[k] + values[k] * (at - times[k])
        return inside

    k = np.clip(np.searchsorted(times, begin, side="right") - 1, 0, times.size - 1)
    length = end - begin
    mean: FloatArray = np.where(
        length > 0, (integral(end) - integral(begin)) / np.where(length > 0, length, 1.0),
        values[k])
    return mean


def isolated_speed(instance: Instance, jobs: IntArray, active: FloatArray) -> FloatArray:
    """Gavel's isolated speed: the share of its work per second each job does alone.

    Parameters
    ----------
    instance
        The workload and the cluster.
    jobs
        ``(S,)`` job indices.
    active
        ``(S,)`` the number of jobs sharing the cluster (each at least 1).

    Returns
    -------
    FloatArray
        ``(S,)`` ``sum_t x_t / d_jt`` with ``x_t = (N_t / n) / g_j`` scaled so that
        ``sum_t x_t <= 1``, as Gavel's ``IsolatedPolicy`` allocates.
    """
    total = instance.node_gpus.sum(axis=0)
    fraction = total[None, :] / (active[:, None] * instance.gang[jobs][:, None])
    fraction /= np.maximum(fraction.sum(axis=1), 1.0)[:, None]
    eligible = instance.eligible[jobs]
    speed = np.where(eligible, 1.0 / np.where(eligible, instance.duration[jobs], 1.0), 0.0)
    isolated: FloatArray = (fraction * speed).sum(axis=1)
    return isolated


@dataclass(frozen=True)
class JobStats:
    """Per-job measures of a run, ``(J,)`` arrays by job index; times NaN for unrun jobs.

    Attributes
    ----------
    finish_s
        Completion (end of the last segment), seconds.
    jct_h
        Completion minus arrival, hours.
    queueing_h
        First start minus arrival, hours.
    preemptions, migrations
        How often the job was preempted and migrated.
    held_gpu_h
        GPU-hours the job held (half of a space-shared segment's).
    overhead_gpu_h
        Of those, the GPU-hours spent on restore and migration overheads.
    isolated_h
        Gavel's isolated time: the run time on an equal share of the cluster, hours.
    rho
        Finish-time fairness: JCT over the isolated time.
    """

    finish_s: FloatArray
    jct_h: FloatArray
    queueing_h: FloatArray
    preemptions: FloatArray
    migrations: FloatArray
    held_gpu_h: FloatArray
    overhead_gpu_h: FloatArray
    isolated_h: FloatArray
    rho: FloatArray


def _event_counts(instance: Instance, result: Result, kind: EventKind) -> FloatArray:
    """``(J,)`` how many events of ``kind`` each job had."""
    # Events are objects: one pass over them is unavoidable.
    jobs = np.fromiter((e.job for e in result.events if e.kind is kind), dtype=np.int64)
    counts: FloatArray = np.bincount(jobs, minlength=instance.n_jobs).astype(float)
    return counts


def job_stats(instance: Instance, result: Result) -> JobStats:
    """JCT, queueing, preemptions, migrations, GPU-hours and rho of every job."""
    n = instance.n_jobs
    finish = completion_times(instance, result)
    held = held_gpus(instance, result)
    restore, migrate = result.overheads()
    length = result.end - result.start
    # Work is done once the overheads are paid; n_s is the mean active count meanwhile.
    times, active = active_series(instance, result)
    working = _mean_over(times, active, result.start + restore + migrate, result.end)
    speed = isolated_speed(instance, result.job, np.maximum(working, 1.0))
    isolated = np.bincount(result.job, weights=_segment_work(instance, result) / speed,
                           minlength=n)
    ran = np.bincount(result.job, minlength=n) > 0
    jct = (finish - instance.release) / _HOUR
    isolated_h = np.where(ran, isolated / _HOUR, np.nan)
    return JobStats(
        finish_s=finish, jct_h=jct,
        queueing_h=(_first_starts(instance, result) - instance.release) / _HOUR,
        preemptions=_event_counts(instance, result, EventKind.PREEMPT),
        migrations=_event_counts(instance, result, EventKind.MIGRATE),
        held_gpu_h=np.bincount(result.job, weights=held * length, minlength=n) / _HOUR,
        overhead_gpu_h=np.bincount(result.job, weights=held * (restore + migrate),
                                   minlength=n) / _HOUR,
        isolated_h=isolated_h, rho=jct / isolated_h)


def measured_interval(instance: Instance, result: Result,
                      window: tuple[int, int] | None) -> tuple[float, float]:
    """Seconds from the first arrival to the last completion of the window's jobs.

    All jobs when ``window`` is None.
    """
    jobs = (np.arange(instance.n_jobs) if window is None
            else window_jobs(instance, window))
    finish = completion_times(instance, result)[jobs]
    return float(instance.release[jobs].min()), float(np.nanmax(finish, initial=-np.inf))


def _held_by_type(instance: Instance, result: Result,
                  interval: tuple[float, float]) -> tuple[FloatArray, float]:
    """``(T,)`` GPU-seconds of each type held within the interval, and its length."""
    begin, end = interval
    inside = np.maximum(0.0, np.minimum(result.end, end) - np.maximum(result.start, begin))
    held: FloatArray = np.bincount(result.gpu_type, weights=held_gpus(instance, result)
                                   * inside, minlength=instance.n_types).astype(float)
    return held, max(end - begin, 1e-12)


def utilisation_by_type(instance: Instance, result: Result,
                        window: tuple[int, int] | None = None) -> dict[str, float]:
    """Share of each type's GPU-time held by jobs over the measured interval.

    The interval runs from the first arrival to the last completion of the window's jobs
    (of all jobs when ``window`` is None); every job's segments count within it.
    """
    held, span = _held_by_type(instance, result, measured_interval(instance, result, window))
    total = instance.node_gpus.sum(axis=0) * span
    return {t: float(held[k] / max(total[k], 1e-12))
            for k, t in enumerate(instance.type_ids)}


def run_metrics(instance: Instance, result: Result, window: tuple[int, int]) -> dict[str, float]:
    """The run's summary over the window's jobs (positions ``[first, last)`` by arrival).

    Keys: ``jobs``; ``mean_jct_h``, ``median_jct_h``, ``p95_jct_h``, ``p99_jct_h``
    (completion minus arrival); ``makespan_h`` (the window's first arrival to its last
    completion); ``mean_queueing_h`` (first start minus arrival); ``utilisation_share``
    (GPU-time held by any job over that interval, all types); ``preemptions_per_job``,
    ``migrations_per_job``; ``held_gpu_h`` and ``overhead_gpu_h`` (GPU-hours the window's
    jobs held, and of those the restore and migration overheads); ``mean_rho``,
    ``max_rho`` and ``rho_over_1_share`` (finish-time fairness, see the module docstring).
    """
    jobs = window_jobs(instance, window)
    stats = job_stats(instance, result)
    jct = stats.jct_h[jobs]
    rho = stats.rho[jobs]
    begin, end = measured_interval(instance, result, window)
    held, span = _held_by_type(instance, result, (begin, end))
    return {
        "jobs": float(jobs.size),
        "mean_jct_h": float(jct.mean()),
        "median_jct_h": float(np.median(jct)),
        "p95_jct_h": float(np.percentile(jct, 95)),
        "p99_jct_h": float(np.percentile(jct, 99)),
        "makespan_h": (end - begin) / _HOUR,
        "mean_queueing_h": float(stats.queueing_h[jobs].mean()),
        "utilisation_share": float(held.sum() / max(instance.node_gpus.sum() * span, 1e-12)),
        "preemptions_per_job": float(stats.preemptions[jobs].mean()),
        "migrations_per_job": float(stats.migrations[jobs].mean()),
        "held_gpu_h": float(stats.held_gpu_h[jobs].sum()),
        "overhead_gpu_h": float(stats.overhead_gpu_h[jobs].sum()),
        "mean_rho": float(rho.mean()),
        "max_rho": float(rho.max()),
        # Beyond rounding: a job run exactly on its fair share is not counted.
        "rho_over_1_share": float((rho > 1.0 + 1e-9).mean()),
    }
