"""Reading Slurm's files: the fleet of slurm.conf and gres.conf, what ran from sacct -P."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from gpuplan import read_instance
from gpuplan.core.errors import InputError
from gpuplan.core.schedule import Schedule, ViolationKind
from gpuplan.readers.fleet import fleet_document
from gpuplan.readers.instance_file import instance_from_data
from gpuplan.readers.slurm import expand_hostlist, read_sacct, read_slurm_fleet, read_squeue
from gpuplan.verify import verify_schedule
from tests.conftest import DATA, INSTANCES

CLUSTERS = INSTANCES / "clusters"
SLURM = DATA / "slurm"
SLEEPERS = SLURM / "sleepers.json"
#: When the sleepers plan of tests/data/slurm/sleepers_sacct.txt was started (its epoch).
SLEEPERS_EPOCH = datetime(2026, 12, 7, 4, 29, 42, tzinfo=UTC)
#: The snapshot plan's instance, its epoch and when its sacct and squeue outputs were
#: taken (tests/data/slurm/README.md).
SNAPSHOT = SLURM / "snapshot.json"
SNAPSHOT_EPOCH = datetime(2026, 12, 7, 19, 29, 19, tzinfo=UTC)
SNAPSHOT_AT = 61.0
PAUSED_EPOCH = datetime(2026, 12, 7, 6, 0, 0, tzinfo=UTC)


def test_host_lists_expand_as_slurm_expands_them() -> None:
    """Ranges keep their padding, lists and several brackets multiply."""
    assert expand_hostlist("gpu[01-03,08],cpu1", "f", "l") == [
        "gpu01", "gpu02", "gpu03", "gpu08", "cpu1"]
    assert expand_hostlist("r[1-2]n[1-2]", "f", "l") == ["r1n1", "r1n2", "r2n1", "r2n2"]


@pytest.mark.parametrize("text", ["gpu[1-", "gpu[3-1]", "gpu[a-b]", "gpu]1[", "a,,b"])
def test_bad_host_lists_are_refused(text: str) -> None:
    """An unbalanced bracket, a reversed or non-numeric range, an empty name: refused."""
    with pytest.raises(InputError, match=r"host list|range"):
        expand_hostlist(text, "f", "line 3")


def test_the_campus_fleet_reads_with_types_from_gres_conf() -> None:
    """The shipped campus slurm.conf and gres.conf read as written.

    Ranges, DEFAULT, a continued line, Include, socket bindings, untyped GPUs typed by
    gres.conf; a node without GPUs is left out.
    """
    fleet = read_slurm_fleet(CLUSTERS / "slurm.conf", CLUSTERS / "gres.conf")
    nodes = {n["id"]: n for n in fleet["nodes"]}
    assert list(nodes) == ["a100-01", "a100-02", "v100-01", "v100-02", "v100-03", "l4-01"]
    assert nodes["a100-01"]["gpus"] == {"a100": 4}
    assert nodes["a100-01"]["resources"] == {"cpu_milli": 32000, "memory_mib": 515000}
    assert nodes["v100-02"]["gpus"] == {"v100": 8}
    assert nodes["v100-02"]["resources"] == {"cpu_milli": 40000, "memory_mib": 385000}
    assert nodes["l4-01"]["gpus"] == {"l4": 2}
    assert [t["id"] for t in fleet["gpu_types"]] == ["a100", "l4", "v100"]


def test_partitions_read_with_their_gpu_nodes() -> None:
    """PartitionName lines become partitions: DEFAULT applied, host lists and ALL expanded.

    A partition keeps its nodes that hold GPUs (the campus 'gpu' partition of ALL nodes
    leaves out login01), and one with none (a CPU partition) is left out.
    """
    campus = read_slurm_fleet(CLUSTERS / "slurm.conf", CLUSTERS / "gres.conf")
    assert campus["partitions"] == {"gpu": ["a100-01", "a100-02", "v100-01", "v100-02",
                                            "v100-03", "l4-01"]}


def test_partition_defaults_host_lists_and_cpu_partitions(tmp_path: Path) -> None:
    """DEFAULT keys apply to the partitions after them; a CPU-only partition is left out."""
    (tmp_path / "slurm.conf").write_text(
        "NodeName=g[1-3] Gres=gpu:a:2\nNodeName=c1 CPUs=8\n"
        "PartitionName=DEFAULT MaxTime=INFINITE State=UP Nodes=g1\n"
        "PartitionName=small\nPartitionName=big Nodes=g[2-3] Default=YES\n"
        "PartitionName=cpu Nodes=c1\n")
    fleet = read_slurm_fleet(tmp_path / "slurm.conf")
    assert fleet["partitions"] == {"small": ["g1"], "big": ["g2", "g3"]}


def test_jobs_put_under_the_fleet_run_in_its_partitions(tmp_path: Path) -> None:
    """``import slurm --jobs``: a job naming the cluster's partition keeps to its nodes."""
    jobs = tmp_path / "jobs.yaml"
    jobs.write_text("objective: makespan\njobs:\n  - {id: a, gpus: 2, duration_s: 60, "
                    "partition: gpu}\n")
    document = fleet_document(read_slurm_fleet(CLUSTERS / "slurm.conf",
                                               CLUSTERS / "gres.conf"),
                              str(CLUSTERS / "slurm.conf"), "campus", jobs)
    instance = instance_from_data(document, "campus")
    assert instance.partition_ids == ("gpu",)
    assert instance.job_partition.tolist() == [0]


