"""Philly, Helios and PAI traces read into instance documents that gpuplan can simulate.

The samples in ``tests/data/cluster_traces/`` (its README says where each comes from) are
small enough to map by hand: every expected release, duration, gang and type below is
computed from their rows.
"""

from __future__ import annotations

import gzip
import inspect
import json
import shutil
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import DATA, Gpuplan, instance_from

from gpuplan.core.errors import InputError
from gpuplan.readers import cluster_traces
from gpuplan.readers.cluster_traces import (
    PAI_FLEET,
    TRACE_FORMATS,
    helios_document,
    pai_document,
    philly_document,
)

TRACES = DATA / "cluster_traces"
PHILLY_LOG = TRACES / "philly" / "cluster_job_log"
PHILLY_MACHINES = TRACES / "philly" / "cluster_machine_list"
HELIOS_LOG = TRACES / "helios" / "Venus" / "cluster_log.csv"
PAI_JOBS = TRACES / "pai" / "pai_job_table.csv"
PAI_TASKS = TRACES / "pai" / "pai_task_table.csv"
PAI_MACHINES = TRACES / "pai" / "pai_machine_spec.csv"

#: The Philly sample's job ids, by their last digits, in submit order.
PHILLY_KEPT = ["application_1506638472019_14101", "application_1506638472019_14199",
               "application_1506638472019_14302", "application_1506638472019_14403"]


def ids(document: dict[str, Any]) -> list[str]:
    """The job ids of a document, in its order."""
    return [job["id"] for job in document["jobs"]]


def pai_name(line: int) -> str:
    """The job_name on a line of the PAI sample's job table."""
    return PAI_JOBS.read_text().splitlines()[line - 1].split(",")[0]


def test_philly_jobs_on_the_machine_list() -> None:
    """Philly's README job and three built ones map as computed by hand.

    Broken, a user would simulate Philly jobs at the wrong times, sizes or GPU types.
    """
    document = philly_document(PHILLY_LOG, PHILLY_MACHINES)
    instance = instance_from(document)
    # Sorted by submit time: the README's job (01:11:39) comes second, after a 00:00:00 one.
    assert ids(document) == PHILLY_KEPT
    assert instance.release.tolist() == [0, 4299, 7200, 10800]
    # Sums of the attempts' runs: the README job's 74 s plus 2 days 5:39:42.
    assert instance.duration[:, 0].tolist() == [3600, 74 + 193182, 600 + 300, 1800 + 3600]
    # The last attempt's GPUs: the fourth job grew from 2 to 4 on retry.
    assert instance.gang.tolist() == [1, 8, 2, 4]
    assert instance.type_ids == ("12GB", "24GB")
    assert [dict(node["gpus"]) for node in document["nodes"]] == [
        {"24GB": 8}, {"24GB": 8}, {"24GB": 8}, {"12GB": 4}, {"12GB": 2}]
    # m31 and m412 are 24GB machines, m12 a 12GB one; m99 is not in the list: any type.
    assert instance.eligible.tolist() == [[False, True], [False, True], [True, False],
                                          [True, True]]
    assert all(job["preemptible"] and job["demand"] == {"compute": 1.0}
               for job in document["jobs"])
    assert ("10 jobs read; left out: 3 without a complete run time, 1 without a submit time, "
            "1 with a run time of 0, 1 larger than every node of their GPU types; 4 kept"
            in document["description"])
    assert "1 kept jobs ran on machines the list lacks" in document["description"]


def test_philly_machines_from_the_log() -> None:
    """Without a machine list, the machines the attempts name become the nodes.

    Broken, a user without ``cluster_machine_list`` could not simulate the trace.
    """
    document = philly_document(PHILLY_LOG)
    instance = instance_from(document)
    # GPUs per machine: the most seen at once or the highest gpuN index + 1.
    assert {node["id"]: node["gpus"]["philly"] for node in document["nodes"]} == {
        "m47": 8, "m412": 8, "m31": 8, "m12": 4, "m99": 4, "m13": 2}
    assert ids(document) == PHILLY_KEPT
    assert instance.eligible.all()


