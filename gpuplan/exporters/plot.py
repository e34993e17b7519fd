"""Pictures of a schedule: a Gantt chart per GPU and the utilisation of each GPU type.

:func:`plot_schedule` draws with matplotlib, on a figure not registered with pyplot (no
display needed, nothing to close), and :func:`write_figure`, which every picture of
gpuplan goes through, writes PNG, SVG, or an HTML page holding the SVG, atomically like
every file gpuplan writes.
"""

from __future__ import annotations

import html
import io
import zlib
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from gpuplan.core.errors import InputError
from gpuplan.core.files import write_bytes_atomic, write_text_atomic
from gpuplan.core.instance import Instance
from gpuplan.core.objectives import ObjectiveKind
from gpuplan.core.schedule import Schedule

if TYPE_CHECKING:  # matplotlib is imported only when drawing
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

#: Output formats by file suffix.
FORMATS = (".png", ".svg", ".html")


def _colour(job: str) -> tuple[float, float, float]:
    """A stable colour per job id, so a gang's bars match across its GPUs."""
    from matplotlib import colormaps

    rgba = colormaps["tab20"](zlib.crc32(job.encode()) % 20)
    return (float(rgba[0]), float(rgba[1]), float(rgba[2]))


def _mark_run(gantt: Axes, schedule: Schedule, row: dict[str, int]) -> None:
    """Mark a run log's preemptions (red crosses) and explain its marks in a legend.

    Overheads (hatched) and moves (dashed lines) are drawn with the segments.
    """
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles: list[Artist] = []
    preempted = [(e.time_s, row[g]) for e in schedule.events if e.kind.value == "preempt"
                 for g in e.gpu_ids if g in row]
    if preempted:
        gantt.plot([t for t, _ in preempted], [r for _, r in preempted], linestyle="none",
                   marker="x", color="red", markersize=5)
        handles.append(Line2D([], [], linestyle="none", marker="x", color="red",
                              label="preempted"))
    if any(p.restore_s + p.migrate_s > 0 for p in schedule.segments):
        handles.append(Patch(facecolor="0.85", hatch="////", edgecolor="0.4",
                             label="restore / migration overhead"))
    if any(p.migrated_from for p in schedule.segments):
        handles.append(Line2D([], [], color="black", linestyle="--", marker=">",
                              markersize=4, label="migrated (from, to)"))
    if handles:
        gantt.legend(handles=handles, fontsize=7, loc="upper right")


