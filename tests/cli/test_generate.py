"""``gpuplan generate --cluster``: Gavel workloads as instance files, and the flags of each kind."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import GAVEL, Gpuplan

from gpuplan.harness.library import VARIANTS, operator_document, racks_document

THROUGHPUTS = GAVEL / "simulation_throughputs.json"
GAVEL_RUN = ("generate", "--cluster", "36:36:36", "--gpus-per-node", "4", "--jobs", "300",
             "--arrival-rate", "2.8", "--throughputs", THROUGHPUTS, "--seed", "0")


def test_gavel_workload_file(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """The file validates, holds the jobs asked on 36 GPUs per type, and a seed repeats it."""
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    assert gpuplan(*GAVEL_RUN, "-o", first).code == 0
    assert gpuplan(*GAVEL_RUN, "-o", second).code == 0
    assert first.read_bytes() == second.read_bytes()
    assert gpuplan("validate", first).code == 0
    document = json.loads(first.read_text())
    assert len(document["jobs"]) == 300
    assert {job["gpus"] for job in document["jobs"]} == {1}
    assert [t["id"] for t in document["gpu_types"]] == ["v100", "p100", "k80"]
    per_type = {t: sum(n["gpus"].get(t, 0) for n in document["nodes"])
                for t in ("v100", "p100", "k80")}
    assert per_type == {"v100": 36, "p100": 36, "k80": 36} and len(document["nodes"]) == 27
    assert document["objective"] == "weighted-completion"
    assert document["description"].startswith("gpuplan generate --cluster 36:36:36")


def test_multi_gpu_file(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """--multi-gpu draws gangs up to 8 (servers of 8 by default); --priorities weights of 5."""
    out = tmp_path / "m.json"
    run = [*GAVEL_RUN[:3], *GAVEL_RUN[5:]]
    assert gpuplan(*run, "--multi-gpu", "--priorities", "-o", out).code == 0
    jobs = json.loads(out.read_text())["jobs"]
    assert {job["gpus"] for job in jobs} == {1, 2, 4, 8}
    assert {job["weight"] for job in jobs} == {1.0, 5.0}


@pytest.mark.parametrize(("args", "flag", "says"), [
    (("--cluster", "36:36"), "--cluster", "2 count(s), not 3"),
    (("--cluster", "1:1:1", "--nodes", "2"), "--cluster", "not both"),
    (("--cluster", "1:1:1", "--types", "v100"), "--types", "is a flag of node fleets"),
    (("--cluster", "1:1:1", "--deadlines", "0.5"), "--deadlines", "is a flag of node fleets"),
    (("--nodes", "2", "--arrival-rate", "1"), "--arrival-rate", "a flag of Gavel workloads"),
    (("--nodes", "2", "--multi-gpu"), "--multi-gpu", "a flag of Gavel workloads"),
    (("--cluster", "1:1:1", "--throughputs", str(THROUGHPUTS)), "--arrival-rate", "needs it"),
    (("--cluster", "1:1:1", "--arrival-rate", "1"), "--throughputs", "needs it"),
    (("--cluster", "8:8:8", "--arrival-rate", "1", "--throughputs", str(THROUGHPUTS),
      "--multi-gpu", "--gpus-per-node", "4"), "--gpus-per-node", "up to 8 GPUs"),
    ((), "--nodes", "give --nodes K"),
])
def test_wrong_flags_are_exit_2(gpuplan: Gpuplan, tmp_path: Path, args: tuple[str, ...],
                                flag: str, says: str) -> None:
    """A bad cluster or a flag of the other kind is exit 2 naming the flag; nothing written."""
    out = tmp_path / "x.json"
    outcome = gpuplan("generate", "--jobs", "5", *args, "-o", out)
    assert outcome.code == 2 and f"{flag}:" in outcome.err and says in outcome.err
    assert not out.exists()


def test_library_batch_file(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """--library operator writes the generator's batch, which validates; its name says it."""
    out = tmp_path / "op.json"
    run = ("generate", "--library", "operator", "--variant", "chains", "--jobs", "30",
           "--seed", "4", "--objective", "weighted-completion", "-o", out)
    assert gpuplan(*run).code == 0
    assert json.loads(out.read_text()) == operator_document(30, 4, "chains",
                                                            "weighted-completion")
    assert gpuplan("validate", out).code == 0
    assert json.loads(out.read_text())["name"] == "operator-chains-30-s4-weighted"


