"""Pictures of simulated runs and sweeps.

- :func:`jct_cdf_figure`: the distribution of job completion times, one line per run;
- :func:`timeline_figure`: one run's utilisation of each GPU type and its queue length
  over time;
- :func:`load_curve_figure`: a sweep's mean JCT against the arrival rate, one line per
  policy, with the spread over seeds.

Each draws a matplotlib :class:`~matplotlib.figure.Figure` that is not registered with
pyplot (nothing to close, no display needed); :func:`gpuplan.exporters.plot.write_figure` writes it
as PNG, SVG or HTML, atomically like every file gpuplan writes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from gpuplan.core.errors import InputError
from gpuplan.core.instance import FloatArray, Instance
from gpuplan.core.result import Result
from gpuplan.simulate.metrics import measured_interval, queue_series, utilisation_series

if TYPE_CHECKING:  # matplotlib is imported only when drawing
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.container import Container
    from matplotlib.figure import Figure


_HOUR = 3600.0


def _figure(panels: int, height: float) -> tuple[Figure, list[Axes]]:
    """A figure of ``panels`` axes stacked on one shared x axis."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(8, height))
    axes = figure.subplots(panels, 1, sharex=True, squeeze=False)
    return figure, [ax for (ax,) in axes]


def jct_cdf_figure(runs: Mapping[str, FloatArray], title: str = "") -> Figure:
    """The cumulative distribution of JCTs, one line per run.

    Parameters
    ----------
    runs
        Run label (a policy, say) to the JCTs of its measured jobs in hours, e.g.
        ``job_stats(instance, result).jct_h[window_jobs(instance, window)]``.
    title
        Above the plot.

    Notes
    -----
    JCTs spanning more than two decades are drawn on a log axis, as a few long jobs
    would otherwise squeeze every other job against zero.
    """
    figure, (ax,) = _figure(1, 4.5)
    shortest, longest = math.inf, 0.0
    for label, jct in runs.items():
        finite = np.sort(jct[np.isfinite(jct)])
        if finite.size == 0:
            continue
        share = np.arange(1, finite.size + 1) / finite.size
        ax.step(finite, share, where="post",
                label=f"{label} (mean {finite.mean():.3g} h, {finite.size} jobs)")
        shortest, longest = min(shortest, float(finite[0])), max(longest, float(finite[-1]))
    if shortest > 0 and longest > 100 * shortest:
        ax.set_xscale("log")
    ax.set_xlabel("job completion time (h)")
    ax.set_ylabel("share of jobs")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    if runs:
        ax.legend(fontsize=8, loc="lower right")
    ax.set_title(title or "JCT distribution")
    figure.tight_layout()
    return figure


def timeline_figure(instance: Instance, result: Result,
                    window: tuple[int, int] | None = None, title: str = "") -> Figure:
    """One run over time: each GPU type's held share above the queue length.

    Parameters
    ----------
    instance
        The run's workload and cluster.
    result
        The verified run log.
    window
        The measured jobs (positions in arrival order); their interval, from the first
        arrival to the last completion, is shaded in both panels. None: no shading.
    title
        Above the plot.
    """
    from matplotlib.ticker import MaxNLocator

    figure, (usage, queue) = _figure(2, 6)
    times, shares = utilisation_series(instance, result)
    total = instance.node_gpus.sum(axis=0)
    for t, kind in enumerate(instance.type_ids):
        usage.step(times / _HOUR, shares[:, t], where="post",
                   label=f"{kind} ({int(total[t])} GPUs)")
    usage.set_ylim(0, 1.05)
    usage.set_ylabel("GPUs held (share)")
    usage.legend(fontsize=8, loc="upper right")
    usage.set_title(title or "utilisation and queue")
    times, waiting = queue_series(instance, result)
    queue.step(times / _HOUR, waiting, where="post", color="black", label="queued jobs")
    queue.set_ylim(bottom=0)
    queue.yaxis.set_major_locator(MaxNLocator(integer=True))
    queue.set_ylabel("queued jobs")
    queue.set_xlabel("time (h)")
    if window is not None:
        begin, end = measured_interval(instance, result, window)
        for ax in (usage, queue):
            ax.axvspan(begin / _HOUR, end / _HOUR, color="grey", alpha=0.15, lw=0,
                       label=f"jobs {window[0]}:{window[1]}" if ax is queue else None)
        queue.legend(fontsize=8, loc="upper right")
    figure.tight_layout()
    return figure


