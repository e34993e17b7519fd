"""``gpuplan convert`` of the public cluster traces: flags built from the readers' inputs."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import DATA, GAVEL, Gpuplan

from gpuplan.core.schedule import Schedule

TRACES = DATA / "cluster_traces"

#: Each trace format with its sample files as the command line gives them.
SAMPLES = {
    "philly": [TRACES / "philly" / "cluster_job_log", "--machine-list",
               TRACES / "philly" / "cluster_machine_list"],
    "helios": [TRACES / "helios" / "Venus" / "cluster_log.csv", "--cluster", "Venus"],
    "pai": [TRACES / "pai" / "pai_job_table.csv", "--task-table",
            TRACES / "pai" / "pai_task_table.csv", "--machine-spec",
            TRACES / "pai" / "pai_machine_spec.csv"],
}


@pytest.mark.parametrize("trace", list(SAMPLES))
def test_a_converted_trace_is_simulated_and_its_run_verified(
        gpuplan: Gpuplan, tmp_path: Path, trace: str) -> None:
    """Each trace converts to one instance file that ``simulate`` runs to a verified log.

    Broken, a user holding one of these traces could not get it into the simulator.
    """
    out = tmp_path / "out"
    converted = gpuplan("convert", trace, *SAMPLES[trace], "--limit", "3", "-o", out)
    assert converted.code == 0, converted.err
    (instance,) = out.glob("*.json")
    run = gpuplan("simulate", instance, "--policy", "fifo", "-o", tmp_path / "run.json")
    assert run.code == 0, run.err
    log = Schedule.read(tmp_path / "run.json")
    assert log.verification is not None and log.verification.ok
    assert log.run is not None and log.run.metrics["jobs"] == 3


@pytest.mark.parametrize(("arguments", "named"), [
    (["helios", TRACES / "helios" / "Venus" / "cluster_log.csv", "--task-table", "x.csv"],
     "--task-table"),
    (["pai", TRACES / "pai" / "pai_job_table.csv"], "--task-table"),
    (["orlib-gap", DATA / "benchmarks", "--limit", "2"], "--limit"),
    (["helios", TRACES / "helios" / "Venus" / "cluster_log.csv", "--cluster", "Mars"],
     "--cluster"),
], ids=["flag-of-another-trace", "required-file-missing", "trace-flag-on-gap",
        "unknown-cluster"])
def test_a_flag_the_format_does_not_take_or_lacks_is_exit_2(
        gpuplan: Gpuplan, tmp_path: Path, arguments: list[str | Path], named: str) -> None:
    """A trace flag on the wrong format, or a missing input, names the flag; nothing written.

    Broken, a flag would be ignored silently and the instance built from other inputs than
    the user meant. Not even the output folder is left.
    """
    outcome = gpuplan("convert", *arguments, "-o", tmp_path / "out")
    assert outcome.code == 2, outcome.err
    assert named in outcome.err and "Traceback" not in outcome.err
    assert not (tmp_path / "out").exists()


def test_a_failed_convert_removes_the_folders_it_made_only(gpuplan: Gpuplan,
                                                           tmp_path: Path) -> None:
    """A conversion that fails leaves no empty output folder, nor the parents it made.

    A folder the user had stays, with what was in it. (Every failure used to leave an
    empty OUTDIR behind.)
    """
    broken = tmp_path / "broken.txt"
    broken.write_text("2 3 not-a-number\n")
    made = tmp_path / "new" / "deeper"
    assert gpuplan("convert", "orlib-gap", broken, "-o", made).code == 2
    assert not (tmp_path / "new").exists()
    had = tmp_path / "had"
    had.mkdir()
    assert gpuplan("convert", "orlib-gap", broken, "-o", had).code == 2
    assert had.is_dir() and not any(had.iterdir())
    (had / "kept.txt").write_text("mine")
    assert gpuplan("convert", "orlib-gap", broken, "-o", had / "sub").code == 2
    assert [p.name for p in had.iterdir()] == ["kept.txt"]


#: Each convert kind with the empty file ("EMPTY") as one of its inputs.
EMPTY_INPUTS = {
    "orlib-gap": ["orlib-gap", "EMPTY"],
    "philly": ["philly", "EMPTY"],
    "helios": ["helios", "EMPTY"],
    "pai": ["pai", "EMPTY", "--task-table", TRACES / "pai" / "pai_task_table.csv"],
    "itp": ["itp", "EMPTY", "--node-count", "2"],
    "openb": ["openb", DATA / "openb" / "pods.csv", "--nodes", "EMPTY"],
    "gavel": ["gavel", GAVEL / "traces" / "physical_cluster" / "small_test.trace",
              "--throughputs", "EMPTY"],
}


@pytest.mark.parametrize(("kind", "content"), [
    *((kind, "") for kind in EMPTY_INPUTS),
    # Blank lines only: the readers of these kinds take them for an empty file too.
    *((kind, " \n\n") for kind in ("orlib-gap", "philly", "helios", "pai", "gavel")),
])
def test_an_empty_input_is_named_and_said_to_be_empty(gpuplan: Gpuplan, tmp_path: Path,
                                                      kind: str, content: str) -> None:
    """Every convert kind says which file is empty: exit 2, the file named, no folder made.

    An empty Helios log in a folder that names no cluster was blamed on --cluster, and an
    empty GAP file said "0 numbers do not form 0 problem(s)".
    """
    empty = tmp_path / "empty.json"
    empty.write_text(content)
    arguments = [empty if item == "EMPTY" else item for item in EMPTY_INPUTS[kind]]
    ran = gpuplan("convert", *arguments, "-o", tmp_path / "out")
    assert ran.code == 2, ran.err
    assert ran.err.startswith(f"error: {empty}: ") and "the file is empty" in ran.err, ran.err
    assert not (tmp_path / "out").exists()
