"""Plans side by side: diff's moves and eta's reasons, hand-computed."""

from __future__ import annotations

import dataclasses
import json

import numpy as np

from gpuplan.core.instance import Outage
from gpuplan.core.keep import Keep
from gpuplan.core.result import Result
from gpuplan.core.schedule import Schedule
from gpuplan.core.status import Status
from gpuplan.hybrid.compare import diff, eta
from gpuplan.readers.instance_file import instance_from_data

DOCUMENT = {
    "name": "pair",
    "gpu_types": [{"id": "t", "capacity": {"memory_gib": 16}}],
    "nodes": [{"id": "n0", "gpus": {"t": 1}}, {"id": "n1", "gpus": {"t": 1}}],
    "jobs": [{"id": "A", "gpus": 1, "duration_s": 100},
             {"id": "B", "gpus": 1, "duration_s": 100, "depends_on": ["A"]},
             {"id": "C", "gpus": 1, "duration_s": 100}],
    "objective": "makespan",
}


def _plan(rows: list[tuple[str, str, float]]) -> Schedule:
    """A plan from (job, node, start) rows, each job run whole."""
    return Schedule.from_json(json.dumps({
        "instance": "pair", "objective_kind": "makespan", "status": "feasible",
        "objective": max(start for _, _, start in rows) + 100, "bound": None, "gap": None,
        "method": "hand", "solver": "hand", "wall_time_s": 0.0, "seed": 0,
        "gpuplan_version": "0", "unplaced": [],
        "segments": [{"job": job, "node": node, "gpu_type": "t", "gpu_ids": [f"{node}/0"],
                      "start_s": start, "end_s": start + 100} for job, node, start in rows]}),
        "plan.json")


def test_diff_names_the_jobs_moved_later_and_unchanged() -> None:
    """C moves to n1 and starts later; A stays; the objective grows by 100 s."""
    a = _plan([("A", "n0", 0.0), ("B", "n0", 100.0), ("C", "n1", 0.0)])
    b = _plan([("A", "n0", 0.0), ("B", "n1", 100.0), ("C", "n0", 200.0)])
    found = diff(a, b, same_start_s=1.0)
    assert (found.moved, found.other_gpus, found.later, found.earlier, found.unchanged) == (
        ["B", "C"], ["B", "C"], ["C"], [], 1)
    assert found.as_dict()["objective"]["delta"] == 100.0


def test_a_job_in_other_pieces_moves_even_on_its_gpus_from_its_start() -> None:
    """A job stopped and resumed on its GPUs moves; run whole again, it moves back.

    C's first piece keeps its GPUs and start in both directions: only its pieces differ.
    A start within the tolerance is no move.
    """
    a = _plan([("A", "n0", 0.0), ("B", "n0", 100.0), ("C", "n1", 0.0)])
    split = a.model_copy(update={"segments": [
        s.model_copy(update={"end_s": 50.0, "work": 0.5}) if s.job == "C" else s
        for s in a.segments] + [a.segments[2].model_copy(update={
            "start_s": 150.0, "end_s": 200.0, "work": 0.5})]})
    shifted = _plan([("A", "n0", 0.5), ("B", "n0", 100.0), ("C", "n1", 0.0)])
    there = diff(a, split, same_start_s=1.0)
    back = diff(split, a, same_start_s=1.0)
    assert (there.moved, there.preempted, there.other_gpus, there.unchanged) == (
        ["C"], ["C"], [], 2)
    assert (back.moved, back.fewer_pieces) == (["C"], ["C"])
    assert diff(a, shifted, same_start_s=1.0).unchanged == 3
    assert diff(a, shifted, same_start_s=0.0).earlier == []
    assert diff(a, shifted, same_start_s=0.0).later == ["A"]


def test_eta_names_the_predecessor_the_gpus_and_an_outage() -> None:
    """B waits for A (its predecessor, on its GPU); with n1 down until 100 s, C waits for it."""
    instance = instance_from_data(DOCUMENT, "pair")
    plan = _plan([("A", "n0", 0.0), ("B", "n0", 100.0), ("C", "n1", 100.0)])
    held = eta(instance, plan, "B").held_by
    assert any("predecessor" in reason for reason in held)
    assert any("holds its GPUs" in reason for reason in held)
    down = dataclasses.replace(instance, outages=(
        Outage(np.array([1]), 0.0, 100.0, "n1 in repair"),))
    assert any("down until 100" in reason for reason in eta(down, plan, "C").held_by)


def test_keep_counts_a_job_as_moved_when_its_gpus_or_start_change() -> None:
    """A job stays only on its previous GPUs, from its previous start within the tolerance."""
    keep = Keep((np.array([0]), np.array([1]), None), np.array([0.0, 10.0, np.nan]),
                np.array([5.0, 5.0, 5.0]), max_changes=1, tolerance_s=1.0)
    result = Result(status=Status.FEASIBLE, objective=1.0, bound=None, solver="hand",
                    job=np.array([0, 1, 2]), gpu_type=np.zeros(3, dtype=np.int64),
                    start=np.array([0.5, 20.0, 0.0]), end=np.array([1.0, 21.0, 1.0]),
                    gpus=(np.array([0]), np.array([1]), np.array([0])))
    assert keep.moved(result).tolist() == [False, True, False]
    assert keep.cost(result) == 5.0 and keep.allows(result) and keep.score(result) == 6.0
