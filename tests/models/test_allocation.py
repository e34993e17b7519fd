"""The allocation programs' data: fair shares, residual states and grouped max-min LPs."""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import pytest
from methods.test_balance import contended

from gpuplan.backends import BACKENDS
from gpuplan.core.budget import Budget
from gpuplan.core.instance import Instance
from gpuplan.core.settings import Context
from gpuplan.models.allocation import (
    FairShare,
    Policy,
    ThroughputData,
    chain_windows,
    job_groups,
    max_min_fairness_program,
    price_pairs,
    rate_program,
    whole_job_rates,
    window_program,
    window_shares,
)
from gpuplan.parts.allocation import AllocationOptions, solve_policy
from gpuplan.readers.instance_file import build_instance, parse_document


def gavel_like(seed: int, n_jobs: int = 60) -> ThroughputData:
    """Jobs of 5 kinds (speed ratios over 3 types, gang, weight), each of its own length."""
    rng = np.random.default_rng(seed)
    speeds = rng.uniform(0.2, 1.0, size=(5, 3))
    speeds[0, 2] = 0.0
    gangs, weights = np.array([1, 1, 2, 4, 1]), np.array([1.0, 5.0, 1.0, 1.0, 1.0])
    kind = rng.integers(0, 5, size=n_jobs)
    steps = rng.uniform(1e3, 1e5, size=n_jobs)
    return ThroughputData(
        rate=speeds[kind] / steps[:, None], gang=gangs[kind], gpus=np.array([8.0, 8.0, 8.0]),
        weight=weights[kind], release=np.zeros(n_jobs), deadline=np.full(n_jobs, np.inf),
        price_per_hour=np.zeros(3))


def test_alike_jobs_share_columns() -> None:
    """Jobs of one kind are one group whatever their lengths: 5 groups, not 60 jobs."""
    data = gavel_like(0)
    built = max_min_fairness_program(data)
    assert built.group is not None and int(built.group.max()) + 1 <= 5
    assert built.program.n_cols <= 5 * 3 + 1


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("fair_share", ["gpus", "time"])
def test_grouped_max_min_equals_the_per_job_lp(seed: int, fair_share: str) -> None:
    """The grouped LP reaches the per-job LP's optimum, and its shares fit the fleet."""
    data = gavel_like(seed)
    grouped = solve_policy(data, AllocationOptions(fair_share=fair_share), Context(Budget()))
    # Distinct lengths in the last digits keep every job a group of its own.
    noise = 1 + 1e-6 * np.arange(data.n_jobs)[:, None]
    apart = solve_policy(dataclasses.replace(data, rate=data.rate * noise),
                         AllocationOptions(fair_share=fair_share), Context(Budget()))
    assert grouped.value is not None and apart.value is not None
    assert grouped.value == pytest.approx(apart.value, rel=1e-4)
    assert (data.gang @ grouped.share <= data.gpus + 1e-6).all()
    assert (grouped.share.sum(axis=1) <= 1 + 1e-6).all()


def test_groups_split_on_gang_and_zeros() -> None:
    """Equal rows with other gangs, or a type one of them cannot use, are other groups."""
    rows = np.array([[1.0, 2.0], [1.0, 2.0], [1.0, 2.0], [1.0, 0.0]])
    group, first, count = job_groups(rows, np.array([1, 1, 2, 1]))
    assert group[0] == group[1] and len(set(group.tolist())) == 3
    assert count.sum() == 4 and first.size == 3


def test_isolated_share_is_an_equal_share_of_gpus() -> None:
    """Gavel's isolated share: 4 GPUs over 2 jobs, a 4-GPU gang gets half the time of 1 GPU's."""
    data = ThroughputData(rate=np.ones((2, 1)), gang=np.array([1, 4]), gpus=np.array([4.0]),
                          weight=np.ones(2), release=np.zeros(2), deadline=np.full(2, np.inf),
                          price_per_hour=np.zeros(1))
    assert data.isolated_share()[:, 0] == pytest.approx([1.0, 0.5])
    assert data.fair_share_rate(FairShare.TIME) == pytest.approx([0.8, 0.8])


