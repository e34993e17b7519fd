"""What a run measures (ratio, bound) and what the elastic simulator refuses."""

from __future__ import annotations

import pytest
from conftest import instance_from

from gpuplan.core.errors import InputError
from gpuplan.simulate.elastic import ElasticSpec, simulate_elastic
from gpuplan.simulate.elastic.run import alone_bound


def jobs(due: list[float], types: int = 1) -> dict[str, object]:
    """Elastic jobs of 1000 iterations at 1 it/s per GPU (1 to 8 GPUs) due as given."""
    names = ["A100", "H100"][:types]
    return {
        "name": "due",
        "gpu_types": [{"id": t, "capacity": {"memory_gib": 80}} for t in names],
        "nodes": [{"id": f"n-{t}", "gpus": {t: 8}} for t in names],
        "jobs": [{"id": f"j{k}", "gpus": 1, "release_s": 0, "due_s": d,
                  "preemptible": True,
                  "elastic": {"gpus": [1, 2, 4, 8], "work": 1000, "rescale_s": 5,
                              "speed": {t: {"1": 1, "2": 2, "4": 4, "8": 8}
                                        for t in names}}}
                 for k, d in enumerate(due)],
        "objective": "deadlines-met",
    }


def test_the_bound_counts_the_jobs_that_could_make_it_alone() -> None:
    """On 8 GPUs a job needs 5 + 125 s: due at 130 it could, at 129 it could not."""
    assert alone_bound(instance_from(jobs([130, 129, 1000]))) == 2


def test_the_ratio_counts_a_job_ending_on_its_deadline_as_met() -> None:
    """A job alone on the cluster ends at 130 s, its due date: met (ratio 1)."""
    log = simulate_elastic(instance_from(jobs([130])), ElasticSpec(policy="optimizer"))
    assert log.run is not None and log.run.metrics["deadline_ratio"] == 1.0


def test_a_job_that_cannot_make_it_is_declined_by_the_optimizer() -> None:
    """Due at 100 s, it never runs: listed as unplaced, ratio 0, nothing held."""
    log = simulate_elastic(instance_from(jobs([100])), ElasticSpec(policy="optimizer"))
    assert log.run is not None and log.run.metrics["declined"] == 1
    assert log.result.job.size == 0 and len(log.unplaced) == 1


def test_a_fleet_of_two_gpu_types_is_refused() -> None:
    """The elastic simulator runs one type, as ElasticFlow's clusters are: exit 2."""
    with pytest.raises(InputError, match="one GPU type"):
        simulate_elastic(instance_from(jobs([500], types=2)), ElasticSpec())


def test_an_unknown_policy_is_refused_with_the_choices() -> None:
    """A typo names the registered policies."""
    with pytest.raises(InputError, match="elasticflow"):
        simulate_elastic(instance_from(jobs([500])), ElasticSpec(policy="elastiflow"))