@pytest.mark.parametrize(("conf", "line", "problem"), [
    ("NodeName=n1 Gres=gpu:a:2\nPartitionName=p Nodes=n1 MaxTme=1\n", "line 2",
     "unknown PartitionName key 'maxtme'"),
    ("NodeName=n1 Gres=gpu:a:2\nPartitionName=p Nodes=n[1-2]\n", "line 2 Nodes",
     "node 'n2' is not in slurm.conf"),
    ("NodeName=n1 Gres=gpu:a:2\nPartitionName=p Nodes=n1\nPartitionName=p Nodes=n1\n",
     "line 3", "partition 'p' is defined twice"),
])
def test_bad_partition_lines_name_the_line(tmp_path: Path, conf: str, line: str,
                                           problem: str) -> None:
    """An unknown key, a node slurm.conf does not define, a partition given twice."""
    (tmp_path / "slurm.conf").write_text(conf)
    with pytest.raises(InputError) as error:
        read_slurm_fleet(tmp_path / "slurm.conf")
    assert error.value.path == line
    assert problem in str(error.value)


def test_untyped_gpus_without_gres_conf_are_type_gpu() -> None:
    """Without gres.conf, Gres=gpu:N stays untyped: the type ``gpu``."""
    fleet = read_slurm_fleet(CLUSTERS / "slurm.conf")
    assert {n["id"]: n["gpus"] for n in fleet["nodes"]}["l4-01"] == {"gpu": 2}


