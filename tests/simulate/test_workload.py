"""Workloads for the simulator: Gavel's cluster strings, trace files and generated workloads."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import DATA, GAVEL, instance_from

from gpuplan.core.errors import InputError
from gpuplan.core.objectives import ObjectiveKind
from gpuplan.readers.gavel import read_throughputs
from gpuplan.readers.generate import Throughputs, gavel_document, gavel_jobs
from gpuplan.simulate import RunSpec, simulate
from gpuplan.simulate.workload import (
    gavel_trace_document,
    gavel_trace_instance,
    gavel_workload_instance,
    parse_cluster,
    run_document,
)

THROUGHPUTS = GAVEL / "simulation_throughputs.json"
TRACES = GAVEL / "traces"
BAD_TRACES = DATA / "bad_traces"
CLUSTER = {"v100": 36, "p100": 36, "k80": 36}


@pytest.fixture(scope="module")
def measured() -> Throughputs:
    """Gavel's measured throughputs, read once."""
    return read_throughputs(THROUGHPUTS)


def test_cluster_string_counts_and_nodes() -> None:
    """``v100:p100:k80`` counts give those GPUs per type, in servers of --gpus-per-node.

    8:0:10 with 4 GPUs per server: two V100 servers of 4, no P100, K80 servers of 4, 4, 2.
    """
    assert parse_cluster("36:36:36") == CLUSTER
    cluster = parse_cluster("8:0:10")
    assert cluster == {"v100": 8, "p100": 0, "k80": 10}
    trace = TRACES / "physical_cluster" / "small_test.trace"
    instance = gavel_trace_instance(trace, THROUGHPUTS, cluster, gpus_per_node=4)
    assert instance.type_ids == ("v100", "k80")
    assert instance.node_gpus.tolist() == [[4, 0], [4, 0], [0, 4], [0, 4], [0, 2]]


@pytest.mark.parametrize(("text", "problem"), [
    ("36:36", "2 count(s), not 3"),
    ("36:36:36:36", "4 count(s), not 3"),
    ("36:-1:36", "the p100 count '-1' is not a non-negative integer"),
    ("36:x:36", "the p100 count 'x' is not a non-negative integer"),
    ("36::36", "the p100 count '' is not a non-negative integer"),
    ("0:0:0", "at least one GPU"),
    ("99999:99999:99999", "gpuplan simulates at most"),
])
def test_bad_cluster_string(text: str, problem: str) -> None:
    """A cluster string that does not parse names --cluster, the string and what is wrong."""
    with pytest.raises(InputError, match="v100:p100:k80") as error:
        parse_cluster(text)
    assert error.value.source == "`cluster`" and problem in error.value.message
    assert repr(text) in error.value.message


def test_physical_cluster_trace_jobs() -> None:
    """A Gavel trace gives one job per row, timed by steps over throughput, released on arrival.

    small_test.trace's first row: Transformer at batch size 128, 346 steps on 2 GPUs,
    arriving at 0. Its duration on each type is 346 over the throughput the file lists for
    ``('Transformer (batch size 128)', 2)`` there.
    """
    trace = TRACES / "physical_cluster" / "small_test.trace"
    instance = gavel_trace_instance(trace, THROUGHPUTS, CLUSTER, gpus_per_node=4)
    raw = json.loads(THROUGHPUTS.read_text())
    key = "('Transformer (batch size 128)', 2)"
    assert instance.n_jobs == len(trace.read_text().splitlines()) == 20
    assert instance.gang[0] == 2 and instance.release[0] == 0 and instance.weight[0] == 1
    for t, gpu_type in enumerate(instance.type_ids):
        assert instance.duration[0, t] == pytest.approx(346 / raw[gpu_type][key]["null"],
                                                        abs=1e-3)
    assert instance.objective is ObjectiveKind.WEIGHTED_COMPLETION
    assert instance.eligible.all()


def test_seven_column_trace(tmp_path: Path) -> None:
    """The older 7-column layout (Gavel's msr traces) builds a workload too.

    Its line 42 asks for Recommendation on 4 GPUs, which Gavel never measured (its own
    simulator could not run it either): refused, not left out, naming the throughput file
    that lacks the entry and the trace line that needs it.
    """
    trace = TRACES / "msr" / "seed=0" / "0e4a51_first50.trace"
    with pytest.raises(InputError, match=r"Recommendation.*scale factor 4") as error:
        gavel_trace_instance(trace, THROUGHPUTS, CLUSTER)
    assert error.value.source == str(THROUGHPUTS)
    assert error.value.message.endswith(f"which {trace}: line 42 runs")
    head = tmp_path / "head.trace"
    head.write_text("".join(trace.read_text().splitlines(keepends=True)[:41]))
    instance = gavel_trace_instance(head, THROUGHPUTS, CLUSTER)
    assert instance.n_jobs == 41 and (np.diff(instance.release) >= 0).all()
    assert instance.name == "head"


