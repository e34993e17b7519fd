"""Pictures of runs and sweeps: what a reader of the CDF, the timeline and the load curve sees."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import one_gpu
from matplotlib.axes import Axes
from matplotlib.container import ErrorbarContainer
from matplotlib.lines import Line2D

from gpuplan.core.errors import InputError
from gpuplan.exporters.plot import write_figure
from gpuplan.simulate import RunSpec, simulate
from gpuplan.simulate.metrics import job_stats
from gpuplan.simulate.plots import (
    BINS,
    binned,
    jct_cdf_figure,
    load_curve_figure,
    timeline_figure,
)

from .test_metrics import hand_instance, hand_result

_PNG = b"\x89PNG\r\n\x1a\n"


def _legend(ax: Axes) -> list[str]:
    legend = ax.get_legend()
    return [] if legend is None else [text.get_text() for text in legend.get_texts()]


def _xy(line: Line2D) -> tuple[list[float], list[float]]:
    """A line's points as plain floats."""
    return (np.asarray(line.get_xdata(), dtype=float).tolist(),
            np.asarray(line.get_ydata(), dtype=float).tolist())


def test_the_cdf_has_one_line_per_run_reaching_all_jobs(tmp_path: Path) -> None:
    """One step line per run label, each rising to 1 at its longest JCT, and a PNG written.

    A reader comparing policies would notice a run missing or a curve that stops short.
    """
    runs = {"fifo": np.array([1.0, 2.0, 4.0]), "las": np.array([0.5, 1.5, 2.5, 3.0])}
    figure = jct_cdf_figure(runs, title="three jobs")
    (ax,) = figure.axes
    lines = ax.get_lines()
    assert len(lines) == 2
    assert [label.split(" ")[0] for label in _legend(ax)] == ["fifo", "las"]
    assert "mean 2.33 h" in _legend(ax)[0]
    assert _xy(lines[0])[1][-1] == pytest.approx(1.0)
    assert _xy(lines[1])[0][-1] == pytest.approx(3.0)
    out = tmp_path / "cdf.png"
    write_figure(figure, out)
    assert out.read_bytes().startswith(_PNG)


def test_the_timeline_draws_each_type_and_the_queue(tmp_path: Path) -> None:
    """The timeline shows each GPU type's share above the queue, the window shaded.

    The upper panel has one line per GPU type, named with its GPU count; the lower one
    the queue, which reaches the one job waiting; the window is named in its legend.
    """
    instance, result = hand_instance(), hand_result()
    figure = timeline_figure(instance, result, window=(1, 3))
    usage, queue = figure.axes
    assert _legend(usage) == ["A (2 GPUs)", "B (2 GPUs)"]
    assert len(usage.get_lines()) == 2
    (line,) = queue.get_lines()
    assert max(_xy(line)[1]) == 1
    assert _legend(queue) == ["queued jobs", "jobs 1:3"]
    out = tmp_path / "timeline.svg"
    write_figure(figure, out)
    assert out.read_text().lstrip().startswith("<?xml")


