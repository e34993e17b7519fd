"""Pictures of trace replays.

- :func:`allocation_figure`: allocated GPU share against arrived GPU demand (FGD's Fig. 7);
- :func:`held_share_figure`: a time replay's GPU share held over time, one line per policy.

Each draws a matplotlib :class:`~matplotlib.figure.Figure` that is not
registered with pyplot; :func:`gpuplan.exporters.plot.write_figure` writes it atomically.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from gpuplan.core.instance import FloatArray
from gpuplan.sharing.replay import ARRIVED_PERCENT

if TYPE_CHECKING:  # matplotlib is imported only when drawing
    from matplotlib.figure import Figure


def _mean_curves(rows: Sequence[Mapping[str, Any]], curve: str) -> dict[str, FloatArray]:
    """Each policy's mean curve over its runs (NaN where a run has no value)."""
    by_policy: dict[str, list[list[float]]] = {}
    for row in rows:
        values = [np.nan if v is None else float(v) for v in row["curves"][curve]]
        by_policy.setdefault(str(row["policy"]), []).append(values)
    return {policy: np.array(runs).mean(axis=0) for policy, runs in by_policy.items()}


def allocation_figure(rows: Sequence[Mapping[str, Any]], title: str = "",
                      bound: Mapping[float, float] | None = None) -> Figure:
    """Allocated GPUs (% of capacity) against arrived GPU demand, one line per policy.

    Parameters
    ----------
    rows
        One per replay: ``policy`` and ``curves`` (:meth:`ReplayResult.curves` as lists).
        Each policy's line is the mean over its runs (seeds).
    title
        Above the plot.
    bound
        Arrived percent to a proven upper bound on the allocated percent, drawn as points:
        no placement of the same pods can allocate more.
    """
    from matplotlib.figure import Figure

    figure = Figure(figsize=(8, 5))
    ax = figure.subplots()
    arrived = ARRIVED_PERCENT.astype(float)
    ax.plot(arrived, np.minimum(arrived, 100.0), color="0.7", linestyle=":",
            label="arrived (all placed)")
    curves = _mean_curves(rows, "allocated")
    for policy, curve in curves.items():
        ax.plot(arrived, curve, label=policy)
    points = sorted((bound or {}).items())
    if points:
        ax.plot([a for a, _ in points], [b for _, b in points], "k^", label="upper bound")
    ax.set_xlabel("arrived GPU demand (% of GPU capacity)")
    ax.set_ylabel("GPUs allocated (% of capacity)")
    ax.set_xlim(0, float(arrived[-1]))
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    # The interesting part is where policies part ways: zoom on it in an inset.
    inset = ax.inset_axes((0.08, 0.55, 0.4, 0.4))
    for curve in curves.values():
        inset.plot(arrived, curve)
    if points:
        inset.plot([a for a, _ in points], [b for _, b in points], "k^")
    inset.set_xlim(80, float(arrived[-1]))
    tail = np.concatenate([c[80:] for c in curves.values()])
    low = float(np.nanmin(tail)) if np.isfinite(tail).any() else 80.0
    inset.set_ylim(max(0.0, low - 1), 100)
    inset.grid(alpha=0.3)
    if title:
        ax.set_title(title)
    figure.tight_layout()
    return figure


def _time_unit(span_s: float) -> tuple[float, str]:
    """Seconds per unit and its name for an axis spanning ``span_s`` seconds."""
    for seconds, name in ((60.0, "minutes"), (3600.0, "hours")):
        if span_s <= 48 * seconds:
            return seconds, name
    return 86400.0, "days"


#: Share of its peak below which the held share counts as the run's tail.
TAIL_SHARE = 0.1


def held_share_figure(rows: Sequence[Mapping[str, Any]], title: str = "") -> Figure:
    """The share of GPU capacity held over time, one step line per run.

    The axis follows the data: when the share stays below a tenth of its peak for most of
    the run (the long-running pods left after a ``--speedup`` compressed the arrivals), it
    ends a fifth past the last time any run held more, and says when the last pod left;
    its unit (minutes, hours, days) follows the span shown.

    Parameters
    ----------
    rows
        One per time replay: ``policy``, ``seed`` and ``series`` (times in seconds and the
        share held from each time to the next).
    title
        Above the plot.
    """
    from matplotlib.figure import Figure

    figure = Figure(figsize=(9, 4.5))
    ax = figure.subplots()
    seeds = {row["seed"] for row in rows}
    series = [tuple(np.asarray(values, dtype=float) for values in row["series"])
              for row in rows]
    peak = max((float(share.max(initial=0.0)) for _, share in series), default=0.0)
    end = max((float(times[-1]) for times, _ in series if times.size), default=0.0)
    busy = max((float(times[share >= TAIL_SHARE * peak].max(initial=0.0))
                for times, share in series if times.size), default=0.0)
    shown = end if busy * 1.2 >= end / 2 or peak == 0 else busy * 1.2
    unit, name = _time_unit(shown)
    for row, (times, share) in zip(rows, series, strict=True):
        label = str(row["policy"]) + ("" if len(seeds) == 1 else f" (seed {row['seed']})")
        ax.step(times / unit, 100 * share, where="post", label=label, linewidth=0.8)
    ax.set_xlim(0, shown / unit)
    ending = _time_unit(end)
    ax.set_xlabel(f"time ({name})" + ("" if shown == end else
                  f"; after this the share stays below {TAIL_SHARE:.0%} of its peak, and the "
                  f"last pod leaves at {end / ending[0]:.3g} {ending[1]}"))
    ax.set_ylabel("GPU capacity held (%)")
    ax.grid(alpha=0.3)
    ax.legend(loc="upper right")
    if title:
        ax.set_title(title)
    figure.tight_layout()
    return figure