@pytest.mark.parametrize(("name", "field"), [
    ("wrong_column_count", "expected 10 or 7 tab-separated columns, found 5"),
    ("non_numeric_steps", "total_steps (column 6): 'many' is not an integer"),
    ("unknown_job_type", "job_type: 'ResNet-99 (batch size 16)' is not a job type"),
    ("negative_arrival", "arrival_time: -60.0 is not"),
    ("non_finite_arrival", "arrival_time: nan is not"),
])
def test_bad_trace(name: str, field: str) -> None:
    """Each bad trace is refused naming the file, line 3 (the broken row) and the field."""
    path = BAD_TRACES / f"{name}.trace"
    with pytest.raises(InputError) as error:
        gavel_trace_instance(path, THROUGHPUTS, CLUSTER)
    assert (error.value.source, error.value.path) == (str(path), "line 3")
    assert field in error.value.message


def test_a_trace_line_without_a_throughput_blames_the_throughput_file() -> None:
    """A3C on 2 GPUs (line 3), which the file never measured: the file lacks the entry."""
    path = BAD_TRACES / "scale_factor_without_throughput.trace"
    with pytest.raises(InputError) as error:
        gavel_trace_instance(path, THROUGHPUTS, CLUSTER)
    assert (error.value.source, error.value.path) == (str(THROUGHPUTS), "")
    assert error.value.message == (
        "has no throughput of 'A3C' at scale factor 2 on any GPU type of the cluster "
        f"(v100, p100, k80), which {path}: line 3 runs")


def test_trace_gang_larger_than_servers() -> None:
    """A trace job wider than every server names its line, the field and --gpus-per-node."""
    trace = TRACES / "physical_cluster" / "small_test.trace"
    with pytest.raises(InputError, match="--gpus-per-node") as error:
        gavel_trace_instance(trace, THROUGHPUTS, CLUSTER, gpus_per_node=1)
    assert error.value.path == "line 1" and error.value.message.startswith("scale_factor")


def test_generated_arrivals_are_poisson_at_the_rate(measured: Throughputs) -> None:
    """At 2.8 jobs/h the gaps average 3600/2.8 s (within 5% over 7000 jobs), job 0 at 0.

    Exponential gaps: their standard deviation equals their mean.
    """
    jobs = gavel_jobs(measured, CLUSTER, 7000, 2.8, seed=0)
    arrival = np.array([job.arrival_time for job in jobs])
    gaps = np.diff(arrival)
    assert arrival[0] == 0 and (gaps >= 0).all()
    assert gaps.mean() == pytest.approx(3600 / 2.8, rel=0.05)
    assert gaps.std() == pytest.approx(gaps.mean(), rel=0.05)


def test_generated_jobs_follow_gavels_mix(measured: Throughputs) -> None:
    """Single-GPU jobs of all 26 types unless multi-GPU; then 1/2/4/8 at .7/.1/.15/.05.

    Run times on V100 lie in 60*10^[1.5, 4] s, one in five in the long mode above
    60*10^3 s; with priorities one job in five weighs 5.
    """
    single = gavel_jobs(measured, CLUSTER, 7000, 2.8, seed=0)
    assert {job.scale_factor for job in single} == {1}
    assert len({job.job_type for job in single}) == 26
    run_time = np.array([job.total_steps / measured["v100"][(job.job_type, 1)]
                         for job in single])
    assert ((run_time > 60 * 10**1.5 - 1) & (run_time < 60 * 10**4 + 1)).all()
    assert (run_time > 60 * 10**3).mean() == pytest.approx(0.2, abs=0.02)
    assert {job.priority_weight for job in single} == {1.0}
    multi = gavel_jobs(measured, CLUSTER, 7000, 2.8, seed=0, multi_gpu=True, priorities=True)
    scale = np.array([job.scale_factor for job in multi])
    assert [float((scale == s).mean()) for s in (1, 2, 4, 8)] == pytest.approx(
        [0.7, 0.1, 0.15, 0.05], abs=0.02)
    assert np.mean([job.priority_weight == 5.0 for job in multi]) == pytest.approx(0.2, abs=0.02)


