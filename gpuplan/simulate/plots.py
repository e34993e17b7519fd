"""Pictures of simulated runs and sweeps.

- :func:`jct_cdf_figure`: the distribution of job completion times, one line per run;
- :func:`timeline_figure`: one run's utilisation of each GPU type and its queue length
  over time (a long run binned: each bin's mean, and its range as a band);
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


#: Bins a long step series is drawn in: more steps than the picture has pixels across only
#: make a band of solid ink.
BINS = 800


def binned(times: FloatArray, values: FloatArray
           ) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """A step series summarised over :data:`BINS` equal bins of its span.

    Parameters
    ----------
    times
        ``(K,)`` increasing instants.
    values
        ``(K, C)`` the series' values from each instant to the next.

    Returns
    -------
    edges, low, high, mean
        ``(B + 1,)`` bin edges, and for each bin and column the least and the greatest value
        in effect during the bin and its time-weighted mean, ``(B, C)`` each.
    """
    edges = np.linspace(float(times[0]), float(times[-1]), BINS + 1)
    points = np.union1d(times, edges)
    held = values[np.searchsorted(times, points, side="right") - 1]
    length = np.diff(points, append=points[-1])
    which = np.minimum(np.searchsorted(edges, points, side="right") - 1, BINS - 1)
    # Every edge is a point, so each bin's pieces start at its own edge.
    first = np.searchsorted(which, np.arange(BINS))
    low = np.minimum.reduceat(held, first, axis=0)
    high = np.maximum.reduceat(held, first, axis=0)
    span = np.add.reduceat(length, first)
    mean = np.add.reduceat(held * length[:, None], first, axis=0) / np.maximum(
        span, np.finfo(float).tiny)[:, None]
    return edges, low, high, mean


def _draw_steps(ax: Axes, times: FloatArray, values: FloatArray, labels: Sequence[str],
                colors: Sequence[str | None]) -> None:
    """Each column of a step series (time in seconds, drawn in hours) as a line.

    A series with more steps than :data:`BINS` twice over is drawn binned: each bin's mean
    as the line, its least to greatest value as a light band.
    """
    if times.size <= 2 * BINS:
        for c, (label, color) in enumerate(zip(labels, colors, strict=True)):
            ax.step(times / _HOUR, values[:, c], where="post", label=label, color=color)
        return
    edges, low, high, mean = binned(times, values)
    x = edges / _HOUR
    for c, (label, color) in enumerate(zip(labels, colors, strict=True)):
        # The last bin's value is repeated at the last edge, so the step reaches it.
        (line,) = ax.step(x, np.append(mean[:, c], mean[-1, c]), where="post", lw=1,
                          label=f"{label}, mean per {x[1] - x[0]:.3g} h", color=color)
        ax.fill_between(x, np.append(low[:, c], low[-1, c]), np.append(high[:, c], high[-1, c]),
                        step="post", alpha=0.25, lw=0, color=line.get_color())


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
    _draw_steps(usage, times, shares,
                [f"{kind} ({int(total[t])} GPUs)" for t, kind in enumerate(instance.type_ids)],
                [None] * instance.n_types)
    usage.set_ylim(0, 1.05)
    usage.set_ylabel("GPUs held (share)")
    usage.legend(fontsize=8, loc="upper right")
    usage.set_title(title or "utilisation and queue")
    times, waiting = queue_series(instance, result)
    _draw_steps(queue, times, waiting[:, None], ["queued jobs"], ["black"])
    # At least 0 to 1: a queue that stays (nearly) empty still reads as whole jobs.
    queue.set_ylim(0, max(1.0, queue.get_ylim()[1]))
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
