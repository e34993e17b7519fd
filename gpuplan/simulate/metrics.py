"""What a run measured, computed from its verified segments and the workload alone.

Metrics are computed from the run log (a :class:`~gpuplan.solution.Result` that the
verifier accepted), never from the engine's internal state, so that they describe exactly
the schedule that is written.
"""

from __future__ import annotations

import numpy as np

from gpuplan.instance import FloatArray, Instance, IntArray
from gpuplan.solution import EventKind, Result

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


def run_metrics(instance: Instance, result: Result, window: tuple[int, int]) -> dict[str, float]:
    """Job completion times (hours) and counts over the window's jobs.

    JCT is completion minus arrival (release); queueing delay is first start minus arrival.
    """
    jobs = window_jobs(instance, window)
    finish = completion_times(instance, result)
    start = np.full(instance.n_jobs, np.inf)
    np.minimum.at(start, result.job, result.start)
    jct = (finish[jobs] - instance.release[jobs]) / _HOUR
    counts = {kind: np.bincount([e.job for e in result.events if e.kind is kind],
                                minlength=instance.n_jobs)[jobs]
              for kind in (EventKind.PREEMPT, EventKind.MIGRATE)}
    return {
        "jobs": float(jobs.size),
        "mean_jct_h": float(jct.mean()),
        "median_jct_h": float(np.median(jct)),
        "p95_jct_h": float(np.percentile(jct, 95)),
        "p99_jct_h": float(np.percentile(jct, 99)),
        "mean_queueing_h": float(((start[jobs] - instance.release[jobs]) / _HOUR).mean()),
        "makespan_h": float((np.nanmax(finish) - instance.release.min()) / _HOUR),
        "preemptions_per_job": float(counts[EventKind.PREEMPT].mean()),
        "migrations_per_job": float(counts[EventKind.MIGRATE].mean()),
    }


def utilisation_by_type(instance: Instance, result: Result) -> dict[str, float]:
    """Share of each type's GPU-time held by jobs, from the first arrival to the last end."""
    span = float(result.end.max(initial=0.0) - instance.release.min())
    held = np.zeros(instance.n_types)
    np.add.at(held, result.gpu_type, (result.end - result.start)
              * np.array([g.size for g in result.gpus]))
    total = instance.node_gpus.sum(axis=0) * max(span, 1e-12)
    return {t: float(held[k] / total[k]) for k, t in enumerate(instance.type_ids)}
