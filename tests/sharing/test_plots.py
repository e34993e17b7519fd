"""Pictures of sharing replays: what a reader of the held-share timeline sees."""

from __future__ import annotations

import numpy as np

from gpuplan.sharing.plots import held_share_figure


def _row(policy: str, times: list[float], share: list[float]) -> dict[str, object]:
    return {"policy": policy, "seed": 42, "series": [times, share]}


def test_the_time_axis_follows_the_busy_part_of_the_run() -> None:
    """A spike in the first hour and a 1% tail for 145 days is drawn over its first hours.

    If this broke, the picture would be one spike against the left edge of 145 empty days
    (the sped-up openb replay of the guide).
    """
    day = 86400.0
    times = [0.0, 100.0, 3600.0, 7200.0, 145 * day]
    figure = held_share_figure([_row("fgd", times, [0.0, 0.9, 0.3, 0.01, 0.0])])
    (ax,) = figure.axes
    right = ax.get_xlim()[1]
    assert "hours" in ax.get_xlabel() and "last pod leaves at 145 days" in ax.get_xlabel()
    assert right == np.float64(3600.0 * 1.2 / 3600.0)


def test_a_run_busy_to_its_end_is_drawn_whole() -> None:
    """A run that stays loaded shows its whole span, in days, with no note."""
    day = 86400.0
    figure = held_share_figure([_row("best-fit", [0.0, day, 9 * day, 10 * day],
                                     [0.5, 0.6, 0.4, 0.0])])
    (ax,) = figure.axes
    assert ax.get_xlim()[1] == 10.0 and ax.get_xlabel() == "time (days)"