def _number(row: Mapping[str, object], key: str, source: str, at: int) -> float:
    """``row[key]`` as a float, or an error naming the row and the field."""
    value = row.get(key)
    if isinstance(value, int | float | str):
        try:
            return float(value)
        except ValueError:
            pass
    raise InputError(source, f"rows[{at}].{key}", f"needs a number, got {value!r}")


def load_curve_figure(rows: Sequence[Mapping[str, object]], metric: str = "mean_jct_h",
                      p95: bool = False, source: str = "sweep results",
                      title: str = "") -> Figure:
    """A sweep's JCT against load: one line per policy, error bars over seeds.

    Parameters
    ----------
    rows
        One per run: ``policy``, ``rate`` (arrivals per hour), the ``metric``, and with
        ``p95`` also ``p95_jct_h``; other keys (``seed``...) are ignored. Values may be
        text, as read from a CSV file. A run whose metric is NaN (it failed) is left out.
    metric
        The key drawn as the line: the mean over the runs of each (policy, rate).
    p95
        Also draw each policy's mean ``p95_jct_h``, dashed in the same colour.
    source
        Where the rows come from, for messages.
    title
        Above the plot.

    Raises
    ------
    InputError
        If a row lacks ``policy``, or a needed number is missing or not a number, naming
        the row and the field.

    Notes
    -----
    Error bars span the lowest to the highest value over the seeds of a point: with the
    three or so seeds a sweep runs, that is more honest than a standard deviation.
    """
    keys = [metric] + (["p95_jct_h"] if p95 else [])
    points: dict[str, dict[float, list[list[float]]]] = {}
    for at, row in enumerate(rows):
        if "policy" not in row:
            raise InputError(source, f"rows[{at}].policy", "is missing")
        values = [_number(row, key, source, at) for key in keys]
        if math.isnan(values[0]):
            continue
        by_rate = points.setdefault(str(row["policy"]), {})
        by_rate.setdefault(_number(row, "rate", source, at), []).append(values)
    figure, (ax,) = _figure(1, 4.5)
    handles: list[Artist | Container] = []  # in drawing order, each policy's p95 after its mean
    for policy, by_rate in points.items():
        rates = np.array(sorted(by_rate))
        runs = [np.array(by_rate[rate]) for rate in rates]
        mean = np.array([r[:, 0].mean() for r in runs])
        spread = np.array([[m - r[:, 0].min(), r[:, 0].max() - m]
                           for m, r in zip(mean, runs, strict=True)]).T
        line = ax.errorbar(rates, mean, yerr=spread, marker="o", capsize=3, label=policy)
        handles.append(line)
        if p95:
            handles += ax.plot(rates, [r[:, 1].mean() for r in runs], linestyle="--",
                               marker=".", color=line.lines[0].get_color(),
                               label=f"{policy} p95")
    ax.set_xlabel("arrival rate (jobs/h)")
    name = metric.removesuffix("_h").replace("_", " ").replace("jct", "JCT")
    ax.set_ylabel(f"{name} (h)" + ("; dashed: p95 JCT" if p95 else ""))
    ax.grid(alpha=0.3)
    if handles:
        ax.legend(handles=handles, fontsize=8, loc="upper left")
    ax.set_title(title or "JCT against load")
    figure.tight_layout()
    return figure