def schedule_figure(schedule: Schedule, instance: Instance | None = None) -> Figure:
    """The Gantt chart (one row per GPU) above the busy share of each GPU type over time.

    Parameters
    ----------
    schedule
        The schedule to draw.
    instance
        The schedule's instance: adds its idle GPUs as rows and its jobs' deadlines.
    """
    from matplotlib.figure import Figure

    static = schedule.objective_kind in {k.value for k in ObjectiveKind if k.is_static}
    gpus = list(instance.gpu_ids) if instance is not None else sorted(
        {g for p in schedule.segments for g in p.gpu_ids})
    row = {g: k for k, g in enumerate(gpus)}
    fig = Figure(figsize=(12, 3 + 0.22 * len(gpus)))
    gantt, usage = fig.subplots(2, 1, sharex=True, gridspec_kw={
        "height_ratios": [max(3, 0.22 * len(gpus)), 2]})
    for p in schedule.segments:
        colour = _colour(p.job)
        # A resume's restore and a move's migration are paid first: drawn hatched, in grey.
        paid = min(p.restore_s + p.migrate_s, p.end_s - p.start_s)
        for g in p.gpu_ids:
            if paid > 0:
                gantt.barh(row[g], paid, left=p.start_s, height=0.8, color="0.85",
                           hatch="////", edgecolor="0.4", linewidth=0.3)
            gantt.barh(row[g], p.end_s - p.start_s - paid, left=p.start_s + paid, height=0.8,
                       color=colour, edgecolor="black", linewidth=0.3)
        if p.migrated_from:
            # A move: a dashed line from the GPU the job left to the one it resumes on.
            before = [row[g] for g in p.migrated_from if g in row]
            if before:
                gantt.plot([p.start_s, p.start_s], [min(before), min(row[g] for g in p.gpu_ids)],
                           color=colour, linestyle="--", linewidth=1.0, marker=">",
                           markersize=4)
        # Gangs: one label across their first GPU, and a bracket joining their GPUs.
        rows = sorted(row[g] for g in p.gpu_ids)
        if len(rows) > 1:
            gantt.plot([p.start_s, p.start_s], [rows[0] - 0.4, rows[-1] + 0.4],
                       color="black", linewidth=1.2)
        if len(schedule.segments) <= 200:
            gantt.text(p.start_s, rows[0], f" {p.job}", va="center", fontsize=6, clip_on=True)
        if instance is not None:
            deadline = instance.deadline[instance.job_index[p.job]]
            if np.isfinite(deadline):
                gantt.plot([deadline] * 2, [rows[0] - 0.45, rows[-1] + 0.45], color="red",
                           linewidth=1.5)
    _mark_run(gantt, schedule, row)
    gantt.set_yticks(range(len(gpus)), gpus, fontsize=6 if len(gpus) > 40 else 8)
    gantt.invert_yaxis()
    gantt.set_ylabel("GPU")
    gantt.set_title(f"{schedule.instance}: {schedule.method}, {schedule.objective_kind} "
                    f"{schedule.objective if schedule.objective is not None else '-'}"
                    + (" (deadlines in red)" if instance is not None else ""))

    # Utilisation: busy GPUs of each type over time, as a share of the type's GPUs.
    by_type: dict[str, list[tuple[float, float, int]]] = {}
    for p in schedule.segments:
        by_type.setdefault(p.gpu_type, []).append((p.start_s, p.end_s, len(p.gpu_ids)))
    for kind, spans in sorted(by_type.items()):
        total = (int(instance.node_gpus[:, instance.type_index[kind]].sum())
                 if instance is not None else
                 len({g for p in schedule.segments if p.gpu_type == kind for g in p.gpu_ids}))
        times = np.array([t for s, e, _ in spans for t in (s, e)])
        delta = np.array([d for _, _, k in spans for d in (k, -k)], dtype=float)
        # Net change per instant, so a job ending as another starts draws no dip.
        instants, slot = np.unique(times, return_inverse=True)
        busy = np.cumsum(np.bincount(slot, weights=delta)) / max(total, 1)
        usage.step(instants, busy, where="post", label=f"{kind} ({total} GPUs)")
    usage.set_ylim(0, 1.05)
    usage.set_ylabel("busy share")
    usage.set_xlabel("time (s)" if not static else "time (s); a static plan runs at once")
    if by_type:
        usage.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    return fig


def _format(out: Path) -> str:
    """The picture format of ``out``: its suffix, lower case.

    Raises
    ------
    InputError
        If the suffix is not one of :data:`FORMATS`.
    """
    suffix = out.suffix.lower()
    if suffix not in FORMATS:
        raise InputError(str(out), "", f"unknown picture format {suffix!r}; use one of "
                         + ", ".join(FORMATS))
    return suffix


def write_figure(figure: Figure, out: Path, title: str = "gpuplan") -> None:
    """Write a figure to ``out`` as PNG, SVG or an HTML page (by its suffix), atomically.

    Parameters
    ----------
    figure
        The figure to write.
    out
        A ``.png``, ``.svg`` or ``.html`` path.
    title
        The HTML page's title.

    Raises
    ------
    InputError
        If the suffix is not one of :data:`FORMATS` or the file cannot be written.
    """
    suffix = _format(out)
    buffer = io.BytesIO() if suffix == ".png" else io.StringIO()
    figure.savefig(buffer, format="png" if suffix == ".png" else "svg", dpi=120)
    try:
        if isinstance(buffer, io.BytesIO):
            write_bytes_atomic(out, buffer.getvalue())
        elif suffix == ".svg":
            write_text_atomic(out, buffer.getvalue())
        else:
            write_text_atomic(out, f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
                              f"<title>{html.escape(title)}</title></head><body>\n"
                              f"{buffer.getvalue()}\n</body></html>\n")
    except OSError as exc:
        raise InputError(str(out), "", f"cannot write the picture: {exc}") from None


def plot_schedule(schedule: Schedule, out: Path, instance: Instance | None = None) -> None:
    """Draw the Gantt chart and per-type utilisation of a schedule into ``out``.

    Parameters
    ----------
    schedule
        The schedule to draw.
    out
        A ``.png``, ``.svg`` or ``.html`` path.
    instance
        The schedule's instance, for deadlines and idle GPUs; optional.

    Raises
    ------
    InputError
        If the suffix is not one of :data:`FORMATS` or the file cannot be written.
    """
    _format(out)  # before drawing, which may take long
    write_figure(schedule_figure(schedule, instance), out,
                 title=f"gpuplan: {schedule.instance}")