@pytest.mark.parametrize(("conf", "gres", "line", "problem"), [
    ("NodeName=n1 Gres=gpu:a:2 CPUz=4\n", None, "line 1", "unknown NodeName key 'cpuz'"),
    ("# c\nNodeName=n[1-2] Gres=gpu:a:2\nNodeName=n2 Gres=gpu:a:1\n", None, "line 3",
     "defined twice"),
    ("NodeName=n1 Gres=gpu:a:x\n", None, "line 1", "not a whole number"),
    ("NodeName=n1 Gres=gpu:a:2 oops\n", None, "line 1", "expected KEY=VALUE"),
    ("NodeName=n1 Gres=gpu:a:b:c\n", None, "line 1", "expected gpu:N or gpu:TYPE:N"),
    ("NodeName=n1 CPUs=4\n", None, "", "no NodeName line gives GPUs"),
    ("NodeName=n1 Gres=gpu:2\n", "NodeName=n9 Name=gpu Type=a Count=2\n", "line 1",
     "not in slurm.conf"),
    ("NodeName=n1 Gres=gpu:2\n", "NodeName=n1 Name=gpu Type=a Count=3\n", "line 1",
     "has GPUs"),
    ("NodeName=n1 Gres=gpu:2\n", "NodeName=n1 Name=gpu Typo=a Count=2\n", "line 1",
     "unknown gres.conf key"),
])
def test_bad_lines_name_the_file_and_line(tmp_path: Path, conf: str, gres: str | None,
                                          line: str, problem: str) -> None:
    """Each malformed or unknown line is refused with its file, line and the problem.

    With a gres.conf, the cases are its lines.
    """
    (tmp_path / "slurm.conf").write_text(conf)
    if gres is not None:
        (tmp_path / "gres.conf").write_text(gres)
    with pytest.raises(InputError) as error:
        read_slurm_fleet(tmp_path / "slurm.conf",
                         None if gres is None else tmp_path / "gres.conf")
    assert error.value.path == line
    assert Path(error.value.source).name == ("slurm.conf" if gres is None else "gres.conf")
    assert problem in str(error.value)


def test_what_slurm_ran_reads_back_as_a_schedule_that_verifies() -> None:
    """Real sacct output of the sleepers plan (Slurm 22.05) reads back and verifies.

    Every job, its node, its GPU type (Slurm writes it in lower case), its times from the
    epoch.
    """
    instance = read_instance(SLEEPERS)
    ran = read_sacct(DATA / "slurm" / "sleepers_sacct.txt", instance, SLEEPERS_EPOCH)
    by_job = {s.job: s for s in ran.segments}
    assert set(by_job) == set(instance.job_ids)
    assert (by_job["train"].node, by_job["train"].gpu_type) == ("dgx-a", "A100-80GB")
    assert len(by_job["train"].gpu_ids) == 8
    assert (by_job["prepare"].start_s, by_job["prepare"].end_s) == (0.0, 6.0)
    assert by_job["evaluate"].start_s == 15.0
    assert verify_schedule(instance, ran).ok


@pytest.mark.parametrize(("text", "problem"), [
    ("JobID|JobName|State\n", "missing column(s) Start, End, NodeList"),
    ("JobID|JobName|State|Start|End|NodeList\n1|prepare|COMPLETED|x|y\n", "5 fields"),
    ("JobID|JobName|State|Start|End|NodeList\n1|other|COMPLETED|2026-12-07T04:29:42|"
     "2026-12-07T04:29:48|dgx-a\n", "job name 'other' is not a job"),
    ("JobID|JobName|State|Start|End|NodeList\n1|prepare|COMPLETED|2026-12-07T04:29:42|"
     "2026-12-07T04:29:48|gpu99\n", "node 'gpu99'"),
    ("JobID|JobName|State|Start|End|NodeList\n1|prepare|COMPLETED|yesterday|"
     "2026-12-07T04:29:48|dgx-a\n", "yesterday"),
])
def test_bad_sacct_rows_name_the_line(tmp_path: Path, text: str, problem: str) -> None:
    """A missing column, a short row, an unknown job or node, a bad time: refused."""
    (tmp_path / "sacct.txt").write_text(text)
    with pytest.raises(InputError) as error:
        read_sacct(tmp_path / "sacct.txt", read_instance(SLEEPERS), SLEEPERS_EPOCH)
    assert problem in str(error.value)
    assert error.value.path.startswith("line ")


