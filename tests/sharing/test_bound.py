"""The allocation bound holds every placement and is exact where the optimum is known by hand."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from conftest import DATA

from gpuplan.backends.highs import HighsBackend
from gpuplan.core.budget import Budget, Limits
from gpuplan.core.instance import Instance, IntArray
from gpuplan.core.status import Status
from gpuplan.models.linear import RowBuilder
from gpuplan.readers.openb import read_openb
from gpuplan.sharing import bound as bound_module
from gpuplan.sharing.bound import (
    RELAXATIONS,
    BoundStatus,
    Relaxation,
    allocation_bound,
    arrived_ends,
    gpu_fills,
)
from gpuplan.sharing.cluster import GPU_MILLI
from gpuplan.sharing.replay import fgd_arrivals
from sharing import Node, Pod, openb_instance


def bounds(instance: Instance, jobs: list[int] | IntArray) -> dict[Relaxation, float]:
    """The bound of every relaxation, each checked to be solved."""
    found: dict[Relaxation, float] = {}
    for relaxation in RELAXATIONS:
        result = allocation_bound(instance, np.asarray(jobs), relaxation, Budget(30.0))
        assert result.status is BoundStatus.OPTIMAL
        found[relaxation] = result.bound_milli
    return found


def test_three_share_pods_of_600_on_one_gpu_allocate_600(tmp_path: Path) -> None:
    """Two 600-milli pods never share a GPU: the bound is 600, not 1000 or 1800."""
    instance = openb_instance(tmp_path, [("n", 8000, 32768, 1, "T4")],
                              [(f"p{i}", 1000, 1024, 1, 600, "") for i in range(3)])
    assert bounds(instance, [0, 1, 2]) == pytest.approx({"fill": 600, "configuration": 600})
    result = allocation_bound(instance, np.array([0, 1, 2]))
    assert result.percent == pytest.approx(60.0)
    assert (result.requested_milli, result.capacity_milli) == (1800, 1000)


def test_pods_that_all_fit_are_all_counted(tmp_path: Path) -> None:
    """With room for every pod the bound is the whole request, proven by both relaxations."""
    instance = openb_instance(tmp_path, [("n", 64000, 262144, 8, "T4")],
                              [("share", 1000, 1024, 1, 300, ""), ("two", 8000, 1024, 2, 1000, "")])
    assert bounds(instance, [0, 0, 1]) == pytest.approx({"fill": 2600, "configuration": 2600})


def test_cpu_limits_whole_gpu_pods(tmp_path: Path) -> None:
    """A node of 10 CPUs holds one 6-CPU pod, however many free GPUs it has."""
    instance = openb_instance(tmp_path, [("n", 10000, 65536, 2, "T4")],
                              [(f"p{i}", 6000, 1024, 1, 1000, "") for i in range(3)])
    assert bounds(instance, [0, 1, 2]) == pytest.approx({"fill": 1000, "configuration": 1000})


def test_gpu_spec_limits_pods_to_their_models(tmp_path: Path) -> None:
    """Pods that may only use model A get only A's GPU; allowed on both, they get both."""
    nodes: list[Node] = [("a", 8000, 32768, 1, "A"), ("b", 8000, 32768, 1, "B")]
    pods: list[Pod] = [("only-a-1", 1000, 1024, 1, 1000, "A"),
                       ("only-a-2", 1000, 1024, 1, 1000, "A"),
                       ("either-1", 1000, 1024, 1, 1000, "A|B"),
                       ("either-2", 1000, 1024, 1, 1000, "A|B")]
    instance = openb_instance(tmp_path, nodes, pods)
    assert bounds(instance, [0, 1]) == pytest.approx({"fill": 1000, "configuration": 1000})
    assert bounds(instance, [2, 3]) == pytest.approx({"fill": 2000, "configuration": 2000})


def test_repeated_pods_count_once_each(tmp_path: Path) -> None:
    """An inflated trace repeats job indices: three copies of a 500-milli pod fill one GPU."""
    instance = openb_instance(tmp_path, [("n", 8000, 32768, 1, "T4")],
                              [("half", 1000, 1024, 1, 500, "")])
    assert allocation_bound(instance, np.array([0])).bound_milli == pytest.approx(500)
    result = allocation_bound(instance, np.array([0, 0, 0]))
    assert result.bound_milli == pytest.approx(1000)
    assert result.requested_milli == 1500


