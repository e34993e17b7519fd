"""Every registered elastic policy on thirty real jobs of ElasticFlow's 128-GPU trace.

The contract of a policy: its run log verifies, the same run comes out twice, no policy
meets more deadlines than jobs could meet alone, and the policies keep their rules (EDF
at each job's widest count, Tiresias at the count asked for, ElasticFlow declining,
gpuplan's optimizer meeting at least what ElasticFlow meets).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
import pytest
from conftest import instance_from

from gpuplan.core.instance import Instance
from gpuplan.core.schedule import ResultSchedule
from gpuplan.readers.instance_file import instance_from_data
from gpuplan.readers.itp import itp_elastic_document
from gpuplan.simulate.elastic import ElasticSpec, simulate_elastic
from gpuplan.simulate.elastic.policies import ELASTIC_POLICIES
from gpuplan.simulate.elastic.run import alone_bound

TRACE = Path(__file__).parents[2] / "data" / "itp" / "elasticflow" / "195job.csv"


@cache
def excerpt() -> Instance:
    """The 30 jobs of the excerpt as ``convert itp --deadlines`` makes them (128 GPUs)."""
    return instance_from_data(itp_elastic_document(TRACE), str(TRACE))


@cache
def run(policy: str) -> ResultSchedule:
    """The verified run of one policy on the excerpt."""
    return simulate_elastic(excerpt(), ElasticSpec(policy=policy))


def ratio(policy: str) -> float:
    """The run's deadline satisfactory ratio."""
    log = run(policy)
    assert log.run is not None
    return log.run.metrics["deadline_ratio"]


@pytest.mark.parametrize("policy", list(ELASTIC_POLICIES))
def test_every_policy_gives_a_verified_log_within_the_bound(policy: str) -> None:
    """Verified, deterministic, and never above the jobs that could make it alone."""
    log = run(policy)
    assert log.verification is not None and log.verification.ok
    again = simulate_elastic(excerpt(), ElasticSpec(policy=policy))
    assert np.array_equal(again.result.end, log.result.end)
    assert 0 < ratio(policy) <= alone_bound(excerpt()) / excerpt().n_jobs


def test_edf_runs_each_job_at_its_widest_count() -> None:
    """ElasticFlow's EDF gives a job all it may use (64 GPUs here), however it scales."""
    log = run("edf")
    widest = {len(segment.gpu_ids) for segment in log.segments}
    assert 64 in widest


def test_tiresias_runs_each_job_at_the_count_it_asked_for() -> None:
    """Every piece of a Tiresias run holds its job's reference count."""
    log, instance = run("tiresias"), excerpt()
    for j, gpus in zip(log.result.job.tolist(), log.result.gpus, strict=True):
        assert gpus.size == instance.gang[j]


def test_elasticflow_declines_and_lists_the_declined_as_unplaced() -> None:
    """Declined jobs never run; each is listed with the reason and the instant."""
    log = run("elasticflow")
    assert log.run is not None
    declined = log.run.metrics["declined"]
    assert declined == len(log.unplaced) > 0
    assert all("declined by admission control" in u.reason for u in log.unplaced)


def test_the_optimizer_meets_at_least_what_elasticflow_meets() -> None:
    """The optimizer admits subsets of the arrivals: never fewer deadlines met here."""
    assert ratio("optimizer") >= ratio("elasticflow")
    assert ratio("elasticflow") > max(ratio("tiresias"), ratio("edf"))


def rivals() -> Instance:
    """Two jobs arriving together on 8 GPUs, each needing all 8 to meet its deadline."""
    return instance_from({
        "name": "rivals",
        "gpu_types": [{"id": "A100", "capacity": {"memory_gib": 80}}],
        "nodes": [{"id": "n0", "gpus": {"A100": 8}}],
        "jobs": [{"id": name, "gpus": 8, "release_s": 0, "due_s": 1200,
                  "preemptible": True,
                  "elastic": {"gpus": [1, 2, 4, 8], "work": 8000,
                              "speed": {"A100": {"1": 1, "2": 2, "4": 4, "8": 8}}}}
                 for name in ("a", "b")],
        "objective": "deadlines-met",
    })


def test_the_optimizer_admits_one_of_two_rivals_where_elasticflow_declines_both() -> None:
    """ElasticFlow declines both rivals; the optimizer's MILP admits one of them.

    ElasticFlow declines every arrival of a decision if one cannot be met; the record of
    the optimizer shows its one solve, within the time limit.
    """
    elasticflow = simulate_elastic(rivals(), ElasticSpec(policy="elasticflow"))
    optimizer = simulate_elastic(rivals(), ElasticSpec(policy="optimizer"))
    assert elasticflow.run is not None and optimizer.run is not None
    assert elasticflow.run.metrics["deadline_ratio"] == 0.0
    assert optimizer.run.metrics["deadline_ratio"] == 0.5
    assert optimizer.run.metrics["solves"] == 1
    assert optimizer.run.metrics["solve_max_s"] <= 1.0 + 0.5