def fleet_instance() -> Instance:
    """Three jobs on 2 GPUs of A and 1 of B, released at 0, 50 and 100 s."""
    instance: Instance = build_instance(parse_document({
        "gpu_types": [{"id": "A", "capacity": {"compute": 1.0}},
                      {"id": "B", "capacity": {"compute": 1.0}}],
        "nodes": [{"id": "n", "gpus": {"A": 2, "B": 1}}],
        "jobs": [{"id": f"j{i}", "demand": {"compute": 1.0},
                  "duration_s": {"A": 10.0 * (i + 1), "B": 20.0 * (i + 1)},
                  "release_s": 50.0 * i, "weight": float(i + 1)} for i in range(3)],
        "objective": "makespan",
    }, "<test>"), "<test>")
    return instance


def test_for_jobs_builds_a_residual_state() -> None:
    """Some jobs' rows, their work left, and the seconds since each arrival at ``now``."""
    instance = fleet_instance()
    whole = ThroughputData.from_instance(instance)
    part = ThroughputData.for_jobs(instance, np.array([2, 0]),
                                   remaining=np.array([1.0, 0.25]), now=120.0)
    assert part.rate == pytest.approx(whole.rate[[2, 0]])
    assert part.weight.tolist() == [3.0, 1.0] and part.gpus.tolist() == [2.0, 1.0]
    assert part.waited().tolist() == [20.0, 120.0]
    assert part.work_left().tolist() == [1.0, 0.25]
    assert whole.remaining is None and whole.waited().tolist() == [0.0, 0.0, 0.0]


def test_makespan_ends_the_work_left() -> None:
    """Two 100-s jobs on 2 GPUs, one with a tenth of its work left: the other ends last, 100 s."""
    data = dataclasses.replace(ThroughputData(
        rate=np.full((2, 1), 0.01), gang=np.ones(2, dtype=np.int64), gpus=np.array([2.0]),
        weight=np.ones(2), release=np.zeros(2), deadline=np.full(2, np.inf),
        price_per_hour=np.zeros(1)), remaining=np.array([0.1, 1.0]))
    result = solve_policy(data, AllocationOptions(policy=Policy.MAKESPAN.value),
                          Context(Budget()))
    assert result.value == pytest.approx(100.0)


def test_max_min_rows_with_floors() -> None:
    """``x0 - z >= 0``, ``x1 - z >= 0.5`` on one GPU: ``z = 0.25``, shares 0.25 and 0.75.

    The finish-time fairness steps' rows: each job's floor is met, and ``z`` on top alike.
    """
    data = ThroughputData(rate=np.ones((2, 1)), gang=np.ones(2, dtype=np.int64),
                          gpus=np.array([1.0]), weight=np.ones(2), release=np.zeros(2),
                          deadline=np.full(2, np.inf), price_per_hour=np.zeros(1))
    built = rate_program(data, np.ones(2), floor=np.array([0.0, 0.5]))
    solution = BACKENDS["highs"]().solve_program(built.program, Context(Budget()).limits())
    assert solution.objective == pytest.approx(0.25)
    assert solution.values is not None
    assert built.shares(solution.values)[:, 0] == pytest.approx([0.25, 0.75])


def window_optimum(rates: ThroughputData) -> float:
    """The window program's makespan in seconds, solved on HiGHS."""
    built = window_program(rates)
    solution = BACKENDS["highs"]().solve_program(built.program, Context(Budget()).limits())
    assert solution.values is not None
    return window_shares(rates, built, solution.values)[1]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_window_program_without_windows_is_the_makespan_policy(seed: int) -> None:
    """With no heads or tails, the window program ends where the makespan policy does."""
    rates = gavel_like(seed, n_jobs=30)
    expected = solve_policy(rates, AllocationOptions(policy="makespan"), Context(Budget())).value
    windowed = dataclasses.replace(rates, head=np.zeros(30), tail=np.zeros(30))
    assert window_optimum(windowed) == pytest.approx(expected, rel=1e-6)