def test_philly_machine_list_without_header(tmp_path: Path) -> None:
    """A machine list without its header line reads the same.

    Broken, the list as Philly may ship it would be refused or lose its first machine.
    """
    bare = tmp_path / "cluster_machine_list"
    bare.write_text("".join(PHILLY_MACHINES.read_text().splitlines(keepends=True)[1:]))
    with_header = philly_document(PHILLY_LOG, PHILLY_MACHINES)
    without = philly_document(PHILLY_LOG, bare)
    assert without["nodes"] == with_header["nodes"]
    assert without["jobs"] == with_header["jobs"]


def test_helios_jobs_on_the_cluster_of_the_folder() -> None:
    """Helios' README rows and built ones map as computed by hand, on Venus' 133 nodes.

    Broken, a user would simulate Helios jobs at the wrong times or sizes, or on a cluster
    of another size.
    """
    document = helios_document(HELIOS_LOG)
    instance = instance_from(document)
    assert document["name"] == "helios-venus"
    assert instance.type_ids == ("Venus",)
    assert len(document["nodes"]) == 133
    assert {node["gpus"]["Venus"] for node in document["nodes"]} == {8}
    # Job 1425516 was submitted first (18:40:00); the README's rows follow at 18:41:01...
    assert ids(document) == ["1425516", "1425511", "1425512", "1425513", "1425518"]
    assert instance.release.tolist() == [0, 61, 87, 88, 300]
    assert instance.duration[:, 0].tolist() == [3600, 36848, 249, 675233, 600]
    assert instance.gang.tolist() == [8, 1, 4, 1, 2]
    # Failed, cancelled, timed-out and node-failed jobs are kept: they held their GPUs.
    assert ("8 jobs read; left out: 1 without a GPU, 1 with a run time of 0, 1 larger than "
            "every node of their GPU types; 5 kept" in document["description"])


@pytest.mark.parametrize(("cluster", "name", "gpu_type", "nodes"), [
    ("earth", "helios-earth", "Earth", 143),
    ("Saturn", "helios-saturn", "Saturn", 262),
    ("3", "helios-3-nodes", "helios", 3),
    (2, "helios-2-nodes", "helios", 2),
])
def test_helios_cluster_by_name_or_node_count(cluster: str | int, name: str, gpu_type: str,
                                              nodes: int) -> None:
    """A cluster named (any case) or counted in nodes gives that many 8-GPU nodes.

    Broken, ``cluster`` would be ignored or misread, and the jobs run on the wrong cluster.
    """
    document = helios_document(HELIOS_LOG, cluster)
    assert document["name"] == name
    assert [t["id"] for t in document["gpu_types"]] == [gpu_type]
    assert len(document["nodes"]) == nodes
    assert document["nodes"][0]["gpus"] == {gpu_type: 8}


def test_helios_needs_a_cluster(tmp_path: Path) -> None:
    """A log outside a cluster's folder, or an unknown cluster, names ``cluster``.

    Broken, a user would get a cluster of a wrong size without being told, or a traceback.
    """
    elsewhere = tmp_path / "cluster_log.csv"
    shutil.copy(HELIOS_LOG, elsewhere)
    with pytest.raises(InputError) as caught:
        helios_document(elsewhere)
    assert caught.value.source == "`cluster`"
    assert f"(the folder of {elsewhere}) is not a Helios cluster" in caught.value.message
    for bad in ("Mars", 0, "1e3"):
        with pytest.raises(InputError) as caught:
            helios_document(HELIOS_LOG, bad)
        assert caught.value.source == "`cluster`"


@pytest.mark.parametrize("content", [None, "", "\n \n"], ids=["missing", "empty", "blank"])
def test_a_helios_log_that_is_missing_or_empty_is_blamed_before_the_cluster(
        tmp_path: Path, content: str | None) -> None:
    """A missing or empty log outside a cluster's folder names the file, not ``cluster``.

    The folder's name was checked first, so the error blamed the cluster.
    """
    log = tmp_path / "cluster_log.csv"
    if content is not None:
        log.write_text(content)
    with pytest.raises(InputError) as caught:
        helios_document(log)
    assert caught.value.source == str(log)
    assert caught.value.message.startswith("file not found" if content is None
                                           else "the file is empty")


