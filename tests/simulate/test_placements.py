"""The best-fit and first-fit placements on small hand-checked traces.

Each trace is run through ``simulate`` (so the verifier checks the run log) with the
fifo or srtf scheduler.
"""

from __future__ import annotations

import pytest
from conftest import instance_from

from gpuplan.core.instance import Instance
from gpuplan.core.result import EventKind
from gpuplan.core.schedule import Schedule
from gpuplan.simulate import RunSpec, SimulationConfig, simulate


def cluster(nodes: dict[str, int], jobs: dict[str, tuple[int, float, float]]) -> Instance:
    """Nodes of GPUs of one type A; jobs by id as (GPUs, seconds on A, arrival s)."""
    return instance_from({
        "name": "placements",
        "gpu_types": [{"id": "A", "capacity": {"memory_gib": 16}}],
        "nodes": [{"id": node, "gpus": {"A": count}} for node, count in nodes.items()],
        "jobs": [{"id": job, "gpus": gang, "demand": {"memory_gib": 1},
                  "duration_s": {"A": seconds}, "release_s": arrival, "preemptible": True}
                 for job, (gang, seconds, arrival) in jobs.items()],
        "objective": "weighted-completion",
    })


def run(instance: Instance, scheduler: str, placement: str) -> Schedule:
    """The verified run log, with a 30 s restore and a 60 s migration overhead."""
    config = SimulationConfig(restart_overhead_s=30.0, migration_overhead_s=60.0)
    schedule = simulate(instance, RunSpec(scheduler=scheduler, placement=placement,
                                          config=config))
    assert schedule.verification is not None and schedule.verification.ok
    return schedule


def first_gpus(schedule: Schedule) -> dict[str, list[str]]:
    """The GPUs of each job's first segment."""
    first: dict[str, list[str]] = {}
    for segment in sorted(schedule.segments, key=lambda s: s.start_s):
        first.setdefault(segment.job, segment.gpu_ids)
    return first


#: Nodes of 4, 3 and 2 GPUs; a 2-GPU, a 1-GPU and a 3-GPU job arriving in turn, all long.
NODES = {"n1": 4, "n2": 3, "n3": 2}
JOBS = {"pair": (2, 1000.0, 0.0), "one": (1, 1000.0, 1.0), "trio": (3, 1000.0, 2.0)}


def test_best_fit_takes_the_tightest_node_that_holds_the_gang() -> None:
    """Best-fit takes the node with the fewest free GPUs that still holds the gang.

    It puts ``pair`` on n3 (2 free: a perfect fit), ``one`` on n2 (3 free, fewer
    than n1's 4) and ``trio`` on n1, the only node left with 3 free GPUs; each on the
    lowest-index free GPUs of its node.
    """
    schedule = run(cluster(NODES, JOBS), "fifo", "best-fit")
    assert first_gpus(schedule) == {"pair": ["n3/0", "n3/1"], "one": ["n2/0"],
                                    "trio": ["n1/0", "n1/1", "n1/2"]}


def test_first_fit_takes_the_first_node_that_holds_the_gang() -> None:
    """First-fit takes the lowest-index node that holds the gang.

    It puts ``pair`` and ``one`` on n1, and ``trio``, for which n1 has only one
    GPU left, on n2.
    """
    schedule = run(cluster(NODES, JOBS), "fifo", "first-fit")
    assert first_gpus(schedule) == {"pair": ["n1/0", "n1/1"], "one": ["n1/2"],
                                    "trio": ["n2/0", "n2/1", "n2/2"]}


@pytest.mark.parametrize("placement", ["best-fit", "first-fit"])
def test_a_preempted_job_resumes_on_its_previous_gpus_without_migrating(
        placement: str) -> None:
    """A resumed job gets its previous GPUs back when they are free: no migration.

    SRTF on n1 (2 GPUs) and n2 (1 GPU): ``long`` starts on n2 at 0 under best-fit (the
    tighter node) and on n1 under first-fit; ``b`` and ``c`` take the other GPUs; ``short``
    preempts ``long`` at 20. At 70 ``b`` and ``short`` end, so one GPU is free on each
    node: ``long`` resumes on its own GPU (under best-fit, n2/0, although the tightest-node
    rule alone would take n1, the lower index of two equally tight nodes), as a resume
    paying the 30 s restore and no migration, and ends at 70 + 30 + 1980 = 2080.
    """
    instance = cluster({"n1": 2, "n2": 1}, {
        "long": (1, 2000.0, 0.0), "b": (1, 60.0, 10.0), "c": (1, 1000.0, 15.0),
        "short": (1, 50.0, 20.0)})
    schedule = run(instance, "srtf", placement)
    runs = sorted((s for s in schedule.segments if s.job == "long"), key=lambda s: s.start_s)
    assert [(s.start_s, s.end_s) for s in runs] == [(0, 20), (70, pytest.approx(2080))]
    assert runs[1].gpu_ids == runs[0].gpu_ids
    assert (runs[1].restore_s, runs[1].migrate_s, runs[1].migrated_from) == (30, 0, None)
    kinds = [e.kind for e in schedule.events if e.job == "long"]
    assert kinds == [EventKind.START, EventKind.PREEMPT, EventKind.RESUME,
                     EventKind.COMPLETE]


def test_best_fit_moves_a_job_whose_gpus_are_taken_and_charges_the_migration() -> None:
    """A job whose GPUs are taken resumes elsewhere and pays the migration.

    SRTF on two 1-GPU nodes: ``long`` starts on n1, ``short`` preempts it at 10 and
    takes n1/0 (the lowest index of two equally tight nodes: ``other`` holds n2 from 5,
    ends at 15 before ``short``). ``long`` resumes at 15 on n2: a migration, paying 30 s
    restore and 60 s migration, with ``migrated_from`` its old GPU.
    """
    instance = cluster({"n1": 1, "n2": 1}, {
        "long": (1, 1000.0, 0.0), "other": (1, 10.0, 5.0), "short": (1, 100.0, 10.0)})
    schedule = run(instance, "srtf", "best-fit")
    runs = sorted((s for s in schedule.segments if s.job == "long"), key=lambda s: s.start_s)
    assert [s.gpu_ids for s in runs] == [["n1/0"], ["n2/0"]]
    assert (runs[1].start_s, runs[1].restore_s, runs[1].migrate_s) == (15, 30, 60)
    assert runs[1].migrated_from == ["n1/0"]
    assert [e.kind for e in schedule.events if e.job == "long"] == [
        EventKind.START, EventKind.PREEMPT, EventKind.MIGRATE, EventKind.COMPLETE]
