"""The operator batches of the instance library: seeded, valid, feasible."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from conftest import INSTANCES, instance_from

from gpuplan import RunSettings, plan, read_instance
from gpuplan.core.objectives import ObjectiveKind
from gpuplan.harness.library import VARIANTS, library_name, operator_document

LIBRARY = INSTANCES / "library"


def _longest_chain(document: dict[str, Any]) -> int:
    """Jobs on the longest dependency chain."""
    depth: dict[str, int] = {}
    for job in document["jobs"]:  # predecessors come first
        depth[job["id"]] = 1 + max((depth[p] for p in job.get("depends_on", [])), default=0)
    return max(depth.values())


def _gpus(document: dict[str, Any]) -> int:
    """GPUs of the fleet."""
    return sum(sum(node["gpus"].values()) for node in document["nodes"])


def test_same_seed_same_document() -> None:
    """A seed gives one batch, byte for byte; another seed gives another."""
    first = json.dumps(operator_document(40, 7, "tight"))
    assert first == json.dumps(operator_document(40, 7, "tight"))
    assert first != json.dumps(operator_document(40, 8, "tight"))


def test_base_batch_is_the_operators() -> None:
    """150 jobs on 4x8 A100, 2x8 H100, 6x4 L4; 35 depend on earlier jobs; the issue's mix."""
    document = operator_document(150, 1)
    fleet = {t: sum(n["gpus"].get(t, 0) for n in document["nodes"])
             for t in ("A100-80GB", "H100", "L4")}
    assert fleet == {"A100-80GB": 32, "H100": 16, "L4": 24} and len(document["nodes"]) == 12
    jobs = document["jobs"]
    index = {job["id"]: j for j, job in enumerate(jobs)}
    assert sum(bool(job.get("depends_on")) for job in jobs) == 35
    assert all(index[p] < j for j, job in enumerate(jobs) for p in job.get("depends_on", []))
    gangs = [job["gpus"] for job in jobs]
    assert set(gangs) == {1, 2, 4, 8} and gangs.count(1) > len(jobs) / 2
    memory = [job["demand"]["memory_gib"] for job in jobs]
    assert min(memory) >= 8 and max(memory) <= 75
    assert any(job["demand"]["compute"] < 1 for job in jobs)
    assert all(job["gpus"] <= 2 for job in jobs if job["demand"]["compute"] < 1)
    for job in jobs:
        time = job["duration_s"]
        assert 0.4 <= time["H100"] / time["A100-80GB"] <= 0.65
        if "L4" in time:
            assert job["gpus"] <= 2 and job["demand"]["memory_gib"] <= 24
            assert 2.4 <= time["L4"] / time["A100-80GB"] <= 4.1
    for key in ("deadline_s", "due_s", "release_s"):
        assert any(key in job for job in jobs)
    assert len({job["weight"] for job in jobs}) > 1


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_greedy_meets_every_deadline(variant: str) -> None:
    """Every variant validates and greedy's verified plan places all jobs by their deadlines."""
    document = operator_document(60, 3, variant)
    instance = instance_from(document)
    assert np.isfinite(instance.deadline).any()
    for kind in (ObjectiveKind.MAKESPAN, ObjectiveKind.WEIGHTED_COMPLETION):
        schedule = plan(instance.with_objective(kind), "greedy", {}, RunSettings())
        assert schedule.verification is not None and schedule.verification.ok
        assert not schedule.unplaced


def test_objectives_share_the_batch() -> None:
    """The weighted and max-weight files hold the same jobs and fleet as the makespan one."""
    base = operator_document(30, 2)
    for objective in ("weighted-completion", "max-weight"):
        other = operator_document(30, 2, objective=objective)
        assert other["objective"] == objective
        assert other["jobs"] == base["jobs"] and other["nodes"] == base["nodes"]
    assert library_name(150, 1, "base", "max-weight") == "operator-150-s1-maxweight"
    assert library_name(150, 2, "tight") == "operator-tight-150-s2"


def test_variants_differ_as_described() -> None:
    """tight: more and closer deadlines; chains: longer chains; sharing: more shared GPUs."""
    base, tight, chains, sharing = (operator_document(150, 1, v)
                                    for v in ("base", "tight", "chains", "sharing"))

    def share(document: dict[str, Any], test: Any) -> float:
        return float(np.mean([bool(test(job)) for job in document["jobs"]]))

    assert share(tight, lambda j: "deadline_s" in j) > 2 * share(base, lambda j: "deadline_s" in j)
    assert _longest_chain(chains) > 2 * _longest_chain(base)
    def partial(job: dict[str, Any]) -> bool:
        return bool(job["gpus"] == 1 and job["demand"]["compute"] <= 0.5)

    assert share(sharing, partial) > 2 * share(base, partial)
    assert _gpus(sharing) < _gpus(base)


def test_sizes_scale_the_fleet() -> None:
    """10 to 600 jobs: the fleet grows with the batch, at least one node per type."""
    small, large = operator_document(10, 1), operator_document(600, 1)
    assert len(small["jobs"]) == 10 and len(large["jobs"]) == 600
    assert {t for n in small["nodes"] for t in n["gpus"]} == {"A100-80GB", "H100", "L4"}
    assert len(large["nodes"]) == 4 * 12
    instance_from(small)


def test_unknown_variant_or_objective() -> None:
    """A variant or objective the generator has no data for is a ValueError naming it."""
    with pytest.raises(ValueError, match="'wide'"):
        operator_document(10, 1, "wide")
    with pytest.raises(ValueError, match="'assign-profit'"):
        operator_document(10, 1, objective="assign-profit")


def test_committed_files_are_valid_and_feasible() -> None:
    """Every library file reads, is listed in its README, and greedy meets its deadlines."""
    files = sorted(LIBRARY.glob("*.json"))
    readme = (LIBRARY / "README.md").read_text()
    assert len(files) >= 20
    for path in files:
        assert f"`{path.name}`" in readme
        instance = read_instance(path)
        schedule = plan(instance, "greedy", {}, RunSettings())
        assert schedule.verification is not None and schedule.verification.ok
        assert instance.objective.is_static or not schedule.unplaced, path.name
