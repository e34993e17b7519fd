"""Gavel throughputs and traces become valid instances; both trace layouts are read."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import GAVEL, ROOT, instance_from, run_cli

from gpuplan import InputError, Status, plan, read_instance
from gpuplan.readers.gavel import (
    GPU_MEMORY_GIB,
    PHYSICAL_CLUSTER,
    SCALE_FACTORS,
    SCALE_PROBABILITIES,
    TraceJob,
    gavel_documents,
    memory_estimate,
    read_throughputs,
    read_trace,
    run_times_s,
    scale_factors,
    synthetic_trace,
    trace_document,
)

MAKESPAN_TRACE = GAVEL / "traces" / "physical_cluster" / "minimize_makespan.trace"
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


def test_every_measured_pair_is_allowed() -> None:
    """Each (job type, scale factor) Gavel measured runs on every type it was measured on.

    Over the whole throughput file: a memory estimate above a K80's 12 GiB (ResNet-50 at
    batch 128, the Transformer at batch 256) must not forbid a pair with a throughput.
    """
    throughputs = read_throughputs(GAVEL / "simulation_throughputs.json")
    types = sorted(GPU_MEMORY_GIB)
    keys = sorted({key for table in throughputs.values() for key in table
                   if any(throughputs[t].get(key, 0.0) > 0 for t in types)})
    trace = [TraceJob(job_type, 1000, scale, 1.0, 0.0) for job_type, scale in keys]
    fleet = dict.fromkeys(types, 8)
    instance = instance_from(trace_document(trace, throughputs, fleet, 8,
                                            dict.fromkeys(fleet, 1.0), name="all"))
    assert list(instance.type_ids) == types
    measured = np.array([[throughputs[t].get(key, 0.0) > 0 for t in types] for key in keys])
    assert measured.shape == instance.eligible.shape
    assert (instance.eligible == measured).all()
    resnet = keys.index(("ResNet-50 (batch size 128)", 1))
    assert instance.eligible[resnet, types.index("k80")]


def test_committed_instances_match_the_script() -> None:
    """The shipped Gavel instances load and hold what their script says."""
    makespan = read_instance(ROOT / "instances" / "gavel_makespan.json")
    assert (makespan.n_jobs, makespan.n_gpus) == (100, 48)
    cluster = read_instance(ROOT / "instances" / "gavel_cluster_500.json")
    assert (cluster.n_jobs, cluster.n_gpus, cluster.n_nodes) == (500, 128, 16)
    assert set(cluster.gang.tolist()) == {1, 2, 4, 8}


def test_the_script_reproduces_the_committed_instances(monkeypatch: pytest.MonkeyPatch) -> None:
    """scripts/make_gavel_instances.py gives the committed files byte for byte.

    The sampled clusters depend on every draw of Gavel's job mix in order: a change to
    the sampler that moves one draw changes them, and the published results with them.
    """
    spec = importlib.util.spec_from_file_location(
        "make_gavel_instances", ROOT / "scripts" / "make_gavel_instances.py")
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    written: dict[str, str] = {}

    def write(document: dict[str, Any], name: str) -> None:
        written[name] = json.dumps(document, indent=1) + "\n"

    monkeypatch.setattr(script, "write", write)
    monkeypatch.setattr("sys.argv", ["make_gavel_instances.py", "--gavel", str(GAVEL)])
    script.main()
    assert set(written) == {"gavel_makespan", "gavel_cluster_500", "gavel_cluster_500_long"}
    for name, text in written.items():
        assert (ROOT / "instances" / f"{name}.json").read_text() == text, name


def test_job_mix_follows_gavels_distribution() -> None:
    """Scale factors and run times have Gavel's shares and ranges.

    Scale factors follow its probabilities, run times 60 * 10**U(1.5, 3) s and
    60 * 10**U(3, 4) s in the long mode; each draw maps as ``Generator.choice`` maps it.
    """
    draws = np.random.default_rng(7).random(200_000)
    shares = [(scale_factors(draws) == s).mean() for s in SCALE_FACTORS]
    assert np.allclose(shares, SCALE_PROBABILITIES, atol=0.005)
    assert (scale_factors(draws[:50]) == np.random.default_rng(7).choice(
        SCALE_FACTORS, size=50, p=SCALE_PROBABILITIES)).all()
    assert run_times_s(False, 0.0) == pytest.approx(60 * 10**1.5)
    assert run_times_s(True, 0.0) == pytest.approx(60 * 10**3.0)
    long = run_times_s(np.ones(100, dtype=bool), draws[:100])
    assert (long >= 60 * 10**3).all() and (long < 60 * 10**4).all()


@pytest.mark.parametrize("trace", [
    MAKESPAN_TRACE,
    GAVEL / "traces" / "msr" / "seed=0" / "0e4a51_first50.trace",
], ids=["10-columns", "7-columns"])
def test_convert_gavel_traces(trace: Path, tmp_path: Path) -> None:
    """Both trace layouts convert from the CLI into instances that load, jobs preemptible."""
    result = run_cli("convert", "gavel", trace, "--throughputs",
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


def test_gavel_documents_name_the_trace_and_take_the_fleet() -> None:
    """One document, named after the trace, on the fleet asked for; it loads."""
    (document,) = gavel_documents(MAKESPAN_TRACE, GAVEL / "simulation_throughputs.json",
                                  PHYSICAL_CLUSTER, 4, space_sharing=False)
    assert document["name"] == "minimize_makespan" and "colocation" not in document
    instance = instance_from(document)
    assert instance.type_ids == tuple(PHYSICAL_CLUSTER) and instance.n_gpus == 48


def test_gavel_documents_refuse_what_cannot_be_converted(tmp_path: Path) -> None:
    """No throughput file names --throughputs; a fleet type unmeasured or unpriced --fleet."""
    throughputs = GAVEL / "simulation_throughputs.json"
    with pytest.raises(InputError, match=r"^`throughputs`: .*simulation_throughputs\.json"):
        gavel_documents(MAKESPAN_TRACE, None, PHYSICAL_CLUSTER, 4, False)
    with pytest.raises(InputError, match=r"^`fleet`: unknown worker type\(s\) a100; the "
                                         r"throughput file has k80, "):
        gavel_documents(MAKESPAN_TRACE, throughputs, {"a100": 8, "v100": 8}, 4, False)
    unpriced = tmp_path / "t4.json"
    unpriced.write_text(json.dumps({"t4": {"('A3C', 1)": {"null": 1.0}}}))
    with pytest.raises(InputError, match=r"^`fleet`: no price known for t4"):
        gavel_documents(MAKESPAN_TRACE, unpriced, {"t4": 4}, 4, False)


def test_convert_gavel_with_space_sharing(tmp_path: Path) -> None:
    """--space-sharing gives every job a class and lists measured pairs with speeds in (0, 1]."""
    result = run_cli("convert", "gavel", MAKESPAN_TRACE, "--throughputs",
                     GAVEL / "simulation_throughputs.json", "--space-sharing", "-o", tmp_path)
    assert result.returncode == 0, result.stderr
    (written,) = tmp_path.glob("*.json")
    instance = read_instance(written)
    assert (instance.job_class >= 0).all() and instance.class_ids
    speed = instance.colocation_speed
    assert speed.max() <= 1.0 and (speed > 0).any()