def test_jobs_that_never_started_are_unplaced_with_their_state(tmp_path: Path) -> None:
    """A job Slurm cancelled before it started is unplaced, its state the reason.

    Steps (JobID with a dot) are skipped.
    """
    lines = (DATA / "slurm" / "sleepers_sacct.txt").read_text().splitlines()
    lines = [line.replace("COMPLETED|2026-12-07T04:29:57|2026-12-07T04:30:02",
                          "CANCELLED by 0|Unknown|2026-12-07T04:30:02") for line in lines]
    lines.append("29.batch|batch|COMPLETED|2026-12-07T04:29:42|2026-12-07T04:29:48|dgx-a|")
    (tmp_path / "sacct.txt").write_text("\n".join(lines) + "\n")
    ran = read_sacct(tmp_path / "sacct.txt", read_instance(SLEEPERS), SLEEPERS_EPOCH)
    assert [(u.job, u.reason) for u in ran.unplaced] == [
        ("evaluate", "ended unsuccessfully: Slurm state CANCELLED by 0")]


def _snapshot(folder: Path, text: str, at: float | None = SNAPSHOT_AT) -> Schedule:
    """What a sacct output (a snapshot of the running plan, as it was or edited) reads as."""
    (folder / "sacct.txt").write_text(text)
    return read_sacct(folder / "sacct.txt", read_instance(SNAPSHOT), SNAPSHOT_EPOCH, at)


def test_a_running_plan_reads_as_done_running_not_started_and_failed(tmp_path: Path) -> None:
    """Real sacct output of the snapshot plan 61 s in (Slurm 22.05), job by job.

    prepare and embed are done as they ran; train (which started 1 s late) and sweep run
    to their planned ends at the instance's 900 s; evaluate and report wait, and smoke
    failed: unplaced, for a re-plan to plan. What ran verifies; only the jobs not placed
    are missing.
    """
    instance = read_instance(SNAPSHOT)
    ran = _snapshot(tmp_path, (SLURM / "snapshot_sacct.txt").read_text())
    assert {s.job: (s.start_s, s.end_s) for s in ran.segments} == {
        "prepare": (0.0, 10.0), "sweep": (0.0, 900.0), "train": (11.0, 911.0),
        "embed": (20.0, 32.0)}
    assert {u.job: u.reason for u in ran.unplaced} == {
        "evaluate": "not started: Slurm state PENDING",
        "smoke": "ended unsuccessfully: Slurm state FAILED",
        "report": "not started: Slurm state PENDING"}
    kinds = {v.kind for v in verify_schedule(instance, ran).violations}
    assert kinds == {ViolationKind.UNPLACED}


def test_squeue_gives_the_same_running_state_and_the_plan_the_rest(tmp_path: Path) -> None:
    """Real squeue output of the same snapshot: running and waiting jobs as sacct reads them.

    The jobs squeue no longer lists ran as planned (smoke too: squeue cannot tell that it
    failed).
    """
    instance = read_instance(SNAPSHOT)
    plan = Schedule.read(SLURM / "snapshot_plan.json")
    queued = read_squeue(SLURM / "snapshot_squeue.txt", instance, SNAPSHOT_EPOCH,
                         SNAPSHOT_AT, plan)
    ran = _snapshot(tmp_path, (SLURM / "snapshot_sacct.txt").read_text())
    running = {"train", "sweep"}
    assert [s for s in queued.segments if s.job in running] == [
        s for s in ran.segments if s.job in running]
    planned = {s.job: s for s in plan.segments}
    assert [s.model_dump() for s in queued.segments if s.job not in running] == [
        planned[job].model_copy(update={"work": None}).model_dump()
        for job in ("prepare", "smoke", "embed")]
    assert [u.job for u in queued.unplaced] == ["evaluate", "report"]
    assert verify_schedule(instance, queued).violations[0].kind is ViolationKind.UNPLACED


