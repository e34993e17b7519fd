"""Microsoft's ITP trace (raw and as ElasticFlow published it) read into instance documents.

The excerpts in ``tests/data/itp/`` are real rows of the trace (its README says which);
every expected release, gang, node count, duration and due date below is computed from
those rows by hand: the raw excerpt's first job was submitted at 2,266,647 s, the
ElasticFlow excerpt's at 3,813,258 s.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import DATA, Gpuplan, instance_from, run_cli

from gpuplan.core.errors import InputError
from gpuplan.readers.cluster_traces import TRACE_FORMATS
from gpuplan.readers.itp import ITP_NODES, itp_document, itp_elasticflow_document

ITP = DATA / "itp"
RAW = ITP / "raw" / "cluster10.csv"
ELASTICFLOW = ITP / "elasticflow" / "195job.csv"

#: The raw excerpt's gangs, in file (and submission) order.
RAW_GANGS = [16, 16, 2, 2, 4, 2] + [1] * 24


def ids(document: dict[str, Any]) -> list[str]:
    """The job ids of a document, in its order."""
    return [job["id"] for job in document["jobs"]]


def rows(path: Path) -> list[str]:
    """The lines of a CSV file, header first."""
    return path.read_text().splitlines()


def job_id(path: Path, line: int) -> str:
    """The job_id on a line of a CSV file (line 1 is the header)."""
    return rows(path)[line - 1].split(",")[0]


def renamed(path: Path, folder: Path, name: str) -> Path:
    """A copy of ``path`` named ``name`` in ``folder``."""
    copy = folder / name
    shutil.copy(path, copy)
    return copy


def test_raw_cluster_maps_as_computed() -> None:
    """cluster10's first 30 jobs map to releases, gangs and nodes computed from its rows.

    Broken, a user would simulate ITP jobs at the wrong times or sizes, on a fleet of
    another size, or with 16-GPU gangs squeezed onto one 8-GPU node.
    """
    document = itp_document(RAW)
    instance = instance_from(document)
    assert document["name"] == "itp-cluster10"
    assert ids(document)[:2] == [job_id(RAW, 2), job_id(RAW, 3)]
    assert instance.release.tolist()[:8] == [0, 105038, 443200, 576904, 593624, 600085,
                                            604254, 604352]
    assert instance.release.tolist()[-1] == 2932831 - 2266647
    assert instance.duration[:6, 0].tolist() == [604, 767, 68253, 4936, 7144, 4994]
    assert instance.gang.tolist() == RAW_GANGS
    # The two 16-GPU gangs span two whole 8-GPU nodes; the rest stay on one node.
    assert [job.get("gpus_per_node") for job in document["jobs"][:3]] == [8, 8, None]
    # cluster10.csv is ElasticFlow's 32-node cluster of 8 A100 each.
    assert instance.type_ids == ("A100",)
    assert [node["gpus"] for node in document["nodes"]] == [{"A100": 8}] * 32
    assert document["objective"] == "weighted-completion"
    assert all(job["preemptible"] and job["demand"] == {"compute": 1.0} and "due_s" not in job
               for job in document["jobs"])
    assert "30 jobs read; 30 kept." in document["description"]


def test_elasticflow_deadlines_become_due_dates() -> None:
    """ElasticFlow's absolute deadlines become soft due dates from the first submission.

    Broken, a user replaying ElasticFlow's 195-job testbed trace would judge deadlines at
    the wrong times, or get an instance whose missed deadlines make the run invalid.
    """
    document = itp_elasticflow_document(ELASTICFLOW)
    instance = instance_from(document)
    assert document["name"] == "itp-elasticflow-195job"
    assert document["objective"] == "tardiness"
    assert len(document["nodes"]) == 16  # 195job.csv: the 128-GPU testbed
    assert instance.release.tolist()[:9] == [0, 2466, 4755, 4756, 4756, 4889, 4889, 4997,
                                            4998]
    # deadline minus the first job's submission time (3,813,258 s): 3,814,068 is 810.
    assert [job["due_s"] for job in document["jobs"][:5]] == [810, 3601, 9507, 13250, 10642]
    assert [job.get("deadline_s") for job in document["jobs"]] == [None] * 30
    assert instance.gang.tolist() == [1, 1] + [8] * 7 + [16] * 3 + [1] * 18
    assert [job.get("gpus_per_node") for job in document["jobs"][8:13]] == [None, 8, 8, 8,
                                                                            None]
    assert instance.duration[9:12, 0].tolist() == [74162, 52526, 9024]
    # Jobs submitted in the same second keep the file's order.
    assert ids(document)[3:5] == [job_id(ELASTICFLOW, 5), job_id(ELASTICFLOW, 6)]
    # model_name, batch_size and num_iteration have no place in an instance.
    assert {key for job in document["jobs"] for key in job} == {
        "id", "gpus", "gpus_per_node", "demand", "duration_s", "release_s", "due_s",
        "preemptible"}


@pytest.mark.parametrize(("name", "nodes"), [
    *((f"cluster{k:02d}.csv", 64) for k in (1, 2, 3, 5, 6)),
    *((f"cluster{k:02d}.csv", 128) for k in (4, 7, 8, 9)),
    ("cluster10.csv", 32), ("195job.csv", 16),
])
def test_fleet_size_from_the_file_name(name: str, nodes: int, tmp_path: Path) -> None:
    """Each of the trace's files gets ElasticFlow's cluster size, by its name.

    Broken, a user would simulate a cluster on a fleet of another size than the published
    results, and compare numbers that do not compare.
    """
    trace = renamed(ELASTICFLOW, tmp_path, name)
    assert ITP_NODES[name] == nodes
    for read in (itp_document, itp_elasticflow_document):
        document = read(trace)
        assert len(document["nodes"]) == nodes
        assert f"on {nodes} nodes of 8 GPUs (ElasticFlow's size of {name})" in (
            document["description"])


def test_node_count_overrides_and_names_other_files(tmp_path: Path) -> None:
    """``node_count`` sets the fleet; a file of another name needs it, and says so.

    Broken, a user could not size the fleet, or a renamed file would silently get some
    default cluster size.
    """
    assert len(itp_document(RAW, "48")["nodes"]) == 48
    assert len(itp_document(RAW, 2)["nodes"]) == 2
    other = renamed(RAW, tmp_path, "c10-excerpt.csv")
    with pytest.raises(InputError) as caught:
        itp_document(other)
    assert caught.value.source == "`node_count`"
    assert "'c10-excerpt.csv' is not a file of the ITP trace whose cluster size is known" in (
        caught.value.message)
    assert len(itp_document(other, 5)["nodes"]) == 5
    for bad in (0, "many", True, "1e3", 12_501):
        with pytest.raises(InputError) as caught:
            itp_document(RAW, bad)  # type: ignore[arg-type]
        assert caught.value.source == "`node_count`"


def test_types_split_the_nodes_and_scale_durations() -> None:
    """Three types share the nodes evenly in order; a job runs duration / speed on each.

    Broken, a user asking for a heterogeneous fleet would get other node counts than the
    documented rule, or slower types running as fast as the reference.
    """
    document = itp_document(RAW, types="A100=1,V100=0.5,K80=0.2")
    instance = instance_from(document)
    assert instance.type_ids == ("A100", "V100", "K80")
    # 32 nodes over three types: 11, 11, 10 (the first types take the remainder).
    assert [node["id"] for node in document["nodes"]][9:13] == [
        "A100-9", "A100-10", "V100-0", "V100-1"]
    assert instance.node_gpus.sum(axis=0).tolist() == [88, 88, 80]
    assert document["jobs"][0]["duration_s"] == {"A100": 604, "V100": 1208, "K80": 3020}
    assert "11 A100 (speed 1), 11 V100 (speed 0.5), 10 K80 (speed 0.2)" in (
        document["description"])
    as_mapping = itp_document(RAW, types={"A100": 1, "V100": 0.5, "K80": 0.2})
    assert as_mapping == document
    # One type with a speed left out renames the fleet's type.
    assert [t["id"] for t in itp_document(RAW, types="H100")["gpu_types"]] == ["H100"]


def test_a_gang_may_only_use_types_with_nodes_enough() -> None:
    """A multi-node gang is allowed on the types that have its nodes, and only on those.

    Broken, a 16-GPU job would be offered a type with one node, where no run can place it,
    or the converter would refuse a fleet the job does fit.
    """
    document = itp_document(RAW, 4, "A100=1,V100=0.5,K80=0.2")  # 2, 1 and 1 nodes
    instance = instance_from(document)
    assert document["jobs"][0]["duration_s"] == {"A100": 604}
    assert instance.eligible[:3].tolist() == [[True, False, False], [True, False, False],
                                              [True, True, True]]


@pytest.mark.parametrize(("types", "words"), [
    ("V100=0.5,A100=1", "the first type, 'V100', is the one the trace's durations were "
     "measured on: its speed is 1, not 0.5"),
    ("A100=1,A100=0.5", "'A100' is named twice"),
    ("A100=1,V100=fast", "'V100=fast' is not TYPE=SPEED"),
    ("A100=1,V100=0", "the speed of 'V100' is 0; expected a number above 0"),
    ("A100=1,V100=nan", "the speed of 'V100' is nan"),
    ("A100,V 100=0.5", "'V 100' is not a GPU type name"),
    ("A100,,K80=0.2", "'' is not a GPU type name"),
    ("A100=1,B=1,C=1,D=1,E=1", "5 types and 4 nodes: every type needs a node"),
])
def test_bad_types_are_refused(types: str, words: str) -> None:
    """A ``types`` list that is malformed or cannot be split names ``types`` and the fault.

    Broken, a typo in a speed would build a fleet the user did not ask for, or a traceback.
    """
    with pytest.raises(InputError) as caught:
        itp_document(RAW, 4, types)
    assert caught.value.source == "`types`"
    assert words in caught.value.message


def test_limit_keeps_the_first_jobs_by_submission(tmp_path: Path) -> None:
    """``limit`` keeps the first N jobs by submission time, from a file in any order.

    Broken, a user trying a slice of a 15,802-job cluster would get other jobs, releases
    from the wrong origin, or all of them.
    """
    document = itp_elasticflow_document(ELASTICFLOW, limit=3)
    assert ids(document) == [job_id(ELASTICFLOW, line) for line in (2, 3, 4)]
    assert "30 jobs read; 3 kept, the first 3 by submission time" in document["description"]
    header, *body = rows(RAW)
    shuffled = tmp_path / "cluster10.csv"
    shuffled.write_text("\n".join([header, *reversed(body)]) + "\n")
    assert itp_document(shuffled, limit=4)["jobs"] == itp_document(RAW, limit=4)["jobs"]
    assert itp_document(shuffled)["jobs"] == itp_document(RAW)["jobs"]


@pytest.mark.parametrize(("settings", "source", "words"), [
    ({"limit": 0}, "`limit`", "expected a positive number of jobs, got 0"),
    ({"statuses": ["Pass"]}, "`statuses`", "the ITP trace records no job status"),
])
def test_bad_settings_are_refused(settings: dict[str, Any], source: str, words: str) -> None:
    """``limit`` 0 and any ``statuses`` are refused, naming the setting.

    Broken, a user filtering by status would believe jobs were selected that were not.
    """
    with pytest.raises(InputError) as caught:
        itp_document(RAW, **settings)
    assert (caught.value.source, caught.value.path) == (source, "")
    assert words in caught.value.message


def _edit(old: str, new: str) -> Callable[[str], str]:
    def edit(text: str) -> str:
        assert old in text
        return text.replace(old, new, 1)
    return edit


def _set(line: int, column: int, value: str) -> Callable[[str], str]:
    """Set one field of a line of the file (line 1 is the header)."""
    def edit(text: str) -> str:
        lines = text.splitlines()
        fields = lines[line - 1].split(",")
        fields[column] = value
        lines[line - 1] = ",".join(fields)
        return "\n".join(lines) + "\n"
    return edit


#: One defect per case: the excerpt changed, its node count (None: by name), the path the
#: error names, and words of its message. Raw columns: job_id, submission_time, duration,
#: num_gpu; ElasticFlow's: job_id, submission_time, num_iteration, model_name, deadline,
#: batch_size, num_gpu, duration.
MALFORMED: dict[str, tuple[Path, Callable[[str], str], int | None, str, str]] = {
    "gpus not a number": (RAW, _set(4, 3, "two"), None, "line 4",
                          "num_gpu is 'two'; expected a whole number of GPUs, 1 to 100,000"),
    "gpus 0": (RAW, _set(9, 3, "0"), None, "line 9", "num_gpu is '0'; expected a whole number"),
    "gpus a fraction": (RAW, _set(9, 3, "1.5"), None, "line 9", "num_gpu is '1.5'"),
    "gang not whole nodes": (RAW, _set(3, 3, "12"), None, "line 3",
                             f"num_gpu is 12 (job {job_id(RAW, 3)!r}): a gang of more than 8 "
                             "GPUs spans whole 8-GPU nodes"),
    "gang larger than the fleet": (RAW, lambda text: text, 1, "line 2",
                                   f"num_gpu is 16 (job {job_id(RAW, 2)!r}): the gang needs 2 "
                                   "nodes of 8 GPUs, but the fleet has 1 node(s)"),
    "duration 0": (RAW, _set(7, 2, "0"), None, "line 7",
                   "duration is '0'; expected a number of seconds above 0"),
    "negative duration": (RAW, _set(7, 2, "-605"), None, "line 7", "duration is '-605'"),
    "empty submission": (RAW, _set(5, 1, ""), None, "line 5",
                         "submission_time is ''; expected a number of seconds from 0"),
    "infinite submission": (RAW, _set(5, 1, "inf"), None, "line 5", "submission_time is 'inf'"),
    "submitted past gpuplan's times": (RAW, _set(31, 1, "2000000000"), None, "line 31",
                                       "submission_time is 1997733353 s after the first job "
                                       "kept's"),
    "short row": (RAW, _edit(",4936,2", ",4936"), None, "line 5",
                  "3 fields; expected 4 (job_id, submission_time, duration, num_gpu)"),
    "missing column": (RAW, _edit("duration,num_gpu", "duration,gpus"), None, "line 1",
                       "missing column num_gpu (the header has job_id, submission_time, "
                       "duration, gpus)"),
    "empty file": (RAW, lambda _: "", None, "line 1", "the file is empty"),
    "blank lines only": (RAW, lambda _: "\n  \n\t\n", None, "line 1", "the file is empty"),
    "missing column after blank lines": (RAW, lambda text: "\n \n" + text.replace(
        "duration,num_gpu", "duration,gpus", 1), None, "line 3", "missing column num_gpu"),
    "header only": (RAW, lambda text: text.splitlines()[0] + "\n", None, "",
                    "no job to simulate: the file has a header and no rows"),
    "job twice": (RAW, _set(12, 0, job_id(RAW, 3)), None, "line 12",
                  f"job_id {job_id(RAW, 3)!r} is also the job at line 3"),
    "deadline before submission": (ELASTICFLOW, _set(6, 4, "3818000"), None, "line 6",
                                   "deadline is 3.818e+06, before the job's submission_time "
                                   f"3.81801e+06 (job {job_id(ELASTICFLOW, 6)!r})"),
    "deadline not a number": (ELASTICFLOW, _set(8, 4, "soon"), None, "line 8",
                              "deadline is 'soon'; expected a number of seconds from 0"),
    "deadline missing": (ELASTICFLOW, _edit(",deadline,", ",due,"), None, "line 1",
                         "missing column deadline"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_input_names_file_line_and_field(case: str, tmp_path: Path) -> None:
    """A malformed row is an InputError naming the file, the line and the field or job.

    Broken, a user would get a traceback, a silently wrong instance, or an error that does
    not say what to fix where.
    """
    sample, edit, nodes, where, words = MALFORMED[case]
    bad = tmp_path / sample.name
    bad.write_text(edit(sample.read_text()))
    read = itp_document if sample == RAW else itp_elasticflow_document
    with pytest.raises(InputError) as caught:
        read(bad, nodes)
    assert (caught.value.source, caught.value.path) == (str(bad), where)
    assert words in caught.value.message


def test_a_run_time_past_gpuplan_limits_on_a_slow_type() -> None:
    """A type so slow that a job's run time passes 1e9 s names the job and the type.

    Broken, the converter would write an instance that every command then refuses.
    """
    with pytest.raises(InputError) as caught:
        itp_document(RAW, types="A100=1,K80=1e-9")
    assert caught.value.path == "line 2"
    assert (f"duration is 604 s (job {job_id(RAW, 2)!r}), 6.04e+11 s on K80 (speed 1e-09)"
            in caught.value.message)


def test_trace_formats_register_both_readers() -> None:
    """``itp`` and ``itp-elasticflow`` are registered, with no statuses to choose from.

    Broken, ``gpuplan convert itp`` would not exist. (That every format's inputs are its
    reader's keywords is tested for all formats in ``test_cluster_traces.py``.)
    """
    assert TRACE_FORMATS["itp"].read is itp_document
    assert TRACE_FORMATS["itp-elasticflow"].read is itp_elasticflow_document
    assert TRACE_FORMATS["itp"].statuses == TRACE_FORMATS["itp-elasticflow"].statuses == ()


def test_convert_then_validate(tmp_path: Path) -> None:
    """``gpuplan convert itp`` writes an instance file that ``gpuplan validate`` accepts.

    Broken, a user following the documentation would get no file, or one gpuplan refuses.
    """
    out = tmp_path / "out"
    converted = run_cli("convert", "itp", RAW, "-o", out)
    assert converted.returncode == 0, converted.stderr
    written = out / "itp-cluster10.json"
    assert json.loads(written.read_text())["jobs"][0]["gpus_per_node"] == 8
    checked = run_cli("validate", written)
    assert checked.returncode == 0, checked.stderr
    said = checked.stdout + checked.stderr
    assert f"ok {written}: 30 jobs" in said and "256 GPUs of 1 types on 32 nodes" in said
    assert "2 multi-node gangs (up to 2 nodes)" in said


def test_elasticflow_converts_and_simulates(tmp_path: Path, gpuplan: Gpuplan) -> None:
    """The ElasticFlow variant, on three types, converts and ``simulate`` runs it to a log.

    Broken, a user could not replay ElasticFlow's trace, with its due dates, on a mixed
    fleet.
    """
    out = tmp_path / "out"
    converted = gpuplan("convert", "itp-elasticflow", ELASTICFLOW, "--types",
                        "A100=1,V100=0.5,K80=0.2", "--node-count", "12", "--limit", "20",
                        "-o", out)
    assert converted.code == 0, converted.err
    instance = out / "itp-elasticflow-195job.json"
    assert len(json.loads(instance.read_text())["nodes"]) == 12
    run = gpuplan("simulate", instance, "--policy", "las", "-o", tmp_path / "run.json")
    assert run.code == 0, run.err
    log = json.loads((tmp_path / "run.json").read_text())
    assert log["objective_kind"] == "tardiness"
    assert log["run"]["metrics"]["jobs"] == 20


@pytest.mark.parametrize(("arguments", "words"), [
    (["itp", "{bad}"], "{bad}: line 4: num_gpu is 12 (job "),
    (["itp", "{renamed}"], "--node-count: 'trace.csv' is not a file of the ITP trace"),
    (["itp", RAW, "--node-count", "1"], f"{RAW}: line 2: num_gpu is 16"),
    (["itp", RAW, "--types", "A100=0.5"], "--types: the first type, 'A100'"),
    (["itp-elasticflow", RAW], f"{RAW}: line 1: missing column deadline"),
    (["itp", RAW, "--statuses", "Pass"], "--statuses: the ITP trace records no job status"),
    (["helios", RAW, "--node-count", "3"], "--node-count: is taken by itp, itp-elasticflow"),
], ids=["gang-not-whole-nodes", "unknown-file-name", "gang-larger-than-fleet", "bad-types",
        "raw-file-as-elasticflow", "statuses", "flag-on-another-format"])
def test_bad_input_is_exit_2_and_writes_nothing(arguments: list[str | Path], words: str,
                                                tmp_path: Path, gpuplan: Gpuplan) -> None:
    """Bad input to ``gpuplan convert itp`` exits 2 with the file, line and field; no output.

    Broken, a script converting the trace would carry on with a missing or partial file, or
    show its user a traceback.
    """
    bad = tmp_path / "cluster10.csv"
    bad.write_text(_set(4, 3, "12")(RAW.read_text()))
    other = renamed(RAW, tmp_path, "trace.csv")
    given = [str(a).format(bad=bad, renamed=other) for a in arguments]
    out = tmp_path / "out"
    outcome = gpuplan("convert", *given, "-o", out)
    assert outcome.code == 2, outcome.err
    assert words.format(bad=bad) in outcome.err
    assert "Traceback" not in outcome.err
    assert not out.exists() or not any(out.iterdir())
