"""gpuplan import and export: the loop from a cluster's files to its scheduler and back."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gpuplan import read_instance
from gpuplan.readers.slurm import read_slurm_fleet
from tests.conftest import DATA, INSTANCES, Gpuplan

CLUSTERS = INSTANCES / "clusters"
SLURM = DATA / "slurm"
EPOCH = "2026-12-07T06:00:00+00:00"


def _directives(script: Path) -> dict[str, str]:
    found = re.findall(r"^#SBATCH (--[a-z-]+)=(.*)$", script.read_text(), re.MULTILINE)
    return dict(found)


def test_import_slurm_alone_writes_a_fleet_to_add_jobs_to(gpuplan: Gpuplan,
                                                          tmp_path: Path) -> None:
    """Without --jobs: the GPU types and nodes with their CPUs and memory, no jobs.

    --no-node-resources leaves CPUs and memory out.
    """
    out = tmp_path / "fleet.json"
    outcome = gpuplan("import", "slurm", CLUSTERS / "slurm.conf", CLUSTERS / "gres.conf",
                      "-o", out, "--name", "campus")
    assert outcome.code == 0, outcome.err
    fleet = json.loads(out.read_text())
    assert (fleet["name"], fleet["jobs"]) == ("campus", [])
    assert sum(sum(n["gpus"].values()) for n in fleet["nodes"]) == 34
    assert fleet["nodes"][0]["resources"] == {"cpu_milli": 32000, "memory_mib": 515000}
    gpuplan("import", "slurm", CLUSTERS / "slurm.conf", CLUSTERS / "gres.conf", "-o", out,
            "--no-node-resources")
    assert all("resources" not in n for n in json.loads(out.read_text())["nodes"])


def test_the_loop_from_slurm_conf_to_batch_scripts(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """From slurm.conf to batch scripts: import slurm --jobs, solve, export slurm.

    Each script names a node of slurm.conf, a GPU type it has, the begin time and the
    instance's command.
    """
    instance, plan, out = tmp_path / "campus.json", tmp_path / "plan.json", tmp_path / "out"
    assert gpuplan("import", "slurm", CLUSTERS / "slurm.conf", CLUSTERS / "gres.conf",
                   "--jobs", CLUSTERS / "jobs.yaml", "-o", instance).code == 0
    assert gpuplan("solve", instance, "--method", "greedy", "-o", plan).code == 0
    outcome = gpuplan("export", "slurm", plan, "--instance", instance, "-o", out, "--epoch",
                      EPOCH)
    assert outcome.code == 0, outcome.err
    fleet = {n["id"]: n["gpus"] for n in read_slurm_fleet(CLUSTERS / "slurm.conf",
                                                          CLUSTERS / "gres.conf")["nodes"]}
    scripts = sorted((out / "jobs").glob("*.sbatch"))
    assert len(scripts) == 8
    for script in scripts:
        directives = _directives(script)
        gpu_type = directives["--gres"].split(":")[1]
        assert gpu_type in fleet[directives["--nodelist"]]
        assert directives["--begin"].startswith("2026-12-07T")
    pretrain = next(s for s in scripts if "pretrain" in s.name).read_text()
    assert pretrain.rstrip().endswith("torchrun --nproc-per-node=4 pretrain.py")
    submit = (out / "submit.sh").read_text()
    assert re.search(r"--dependency=afterok:\$j\d+ jobs/\d+-pretrain.sbatch", submit)


def test_import_with_jobs_refuses_types_the_cluster_lacks(gpuplan: Gpuplan,
                                                          tmp_path: Path) -> None:
    """A job timed only on a GPU type slurm.conf does not have: exit 2, nothing written."""
    jobs = tmp_path / "jobs.yaml"
    jobs.write_text("objective: makespan\njobs:\n  - {id: j, gpus: 1, duration_s: {h100: 60}}\n")
    outcome = gpuplan("import", "slurm", CLUSTERS / "slurm.conf", "--jobs", jobs, "-o",
                      tmp_path / "out.json")
    assert outcome.code == 2
    assert "h100" in outcome.err
    assert not (tmp_path / "out.json").exists()


def test_import_kubernetes_writes_the_gpu_nodes(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """The output of kubectl get nodes -o json becomes a fleet of GPU nodes."""
    out = tmp_path / "fleet.json"
    assert gpuplan("import", "kubernetes", CLUSTERS / "nodes.json", "-o", out).code == 0
    assert [n["id"] for n in json.loads(out.read_text())["nodes"]] == [
        "gke-pool-a100-1", "dgx-h100-7"]


def test_slurm_scripts_say_where_when_and_how_long(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """Each script starts where and when the plan says, for as long.

    --begin is the epoch plus the start, --nodelist and the GPUs the plan's, --time the
    length with the margin and a minute; afterok follows the instance's dependencies.
    """
    outcome = gpuplan("export", "slurm", SLURM / "sleepers_plan.json", "--instance",
                      SLURM / "sleepers.json", "-o", tmp_path, "--epoch", EPOCH,
                      "--time-margin", "0.5", "--gpu-request", "gpus-per-node")
    assert outcome.code == 0, outcome.err
    train = _directives(tmp_path / "jobs" / "4-train.sbatch")
    assert train == {"--job-name": "train", "--begin": "2026-12-07T06:00:06",
                     "--nodes": "1", "--ntasks": "1", "--nodelist": "dgx-a",
                     "--gpus-per-node": "A100-80GB:8", "--time": "0-00:01:12"}
    submit = (tmp_path / "submit.sh").read_text()
    assert "j4=$(submit --dependency=afterok:$j1 jobs/4-train.sbatch)" in submit
    assert "j7=$(submit --dependency=afterok:$j4 jobs/7-evaluate.sbatch)" in submit
    assert "j5=$(submit jobs/5-sweep-2.sbatch)" in submit
    assert 'echo "train,1,$j4" >> "$ids"' in submit


def test_gpu_order_chains_jobs_planned_back_to_back(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """With --gpu-order true a job also waits for the one planned before it on its GPUs."""
    gpuplan("export", "slurm", SLURM / "sleepers_plan.json", "--instance",
            SLURM / "sleepers.json", "-o", tmp_path, "--epoch", EPOCH, "--gpu-order", "true")
    submit = (tmp_path / "submit.sh").read_text()
    assert "j5=$(submit --dependency=afterany:$j2 jobs/5-sweep-2.sbatch)" in submit
    assert "j4=$(submit --dependency=afterok:$j1,afterany:$j1 jobs/4-train.sbatch)" in submit


def test_a_paused_job_is_a_chain_of_segments(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """Each segment but the last stops at its planned length.

    The next waits for it and for its own begin time; GPUPLAN_SEGMENT tells the command
    which it is.
    """
    outcome = gpuplan("export", "slurm", SLURM / "paused_plan.json", "--instance",
                      SLURM / "paused.json", "-o", tmp_path)
    assert outcome.code == 0, outcome.err
    first = (tmp_path / "jobs" / "1-long-s1.sbatch").read_text()
    assert "timeout --signal=TERM --kill-after=30 5 bash -c 'python train.py --resume'" in first
    assert "GPUPLAN_SEGMENT=1 GPUPLAN_SEGMENTS=2" in first
    second = _directives(tmp_path / "jobs" / "1-long-s2.sbatch")
    assert second["--begin"] == "2026-12-01T07:00:09"
    submit = (tmp_path / "submit.sh").read_text()
    assert "j1_2=$(submit --dependency=afterany:$j1_1 jobs/1-long-s2.sbatch)" in submit


@pytest.mark.parametrize(("change", "code", "message"), [
    (lambda s: s["segments"][1].update(start_s=2.0, end_s=6.0), 1, "fails verification"),
    (lambda s: s["segments"][0].update(node="n7"), 2, "node 'n7' is not in"),
    (lambda s: s.update(epoch=None), 2, "--epoch ISO"),
    (lambda s: s.update(status="infeasible", segments=[]), 2, "holds no plan"),
])
def test_a_bad_schedule_is_refused_and_nothing_written(gpuplan: Gpuplan, tmp_path: Path,
                                                       change: object, code: int,
                                                       message: str) -> None:
    """A bad schedule is refused with the reason and the output folder left empty.

    Exit 1 when it fails verification, 2 when it names a node the instance lacks or has
    no epoch or no plan.
    """
    schedule = json.loads((SLURM / "paused_plan.json").read_text())
    change(schedule)  # type: ignore[operator]
    (tmp_path / "plan.json").write_text(json.dumps(schedule))
    outcome = gpuplan("export", "slurm", tmp_path / "plan.json", "--instance",
                      SLURM / "paused.json", "-o", tmp_path / "out")
    assert outcome.code == code
    assert message in outcome.out + outcome.err
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_shared_gpus_and_missing_commands_are_refused(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """A Slurm GPU runs one job; a job without a command needs --rehearse."""
    shared = gpuplan("export", "slurm", DATA / "schedule_v2_segments.json", "--instance",
                     DATA / "segments_small.json", "-o", tmp_path / "a", "--rehearse", "true")
    assert shared.code == 2
    assert "GPU n/0 is held by 'a' and 'b' at once" in shared.err
    assert "plan without space sharing" in shared.err
    plan = tmp_path / "plan.json"
    gpuplan("solve", INSTANCES / "quickstart.json", "-o", plan)
    bare = gpuplan("export", "slurm", plan, "--instance", INSTANCES / "quickstart.json", "-o",
                   tmp_path / "b", "--epoch", EPOCH)
    assert bare.code == 2
    assert "--rehearse true" in bare.err


def test_a_flag_the_exporter_does_not_take_is_an_error(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """--image is Kubernetes': export slurm refuses it rather than ignoring it."""
    outcome = gpuplan("export", "slurm", SLURM / "paused_plan.json", "--instance",
                      SLURM / "paused.json", "-o", tmp_path, "--image", "x")
    assert outcome.code == 2
    assert "--image" in outcome.err