def test_blank_lines_before_the_header_are_skipped(tmp_path: Path) -> None:
    """A table starting with blank lines reads as without them; its header line is named.

    It used to be called empty.
    """
    log = tmp_path / "Venus" / "cluster_log.csv"
    log.parent.mkdir()
    log.write_text("\n\n" + HELIOS_LOG.read_text())
    document = helios_document(log)
    assert ids(document) == ids(helios_document(HELIOS_LOG))
    log.write_text("\n\n" + _edit_text(",duration,queue", ",queue")(HELIOS_LOG.read_text()))
    with pytest.raises(InputError) as caught:
        helios_document(log)
    assert caught.value.path == "line 3" and "missing column duration" in caught.value.message


def test_pai_jobs_on_the_machine_spec() -> None:
    """PAI's job and task rows map as computed by hand, on 18 of the trace's real machines.

    Broken, a user would simulate PAI jobs with wrong gangs, run times or GPU types.
    """
    document = pai_document(PAI_JOBS, PAI_TASKS, PAI_MACHINES)
    instance = instance_from(document)
    # Lines of the job table, by submit time: 900, 1000, 1200 and 1500 s.
    assert ids(document) == [pai_name(3), pai_name(1), pai_name(8), pai_name(2)]
    assert instance.release.tolist() == [0, 100, 300, 600]
    # The longest GPU task: 7200 s beside a 1000 s evaluator; a CPU ps does not count.
    assert instance.duration[:, 0].tolist() == [7200, 3600, 100, 100]
    # ceil(3 x 200 % + 50 %) = 7; 2 x 50 % = 1; 100 % = 1; 25 % takes a whole GPU.
    assert instance.gang.tolist() == [7, 1, 1, 1]
    assert instance.type_ids == ("MISC", "P100", "T4", "V100", "V100M32")
    assert [document["jobs"][j]["allowed_types"] for j in range(4)] == [
        ["V100"], ["T4"], ["P100"], ["MISC"]]
    assert len(document["nodes"]) == 18  # the sample's 2 CPU machines hold no GPU
    assert ("8 jobs read; left out: 2 without a complete run time, 1 without a GPU, 1 larger "
            "than every node of their GPU types; 4 kept" in document["description"])
    assert "1 task rows of jobs the job table lacks ignored" in document["description"]


def test_pai_default_fleet() -> None:
    """Without a machine spec, the jobs run on the trace's own 1,814 GPU machines.

    Broken, a user without ``pai_machine_spec`` would get no cluster or a wrong one.
    """
    document = pai_document(PAI_JOBS, PAI_TASKS)
    instance = instance_from(document)
    assert len(document["nodes"]) == sum(count for count, _ in PAI_FLEET.values()) == 1814
    totals = instance.node_gpus.sum(axis=0).tolist()
    assert dict(zip(instance.type_ids, totals, strict=True)) == {
        "MISC": 2240, "P100": 1596, "T4": 994, "V100": 832, "V100M32": 1080}
    assert ids(document) == ids(pai_document(PAI_JOBS, PAI_TASKS, PAI_MACHINES))


def test_pai_tables_with_a_header(tmp_path: Path) -> None:
    """Tables with a header line naming the columns read as the headerless ones.

    Broken, a table a user saved with its ``.header`` line would be refused.
    """
    jobs = tmp_path / "pai_job_table.csv"
    jobs.write_text("job_name,inst_id,user,status,start_time,end_time\n" + PAI_JOBS.read_text())
    assert pai_document(jobs, PAI_TASKS, PAI_MACHINES)["jobs"] == pai_document(
        PAI_JOBS, PAI_TASKS, PAI_MACHINES)["jobs"]


def _gzip(path: Path, folder: Path) -> Path:
    out = folder / f"{path.name}.gz"
    out.write_bytes(gzip.compress(path.read_bytes()))
    return out


def _tar(path: Path, folder: Path, *extra: Path) -> Path:
    out = folder / f"{path.stem}.tar.gz"
    with tarfile.open(out, "w:gz") as archive:
        for member in (path, *extra):
            archive.add(member, arcname=member.name)
    return out