def test_a_job_resumed_in_a_later_slurm_job_runs_what_is_left(tmp_path: Path) -> None:
    """A preemptible job that did half its work in a first segment runs the other half.

    paused.json's long job (10 s) ran 5 s, then urgent; its second segment runs from 9 s,
    so it ends at 14 s; the record verifies.
    """
    instance = read_instance(SLURM / "paused.json")
    times = {k: (PAUSED_EPOCH + timedelta(seconds=k)).strftime("%Y-%m-%dT%H:%M:%S")
             for k in (0, 5, 9)}
    (tmp_path / "sacct.txt").write_text(
        "JobID|JobName|State|Start|End|NodeList|AllocTRES\n"
        f"1|long|COMPLETED|{times[0]}|{times[5]}|l4-01|gres/gpu:l4=1\n"
        f"2|urgent|COMPLETED|{times[5]}|{times[9]}|l4-01|gres/gpu:l4=2\n"
        f"3|long|RUNNING|{times[9]}|Unknown|l4-01|gres/gpu:l4=1\n")
    ran = read_sacct(tmp_path / "sacct.txt", instance, PAUSED_EPOCH, 11.0)
    assert [(s.job, s.start_s, s.end_s) for s in ran.segments] == [
        ("long", 0.0, 5.0), ("urgent", 5.0, 9.0), ("long", 9.0, 14.0)]
    assert verify_schedule(instance, ran).ok


@pytest.mark.parametrize(("edit", "at", "where", "says"), [
    (("", ""), None, "line 5", "job 'train' is RUNNING: give the instant"),
    (("", ""), 1000.0, "line 3", "still runs at 1000 s, past its planned end at 900 s"),
    (("", ""), 30.0, "line 6", "has a time 32 s from the epoch, after the output was taken"),
    (("|RUNNING|2026-12-07T19:29:30|", "|SUSPENDED|2026-12-07T19:29:30|"), SNAPSHOT_AT,
     "line 5", "job 'train' is SUSPENDED: it holds its GPUs without running"),
    (("|FAILED|", "|MELTED|"), SNAPSHOT_AT, "line 4", "unknown Slurm state 'MELTED'"),
    (("5|train|RUNNING|2026-12-07T19:29:30|Unknown|dgx-a|",
      "5|train|RUNNING|Unknown|Unknown|dgx-a|"), SNAPSHOT_AT, "line 5",
     "job 'train' is RUNNING but has no start time"),
    (("8|report|PENDING|", "8|prepare|PENDING|"), SNAPSHOT_AT, "line 8",
     "job 'prepare' ran in part (line 2) and is PENDING for the rest"),
])
def test_a_state_gpuplan_cannot_take_is_refused_naming_the_line(
        tmp_path: Path, edit: tuple[str, str], at: float | None, where: str, says: str) -> None:
    """A state that no plan can continue is an InputError naming the file's line.

    No time for a running job, one past its estimate, a time after the snapshot, a
    suspended job, an unknown state, a running job without a start, a job paused between
    its segments.
    """
    text = (SLURM / "snapshot_sacct.txt").read_text().replace(*edit)
    with pytest.raises(InputError) as error:
        _snapshot(tmp_path, text, at)
    assert (error.value.path, says in error.value.message) == (where, True), error.value


#: A switch tree of uneven depth: leaf3 hangs from the core directly.
TOPOLOGY = """# leaves, a spine over two of them, a core over the spine and the third leaf
SwitchName=leaf1 Nodes=n[1-2]
SwitchName=leaf2 Nodes=n3
SwitchName=spine Switches=leaf[1-2] LinkSpeed=100
switchname=leaf3 nodes=n4
SwitchName=core Switches=spine,leaf3
"""
NODES = "NodeName=n[1-4] Gres=gpu:a100:4 CPUs=64 RealMemory=512000\nNodeName=login\n"