def chain_instance() -> Instance:
    """Three 100-s jobs in a chain and two 50-s ones, on four GPUs; one is released at 30 s."""
    jobs = [{"id": "a", "demand": {"compute": 1.0}, "duration_s": 100},
            {"id": "b", "demand": {"compute": 1.0}, "duration_s": 100, "depends_on": ["a"]},
            {"id": "c", "demand": {"compute": 1.0}, "duration_s": 100, "depends_on": ["b"]},
            {"id": "d", "demand": {"compute": 1.0}, "duration_s": 50},
            {"id": "e", "demand": {"compute": 1.0}, "duration_s": 50, "release_s": 30}]
    instance: Instance = build_instance(parse_document({
        "gpu_types": [{"id": "G", "capacity": {"compute": 1.0}}],
        "nodes": [{"id": "n", "gpus": {"G": 4}}], "jobs": jobs, "objective": "makespan",
    }, "<test>"), "<test>")
    return instance


def test_chain_windows_are_heads_and_tails() -> None:
    """Heads chain the predecessors and the release, tails the successors."""
    head, tail = chain_windows(chain_instance(), np.arange(5))
    assert head.tolist() == [0.0, 100.0, 200.0, 0.0, 30.0]
    assert tail.tolist() == [200.0, 100.0, 0.0, 0.0, 0.0]


def test_chain_windows_of_what_is_left() -> None:
    """Part way through, done jobs drop out and the work left shortens the chain."""
    head, tail = chain_windows(chain_instance(), np.array([1, 2, 4]),
                               remaining=np.array([0.5, 1.0, 1.0]), now=100.0)
    assert head.tolist() == [0.0, 50.0, 0.0]
    assert tail.tolist() == [100.0, 0.0, 0.0]


def test_window_program_covers_the_longest_chain() -> None:
    """The chain of 300 s bounds the makespan though four GPUs hold the work in 100 s."""
    instance = chain_instance()
    head, tail = chain_windows(instance, np.arange(5))
    rates = dataclasses.replace(ThroughputData.from_instance(instance), head=head, tail=tail)
    assert window_optimum(rates) == pytest.approx(300.0)
    assert makespan_optimum(ThroughputData.from_instance(instance)) == pytest.approx(100.0)


def makespan_optimum(rates: ThroughputData) -> float:
    """The makespan policy's value without windows."""
    value = solve_policy(rates, AllocationOptions(policy="makespan"), Context(Budget())).value
    assert value is not None
    return value


def test_whole_job_rates_drop_the_types_a_whole_job_outlasts() -> None:
    """A job in one piece loses a type it would outlast C on; a preemptible one keeps it."""
    rates = ThroughputData(
        rate=np.array([[0.1, 0.01], [0.1, 0.01]]), gang=np.array([1, 1]),
        gpus=np.array([1.0, 1.0]), weight=np.ones(2), release=np.zeros(2),
        deadline=np.full(2, np.inf), price_per_hour=np.zeros(2),
        whole=np.array([True, False]))
    kept = whole_job_rates(rates, 50.0)
    assert kept.rate.tolist() == [[0.1, 0.0], [0.1, 0.01]]


def test_pricing_stops_when_its_budget_is_spent() -> None:
    """Pricing with a budget already spent returns None, not a partial list."""
    document = contended(n_jobs=6, sharing=True)
    rates = ThroughputData.from_instance(document)
    scale = np.ones(rates.n_jobs)
    duals = np.full(2 * rates.n_jobs + 2, -1.0)
    assert price_pairs(rates, scale, duals) is not None
    spent = Budget(1.0, started=time.perf_counter() - 2.0)
    assert price_pairs(rates, scale, duals, budget=spent) is None
