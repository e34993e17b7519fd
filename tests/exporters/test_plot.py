"""Pictures of schedules: what a reader of the Gantt chart and the utilisation plot sees."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import INSTANCES, instance_from, run_cli
from matplotlib.axes import Axes
from matplotlib.patches import Rectangle

from gpuplan import Schedule, plan, read_instance
from gpuplan.core.instance import Instance
from gpuplan.exporters.plot import schedule_figure
from gpuplan.simulate import RunSpec, simulate


def bars(gantt: Axes) -> list[Rectangle]:
    """The Gantt chart's bars."""
    return [p for p in gantt.patches if isinstance(p, Rectangle)]


@pytest.fixture(scope="module")
def quickstart() -> tuple[Instance, Schedule]:
    """The quickstart instance and its greedy schedule."""
    instance = read_instance(INSTANCES / "quickstart.json")
    return instance, plan(instance)


def test_one_row_per_gpu_and_one_bar_per_gpu_a_segment_holds(
    quickstart: tuple[Instance, Schedule],
) -> None:
    """Every GPU of the fleet has its row, named by id, and every GPU of a segment its bar.

    A reader would notice a missing GPU row, or a gang drawn on fewer GPUs than it holds.
    """
    instance, schedule = quickstart
    figure = schedule_figure(schedule, instance)
    gantt, _ = figure.axes
    labels = [tick.get_text() for tick in gantt.get_yticklabels()]
    assert labels == list(instance.gpu_ids)
    drawn = [b for b in bars(gantt) if b.get_width() > 0]
    assert len(drawn) == sum(len(s.gpu_ids) for s in schedule.segments)


def test_bars_sit_at_the_segments_times(quickstart: tuple[Instance, Schedule]) -> None:
    """Each bar starts and ends where its segment does.

    A reader would notice jobs drawn at other times than the schedule says.
    """
    instance, schedule = quickstart
    figure = schedule_figure(schedule, instance)
    gantt, _ = figure.axes
    drawn = sorted((round(p.get_x(), 6), round(p.get_x() + p.get_width(), 6))
                   for p in bars(gantt))
    planned = sorted((round(s.start_s, 6), round(s.end_s, 6))
                     for s in schedule.segments for _ in s.gpu_ids)
    assert drawn == planned


def test_the_title_names_method_and_objective(quickstart: tuple[Instance, Schedule]) -> None:
    """The chart says which method made it, for which objective, with which value."""
    instance, schedule = quickstart
    figure = schedule_figure(schedule, instance)
    title = figure.axes[0].get_title()
    assert schedule.method in title and schedule.objective_kind in title
    assert f"{schedule.objective}" in title and "deadlines in red" in title


def test_utilisation_has_one_line_per_gpu_type_never_above_one(
    quickstart: tuple[Instance, Schedule],
) -> None:
    """The lower plot has one labelled line per GPU type used, with its GPU count, within [0, 1].

    A reader would notice a type missing from the legend or a busy share above 100%.
    """
    instance, schedule = quickstart
    figure = schedule_figure(schedule, instance)
    _, usage = figure.axes
    used = sorted({s.gpu_type for s in schedule.segments})
    labels = [line.get_label() for line in usage.get_lines()]
    assert len(labels) == len(used)
    for kind, label in zip(used, labels, strict=True):
        count = int(instance.node_gpus[:, instance.type_index[kind]].sum())
        assert label == f"{kind} ({count} GPUs)"
    for line in usage.get_lines():
        share = np.asarray(line.get_ydata(), dtype=float)
        assert share.min() >= 0 and share.max() <= 1 + 1e-9


def test_the_svg_names_every_job(tmp_path: Path) -> None:
    """``gpuplan plot`` writes an SVG that labels each job of a small schedule."""
    schedule_file, picture = tmp_path / "s.json", tmp_path / "g.svg"
    assert run_cli("solve", INSTANCES / "quickstart.json", "-o", schedule_file).returncode == 0
    result = run_cli("plot", schedule_file, "--instance", INSTANCES / "quickstart.json",
                     "-o", picture)
    assert result.returncode == 0, result.stderr
    text = picture.read_text()
    for segment in Schedule.read(schedule_file).segments:
        assert segment.job in text


@pytest.mark.parametrize("suffix", [".png", ".svg", ".html"])
def test_plot_writes_a_picture(tmp_path: Path, suffix: str) -> None:
    """``gpuplan plot`` draws a CP schedule as PNG, SVG or an HTML page holding the SVG.

    A user would notice a file of another format than its suffix says.
    """
    schedule = tmp_path / "schedule.json"
    done = run_cli("solve", INSTANCES / "quickstart.json", "--method", "cp", "--time-limit",
                   "2", "-o", schedule)
    assert done.returncode == 0, done.stderr
    picture = tmp_path / f"gantt{suffix}"
    done = run_cli("plot", schedule, "--instance", INSTANCES / "quickstart.json", "-o", picture)
    assert done.returncode == 0, done.stderr
    data = picture.read_bytes()
    if suffix == ".png":
        assert data.startswith(b"\x89PNG")
    else:
        assert b"<svg" in data and (data.startswith(b"<!DOCTYPE html>") == (suffix == ".html"))


def test_plot_rejects_an_unknown_format(tmp_path: Path) -> None:
    """An unknown picture suffix is an input error (exit 2) and writes nothing."""
    schedule = tmp_path / "schedule.json"
    assert run_cli("solve", INSTANCES / "quickstart.json", "-o", schedule).returncode == 0
    done = run_cli("plot", schedule, "-o", tmp_path / "gantt.bmp")
    assert done.returncode == 2 and "picture format" in done.stderr
    assert not (tmp_path / "gantt.bmp").exists()


def test_a_run_log_shows_its_preemptions_overheads_and_moves() -> None:
    """A run's Gantt chart marks each preemption, hatches each overhead, dashes each move.

    On two 1-GPU nodes under SRTF, ``short`` preempts ``late`` and ``brief`` preempts
    ``early``; each resumes paying the 30 s restore. A reader of the old chart saw plain
    bars and could not tell a resume from a start.
    """
    instance = instance_from({
        "gpu_types": [{"id": "A", "capacity": {"m": 16}}],
        "nodes": [{"id": "n1", "gpus": {"A": 1}}, {"id": "n2", "gpus": {"A": 1}}],
        "jobs": [{"id": job, "gpus": 1, "demand": {"m": 1}, "duration_s": {"A": seconds},
                  "release_s": release, "preemptible": True}
                 for job, seconds, release in (("early", 1000, 0), ("late", 1000, 0),
                                               ("short", 100, 200), ("brief", 50, 220))],
        "objective": "weighted-completion"}).online()
    schedule = simulate(instance, RunSpec(scheduler="srtf"))
    gantt, _ = schedule_figure(schedule, instance).axes
    hatched = [b for b in bars(gantt) if b.get_hatch()]
    paid = [s for s in schedule.segments if s.restore_s > 0]
    assert len(hatched) == len(paid) == 2
    assert sorted(round(b.get_width(), 6) for b in hatched) == [30.0, 30.0]
    crosses = [line for line in gantt.get_lines() if line.get_marker() == "x"]
    preempts = [e for e in schedule.events if e.kind.value == "preempt"]
    assert len(crosses) == 1 and np.asarray(crosses[0].get_xdata()).size == len(preempts) == 2
    legend = [text.get_text() for text in gantt.get_legend().get_texts()]  # type: ignore[union-attr]
    assert legend == ["preempted", "restore / migration overhead"]