def test_generated_workload_is_seeded(measured: Throughputs) -> None:
    """The same seed gives the same document, another seed another; the rate moves arrivals.

    Gavel draws arrivals apart from jobs, so job k is the same at every rate.
    """
    first = gavel_document(measured, CLUSTER, 200, 2.8, seed=1)
    assert first == gavel_document(measured, CLUSTER, 200, 2.8, seed=1)
    assert first["jobs"] != gavel_document(measured, CLUSTER, 200, 2.8, seed=2)["jobs"]
    slow = gavel_document(measured, CLUSTER, 200, 0.4, seed=1)
    strip = [{k: v for k, v in job.items() if k != "release_s"} for job in first["jobs"]]
    assert strip == [{k: v for k, v in job.items() if k != "release_s"}
                     for job in slow["jobs"]]
    assert slow["jobs"][-1]["release_s"] == pytest.approx(7 * first["jobs"][-1]["release_s"],
                                                          rel=1e-6)
    static = gavel_document(measured, CLUSTER, 200, 0.0, seed=1)
    assert {job["release_s"] for job in static["jobs"]} == {0.0}


def test_multi_gpu_needs_servers_for_its_gangs() -> None:
    """Gavel's 8-GPU jobs on 4-GPU servers are refused naming --gpus-per-node."""
    with pytest.raises(InputError, match="up to 8 GPUs on one node") as error:
        gavel_workload_instance(THROUGHPUTS, CLUSTER, 10, 1.0, gpus_per_node=4,
                                multi_gpu=True)
    assert error.value.source == "`gpus_per_node`"


def test_generated_workload_runs_in_the_simulator(tmp_path: Path) -> None:
    """A generated multi-GPU workload is an instance the simulator runs to a verified log."""
    instance = gavel_workload_instance(THROUGHPUTS, parse_cluster("4:4:8"), 30, 6.0, seed=3,
                                       multi_gpu=True, priorities=True)
    assert instance.objective is ObjectiveKind.WEIGHTED_COMPLETION
    schedule = simulate(instance, RunSpec())
    assert schedule.verification is not None and schedule.verification.ok
    assert schedule.run is not None and schedule.run.window == [0, 30]


def test_the_run_document_holds_what_the_run_simulates() -> None:
    """run_document writes Instance.online()'s changes back into the document it came from.

    Deadlines 150 (and 500 beside a due date of 400) become due dates 150 and 400, a job
    with only a due date keeps it, the static max-weight objective becomes weighted
    completion, every other field is kept, the name is filled in, and the given document
    is unchanged. Built again, it is the instance the run simulates.
    """
    document: dict[str, Any] = {
        "gpu_types": [{"id": "a", "capacity": {"memory_gib": 16}}],
        "nodes": [{"id": "n0", "gpus": {"a": 2}}],
        "jobs": [{"id": "j0", "duration_s": 100, "deadline_s": 150, "preemptible": True},
                 {"id": "j1", "duration_s": 200, "release_s": 10, "deadline_s": 500,
                  "due_s": 400},
                 {"id": "j2", "gpus": 2, "duration_s": 50, "due_s": 30}],
        "objective": {"kind": "max-weight"}}
    given = copy.deepcopy(document)
    run = instance_from(document).online()
    written = run_document(document, run)
    assert document == given
    assert [job.get("due_s") for job in written["jobs"]] == [150, 400, 30]
    assert not any("deadline_s" in job for job in written["jobs"])
    assert written["objective"] == "weighted-completion" and written["name"] == "instance"
    assert written["jobs"][0]["preemptible"] is True and written["jobs"][1]["release_s"] == 10
    again = instance_from(written)
    assert again.objective is run.objective is ObjectiveKind.WEIGHTED_COMPLETION
    assert again.due.tolist() == run.due.tolist()
    assert again.deadline.tolist() == run.deadline.tolist() == [math.inf] * 3


def test_the_trace_document_is_the_trace_instance() -> None:
    """gavel_trace_document is the document gavel_trace_instance builds, job for job."""
    trace = TRACES / "physical_cluster" / "small_test.trace"
    document = gavel_trace_document(trace, THROUGHPUTS, CLUSTER, gpus_per_node=4)
    built = instance_from(document)
    instance = gavel_trace_instance(trace, THROUGHPUTS, CLUSTER, gpus_per_node=4)
    assert built.job_ids == instance.job_ids and built.name == instance.name
    assert np.array_equal(built.duration, instance.duration, equal_nan=True)
    assert built.release.tolist() == instance.release.tolist()
