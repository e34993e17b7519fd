"""The elastic engine: progress is the integral of speed, counts and moves are carried out.

A scripted policy drives the engine so that every figure can be worked out by hand.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import pytest
from conftest import instance_from

from gpuplan.core.instance import Instance
from gpuplan.core.options import NoOptions
from gpuplan.core.result import EventKind
from gpuplan.core.schedule import ResultSchedule
from gpuplan.simulate.elastic import ElasticSpec, simulate_elastic
from gpuplan.simulate.elastic.engine import (
    ElasticDecision,
    ElasticEngine,
    ElasticSimulationError,
    ElasticView,
)
from gpuplan.simulate.elastic.policies import ELASTIC_POLICIES


def two_jobs(preemptible: bool = True) -> Instance:
    """Two elastic jobs on 2 nodes of 8 GPUs: 1000 iterations at 1/2/4/8/16 GPUs."""
    speeds = {"1": 1.0, "2": 1.8, "4": 3.0, "8": 4.0, "16": 5.0}
    return instance_from({
        "name": "two",
        "gpu_types": [{"id": "A100", "capacity": {"memory_gib": 80}}],
        "nodes": [{"id": "n0", "gpus": {"A100": 8}}, {"id": "n1", "gpus": {"A100": 8}}],
        "jobs": [{"id": name, "gpus": 2, "release_s": release, "due_s": 2000,
                  "preemptible": preemptible,
                  "elastic": {"gpus": [1, 2, 4, 8, 16], "work": 1000,
                              "speed": {"A100": speeds}, "rescale_s": 10}}
                 for name, release in (("a", 0), ("b", 100))],
        "objective": "deadlines-met",
    })


class Scripted:
    """A policy whose counts are a function of the decision's view."""

    name: ClassVar[str] = "scripted"
    description: ClassVar[str] = "counts from a test's function"
    options_type: ClassVar[type[Any]] = NoOptions
    calls_solver: ClassVar[bool] = False
    decision_gap_s: ClassVar[float] = 0.0

    def __init__(self, rule: Callable[[ElasticView], ElasticDecision]) -> None:
        self.rule = rule

    def decide(self, view: ElasticView) -> ElasticDecision:
        """What the rule says."""
        return self.rule(view)


def run(instance: Instance, rule: Callable[[ElasticView], ElasticDecision]) -> Any:
    """The engine's outcome under the scripted rule."""
    return ElasticEngine(instance, Scripted(rule)).run()


def test_a_job_alone_ends_after_its_overhead_and_its_work_at_its_speed() -> None:
    """On 4 GPUs (3 it/s) with 10 s overhead, 1000 iterations end at 10 + 1000/3 s."""
    instance = two_jobs()
    outcome = run(instance, lambda view: ElasticDecision(
        {j: 4 for j in [*view.active.tolist(), *view.arrived.tolist()]}))
    result = outcome.result
    ends = {instance.job_ids[j]: e for j, e in zip(result.job.tolist(), result.end.tolist(),
                                                    strict=True)}
    assert ends["a"] == pytest.approx(10 + 1000 / 3)
    assert ends["b"] == pytest.approx(100 + 10 + 1000 / 3)


def test_a_count_change_closes_a_piece_and_charges_the_overhead_again() -> None:
    """Job a runs on 2 GPUs, then at b's arrival (100 s) on 8: two pieces, a rescale event."""
    instance = two_jobs()

    def rule(view: ElasticView) -> ElasticDecision:
        counts = {0: 2 if view.now < 100 else 8, 1: 4}
        live = {*view.active.tolist(), *view.arrived.tolist()}
        return ElasticDecision({j: c for j, c in counts.items() if j in live})
    outcome = run(instance, rule)
    result = outcome.result
    pieces = [(s, e, g.size) for j, s, e, g in zip(result.job.tolist(), result.start.tolist(),
                                                  result.end.tolist(), result.gpus,
                                                  strict=True) if j == 0]
    done_first = 1.8 * (100 - 10)
    assert pieces[0] == (0.0, 100.0, 2)
    assert pieces[1][0] == 100.0 and pieces[1][2] == 8
    assert pieces[1][1] == pytest.approx(100 + 10 + (1000 - done_first) / 4.0)
    kinds = [e.kind for e in result.events if e.job == 0]
    assert kinds == [EventKind.START, EventKind.RESCALE, EventKind.COMPLETE]


def test_the_run_log_of_a_registered_policy_is_verified() -> None:
    """simulate_elastic returns only a log the verifier accepted, with its ratio."""
    log = simulate_elastic(two_jobs(), ElasticSpec(policy="elasticflow"))
    assert isinstance(log, ResultSchedule)
    assert log.verification is not None and log.verification.ok
    assert log.run is not None and log.run.metrics["deadline_ratio"] == 1.0


def test_a_count_the_job_cannot_run_on_is_a_bug_of_the_policy() -> None:
    """Three GPUs is no level of the job: the engine refuses, it never rounds."""
    with pytest.raises(ElasticSimulationError, match="3 GPUs"):
        run(two_jobs(), lambda view: ElasticDecision({0: 3}))


def test_more_gpus_than_the_cluster_holds_is_a_bug_of_the_policy() -> None:
    """16 + 16 GPUs on 16 is refused, naming what was given out."""
    def rule(view: ElasticView) -> ElasticDecision:
        return ElasticDecision(dict.fromkeys([*view.active.tolist(),
                                              *view.arrived.tolist()], 16))
    with pytest.raises(ElasticSimulationError, match="32 GPUs of 16"):
        run(two_jobs(), rule)


def test_a_job_that_may_not_be_preempted_keeps_its_count() -> None:
    """Changing a running non-preemptible job's count is refused."""
    def rule(view: ElasticView) -> ElasticDecision:
        return ElasticDecision({0: 2 if view.now < 100 else 4})
    with pytest.raises(ElasticSimulationError, match="may not be preempted"):
        run(two_jobs(preemptible=False), rule)


@pytest.mark.parametrize("name", list(ELASTIC_POLICIES))
def test_every_policy_runs_non_preemptible_jobs_whole(name: str) -> None:
    """Each registered policy keeps a non-preemptible job in one piece, verified."""
    log = simulate_elastic(two_jobs(preemptible=False), ElasticSpec(policy=name))
    assert log.verification is not None and log.verification.ok
    assert log.result.job.size == 2
