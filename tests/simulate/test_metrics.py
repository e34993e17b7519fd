"""Run metrics on a hand-built run log whose every number is worked out by hand.

The run: two GPUs of type A on node n1 (GPUs 0, 1), two of type B on node n2 (GPUs 2, 3).

- ``wide`` (2 GPUs, A only, 1 h) arrives at 0 and runs on A 0-3600.
- ``mover`` (1 GPU, 1 h on A, 2 h on B) arrives at 0, runs on B 0-1800 (a quarter of its
  work), is preempted, and resumes at 3600 on A after 30 s restore and 60 s migration,
  doing the other 2700 s of work: it ends at 6390.
- ``late`` (1 GPU, 0.5 h on A, 1 h on B) arrives at 1200 and runs on B 1800-5400.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import numpy as np
import pytest
from conftest import instance_from

from gpuplan.core.instance import Instance, IntArray
from gpuplan.core.options import NoOptions
from gpuplan.core.result import Event, EventKind, Result
from gpuplan.core.status import Status
from gpuplan.simulate.engine import Engine, SimulationConfig
from gpuplan.simulate.metrics import (
    job_stats,
    queue_series,
    run_metrics,
    utilisation_by_type,
    utilisation_series,
    window_jobs,
)
from gpuplan.simulate.policies.admit_all import AdmitAll
from gpuplan.simulate.policy import ClusterView, Decision, Mode, PolicyContext, View

_DEMAND = {"memory_gib": 1}


def hand_instance() -> Instance:
    """The two-type cluster and its three jobs."""
    return instance_from({
        "name": "metrics",
        "gpu_types": [{"id": "A", "capacity": {"memory_gib": 16}},
                      {"id": "B", "capacity": {"memory_gib": 16}}],
        "nodes": [{"id": "n1", "gpus": {"A": 2}}, {"id": "n2", "gpus": {"B": 2}}],
        "jobs": [
            {"id": "mover", "demand": _DEMAND, "duration_s": {"A": 3600, "B": 7200}},
            {"id": "wide", "gpus": 2, "demand": _DEMAND, "duration_s": {"A": 3600}},
            {"id": "late", "demand": _DEMAND, "duration_s": {"A": 1800, "B": 3600},
             "release_s": 1200},
        ],
        "objective": "weighted-completion",
    })


def _gpus(*ids: int) -> np.ndarray:
    return np.array(ids, dtype=np.int64)


def hand_result() -> Result:
    """The run log described in the module docstring."""
    return Result(
        status=Status.FEASIBLE, objective=None, bound=None, solver="hand",
        job=np.array([1, 0, 2, 0]), gpu_type=np.array([0, 1, 1, 0]),
        start=np.array([0.0, 0.0, 1800.0, 3600.0]),
        end=np.array([3600.0, 1800.0, 5400.0, 6390.0]),
        gpus=(_gpus(0, 1), _gpus(2), _gpus(2), _gpus(0)),
        work=np.array([1.0, 0.25, 1.0, 0.75]),
        restore_s=np.array([0.0, 0.0, 0.0, 30.0]),
        migrate_s=np.array([0.0, 0.0, 0.0, 60.0]),
        events=(Event(0.0, EventKind.START, 1, _gpus(0, 1)),
                Event(0.0, EventKind.START, 0, _gpus(2)),
                Event(1800.0, EventKind.PREEMPT, 0, _gpus(2)),
                Event(1800.0, EventKind.START, 2, _gpus(2)),
                Event(3600.0, EventKind.COMPLETE, 1, _gpus(0, 1)),
                Event(3600.0, EventKind.MIGRATE, 0, _gpus(0)),
                Event(5400.0, EventKind.COMPLETE, 2, _gpus(2)),
                Event(6390.0, EventKind.COMPLETE, 0, _gpus(0))))


@pytest.fixture(scope="module")
def instance() -> Instance:
    """The two-type cluster and its three jobs."""
    return hand_instance()


@pytest.fixture(scope="module")
def result() -> Result:
    """The hand-built run log."""
    return hand_result()


def test_jct_queueing_and_makespan_are_the_hand_computed_hours(
        instance: Instance, result: Result) -> None:
    """JCT counts from arrival, queueing until the first start, makespan over the run.

    JCTs are 1.775 h, 1 h and 7/6 h; only ``late`` waits (600 s); the run spans 0-6390 s.

    A user would notice JCTs counted from time 0, or a queueing delay that ignores arrival.
    """
    m = run_metrics(instance, result, (0, 3))
    assert m["jobs"] == 3
    assert m["mean_jct_h"] == pytest.approx((1.775 + 1 + 7 / 6) / 3)
    assert m["median_jct_h"] == pytest.approx(7 / 6)
    assert m["p99_jct_h"] == pytest.approx(7 / 6 + 0.98 * (1.775 - 7 / 6))
    assert m["mean_queueing_h"] == pytest.approx(600 / 3600 / 3)
    assert m["makespan_h"] == pytest.approx(1.775)


def test_preemptions_migrations_and_gpu_hours(instance: Instance, result: Result) -> None:
    """Preemptions and migrations per job, GPU-hours held and of those the overheads.

    One preemption and one migration among three jobs; 15390 GPU-seconds held, of which
    the 90 s of restore and migration on one GPU are overhead.

    A user comparing overhead settings would notice overheads missing from the GPU-hours.
    """
    m = run_metrics(instance, result, (0, 3))
    assert m["preemptions_per_job"] == pytest.approx(1 / 3)
    assert m["migrations_per_job"] == pytest.approx(1 / 3)
    assert m["held_gpu_h"] == pytest.approx(15390 / 3600)
    assert m["overhead_gpu_h"] == pytest.approx(90 / 3600)


def test_utilisation_overall_and_per_type(instance: Instance, result: Result) -> None:
    """Over 0-6390 s, A's two GPUs are held 9990 GPU-s and B's 5400 GPU-s (GPU 3 idles).

    A user would notice a type's idle GPUs left out of its share.
    """
    span = 2 * 6390
    assert utilisation_by_type(instance, result) == pytest.approx(
        {"A": 9990 / span, "B": 5400 / span})
    assert run_metrics(instance, result, (0, 3))["utilisation_share"] == pytest.approx(
        15390 / (2 * span))


def test_rho_uses_gavels_isolated_share(instance: Instance, result: Result) -> None:
    """Rho = JCT / isolated time, the isolated time on Gavel's equal share of the cluster.

    ``wide`` runs 0-3600 with 2 then 3 jobs active (mean 8/3): each type gives it
    (2 / (8/3)) / 2 = 0.375 of the time, B at no speed, so alone it takes 9600 s:
    rho 0.375. ``mover`` and ``late`` always get half of each type (their shares are capped
    at all the time): 4800 s and 2400 s alone, rho 6390/4800 and 4200/2400.
    A user would notice a rho that counts from time 0 or ignores the job's gang.
    """
    stats = job_stats(instance, result)
    assert stats.isolated_h * 3600 == pytest.approx([4800, 9600, 2400])
    assert stats.rho == pytest.approx([6390 / 4800, 0.375, 1.75])
    m = run_metrics(instance, result, (0, 3))
    assert m["mean_rho"] == pytest.approx((6390 / 4800 + 0.375 + 1.75) / 3)
    assert m["max_rho"] == pytest.approx(1.75)
    assert m["rho_over_1_share"] == pytest.approx(2 / 3)


def test_the_window_measures_only_its_jobs_in_arrival_order(
        instance: Instance, result: Result) -> None:
    """The window selects jobs by arrival position and measures only them.

    Window 1:3 is ``wide`` and ``late`` (ties in arrival broken by index): mean JCT
    13/12 h, makespan from 0 to ``late``'s end at 5400 s. Utilisation is the cluster's
    over that interval, so ``mover``'s 1800 GPU-s on A from 3600 s count.

    A user measuring steady state (``--window``) would notice other jobs counted.
    """
    assert list(window_jobs(instance, (1, 3))) == [1, 2]
    m = run_metrics(instance, result, (1, 3))
    assert m["jobs"] == 2
    assert m["mean_jct_h"] == pytest.approx(13 / 12)
    assert m["makespan_h"] == pytest.approx(1.5)
    assert m["preemptions_per_job"] == 0
    assert utilisation_by_type(instance, result, (1, 3)) == pytest.approx(
        {"A": 9000 / 10800, "B": 5400 / 10800})


def test_queue_length_steps(instance: Instance, result: Result) -> None:
    """Queue length counts arrived, unfinished jobs that do not run.

    The queue holds ``late`` from its arrival at 1200 s, then the preempted ``mover``
    from 1800 s until it resumes at 3600 s; a job that starts as it arrives never counts.
    """
    times, values = queue_series(instance, result)
    assert list(times) == [0, 1200, 1800, 3600, 5400, 6390]
    assert list(values) == [0, 1, 1, 0, 0, 0]


def test_utilisation_steps_per_type(instance: Instance, result: Result) -> None:
    """Utilisation over time steps per type at the segments' starts and ends.

    A is full until 3600 s, then half held by ``mover``; B is half held until 5400 s:
    the hand-over of GPU 2 at 1800 s draws no dip.
    """
    times, values = utilisation_series(instance, result)
    assert list(times) == [0, 1800, 3600, 5400, 6390]
    assert values[:, 0] == pytest.approx([1, 1, 0.5, 0.5, 0])
    assert values[:, 1] == pytest.approx([0.5, 0.5, 0.5, 0, 0])


def test_a_space_shared_pair_holds_its_gpus_once(instance: Instance, result: Result) -> None:
    """A space-shared pair holds its GPUs once; each job is charged half the GPU-hours.

    A user would notice a utilisation above 100% under space sharing.
    """
    shared = dataclasses.replace(result, partner=np.array([-1, -1, 3, 2]),
                                 start=np.array([0.0, 0.0, 3600.0, 3600.0]),
                                 end=np.array([3600.0, 1800.0, 5400.0, 5400.0]),
                                 gpu_type=np.array([0, 1, 0, 0]),
                                 gpus=(_gpus(0, 1), _gpus(2), _gpus(0), _gpus(0)))
    _, values = utilisation_series(instance, shared)
    assert values[:, 0].max() == pytest.approx(1.0)
    stats = job_stats(instance, shared)
    assert stats.held_gpu_h[2] * 3600 == pytest.approx(900)


class _InArrivalOrder:
    """Runs every active job it can, in arrival order, never stopping one."""

    name: ClassVar[str] = "in-arrival-order"
    description: ClassVar[str] = "test scheduler"
    options_type: ClassVar[type[Any]] = NoOptions
    modes: ClassVar[frozenset[Mode]] = frozenset({Mode.EVENT})
    preemptive: ClassVar[bool] = False
    calls_solver: ClassVar[bool] = False
    preempts_to_start: ClassVar[bool] = False

    @classmethod
    def fixed_order(cls, instance: Instance) -> IntArray | None:
        del instance
        return None

    def decide(self, view: View) -> Decision:
        return Decision(view.jobs)

    def wakeup(self, view: View) -> float | None:
        return None


class _FirstFit:
    """The lowest free GPUs of the type on the first node that has enough."""

    name: ClassVar[str] = "first-fit"
    description: ClassVar[str] = "test placement"
    options_type: ClassVar[type[Any]] = NoOptions

    def place(self, cluster: ClusterView, job: int, gpu_type: int) -> IntArray | None:
        gang = int(cluster.instance.gang[job])
        for node in range(cluster.instance.node_gpus.shape[0]):
            free = cluster.free_gpus(node, gpu_type)
            if free.size >= gang:
                return free[:gang]
        return None


def test_an_engine_run_measures_as_worked_out(instance: Instance) -> None:
    """The engine's own run log (its work shares and events) gives the expected metrics.

    ``mover`` takes an A GPU at 0 (1 h), ``wide`` waits for both A GPUs until 3600 s
    (2 h JCT, 1 h queueing), ``late`` runs on the other A GPU 1200-3000 s (0.5 h).
    """
    run = instance.online()
    context = PolicyContext(run, Mode.EVENT, 360.0, 0)
    result = Engine(run, SimulationConfig(), _InArrivalOrder(), _FirstFit(),
                    AdmitAll(context)).run()
    m = run_metrics(run, result, (0, 3))
    assert m["mean_jct_h"] == pytest.approx(3.5 / 3)
    assert m["mean_queueing_h"] == pytest.approx(1 / 3)
    assert m["held_gpu_h"] == pytest.approx(3.5)
    assert m["preemptions_per_job"] == m["overhead_gpu_h"] == 0
    assert m["makespan_h"] == pytest.approx(2)
