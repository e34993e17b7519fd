"""Alibaba's openb node and pod lists read into a fleet with node resources and pod jobs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import DATA, instance_from, run_cli

from gpuplan import Instance, Schedule, Status, Unplaced, read_instance, verify_schedule
from gpuplan.core.errors import InputError
from gpuplan.core.schedule import Segment, ViolationKind
from gpuplan.readers.openb import gpu_specs, read_openb

OPENB = DATA / "openb"

#: One bad file per defect: (file, which list it is, words the message must hold).
BAD = {
    "missing_column.csv": ("pods", "line 1", "missing column num_gpu"),
    "not_a_number.csv": ("pods", "line 3", "cpu_milli is '4k'"),
    "share_over_one_gpu.csv": ("pods", "line 2", "gpu_milli is 1500; expected 0 to 1000"),
    "multi_gpu_share.csv": ("pods", "line 2", "a multi-GPU pod takes whole GPUs"),
    "unknown_gpu_spec.csv": ("pods", "line 2", "gpu_spec names A100, which no node has"),
    "duplicate_pod.csv": ("pods", "line 3", "listed twice"),
    "deleted_before_created.csv": ("pods", "line 2", "deletion_time is 50; expected 100"),
    "short_row.csv": ("pods", "line 2", "4 fields; the header has 5"),
    "cpu_only_node.csv": ("nodes", "line 2", "gpuplan's fleet holds GPU nodes"),
    "duplicate_node.csv": ("nodes", "line 3", "listed twice"),
}


def test_reads_fleet_and_pods() -> None:
    """Models become GPU types of 1000 milli; nodes carry CPU and memory; pods are jobs."""
    instance = read_openb(OPENB / "nodes.csv", OPENB / "pods.csv")
    assert instance.type_ids == ("T4", "V100M16")
    assert instance.resources == ("gpu_milli",)
    assert instance.node_resources == ("cpu_milli", "memory_mib")
    assert instance.node_capacity.tolist() == [[32000, 131072], [64000, 262144], [8000, 32768]]
    assert instance.node_gpus.tolist() == [[2, 0], [0, 4], [1, 0]]
    assert instance.gang.tolist() == [1, 2, 0, 1]
    assert instance.demand[:, 0, 0].tolist() == [500, 1000, 0, 250]
    assert instance.node_demand[2].tolist() == [2000, 4096]
    assert instance.weight.tolist() == [500, 2000, 0, 250]
    # gpu_spec limits the models; pod-3 asks more CPU than any node has, so it fits none
    # but is kept (a replay fails it) rather than refusing the whole trace.
    assert instance.eligible.tolist() == [[True, True], [False, True], [True, True],
                                          [False, False]]
    assert instance.release.tolist() == [0, 10, 20, 30]
    # Deleted in its creation second: held for the trace's resolution, one second.
    assert instance.duration[:, 0].tolist() == [100, 1, 30, 60]


def test_short_pod_list_has_no_times() -> None:
    """A variant without gpu_spec and time columns reads as unconstrained, untimed pods."""
    instance = read_openb(OPENB / "nodes.csv", OPENB / "pods_short.csv")
    assert instance.eligible[1].tolist() == [False, True]  # only V100M16 nodes hold 4 GPUs
    assert instance.release.tolist() == [0, 0]


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_rows_name_file_line_and_field(name: str) -> None:
    """A bad row is an InputError naming the file, the line and the field."""
    which, line, words = BAD[name]
    nodes, pods = OPENB / "nodes.csv", OPENB / "pods.csv"
    if which == "pods":
        pods = OPENB / "bad" / name
    else:
        nodes = OPENB / "bad" / name
    with pytest.raises(InputError) as caught:
        read_openb(nodes, pods)
    assert caught.value.source.endswith(name)
    assert caught.value.path == line
    assert words in caught.value.message


@pytest.mark.parametrize("which", ["nodes", "pods"])
def test_a_list_of_blank_lines_only_is_named_empty(which: str, tmp_path: Path) -> None:
    """A node or pod list of blank lines only says it is empty, not that a column is missing."""
    blank = tmp_path / f"{which}.csv"
    blank.write_text("\n  \n\n")
    files = {"nodes": OPENB / "nodes.csv", "pods": OPENB / "pods.csv", which: blank}
    with pytest.raises(InputError) as caught:
        read_openb(files["nodes"], files["pods"])
    assert (caught.value.source, caught.value.path) == (str(blank), "line 1")
    assert caught.value.message.startswith("the file is empty; expected a header with ")


def test_blank_lines_before_the_header_are_skipped(tmp_path: Path) -> None:
    """Blank lines before the header are skipped, as between rows.

    The pods read as without them, and a header missing a column is named at its own line.
    """
    pods = tmp_path / "pods.csv"
    pods.write_text("\n \n" + (OPENB / "pods.csv").read_text())
    read = read_openb(OPENB / "nodes.csv", pods)
    assert read.job_ids == read_openb(OPENB / "nodes.csv", OPENB / "pods.csv").job_ids
    pods.write_text("\n \n" + (OPENB / "bad" / "missing_column.csv").read_text())
    with pytest.raises(InputError) as caught:
        read_openb(OPENB / "nodes.csv", pods)
    assert caught.value.path == "line 3" and "missing column num_gpu" in caught.value.message


def test_bad_row_through_cli_is_exit_2(tmp_path: Path) -> None:
    """`gpuplan convert openb` on a bad row exits 2 with one line and writes nothing."""
    out = tmp_path / "never_written"
    result = run_cli("convert", "openb", OPENB / "bad" / "not_a_number.csv", "--nodes",
                     OPENB / "nodes.csv", "-o", out)
    assert result.returncode == 2
    assert "not_a_number.csv: line 3: cpu_milli is '4k'" in result.stderr
    assert "Traceback" not in result.stderr
    assert not out.exists() or not any(out.iterdir())


def test_convert_round_trip(tmp_path: Path) -> None:
    """The converted JSON reads back to the same arrays as the CSVs."""
    out = tmp_path
    result = run_cli("convert", "openb", OPENB / "pods.csv", "--nodes", OPENB / "nodes.csv",
                     "-o", out)
    assert result.returncode == 0, result.stderr
    again = read_instance(out / "pods.json")
    first = read_openb(OPENB / "nodes.csv", OPENB / "pods.csv")
    for field in ("node_capacity", "node_demand", "demand", "eligible", "gang", "weight"):
        assert np.array_equal(getattr(again, field), getattr(first, field)), field
    assert json.loads((out / "pods.json").read_text())["objective"] == "max-weight"


def _schedule(instance: Instance, placed: list[tuple[str, str, str, list[str]]]) -> Schedule:
    """A hand-made max-weight schedule: these (job, node, type, GPUs); the rest unplaced."""
    segments = [Segment(job=job, node=node, gpu_type=kind, gpu_ids=gpus, start_s=0,
                        end_s=float(instance.duration[instance.job_index[job],
                                                      instance.type_index[kind]]))
                for job, node, kind, gpus in placed]
    left = sorted(set(instance.job_ids) - {job for job, *_ in placed})
    return Schedule(instance=instance.name, objective_kind="max-weight",
                    status=Status.FEASIBLE, objective=None, bound=None, gap=None,
                    method="hand", solver="hand", wall_time_s=0.0, seed=0,
                    gpuplan_version="test", segments=segments,
                    unplaced=[Unplaced(job=job, reason="left out") for job in left])


def test_verifier_checks_node_resources_and_cpu_only_pods() -> None:
    """Node CPU is summed over every pod on the node; a CPU-only pod needs a node of its type."""
    instance = read_openb(OPENB / "nodes.csv", OPENB / "pods.csv")
    placed = [("pod-0", "node-c", "T4", ["node-c/0"]),
              ("pod-1", "node-a", "V100M16", ["node-a/0", "node-a/1"]),
              ("pod-2", "node-c", "T4", [])]
    verdict = verify_schedule(instance, _schedule(instance, placed))
    assert verdict.ok, verdict.violations
    assert verdict.objective == 2500  # milli-GPUs allocated: 500 + 2 x 1000

    verdict = verify_schedule(instance, _schedule(instance, [("pod-2", "node-a", "T4", [])]))
    assert [v.kind for v in verdict.violations] == [ViolationKind.TYPE]
    assert "holds no T4" in verdict.violations[0].message


def test_verifier_flags_node_over_capacity() -> None:
    """Two pods whose CPU together exceeds their node's is a capacity violation naming both."""
    instance = instance_from({
        "gpu_types": [{"id": "T4", "capacity": {"gpu_milli": 1000}}],
        "nodes": [{"id": "n", "gpus": {"T4": 1}, "resources": {"cpu_milli": 5000}}],
        "jobs": [{"id": "a", "demand": {"gpu_milli": 300}, "node_demand": {"cpu_milli": 4000},
                  "duration_s": 1},
                 {"id": "b", "gpus": 0, "node_demand": {"cpu_milli": 2000}, "duration_s": 1}],
        "objective": "max-weight",
    })
    both = [("a", "n", "T4", ["n/0"]), ("b", "n", "T4", [])]
    verdict = verify_schedule(instance, _schedule(instance, both))
    assert [v.kind for v in verdict.violations] == [ViolationKind.CAPACITY]
    assert verdict.violations[0].message == (
        "node n: cpu_milli load 6000 exceeds capacity 5000 (jobs 'a', 'b')")


def test_gpu_specs_keep_the_file_text(tmp_path: Path) -> None:
    """gpu_spec is kept verbatim per pod (FGD keys typical pods by it), "" for CPU-only pods."""
    pods = tmp_path / "pods.csv"
    pods.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
                    "a,1000,1024,1,500,V100M16|T4|T4\nb,1000,1024,0,0,\nc,1000,1024,1,100,\n")
    assert gpu_specs(pods) == ("V100M16|T4|T4", "", "")
    assert gpu_specs(OPENB / "pods_short.csv") == ("", "")