def test_multi_gpu_pod_needs_whole_gpus_of_one_node(tmp_path: Path) -> None:
    """A 4-GPU pod takes a whole 4-GPU node; two 2-GPU nodes cannot hold it between them."""
    nodes: list[Node] = [("four", 64000, 262144, 4, "T4"), ("two-a", 64000, 262144, 2, "T4"),
                         ("two-b", 64000, 262144, 2, "T4")]
    pods: list[Pod] = [("big-1", 8000, 1024, 4, 1000, ""), ("big-2", 8000, 1024, 4, 1000, ""),
                       ("cpu-only", 8000, 1024, 0, 0, "")]
    instance = openb_instance(tmp_path, nodes, pods)
    assert bounds(instance, [0, 1, 2]) == pytest.approx({"fill": 4000, "configuration": 4000})


def test_configuration_sees_cpu_per_node_where_the_fill_lp_pools_it(tmp_path: Path) -> None:
    """Per node, a 6-CPU whole-GPU pod and a 5-CPU share pod never fit together in 10 CPUs.

    Each node holds 1000 milli at most (the whole pod, or two share pods), so 2000 on two
    nodes; the fill LP sums CPU over both nodes and finds room for 2800.
    """
    nodes: list[Node] = [("n1", 10000, 65536, 2, "T4"), ("n2", 10000, 65536, 2, "T4")]
    pods: list[Pod] = [("whole", 6000, 1024, 1, 1000, ""), ("share", 5000, 1024, 1, 500, "")]
    instance = openb_instance(tmp_path, nodes, pods)
    found = bounds(instance, [0, 0, 1, 1, 1, 1])
    assert found["fill"] == pytest.approx(2800)
    assert found["configuration"] == pytest.approx(2000, abs=0.5)


def first_fit(instance: Instance, jobs: IntArray) -> int:
    """GPU milli a first-fit placement of ``jobs`` allocates (a feasible placement)."""
    node_type = np.argmax(instance.node_gpus > 0, axis=1)
    cpu, mem = instance.node_capacity[:, 0].copy(), instance.node_capacity[:, 1].copy()
    free = np.where(np.arange(8)[None, :] < instance.node_gpus.sum(axis=1)[:, None],
                    GPU_MILLI, 0)
    allocated = 0
    for j in jobs:
        gang, milli = int(instance.gang[j]), int(instance.demand[j, :, 0].max())
        need_cpu, need_mem = instance.node_demand[j]
        for n in range(instance.n_nodes):
            if cpu[n] < need_cpu or mem[n] < need_mem or (
                    gang and not instance.eligible[j, node_type[n]]):
                continue
            room = np.flatnonzero(free[n] >= milli)[:gang] if gang else np.zeros(0, int)
            if len(room) < gang:
                continue
            cpu[n] -= need_cpu
            mem[n] -= need_mem
            free[n, room] -= milli
            allocated += gang * milli
            break
    return allocated