def test_slurm_conf_lines_read_back_as_the_same_fleet(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """The NodeName and gres.conf lines of export slurm-conf read back as the fleet."""
    assert gpuplan("export", "slurm-conf", "--instance", INSTANCES / "gavel_makespan.json",
                   "-o", tmp_path).code == 0
    fleet = read_slurm_fleet(tmp_path / "nodes.conf", tmp_path / "gres.conf")
    instance = read_instance(INSTANCES / "gavel_makespan.json")
    assert [n["id"] for n in fleet["nodes"]] == list(instance.node_ids)
    assert [sum(n["gpus"].values()) for n in fleet["nodes"]] == \
        instance.node_gpus.sum(axis=1).tolist()


def test_an_emulated_cluster_needs_an_absolute_folder(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """--emulate writes paths into slurm.conf: a relative one is refused."""
    outcome = gpuplan("export", "slurm-conf", "--instance", INSTANCES / "quickstart.json",
                      "-o", tmp_path, "--emulate", "cluster")
    assert outcome.code == 2
    assert "absolute path" in outcome.err
    assert gpuplan("export", "slurm-conf", "--instance", INSTANCES / "quickstart.json",
                   "-o", tmp_path, "--emulate", str(tmp_path)).code == 0
    conf = (tmp_path / "slurm.conf").read_text()
    assert "NodeName=dgx-a NodeHostname=localhost Port=6917" in conf
    assert (tmp_path / "dev" / "edge-1" / "gpu3").exists()
    assert (tmp_path / "start.sh").stat().st_mode & 0o100


def test_import_sacct_verifies_what_ran(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """What ran is written as a schedule, verified.

    Exit 0 when it keeps every constraint, 1 (with the schedule and its violations) when
    it does not.
    """
    out = tmp_path / "ran.json"
    ok = gpuplan("import", "sacct", SLURM / "sleepers_sacct.txt", "--instance",
                 SLURM / "sleepers.json", "--epoch", "2026-12-07T04:29:42+00:00", "-o", out)
    assert ok.code == 0, ok.out + ok.err
    assert json.loads(out.read_text())["verification"]["ok"] is True
    # evaluate started before train ended: a dependency broken.
    text = (SLURM / "sleepers_sacct.txt").read_text().replace(
        "35|evaluate|COMPLETED|2026-12-07T04:29:57",
        "35|evaluate|COMPLETED|2026-12-07T04:29:55")
    (tmp_path / "sacct.txt").write_text(text)
    broken = gpuplan("import", "sacct", tmp_path / "sacct.txt", "--instance",
                     SLURM / "sleepers.json", "--epoch", "2026-12-07T04:29:42+00:00", "-o",
                     out)
    assert broken.code == 1
    assert "predecessor 'train'" in broken.err
    assert json.loads(out.read_text())["verification"]["ok"] is False


def test_import_sacct_takes_the_epoch_from_the_plan(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """--plan gives t = 0; a plan without an epoch is refused, naming --epoch."""
    outcome = gpuplan("import", "sacct", SLURM / "sleepers_sacct.txt", "--instance",
                      SLURM / "sleepers.json", "--plan", SLURM / "sleepers_plan.json", "-o",
                      tmp_path / "ran.json")
    assert outcome.code == 2
    assert "--epoch ISO" in outcome.err


@pytest.mark.parametrize(("at", "says"), [
    ((), "line 5: job 'train' is RUNNING: give the instant this output was taken (--at)"),
    (("--at", "noon"), "--at: 'noon' is neither seconds from the epoch nor an ISO-8601"),
    (("--at", "2026-12-07T19:00:00+00:00"), "--at: '2026-12-07T19:00:00+00:00' is -1759 s"),
])
def test_a_snapshot_of_running_jobs_needs_its_instant(gpuplan: Gpuplan, tmp_path: Path,
                                                      at: tuple[str, ...], says: str) -> None:
    """Sacct output with a job still running needs --at, seconds or a time after the epoch.

    Each mistake is exit 2 with a one-line message, and nothing is written.
    """
    outcome = gpuplan("import", "sacct", SLURM / "snapshot_sacct.txt", "--instance",
                      SLURM / "snapshot.json", "--epoch", "2026-12-07T19:29:19+00:00", *at,
                      "-o", tmp_path / "now.json")
    assert (outcome.code, says in outcome.err) == (2, True), outcome.err
    assert "Traceback" not in outcome.err and not (tmp_path / "now.json").exists()


def test_ids_slurm_would_read_otherwise_are_refused(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """A job id with a space would be two shell words and no sacct JobName: exit 2, named."""
    instance = json.loads((SLURM / "paused.json").read_text())
    instance["jobs"][1]["id"] = "urgent fix"
    schedule = json.loads((SLURM / "paused_plan.json").read_text())
    schedule["segments"][1]["job"] = "urgent fix"
    (tmp_path / "i.json").write_text(json.dumps(instance))
    (tmp_path / "s.json").write_text(json.dumps(schedule))
    outcome = gpuplan("export", "slurm", tmp_path / "s.json", "--instance", tmp_path / "i.json",
                      "-o", tmp_path / "out")
    assert outcome.code == 2
    assert "jobs[1].id: job 'urgent fix' cannot be written for Slurm" in outcome.err
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_a_fleet_with_racks_plans_and_exports_with_no_hand_edit(gpuplan: Gpuplan,
                                                                tmp_path: Path) -> None:
    """slurm.conf, gres.conf and topology.conf to batch scripts, with no hand edit.

    The cluster's files (the racks fleet's, as export slurm-conf writes them) read with
    CPUs, memory and switch tiers; jobs with a 2-node gang that must stay under one leaf
    switch (tier1) plan, verify and export: the gang's script asks for 2 nodes of one
    rack, 4 GPUs, its CPUs and memory on each, and --switches=1.
    """
    cluster = tmp_path / "cluster"
    assert gpuplan("export", "slurm-conf", "--instance", SLURM / "racks.json", "-o",
                   cluster).code == 0
    jobs = tmp_path / "jobs.yaml"
    jobs.write_text(
        "objective: makespan\njobs:\n"
        "  - {id: train, gpus: 8, gpus_per_node: 4, duration_s: {H100: 3600},\n"
        "     node_demand: {cpu_milli: 16000, memory_mib: 128000},\n"
        "     topology: {required: tier1}, command: srun python train.py}\n"
        "  - {id: tune, gpus: 4, duration_s: {H100: 600, L4: 1800}, command: python tune.py}\n")
    instance, plan, out = tmp_path / "racks.json", tmp_path / "plan.json", tmp_path / "out"
    imported = gpuplan("import", "slurm", cluster / "nodes.conf", cluster / "gres.conf",
                       "--topology", cluster / "topology.conf", "--jobs", jobs, "-o", instance)
    assert imported.code == 0, imported.err
    assert "topology tier3 > tier2 > tier1" in imported.err
    solved = gpuplan("solve", instance, "--method", "greedy", "-o", plan)
    assert solved.code == 0, solved.out + solved.err
    assert gpuplan("export", "slurm", plan, "--instance", instance, "-o", out, "--epoch",
                   EPOCH).code == 0
    train = _directives(next((out / "jobs").glob("*-train.sbatch")))
    assert train["--nodelist"] in ("h1,h2", "h3,h4")
    assert (train["--nodes"], train["--ntasks-per-node"], train["--gres"],
            train["--switches"], train["--cpus-per-task"], train["--mem"]) == (
        "2", "1", "gpu:H100:4", "1", "16", "128000M")


def test_import_kubernetes_reads_topology_labels(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """--topology LEVEL=LABEL,... reads node labels into levels; a bad one is exit 2."""
    out = tmp_path / "fleet.json"
    outcome = gpuplan("import", "kubernetes", CLUSTERS / "nodes.json", "-o", out,
                      "--topology", "host=kubernetes.io/hostname")
    assert outcome.code == 0, outcome.err
    fleet = json.loads(out.read_text())
    assert fleet["topology"] == {"levels": ["host"]}
    assert fleet["nodes"][0]["topology"] == {"host": "gke-pool-a100-1"}
    bad = gpuplan("import", "kubernetes", CLUSTERS / "nodes.json", "-o", tmp_path / "b.json",
                  "--topology", "rack")
    assert bad.code == 2
    assert "--topology: expected LEVEL=LABEL,..., got 'rack'" in bad.err
    assert not (tmp_path / "b.json").exists()


def test_a_topology_conf_line_with_an_unknown_node_is_exit_2(gpuplan: Gpuplan,
                                                             tmp_path: Path) -> None:
    """A topology.conf node slurm.conf lacks: exit 2 naming the file and line; no output."""
    (tmp_path / "topology.conf").write_text("SwitchName=r1 Nodes=a100-01,gpu99\n")
    outcome = gpuplan("import", "slurm", CLUSTERS / "slurm.conf", CLUSTERS / "gres.conf",
                      "--topology", tmp_path / "topology.conf", "-o", tmp_path / "out.json")
    assert outcome.code == 2
    assert "topology.conf: line 1 Nodes: node 'gpu99' is not in slurm.conf" in outcome.err
    assert not (tmp_path / "out.json").exists()
