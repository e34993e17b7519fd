"""Moldable planning of elastic jobs by greedy and cp: each job's GPU count for its whole run."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import instance_from, run_cli

from gpuplan import Instance, Schedule, plan
from gpuplan.core.settings import RunSettings
from gpuplan.parts.moldable import Shapes, moldable_bound

SETTINGS = RunSettings(time_limit_s=5.0, threads=1)

#: Iterations per second of a job that scales almost linearly up to a node of 8 GPUs.
LINEAR = {"1": 10.0, "2": 19.0, "4": 36.0, "8": 64.0}


def elastic(name: str, work: float, speed: dict[str, float], gpus: int = 1,
            **fields: Any) -> dict[str, Any]:
    """An elastic job on type A100 that asked for ``gpus`` GPUs."""
    return {"id": name, "gpus": gpus, "demand": {"memory_gib": 40},
            "elastic": {"gpus": [int(c) for c in speed], "work": work,
                        "speed": {"A100": speed}, **fields.pop("elastic", {})}, **fields}


def cluster(jobs: list[dict[str, Any]], objective: str = "makespan",
            nodes: int = 1) -> Instance:
    """``nodes`` nodes of 8 A100 GPUs."""
    return instance_from({
        "gpu_types": [{"id": "A100", "capacity": {"memory_gib": 80}}],
        "nodes": [{"id": f"n{k}", "gpus": {"A100": 8}} for k in range(nodes)],
        "jobs": jobs, "objective": objective,
    })


def solved(instance: Instance, method: str, **options: Any) -> Schedule:
    """The method's verified plan."""
    schedule = plan(instance, method, options, settings=SETTINGS)
    assert schedule.verification is not None and schedule.verification.ok
    assert schedule.objective is not None
    return schedule


def counts(schedule: Schedule) -> dict[str, int]:
    """The GPUs each job runs on (over all its nodes)."""
    held: dict[str, int] = {}
    for segment in schedule.segments:
        held[segment.job] = held.get(segment.job, 0) + len(segment.gpu_ids)
    return held


@pytest.mark.parametrize("method", ["greedy", "cp"])
def test_an_elastic_job_given_more_gpus_ends_sooner(method: str) -> None:
    """Alone on a node, a job that asked for 1 GPU runs on all 8 and ends 6.4 times sooner."""
    instance = cluster([elastic("train", 6400.0, LINEAR, elastic={"rescale_s": 5})])
    moldable = solved(instance, method)
    fixed = solved(instance, method, moldable=False)
    assert counts(moldable) == {"train": 8}
    assert counts(fixed) == {"train": 1}
    # 6400 iterations at 64/s, plus the restore paid once at the start.
    assert moldable.objective == pytest.approx(105.0)
    assert fixed.objective == pytest.approx(645.0)


@pytest.mark.parametrize("method", ["greedy", "cp"])
def test_moldable_false_keeps_the_count_each_job_asked_for(method: str) -> None:
    """With --moldable false every elastic job holds its reference count, as a gang."""
    jobs = [elastic(f"j{k}", 3600.0, LINEAR, gpus=g) for k, g in enumerate([1, 2, 4, 2])]
    schedule = solved(cluster(jobs, "weighted-completion"), method, moldable=False)
    assert counts(schedule) == {"j0": 1, "j1": 2, "j2": 4, "j3": 2}


def test_a_count_beyond_a_node_spans_whole_nodes() -> None:
    """A job that scales to 16 GPUs runs on two whole nodes of 8, one interval on both."""
    speed = {"1": 10.0, "8": 70.0, "16": 130.0}
    schedule = solved(cluster([elastic("big", 13000.0, speed)], nodes=2), "cp")
    nodes = {gpu.split("/")[0] for s in schedule.segments for gpu in s.gpu_ids}
    assert counts(schedule) == {"big": 16} and nodes == {"n0", "n1"}
    assert {(s.start_s, s.end_s) for s in schedule.segments} == {(0.0, 100.0)}


def test_dominated_counts_are_pruned() -> None:
    """A count no faster than a smaller one of the same type is no shape of the job.

    16 GPUs run as fast as 8, and 4 slower than 2: neither is offered to the planners.
    """
    speed = {"1": 10.0, "2": 19.0, "4": 18.0, "8": 60.0, "16": 60.0}
    shapes = Shapes.of(cluster([elastic("j", 1000.0, speed)], nodes=2))
    assert sorted(shapes.table.gang.tolist()) == [1, 2, 8]
    assert Shapes.of(cluster([elastic("j", 1000.0, speed)], nodes=2), moldable=False).identity


@pytest.mark.parametrize("objective", ["makespan", "weighted-completion"])
def test_cp_with_elastic_counts_beats_the_fixed_counts(objective: str) -> None:
    """On a batch that asked for too few GPUs, choosing counts beats running as asked.

    Four jobs that each asked for 1 GPU of a node of 8 leave half of it idle at their
    counts; cp's moldable plan is better, no worse than greedy's, and above its bound.
    """
    jobs = [elastic(f"j{k}", w, LINEAR, weight=k + 1)
            for k, w in enumerate([7200.0, 3600.0, 3600.0, 1800.0])]
    instance = cluster(jobs, objective)
    moldable, fixed = solved(instance, "cp"), solved(instance, "cp", moldable=False)
    greedy = solved(instance, "greedy")
    assert moldable.objective is not None and fixed.objective is not None
    assert moldable.objective < 0.8 * fixed.objective
    assert moldable.objective <= greedy.objective + 1e-6
    bound = moldable_bound(instance, Shapes.of(instance))
    assert moldable.bound is not None and bound <= moldable.bound <= moldable.objective + 1e-6


def test_rigid_jobs_are_planned_as_before() -> None:
    """A rigid job beside an elastic one keeps its gang and duration.

    The elastic job waits for it and then takes the whole node (50 + 100 s), sooner than
    running beside it on the 4 GPUs left (178 s).
    """
    jobs = [elastic("e", 6400.0, LINEAR),
            {"id": "r", "gpus": 4, "demand": {"memory_gib": 40}, "duration_s": 50}]
    schedule = solved(cluster(jobs), "cp")
    rigid = [s for s in schedule.segments if s.job == "r"]
    assert len(rigid) == 1 and len(rigid[0].gpu_ids) == 4
    assert rigid[0].end_s - rigid[0].start_s == pytest.approx(50.0)
    assert schedule.objective == pytest.approx(150.0)
    assert counts(schedule) == {"e": 8, "r": 4}


def test_the_command_line_takes_moldable_false(tmp_path: Any) -> None:
    """``--moldable false`` plans at the counts asked for; another word is exit 2."""
    path = tmp_path / "elastic.json"
    path.write_text(
        '{"gpu_types": [{"id": "A100", "capacity": {"memory_gib": 80}}],'
        ' "nodes": [{"id": "n0", "gpus": {"A100": 8}}],'
        ' "jobs": [{"id": "t", "gpus": 2, "demand": {"memory_gib": 40}, "elastic":'
        ' {"gpus": [1, 2, 4], "work": 1000, "speed": {"A100": {"1": 1, "2": 2, "4": 4}}}}],'
        ' "objective": "makespan"}')
    out = tmp_path / "plan.json"
    done = run_cli("solve", str(path), "--method", "greedy", "--moldable", "false",
                   "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert counts(Schedule.from_json(out.read_text(), str(out))) == {"t": 2}
    bad = run_cli("solve", str(path), "--method", "greedy", "--moldable", "maybe")
    assert bad.returncode == 2 and "--moldable" in bad.stderr