def exact_optimum(instance: Instance, jobs: IntArray) -> float:
    """The most GPU milli any placement of ``jobs`` allocates, by a MILP over every GPU.

    Columns: pod on node (binary), share pod on one GPU of its node, GPU kept whole for
    whole-GPU pods. Rows: each pod once; a share pod on one GPU of its node; its GPU's milli;
    whole-GPU pods within the node's kept GPUs; node CPU and memory.
    """
    node_type = np.argmax(instance.node_gpus > 0, axis=1)
    gpus = instance.node_gpus.sum(axis=1)
    gang, milli = instance.gang[jobs], instance.demand[jobs, :, 0].max(axis=1)
    share = (gang == 1) & (milli < GPU_MILLI)
    place = [(p, n) for p in range(len(jobs)) for n in range(instance.n_nodes)
             if gang[p] and instance.eligible[jobs[p], node_type[n]] and gang[p] <= gpus[n]]
    slots = [(k, g) for k, (p, n) in enumerate(place) if share[p] for g in range(gpus[n])]
    kept = [(n, g) for n in range(instance.n_nodes) for g in range(gpus[n])]
    n_cols = len(place) + len(slots) + len(kept)
    entries: list[tuple[int, int, float]] = []
    upper: list[float] = []

    def row(cells: list[tuple[int, float]], bound: float) -> None:
        entries.extend((len(upper), col, value) for col, value in cells)
        upper.append(bound)

    for p in range(len(jobs)):
        row([(k, 1.0) for k, (q, _) in enumerate(place) if q == p], 1.0)
    for k, (p, _) in enumerate(place):
        if share[p]:
            row([(k, 1.0)] + [(len(place) + i, -1.0) for i, (c, _) in enumerate(slots)
                              if c == k], 0.0)
    for i, (n, g) in enumerate(kept):
        row([(len(place) + s, float(milli[place[k][0]])) for s, (k, h) in enumerate(slots)
             if place[k][1] == n and h == g] + [(len(place) + len(slots) + i, 1000.0)], 1000.0)
    for n in range(instance.n_nodes):
        row([(k, float(gang[p])) for k, (p, m) in enumerate(place) if m == n and not share[p]]
            + [(len(place) + len(slots) + i, -1.0) for i, (m, _) in enumerate(kept) if m == n],
            0.0)
        for q in range(2):
            row([(k, float(instance.node_demand[jobs[p], q])) for k, (p, m) in enumerate(place)
                 if m == n], float(instance.node_capacity[n, q]))
    rows = RowBuilder()
    r, c, v = (np.array(x) for x in zip(*entries, strict=True))
    rows.add(r, c, v, np.full(len(upper), -np.inf), np.array(upper), [""] * len(upper))
    cost = np.concatenate(([float(gang[p] * milli[p]) for p, _ in place], np.zeros(
        len(slots) + len(kept))))
    program = rows.program("max", cost, np.zeros(n_cols), np.ones(n_cols),
                           np.ones(n_cols, dtype=bool), [""] * n_cols)
    solution = HighsBackend().solve_program(program, Limits(Budget(60.0)))
    assert solution.status is Status.OPTIMAL and solution.objective is not None
    return solution.objective


def random_trace(tmp_path: Path, seed: int, arrivals: int = 40) -> tuple[Instance, IntArray]:
    """Six nodes of three kinds and arrivals drawn with repetition from 12 varied pods."""
    rng = np.random.default_rng(seed)
    kinds = [(16000, 65536, 2, "P100"), (32000, 131072, 4, "T4"), (12000, 49152, 1, "T4")]
    nodes: list[Node] = [(f"n{i}", *kinds[i % 3]) for i in range(6)]
    pods: list[Pod] = []
    for i in range(12):
        gang = int(rng.choice([0, 1, 1, 1, 1, 2, 4]))
        milli = int(rng.choice([110, 230, 470, 650, 810, 1000])) if gang == 1 else (
            1000 if gang else 0)
        spec = str(rng.choice(["", "", "T4", "P100"])) if gang else ""
        pods.append((f"p{i:02d}", int(rng.integers(1, 9)) * 1000,
                     int(rng.integers(1, 17)) * 1024, gang, milli, spec))
    instance = openb_instance(tmp_path, nodes, pods)
    return instance, rng.integers(0, len(pods), size=arrivals)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_bound_holds_a_feasible_placement(tmp_path: Path, seed: int) -> None:
    """On random small traces no relaxation falls below what first fit actually allocates."""
    instance, jobs = random_trace(tmp_path, seed)
    placed = first_fit(instance, jobs)
    found = bounds(instance, jobs)
    requested = allocation_bound(instance, jobs).requested_milli
    assert placed <= found["configuration"] + 1e-6
    assert found["configuration"] <= found["fill"] + 1e-6
    assert found["fill"] <= min(requested, GPU_MILLI * instance.n_gpus) + 1e-6