def test_compressed_traces_read_the_same(tmp_path: Path) -> None:
    """``.gz`` files and Alibaba's one-file ``.tar.gz`` archives read as the plain files.

    Broken, a user would have to unpack the traces as they ship before reading them.
    """
    plain = [philly_document(PHILLY_LOG, PHILLY_MACHINES), helios_document(HELIOS_LOG),
             pai_document(PAI_JOBS, PAI_TASKS, PAI_MACHINES)]
    packed = [
        philly_document(_gzip(PHILLY_LOG, tmp_path), _gzip(PHILLY_MACHINES, tmp_path)),
        helios_document(_gzip(HELIOS_LOG, tmp_path), "Venus"),
        pai_document(_tar(PAI_JOBS, tmp_path), _tar(PAI_TASKS, tmp_path),
                     _tar(PAI_MACHINES, tmp_path)),
    ]
    for one, other in zip(plain, packed, strict=True):
        assert (one["jobs"], one["nodes"]) == (other["jobs"], other["nodes"])


def test_limit_keeps_the_first_jobs_by_submit_time() -> None:
    """``limit`` keeps the first N jobs by submit time, and the description says so.

    Broken, a user trying a slice of a large trace would get other jobs, or all of them.
    """
    document = helios_document(HELIOS_LOG, limit=2)
    assert ids(document) == ["1425516", "1425511"]
    assert "2 kept, the first 2 of 5 by submit time" in document["description"]
    assert ids(philly_document(PHILLY_LOG, limit=10)) == PHILLY_KEPT


def test_statuses_select_jobs() -> None:
    """``statuses`` keeps jobs of those statuses only, releases counted from the first kept.

    Broken, a user studying completed jobs only would simulate the failed ones too.
    """
    document = philly_document(PHILLY_LOG, PHILLY_MACHINES, statuses={"Pass"})
    assert ids(document) == PHILLY_KEPT[1::2]
    assert [job["release_s"] for job in document["jobs"]] == [0, 10800 - 4299]
    assert "5 of a status not selected" in document["description"]
    assert ids(helios_document(HELIOS_LOG, statuses=["TIMEOUT", "NODE_FAIL"])) == [
        "1425516", "1425518"]
    assert ids(pai_document(PAI_JOBS, PAI_TASKS, PAI_MACHINES, statuses=("Failed",))) == [
        pai_name(2)]


@pytest.mark.parametrize(("call", "source", "words"), [
    (lambda: helios_document(HELIOS_LOG, limit=0), "`limit`", "a positive number of jobs"),
    (lambda: philly_document(PHILLY_LOG, statuses={"Passed"}), "`statuses`",
     "'Passed' given; Philly's statuses are Pass, Killed, Failed"),
    (lambda: pai_document(PAI_JOBS, PAI_TASKS, statuses=()), "`statuses`", "none given"),
    (lambda: helios_document(HELIOS_LOG, statuses={"SUSPENDED"}), str(HELIOS_LOG),
     "no job to simulate: 8 jobs read; left out: 8 of a status not selected"),
])
def test_bad_settings_are_refused(call: Callable[[], object], source: str, words: str) -> None:
    """A setting that selects nothing or is not what it should be is an InputError naming it.

    Broken, a typo in a status would silently simulate no job, or a traceback would show.
    """
    with pytest.raises(InputError) as caught:
        call()
    assert caught.value.source == source
    assert words in caught.value.message


def test_more_jobs_than_an_instance_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    """A trace with more jobs than an instance holds asks for ``limit``.

    Broken, a user would wait for the whole trace to be read before the instance is refused
    with no hint, or get a document no command accepts.
    """
    monkeypatch.setattr(cluster_traces, "MAX_JOBS", 3)
    with pytest.raises(InputError) as caught:
        helios_document(HELIOS_LOG)
    assert "5 jobs kept, and an instance holds at most 3: read a slice with `limit`" in (
        caught.value.message)
    assert len(helios_document(HELIOS_LOG, limit=3)["jobs"]) == 3


def _edit_text(old: str, new: str) -> Callable[[str], str]:
    def edit(text: str) -> str:
        assert old in text
        return text.replace(old, new, 1)
    return edit


def _edit_json(change: Callable[[Any], None]) -> Callable[[str], str]:
    def edit(text: str) -> str:
        data = json.loads(text)
        change(data)
        return json.dumps(data)
    return edit


def _set(path: tuple[Any, ...], value: Any) -> Callable[[Any], None]:
    def change(data: Any) -> None:
        for key in path[:-1]:
            data = data[key]
        data[path[-1]] = value
    return change


def _drop(index: int, key: str) -> Callable[[Any], None]:
    def change(data: Any) -> None:
        del data[index][key]
    return change