def test_racks_batch_file(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """--library racks writes a fleet in racks whose CPUs bind, with multi-node gangs.

    Every gang of more than 8 GPUs spans whole nodes and stays within a rack; the jobs
    draw CPUs and memory per node within a node's; greedy plans it, verified.
    """
    out = tmp_path / "racks.json"
    assert gpuplan("generate", "--library", "racks", "--jobs", "40", "--seed", "3",
                   "-o", out).code == 0
    document = json.loads(out.read_text())
    assert document == racks_document(40, 3)
    assert len(document["nodes"]) == 4 and document["topology"] == {"levels": ["rack"]}
    big = [j for j in document["jobs"] if j["gpus"] > 8]
    assert all(j["gpus_per_node"] == 8 and j["topology"] == {"required": "rack"} for j in big)
    assert gpuplan("solve", out, "-o", tmp_path / "plan.json").code == 0


@pytest.mark.parametrize(("args", "flag", "says"), [
    (("--library", "racks", "--variant", "tight"), "--variant", "--library racks"),
    (("--library", "operator", "--nodes", "2"), "--library", "not both"),
    (("--library", "operator", "--types", "v100"), "--types", "is a flag of node fleets"),
    (("--library", "operator", "--deadlines", "0.5"), "--deadlines", "a flag of node fleets"),
    (("--library", "operator", "--gpus-per-node", "4"), "--gpus-per-node", "does not take"),
    (("--library", "operator", "--arrival-rate", "1"), "--arrival-rate", "Gavel workloads"),
    (("--library", "operator", "--objective", "assign-profit"), "--objective", "no data"),
    (("--nodes", "2", "--variant", "tight"), "--variant", "a flag of library batches"),
    (("--cluster", "1:1:1", "--library", "operator"), "--library", "not both"),
])
def test_library_wrong_flags_are_exit_2(gpuplan: Gpuplan, tmp_path: Path,
                                        args: tuple[str, ...], flag: str, says: str) -> None:
    """A flag --library does not take, or --variant without it, is exit 2; nothing written."""
    out = tmp_path / "x.json"
    outcome = gpuplan("generate", "--jobs", "5", *args, "-o", out)
    assert outcome.code == 2 and f"{flag}:" in outcome.err and says in outcome.err
    assert not out.exists()


def test_library_unknown_variant(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """An unknown variant is refused by its flag, listing the variants."""
    outcome = gpuplan("generate", "--library", "operator", "--variant", "wide", "--jobs", "5",
                      "-o", tmp_path / "x.json")
    assert outcome.code == 2 and "--variant" in outcome.err and "tight" in outcome.err


def test_help_lists_the_variants(gpuplan: Gpuplan) -> None:
    """``generate --help`` shows --library and describes each variant."""
    outcome = gpuplan("generate", "--help")
    assert outcome.code == 0 and "--library" in outcome.out
    assert all(f"{name}:" in outcome.out for name in VARIANTS)


def test_a_workload_past_the_time_limit_is_refused_before_it_is_drawn(
        gpuplan: Gpuplan, tmp_path: Path) -> None:
    """A million jobs at one an hour would arrive past the format's time limit: exit 2 at once.

    If this broke, the request would fail only after drawing the whole workload (tens of
    seconds and gigabytes).
    """
    out = tmp_path / "x.json"
    refused = gpuplan("generate", "--cluster", "4:4:4", "--arrival-rate", "1", "--jobs",
                      "1000000", "--throughputs", THROUGHPUTS, "-o", out)
    assert refused.code == 2
    assert "--arrival-rate: 1000000 jobs at 1 per hour" in refused.err
    assert "use a rate of at least 3.62 per hour" in refused.err and not out.exists()
