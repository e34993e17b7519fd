"""Gavel's round-based policies on small hand-checked runs (rounds of 360 s, no overheads).

Every expected number follows from Gavel's mechanism as :mod:`gpuplan.simulate.gavel_rounds`
describes it: an allocation recomputed only when a job arrived or completed and 1,920 s
have passed since the last recompute (or none has happened after time 0 yet), a credit of
180 s of time received per job at each recompute, per-type queues sorted by
``X / (time received / time given)``, and a greedy pass over the types.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest
from conftest import instance_from

from gpuplan.core.errors import InputError
from gpuplan.core.instance import Instance
from gpuplan.core.schedule import Schedule, Segment
from gpuplan.simulate import Mode, RunSpec, SimulationConfig, simulate

#: Gavel's simulator: 360 s rounds, no restart or migration cost.
GAVEL = SimulationConfig(Mode.ROUND, 360.0, 0.0, 0.0)


def gavel_cluster(gpus: dict[str, int], jobs: list[dict[str, Any]]) -> Instance:
    """One node per GPU type with the given counts (Gavel's type names), and the jobs."""
    return instance_from({
        "name": "gavel-rounds",
        "gpu_types": [{"id": kind, "capacity": {"memory_gib": 16}} for kind in gpus],
        "nodes": [{"id": f"{kind}-node", "gpus": {kind: count}} for kind, count in gpus.items()],
        "jobs": jobs,
        "objective": "makespan",
    })


def job(name: str, duration: float | dict[str, float], release: float = 0.0,
        gpus: int = 1) -> dict[str, Any]:
    """A preemptible job of ``gpus`` GPUs."""
    return {"id": name, "duration_s": duration, "release_s": release, "gpus": gpus,
            "preemptible": True}


def run(instance: Instance, policy: str, seed: int = 0, **options: Any) -> Schedule:
    """Simulate under ``policy`` in Gavel's rounds; the verified run log."""
    schedule = simulate(instance, RunSpec(scheduler=policy, config=GAVEL, seed=seed,
                                          options=options))
    assert schedule.verification is not None and schedule.verification.ok
    return schedule


def segments(schedule: Schedule, name: str) -> list[Segment]:
    """The job's segments in start order."""
    return sorted((s for s in schedule.segments if s.job == name), key=lambda s: s.start_s)


def first_start(schedule: Schedule, name: str) -> float:
    """When the job first ran."""
    return segments(schedule, name)[0].start_s


def held_until(schedule: Schedule, name: str, until: float) -> float:
    """Seconds the job ran before ``until``."""
    return sum(min(s.end_s, until) - s.start_s for s in segments(schedule, name)
               if s.start_s < until)


def test_las_gives_each_job_its_gavel_share_of_rounds() -> None:
    """A 1-GPU and a 2-GPU job on 2 V100s: Gavel's max-min shares are 1 and 1/2.

    Owed an equal share of the GPUs, the 2-GPU job is owed half the time of the 1-GPU one:
    the LP's unique optimum is X = 1 and 1/2 (an equal share of time would give 2/3 each,
    and alternate the jobs). The two never fit together, so rounds go to the job of the
    higher ``X / (time received / time given)``: one, two, one, one, two, ... (priorities
    at 360 s: 1/(540/720) < 0.5/(180/720); at 720 s: 1/(540/1080) > 0.5/(540/1080)), so
    over 36 rounds the 1-GPU job runs 24 and the 2-GPU job 12, each X's share of 1.5.
    (The issue's 1-GPU + 4-GPU pair on 4 V100s is degenerate: X = 1 and any of [1/4, 3/4].)
    """
    instance = gavel_cluster({"v100": 2}, [job("one", 36000), job("two", 36000, gpus=2)])
    schedule = run(instance, "gavel-las")
    assert [(s.job, s.start_s) for s in schedule.segments if s.start_s < 1800] == [
        ("one", 0), ("two", 360), ("one", 720), ("two", 1440)]
    horizon = 36 * 360.0
    assert held_until(schedule, "one", horizon) == 24 * 360
    assert held_until(schedule, "two", horizon) == 12 * 360


def test_aware_policies_run_a_job_on_its_fastest_type_at_light_load() -> None:
    """Alone on one V100, P100 and K80, a job runs on the V100 throughout, under each aware policy.

    Aware policies visit the types fastest first and a lone job is taken on the first.
    """
    instance = gavel_cluster({"v100": 1, "p100": 1, "k80": 1},
                             [job("a", {"v100": 3600, "p100": 7200, "k80": 14400})])
    for policy in ("gavel-las", "gavel-ftf", "gavel-makespan", "gavel-fifo"):
        (only,) = segments(run(instance, policy), "a")
        assert (only.gpu_type, only.start_s, only.end_s) == ("v100", 0, 3600), policy


def test_agnostic_policies_run_a_job_on_the_first_of_shuffled_types() -> None:
    """Agnostic LAS runs a lone job each round on the first type of a fresh shuffle.

    The order is Gavel's ``random.Random(seed + 5)`` shuffling [v100, p100, k80] every
    round (seed 0: v100, v100, p100, k80, p100, p100, ...); the job (3600 s on V100,
    twice and four times that on P100 and K80) advances at that type's speed each round.
    """
    durations = {"v100": 3600.0, "p100": 7200.0, "k80": 14400.0}
    instance = gavel_cluster({"v100": 1, "p100": 1, "k80": 1}, [job("a", durations)])
    shuffler = random.Random(0 + 5)
    expected: list[tuple[str, float]] = []
    now, done = 0.0, 0.0
    while True:
        order = ["v100", "p100", "k80"]
        shuffler.shuffle(order)
        kind = order[0]
        if not expected or expected[-1][0] != kind:
            expected.append((kind, now))
        if done + 360.0 / durations[kind] >= 1.0 - 1e-12:
            end = now + (1.0 - done) * durations[kind]
            break
        done += 360.0 / durations[kind]
        now += 360.0
    got = segments(run(instance, "gavel-las-agnostic"), "a")
    assert [(s.gpu_type, s.start_s) for s in got] == expected
    assert got[-1].end_s == pytest.approx(end)
    assert len({s.gpu_type for s in got}) == 3


def test_a_new_job_waits_for_the_next_recompute() -> None:
    """Jobs not in the allocation never run, even beside a free GPU (3 V100s).

    ``a`` arrives at 0: the recompute at 0 leaves Gavel's last-reset time at 0, so ``b``
    (arriving at 400) is allocated at the next boundary, 720. ``c`` arrives at 800: the next
    recompute is due 1,920 s after 720, at the first boundary from 2,640 on, 2,880; until
    then the third V100 idles.
    """
    instance = gavel_cluster({"v100": 3}, [job("a", 36000), job("b", 36000, release=400),
                                           job("c", 36000, release=800)])
    schedule = run(instance, "gavel-las")
    assert first_start(schedule, "a") == 0
    assert first_start(schedule, "b") == 720
    assert first_start(schedule, "c") == 2880


def test_a_job_arriving_at_an_idle_cluster_waits_for_the_next_arrival() -> None:
    """Gavel's idle clock jump: a job arriving within 1,920 s of a recompute at an idle cluster.

    ``a`` (500 s) completes mid-round at 500, which ends the round; Gavel recomputes then
    (no job left; the last-reset time was still 0) and the clock jumps to ``b``'s arrival
    at 1,000, too soon after 500 to recompute: ``b`` is in no allocation, nothing runs,
    and the clock jumps to ``c``'s arrival at 5,000, where both start.
    """
    instance = gavel_cluster({"v100": 2}, [job("a", 500), job("b", 1000, release=1000),
                                           job("c", 1000, release=5000)])
    schedule = run(instance, "gavel-las")
    assert segments(schedule, "a")[-1].end_s == 500
    assert first_start(schedule, "b") == first_start(schedule, "c") == 5000


def test_gavel_fifo_is_strict_fifo() -> None:
    """Gavel-FIFO never lets a later job start before an earlier one that does not fit yet.

    Two V100s: ``a`` (1 GPU, 1,000 s) runs from 0; ``big`` (2 GPUs, 500 s) arrives at 10
    and ``small`` (1 GPU) at 20. At the recompute at 360, ``big`` fits no type and stops
    the pass: ``small`` is not allocated although a V100 is free. ``a`` completes at
    1,000; nothing is allocated to run and nothing will arrive, so the allocation is
    recomputed at once: ``big`` runs 1,000-1,500, then ``small``.
    """
    instance = gavel_cluster({"v100": 2}, [job("a", 1000), job("big", 500, release=10, gpus=2),
                                           job("small", 500, release=20)])
    schedule = run(instance, "gavel-fifo")
    assert first_start(schedule, "big") == 1000
    assert first_start(schedule, "small") == 1500
    assert schedule.objective == 2000


def test_two_jobs_sharing_one_gpu_alternate_round_by_round() -> None:
    """Two alike jobs on one V100 (X = 1/2 each) take turns, round by round.

    Priorities ``X / (time received / time given)``: equal at 0 (``a`` first, arrival
    order), then the job that just ran has received more and the other goes next. Each
    needs 10 rounds: ``a`` runs the even rounds and completes at 6,840; ``b`` the odd
    ones and, alone after 6,840, completes at 7,200.
    """
    instance = gavel_cluster({"v100": 1}, [job("a", 3600), job("b", 3600)])
    schedule = run(instance, "gavel-las")
    assert [s.start_s for s in segments(schedule, "a")] == [720.0 * k for k in range(10)]
    assert [s.start_s for s in segments(schedule, "b")] == [
        360.0 + 720.0 * k for k in range(9)] + [6840.0]
    assert segments(schedule, "a")[-1].end_s == 6840
    assert segments(schedule, "b")[-1].end_s == pytest.approx(7200)


def test_fifo_baseline_oversubscribes_the_v100s() -> None:
    """Gavel's FIFO baseline puts every job on the V100 (its quirk), leaving P100 and K80 idle.

    One GPU of each type, four 720 s jobs at 0. Seed 0: for ``a`` Gavel's
    ``random.Random(0).randrange(3)`` draws 1 (P100 among k80, p100, v100), but ``a`` gets
    the last free type by name, V100; its free count reaching 0 removes P100 from the list.
    ``b``, ``c`` and ``d`` fit only the K80 and are each given V100 again. So the four
    share one V100: 2,880 s of work end at 2,880 s. Gavel-FIFO runs three at once.
    """
    instance = gavel_cluster({"v100": 1, "p100": 1, "k80": 1},
                             [job(name, 720) for name in "abcd"])
    baseline = run(instance, "gavel-fifo-agnostic", seed=0)
    assert {s.gpu_type for s in baseline.segments} == {"v100"}
    assert baseline.objective == 2880
    aware = run(instance, "gavel-fifo", seed=0)
    assert {s.gpu_type for s in aware.segments} == {"v100", "p100", "k80"}
    assert max(s.end_s for s in aware.segments) < 2880


@pytest.mark.parametrize(("policy", "options", "flag"), [
    ("gavel-las", {"space_sharing": True}, "`space_sharing`"),
    ("gavel-fifo", {"partitions": 2}, "`partitions`"),
    ("gavel-ftf", {"partitions": 0}, "`partitions`"),
])
def test_an_option_the_policy_does_not_take_is_refused(policy: str, options: dict[str, Any],
                                                       flag: str) -> None:
    """Space sharing (no pairs on one GPU in the engine), FIFO partitions, or 0 parts: exit 2.

    The message names the flag, so a user knows what to drop.
    """
    instance = gavel_cluster({"v100": 1}, [job("a", 360)])
    with pytest.raises(InputError, match=flag):
        run(instance, policy, **options)


def test_partitions_solve_the_lp_in_parts() -> None:
    """POP in 2 parts still gives two alike jobs on two V100s a GPU each from the start."""
    instance = gavel_cluster({"v100": 2}, [job("a", 720), job("b", 720)])
    schedule = run(instance, "gavel-las", partitions=2)
    assert [first_start(schedule, name) for name in "ab"] == [0, 0]
    assert schedule.objective == 720


def test_agnostic_ftf_spreads_each_jobs_share_over_its_types_as_gavels_solver_does() -> None:
    """Broken, FTF-agnostic at 4.8 jobs/h is 19% off Gavel's (an LP vertex on one type).

    The agnostic program fixes only each job's total share: the share is spread over the
    job's types by their GPUs, every job's total kept, and an over-full spread is refused.
    """
    from gpuplan.models.allocation import ThroughputData
    from gpuplan.simulate.policies.gavel_ftf import spread_over_types

    data = ThroughputData(
        rate=np.array([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]]), gang=np.array([1, 2]),
        gpus=np.array([4.0, 4.0, 2.0]), weight=np.ones(2), release=np.zeros(2),
        deadline=np.full(2, np.inf), price_per_hour=np.ones(3))
    vertex = np.array([[0.0, 0.0, 0.5], [1.0, 0.0, 0.0]])
    spread = spread_over_types(vertex, data)
    np.testing.assert_allclose(spread.sum(axis=1), vertex.sum(axis=1))
    np.testing.assert_allclose(spread, [[0.2, 0.2, 0.1], [0.5, 0.5, 0.0]])
    crowded = np.array([[0.0, 0.0, 1.0], [2.0, 2.0, 0.0]])
    np.testing.assert_array_equal(spread_over_types(crowded, data), crowded)