#: One defect per case: the sample file changed, the path the error names, words it holds.
MALFORMED: dict[str, tuple[Path, Callable[[str], str], str, str]] = {
    "philly bad time": (PHILLY_LOG, _edit_text('"2017-10-07 00:05:00"', '"2017-10-07 0:05:00"'),
                        "[1].attempts[0].start_time",
                        "start_time is '2017-10-07 0:05:00'; expected a time YYYY-MM-DD"),
    "philly time not text": (PHILLY_LOG, _edit_json(_set((2, "submitted_time"), 1507341600)),
                             "[2].submitted_time", "submitted_time is 1507341600; expected a "
                             "time YYYY-MM-DD HH:MM:SS or None"),
    "philly missing field": (PHILLY_LOG, _edit_json(_drop(2, "submitted_time")),
                             "[2].submitted_time", "required field is missing"),
    "philly gpus not a list": (PHILLY_LOG, _edit_json(_set((1, "attempts", 0, "detail", 0,
                                                            "gpus"), "gpu0")),
                               "[1].attempts[0].detail[0].gpus", "gpus is 'gpu0'; expected a list"),
    "philly job not an object": (PHILLY_LOG, _edit_json(_set((3,), "job")), "[3]",
                                 "job is 'job'; expected an object"),
    "philly not a list": (PHILLY_LOG, lambda _: '{"jobs": []}', "", "expected a JSON list of jobs"),
    "philly empty file": (PHILLY_LOG, lambda _: " \n", "", "the file is empty"),
    "philly malformed JSON": (PHILLY_LOG, lambda text: text[:-3], "", "malformed JSON at line"),
    "philly bad GPU memory": (PHILLY_MACHINES, _edit_text("m47,8, 24GB", "m47,8, 24 gigs"),
                              "line 3", "single GPU mem is ' 24 gigs'; expected a GPU memory"),
    "philly GPUs not a number": (PHILLY_MACHINES, _edit_text("m12,4,", "m12,four,"), "line 5",
                                 "number of GPUs is 'four'; expected a whole number"),
    "helios bad time": (HELIOS_LOG, _edit_text("2020-06-09 18:41:27,", "2020/06/09 18:41:27,"),
                        "line 3", "submit_time is '2020/06/09 18:41:27'; expected a time"),
    "helios impossible date": (HELIOS_LOG, _edit_text("2020-06-09 18:41:27,", "2020-13-09 "
                                                      "18:41:27,"), "line 3", "submit_time is"),
    "helios missing column": (HELIOS_LOG, _edit_text(",duration,queue", ",queue"), "line 1",
                              "missing column duration"),
    "helios GPUs not a number": (HELIOS_LOG, _edit_text("1425513,uzqls,vcpDC,1,",
                                                        "1425513,uzqls,vcpDC,one,"),
                                 "line 4", "gpu_num is 'one'; expected a whole number"),
    "helios negative duration": (HELIOS_LOG, _edit_text(",249,", ",-249,"), "line 3",
                                 "duration is '-249'; expected a number from 0"),
    "helios short row": (HELIOS_LOG, _edit_text(",36848,0", ",36848"), "line 2",
                         "11 fields; expected 12"),
    "helios job twice": (HELIOS_LOG, _edit_text("1425518,", "1425512,"), "line 9",
                         "job id '1425512' is also the id of the job at line 3"),
    "helios empty file": (HELIOS_LOG, lambda _: "", "line 1", "the file is empty"),
    "pai GPUs not a number": (PAI_TASKS, _edit_text(",25.0,MISC", ",lots,MISC"), "line 3",
                              "plan_gpu is 'lots'; expected a number from 0"),
    "pai infinite instances": (PAI_TASKS, _edit_text(",16.0,", ",inf,"), "line 8",
                               "inst_num is 'inf'; expected a number from 0"),
    "pai negative submit": (PAI_JOBS, _edit_text(",1500.0,", ",-1500.0,"), "line 2",
                            "start_time is '-1500.0'; expected a number from 0"),
    "pai job twice": (PAI_JOBS, lambda text: text + text.splitlines()[0] + "\n", "line 9",
                      "is also the job at line 1"),
    "pai missing column": (PAI_JOBS, lambda text: "job_name,inst_id,user,status,end_time\n" + text,
                           "line 1", "missing column start_time"),
    "pai empty file": (PAI_JOBS, lambda _: "", "line 1", "the file is empty"),
    "pai machine GPUs not a number": (PAI_MACHINES, _edit_text("CPU,96,512,0", "CPU,96,512,none"),
                                      "line 1", "cap_gpu is 'none'; expected a whole number"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_input_names_file_place_and_field(case: str, tmp_path: Path) -> None:
    """A malformed value is an InputError naming the file, the line or JSON path, the field.

    Broken, a user would get a traceback, or an error that does not say what to fix where.
    """
    sample, edit, where, words = MALFORMED[case]
    bad = tmp_path / sample.parent.name / sample.name
    bad.parent.mkdir()
    bad.write_text(edit(sample.read_text()))
    files = {PHILLY_LOG: lambda: philly_document(bad, PHILLY_MACHINES),
             PHILLY_MACHINES: lambda: philly_document(PHILLY_LOG, bad),
             HELIOS_LOG: lambda: helios_document(bad),
             PAI_JOBS: lambda: pai_document(bad, PAI_TASKS, PAI_MACHINES),
             PAI_TASKS: lambda: pai_document(PAI_JOBS, bad, PAI_MACHINES),
             PAI_MACHINES: lambda: pai_document(PAI_JOBS, PAI_TASKS, bad)}
    with pytest.raises(InputError) as caught:
        files[sample]()
    assert caught.value.source == str(bad)
    assert caught.value.path == where
    assert words in caught.value.message


def test_broken_archives_are_refused(tmp_path: Path) -> None:
    """A corrupt ``.gz`` or an archive of several files is an InputError naming the file.

    Broken, a user would see a traceback from gzip or tarfile, or a table read from the
    wrong member of an archive.
    """
    corrupt = tmp_path / "cluster_log.csv.gz"
    corrupt.write_bytes(gzip.compress(HELIOS_LOG.read_bytes())[:-20])
    with pytest.raises(InputError) as caught:
        helios_document(corrupt, "Venus")
    assert caught.value.source == str(corrupt)
    assert "cannot read the compressed file" in caught.value.message
    both = _tar(PAI_JOBS, tmp_path, PAI_TASKS)
    with pytest.raises(InputError) as caught:
        pai_document(both, PAI_TASKS)
    assert caught.value.source == str(both)
    assert "the archive holds 2 files; expected one table" in caught.value.message
    missing = tmp_path / "pai_task_table.tar.gz"
    with pytest.raises(InputError, match="file not found"):
        pai_document(PAI_JOBS, missing)


def test_trace_formats_describe_the_readers() -> None:
    """Each registered format's files and options are keywords of its reader.

    Broken, a command line built from the registry would pass keywords the reader does not
    take, or leave out ones it needs.
    """
    assert set(TRACE_FORMATS) == {"philly", "helios", "pai", "itp", "itp-elasticflow"}
    for name, trace in TRACE_FORMATS.items():
        assert trace.name == name
        parameters = inspect.signature(trace.read).parameters
        inputs = (*trace.files, *trace.options)
        assert set(parameters) == {i.parameter for i in inputs} | {"limit", "statuses"}
        for given in inputs:
            needed = parameters[given.parameter].default is inspect.Parameter.empty
            assert given.required == needed, (name, given.parameter)
    document = TRACE_FORMATS["helios"].read(cluster_log=HELIOS_LOG, cluster="Venus", limit=1)
    assert ids(document) == ["1425516"]


@pytest.mark.parametrize("make", [
    lambda: philly_document(PHILLY_LOG, PHILLY_MACHINES),
    lambda: helios_document(HELIOS_LOG, 2),
    lambda: pai_document(PAI_JOBS, PAI_TASKS, PAI_MACHINES),
])
def test_documents_simulate(make: Callable[[], dict[str, Any]], tmp_path: Path,
                            gpuplan: Gpuplan) -> None:
    """``gpuplan simulate`` runs each document, preemptive policy and all, and checks its log.

    Broken, a user would convert a trace only to have the simulator refuse it.
    """
    workload = tmp_path / "workload.json"
    workload.write_text(json.dumps(make()))
    outcome = gpuplan("simulate", workload, "--policy", "las", "-o", tmp_path / "run.json")
    assert outcome.code == 0, outcome.err
    run = json.loads((tmp_path / "run.json").read_text())
    assert run["run"]["metrics"]["mean_jct_h"] > 0