def test_no_published_allocation_exceeds_the_bound_on_the_real_trace() -> None:
    """FGD's artifact: every policy's seed-42 allocation lies under the bound, 90..130% arrived.

    The default trace in FGD's arrival order; the fill LP's bound is 96.99% at 100% arrived
    and 99.88% at 130%, under the request (100.49% and 129.99%) and the capacity.
    """
    alibaba = DATA / "benchmarks" / "gpu-traces" / "alibaba-gpu-v2023"
    trace = read_openb(alibaba / "openb_node_list_gpu_node.csv",
                       alibaba / "openb_pod_list_default.csv")
    with (alibaba / "fgd_expected_allocation_default.csv").open() as f:
        published = [row for row in csv.DictReader(f) if row["seed"] == "42"]
    assert len(published) == 6
    jobs = fgd_arrivals(trace, 42).jobs
    ends = arrived_ends(trace, jobs)
    found = {}
    for a in (90, 100, 110, 120, 130):
        result = allocation_bound(trace, jobs[:ends[a]])
        assert max(float(row[str(a)]) for row in published) <= result.percent
        found[a] = result.percent
    assert (found[100], found[130]) == pytest.approx((96.994, 99.883), abs=0.001)


def test_a_spent_budget_still_gives_a_valid_bound(tmp_path: Path) -> None:
    """With no time left the bound is the request capped at capacity, and says it stopped."""
    instance = openb_instance(tmp_path, [("n", 8000, 32768, 1, "T4")],
                              [(f"p{i}", 1000, 1024, 1, 600, "") for i in range(3)])
    for relaxation in RELAXATIONS:
        result = allocation_bound(instance, np.array([0, 1, 2]), relaxation,
                                  Budget(stop=lambda: True))
        assert result.status is BoundStatus.TIME_LIMIT
        assert result.bound_milli == 1000


def test_gpu_fills_are_the_maximal_ones() -> None:
    """Sizes 300, 400 and 600 fill a GPU in exactly five maximal ways."""
    fills = gpu_fills(np.array([600, 300, 400, 300]))
    assert fills.sizes.tolist() == [300, 400, 600]
    found = sorted(map(tuple, fills.maximal(np.arange(3)).tolist()))
    assert found == sorted([(1, 0, 1), (0, 1, 1), (0, 2, 0), (2, 1, 0), (3, 0, 0)])


def test_too_many_fills_merge_sizes_downwards(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the fill limit sizes are merged into smaller ones, and the bound still holds."""
    monkeypatch.setattr(bound_module, "MAX_FILLS", 4)
    merged = gpu_fills(np.array([110, 230, 240, 470, 480, 650]))
    assert len(merged.sizes) < 6 and set(merged.sizes.tolist()) <= {110, 230, 240, 470, 480,
                                                                   650}
    assert (merged.sizes[merged.level(np.array([110, 230, 240, 470, 480, 650]))]
            <= [110, 230, 240, 470, 480, 650]).all()
    instance, jobs = random_trace(tmp_path, 5)
    assert first_fit(instance, jobs) <= min(bounds(instance, jobs).values()) + 1e-6


@pytest.mark.parametrize("seed", [2, 4, 5, 8])
def test_bound_holds_the_exact_optimum(tmp_path: Path, seed: int) -> None:
    """Where an exact MILP over every GPU finds the optimum, both bounds lie at or above it.

    Seeds where the bounds differ: above the optimum (2), the configuration bound below the
    fill LP's and at the optimum (4, 8), or between them (5).
    """
    instance, jobs = random_trace(tmp_path, seed, arrivals=16)
    found = bounds(instance, jobs)
    assert first_fit(instance, jobs) <= exact_optimum(instance, jobs) <= (
        found["configuration"] + 1e-6)


def test_bad_requests_are_refused(tmp_path: Path) -> None:
    """An unknown relaxation or a job index out of range is an error, not a wrong bound."""
    instance = openb_instance(tmp_path, [("n", 8000, 32768, 1, "T4")],
                              [("p", 1000, 1024, 1, 600, "")])
    with pytest.raises(ValueError, match="relaxation"):
        allocation_bound(instance, np.array([0]), "lagrange")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="job indices"):
        allocation_bound(instance, np.array([1]))
