"""Gavel throughputs and traces become valid instances; both trace layouts are read."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ROOT, run_cli
from test_greedy import instance_from

from gpuplan import InputError, Status, plan, read_instance
from gpuplan.readers.gavel import (
    TraceJob,
    memory_estimate,
    read_throughputs,
    read_trace,
    synthetic_trace,
    trace_document,
)

GAVEL = ROOT.parent / "shared" / "benchmarks" / "gpu-traces" / "gavel"
TPUT = {
    "v100": {("LM (batch size 20)", 1): 2.0, ("LM (batch size 20)", 2): 3.5, ("A3C", 1): 1.0},
    "k80": {("LM (batch size 20)", 1): 0.5, ("LM (batch size 20)", 2): 0.0, ("A3C", 1): 0.25},
}


def test_both_trace_layouts(tmp_path: Path) -> None:
    """The 10-column and the older 7-column layouts give the same jobs."""
    new = "LM (batch size 20)\tpython x\tlm\t--steps\t1\t1000\t2\t3\t-1\t60\n"
    old = "LM (batch size 20)\tpython x\t--steps\t1\t1000\t60\t2\n"
    (tmp_path / "new.trace").write_text(new)
    (tmp_path / "old.trace").write_text(old)
    a, b = read_trace(tmp_path / "new.trace")[0], read_trace(tmp_path / "old.trace")[0]
    assert (a.job_type, a.total_steps, a.scale_factor, a.arrival_time) == (
        b.job_type, b.total_steps, b.scale_factor, b.arrival_time
    ) == ("LM (batch size 20)", 1000, 2, 60.0)
    assert a.priority_weight == 3.0


def test_bad_trace_line_is_named(tmp_path: Path) -> None:
    """A line with the wrong number of columns is reported by line number."""
    (tmp_path / "bad.trace").write_text("A3C\tonly\tthree\n")
    with pytest.raises(InputError, match=r"bad.trace: line 1: expected 10 or 7"):
        read_trace(tmp_path / "bad.trace")


def test_document_durations_and_fleet() -> None:
    """Duration is steps over throughput; zero throughput forbids the type; gangs fit nodes."""
    trace = read_trace_from([("LM (batch size 20)", 700, 2), ("A3C", 100, 1)])
    document = trace_document(trace, TPUT, {"v100": 6, "k80": 4}, 4, {"v100": 3.0, "k80": 1.0},
                              name="t")
    assert [n["gpus"] for n in document["nodes"]] == [{"v100": 4}, {"v100": 2}, {"k80": 4}]
    assert document["jobs"][0]["duration_s"] == {"v100": 200.0}
    assert document["jobs"][1]["duration_s"] == {"v100": 100.0, "k80": 400.0}
    assert document["jobs"][0]["demand"]["memory_gib"] == memory_estimate("LM (batch size 20)")
    assert plan(instance_from(document)).status.has_plan


def read_trace_from(rows: list[tuple[str, int, int]]) -> list[TraceJob]:
    """Trace jobs from (type, steps, scale) rows."""
    return [TraceJob(t, steps, scale, 1.0, 0.0) for t, steps, scale in rows]


def test_memory_estimates() -> None:
    """Memory grows with batch size within a family; unknown families are refused."""
    assert memory_estimate("ResNet-50 (batch size 128)") > memory_estimate(
        "ResNet-50 (batch size 32)"
    )
    assert memory_estimate("CycleGAN") == 6.0
    with pytest.raises(KeyError):
        memory_estimate("GPT-5 (batch size 1)")


@pytest.mark.skipif(not GAVEL.exists(), reason="../shared/benchmarks not present")
def test_real_gavel_data() -> None:
    """Gavel's own files: throughputs read, the synthetic trace is seeded and plannable."""
    throughputs = read_throughputs(GAVEL / "simulation_throughputs.json")
    assert throughputs["v100"][("ResNet-50 (batch size 64)", 1)] == pytest.approx(4.395, 1e-3)
    first = synthetic_trace(throughputs, 50, seed=1)
    assert first == synthetic_trace(throughputs, 50, seed=1)
    document = trace_document(first, throughputs, {"v100": 8, "k80": 8}, 8,
                              {"v100": 3.0, "k80": 1.0}, name="g")
    schedule = plan(instance_from(document))
    assert schedule.status is not Status.NO_SOLUTION


def test_committed_instances_match_the_script() -> None:
    """The shipped Gavel instances load and hold what their script says."""
    makespan = read_instance(ROOT / "instances" / "gavel_makespan.json")
    assert (makespan.n_jobs, makespan.n_gpus) == (100, 48)
    cluster = read_instance(ROOT / "instances" / "gavel_cluster_500.json")
    assert (cluster.n_jobs, cluster.n_gpus, cluster.n_nodes) == (500, 128, 16)
    assert set(cluster.gang.tolist()) == {1, 2, 4, 8}


@pytest.mark.skipif(not GAVEL.exists(), reason="../shared/benchmarks not present")
@pytest.mark.parametrize("trace", ["physical_cluster/minimize_makespan.trace",
                                   "msr/seed=0/0e4a51.trace"])
def test_convert_gavel_traces(trace: str, tmp_path: Path) -> None:
    """Both trace layouts convert from the CLI into instances that load, jobs preemptible."""
    result = run_cli("convert", "gavel", GAVEL / "traces" / trace, "--throughputs",
                     GAVEL / "simulation_throughputs.json", "--fleet", "v100=8,k80=8",
                     "--gpus-per-node", "8", "-o", tmp_path)
    assert result.returncode == 0, result.stderr
    (written,) = tmp_path.glob("*.json")
    instance = read_instance(written)
    assert instance.type_ids == ("v100", "k80") and instance.n_jobs > 0
    assert instance.preemptible.all()


def test_convert_gavel_needs_throughputs(tmp_path: Path) -> None:
    """Without --throughputs the error names the option, exit code 2."""
    result = run_cli("convert", "gavel", "some.trace", "-o", tmp_path)
    assert result.returncode == 2 and "--throughputs" in result.stderr


@pytest.mark.skipif(not GAVEL.exists(), reason="../shared/benchmarks not present")
def test_convert_gavel_with_space_sharing(tmp_path: Path) -> None:
    """--space-sharing gives every job a class and lists measured pairs with speeds in (0, 1]."""
    result = run_cli("convert", "gavel", GAVEL / "traces" / "physical_cluster" /
                     "minimize_makespan.trace", "--throughputs",
                     GAVEL / "simulation_throughputs.json", "--space-sharing", "-o", tmp_path)
    assert result.returncode == 0, result.stderr
    (written,) = tmp_path.glob("*.json")
    instance = read_instance(written)
    assert (instance.job_class >= 0).all() and instance.class_ids
    speed = instance.colocation_speed
    assert speed.max() <= 1.0 and (speed > 0).any()