def test_topology_conf_reads_as_tiers_of_switches(tmp_path: Path) -> None:
    """Each node is labelled with its switch at each tier, counted from the leaves.

    A tree of uneven depth nests still: n4's leaf hangs from the core, which is its
    tier-2 domain too. Host lists, any case of the keys, LinkSpeed and comments read as
    Slurm reads them.
    """
    (tmp_path / "slurm.conf").write_text(NODES)
    (tmp_path / "topology.conf").write_text(TOPOLOGY)
    fleet = read_slurm_fleet(tmp_path / "slurm.conf", topology=tmp_path / "topology.conf")
    assert fleet["topology"] == {"levels": ["tier3", "tier2", "tier1"]}
    labels = {n["id"]: n["topology"] for n in fleet["nodes"]}
    assert labels["n1"] == {"tier3": "core", "tier2": "spine", "tier1": "leaf1"}
    assert labels["n3"] == {"tier3": "core", "tier2": "spine", "tier1": "leaf2"}
    assert labels["n4"] == {"tier3": "core", "tier2": "core", "tier1": "leaf3"}


@pytest.mark.parametrize(("text", "line", "problem"), [
    ("SwitchName=s1 Nodes=n9\n", "line 1 Nodes", "node 'n9' is not in slurm.conf"),
    ("SwitchName=s1 Nodes=n1 Speed=1\n", "line 1", "unknown topology.conf key 'speed'"),
    ("Nodes=n1\n", "line 1", "names a switch"),
    ("SwitchName=s1 Nodes=n1 Switches=s2\n", "line 1", "one of them"),
    ("SwitchName=s1\n", "line 1", "one of them"),
    ("SwitchName=s1 Nodes=n1\nSwitchName=s1 Nodes=n2\n", "line 2", "defined twice"),
    ("SwitchName=top Switches=s[1-2]\nSwitchName=s1 Nodes=n1\n", "line 1 Switches",
     "switch 's2' is not defined"),
    ("SwitchName=s1 Nodes=n1\nSwitchName=a Switches=s1\nSwitchName=b Switches=s1\n",
     "line 3 Switches", "switch 's1' is under 'a' and 'b'"),
    ("SwitchName=s1 Nodes=n1\nSwitchName=s2 Nodes=n1\n", "line 2 Nodes",
     "node 'n1' is under the leaf switches 's1' and 's2'"),
    ("SwitchName=a Switches=b\nSwitchName=b Switches=a\n", "line 1", "in a cycle"),
])
def test_bad_topology_lines_name_the_file_line_and_key(tmp_path: Path, text: str,
                                                       line: str, problem: str) -> None:
    """An unknown node or key, a switch that is not a tree's: refused with file and line."""
    (tmp_path / "slurm.conf").write_text(NODES)
    (tmp_path / "topology.conf").write_text(text)
    with pytest.raises(InputError) as error:
        read_slurm_fleet(tmp_path / "slurm.conf", topology=tmp_path / "topology.conf")
    assert Path(error.value.source).name == "topology.conf"
    assert error.value.path == line
    assert problem in str(error.value)


def test_gangs_over_nodes_and_shards_read_back_as_they_ran() -> None:
    """Real sacct output of the racks plan (Slurm 22.05): host lists and shards.

    A job over h[3-4] holds 4 GPUs on each node and names the first; the two jobs that
    shared the L4 by shards hold it both; what ran verifies.
    """
    instance = read_instance(DATA / "slurm" / "racks.json")
    ran = read_sacct(DATA / "slurm" / "racks_sacct.txt", instance,
                     datetime(2026, 12, 7, 13, 47, 33, tzinfo=UTC))
    by_job = {s.job: s for s in ran.segments}
    assert (by_job["gang"].node, by_job["gang"].gpu_ids) == (
        "h3", ["h3/0", "h3/1", "h3/2", "h3/3", "h4/0", "h4/1", "h4/2", "h4/3"])
    assert len(by_job["wide"].gpu_ids) == 16
    assert by_job["infer-1"].gpu_ids == by_job["infer-2"].gpu_ids == ["l1/0"]
    assert (by_job["cpu"].node, by_job["cpu"].gpu_ids) == ("h4", [])
    assert verify_schedule(instance, ran).ok