def test_the_load_curve_averages_seeds_with_their_spread(tmp_path: Path) -> None:
    """One line per policy through the mean over seeds at each rate, bars to the extremes.

    Rows may come from a CSV file (numbers as text); a failed run (NaN) is left out.
    """
    rows = [
        {"policy": "fifo", "rate": "0.4", "seed": 0, "mean_jct_h": "10", "p95_jct_h": 30},
        {"policy": "fifo", "rate": 0.4, "seed": 1, "mean_jct_h": 14, "p95_jct_h": 34},
        {"policy": "fifo", "rate": 2.8, "seed": 0, "mean_jct_h": 20, "p95_jct_h": 50},
        {"policy": "fifo", "rate": 2.8, "seed": 1, "mean_jct_h": float("nan"),
         "p95_jct_h": 0},
        {"policy": "las", "rate": 0.4, "seed": 0, "mean_jct_h": 8, "p95_jct_h": 20},
        {"policy": "las", "rate": 2.8, "seed": 0, "mean_jct_h": 9, "p95_jct_h": 21},
    ]
    figure = load_curve_figure(rows, p95=True)
    (ax,) = figure.axes
    assert _legend(ax) == ["fifo", "fifo p95", "las", "las p95"]
    fifo = ax.containers[0]
    assert isinstance(fifo, ErrorbarContainer) and fifo.get_label() == "fifo"
    assert _xy(fifo.lines[0]) == ([0.4, 2.8], [12, 20])
    (bars,) = fifo.lines[2]
    assert [list(segment[:, 1]) for segment in bars.get_segments()] == [[10, 14], [20, 20]]
    fifo_p95 = next(line for line in ax.get_lines() if line.get_label() == "fifo p95")
    assert _xy(fifo_p95)[1] == [32, 50]
    assert ax.get_ylabel() == "mean JCT (h); dashed: p95 JCT"
    out = tmp_path / "load.png"
    write_figure(figure, out)
    assert out.stat().st_size > 0 and out.read_bytes().startswith(_PNG)


def test_a_bad_sweep_row_names_the_row_and_field() -> None:
    """A row whose rate is not a number is refused naming its position and the field."""
    with pytest.raises(InputError, match=r"rows\[1\]\.rate: needs a number, got 'fast'"):
        load_curve_figure([{"policy": "a", "rate": 1, "mean_jct_h": 1},
                           {"policy": "a", "rate": "fast", "mean_jct_h": 1}],
                          source="results.csv")


def test_an_unknown_picture_format_is_refused_and_nothing_written(tmp_path: Path) -> None:
    """Writing to ``.jpg`` is an input error naming the file; no file appears."""
    figure = jct_cdf_figure({"fifo": job_stats(hand_instance(), hand_result()).jct_h})
    out = tmp_path / "cdf.jpg"
    with pytest.raises(InputError, match=r"cdf\.jpg"):
        write_figure(figure, out)
    assert not out.exists()


def test_a_long_series_is_drawn_binned_with_exact_means() -> None:
    """Each bin's line is the time-weighted mean, its band the least and greatest value.

    A series at 3 for the first second of every 4 and at 0 otherwise, over 4 seconds per
    bin, averages 0.75 in every bin, between 0 and 3. Drawn step by step, it would be a
    solid band of ink.
    """
    span = 4.0 * BINS
    times = np.arange(0.0, span + 1, 1.0)
    values = np.where(np.arange(times.size) % 4 == 0, 3.0, 0.0)[:, None]
    edges, low, high, mean = binned(times, values)
    assert edges.size == BINS + 1 and edges[0] == 0 and edges[-1] == span
    assert np.allclose(mean[:, 0], 0.75)
    assert (low[:, 0] == 0).all() and (high[:, 0] == 3).all()
    total = float(((edges[1:] - edges[:-1]) * mean[:, 0]).sum())
    assert total == pytest.approx(3.0 * np.count_nonzero(values[:-1, 0]), rel=1e-9)


def test_a_long_timeline_has_a_readable_queue_panel() -> None:
    """A run of 3,000 one-second jobs on one GPU is drawn as at most BINS + 1 points a line.

    Jobs arrive twice a second, so the queue changes at some 6,000 instants: drawn step by
    step, the panel was a solid black band.
    """
    instance = one_gpu([{"id": f"j{k}", "demand": {"compute": 1.0}, "duration_s": {"G": 1},
                         "release_s": k / 2} for k in range(3000)]).online()
    schedule = simulate(instance, RunSpec())
    assert schedule.verification is not None
    result = schedule.to_result(instance, schedule.verification.objective)
    figure = timeline_figure(instance, result, (0, 3000))
    usage, queue = figure.axes
    for ax in (usage, queue):
        assert all(np.asarray(line.get_xdata()).size <= BINS + 1 for line in ax.get_lines())
    assert "mean per" in _legend(queue)[0] and queue.get_ylim()[1] >= 1
