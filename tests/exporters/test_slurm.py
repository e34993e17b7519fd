"""gpuplan export slurm|slurm-conf: multi-node gangs, node resources, shards and switches.

The racks fleet (tests/data/slurm/racks.json): H100 nodes in two racks of block b1, an L4
node (sharing) in block b2; its plan has a 2-node gang within a rack, a 4-node gang within
the block, a gang that would rather stay in a rack, two jobs on the one L4 at once and a
CPU-only job. test_slurm_live.py runs these scripts on a real Slurm.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from gpuplan.exporters.base import SLURM_NAME
from gpuplan.readers.slurm import read_slurm_fleet
from tests.conftest import DATA, INSTANCES, Gpuplan

SLURM = DATA / "slurm"
RACKS, RACKS_PLAN = SLURM / "racks.json", SLURM / "racks_plan.json"
EPOCH = "2026-12-07T06:00:00+00:00"


def _directives(script: Path) -> dict[str, str]:
    return dict(re.findall(r"^#SBATCH (--[a-z-]+)=(.*)$", script.read_text(), re.MULTILINE))


def _export(gpuplan: Gpuplan, out: Path, *flags: str | Path, plan: Path = RACKS_PLAN,
            instance: Path = RACKS) -> Any:
    return gpuplan("export", "slurm", plan, "--instance", instance, "-o", out,
                   "--epoch", EPOCH, *flags)


def _racks_with(tmp_path: Path, change: Any) -> Path:
    """The racks instance changed by ``change(document)``, written to a file."""
    document = json.loads(RACKS.read_text())
    change(document)
    path = tmp_path / "racks.json"
    path.write_text(json.dumps(document))
    return path


def test_a_multi_node_gang_asks_for_each_node_and_stays_under_one_switch(
        gpuplan: Gpuplan, tmp_path: Path) -> None:
    """A gang of 2 nodes asks for them all, GPUs, CPUs and memory per node, one leaf switch.

    --nodes and --nodelist name every node, one task on each so that --cpus-per-task is
    per node like --mem; --switches=1 for a gang that must stay within a rack (the
    narrowest level), nothing more for one within a block; a CPU-only job asks for no GPU.
    """
    assert _export(gpuplan, tmp_path, "--gpu-sharing", "shard").code == 0
    assert _directives(tmp_path / "jobs" / "1-gang.sbatch") == {
        "--job-name": "gang", "--begin": "2026-12-07T06:00:00", "--nodes": "2",
        "--ntasks-per-node": "1", "--nodelist": "h3,h4", "--gres": "gpu:H100:4",
        "--switches": "1", "--cpus-per-task": "8", "--mem": "64000M",
        "--time": "0-00:01:09"}
    wide = _directives(tmp_path / "jobs" / "6-wide.sbatch")
    assert (wide["--nodes"], wide["--nodelist"], wide["--gres"]) == (
        "4", "h1,h2,h3,h4", "gpu:H100:4")
    assert "--switches" not in wide
    cpu = _directives(tmp_path / "jobs" / "5-cpu.sbatch")
    assert (cpu["--nodelist"], cpu["--ntasks"], cpu["--cpus-per-task"]) == ("h4", "1", "4")
    assert "--gres" not in cpu


def test_gpus_per_node_asks_for_the_gangs_share_of_each_node(gpuplan: Gpuplan,
                                                              tmp_path: Path) -> None:
    """--gpu-request gpus-per-node gives a gang of 2 x 4 GPUs --gpus-per-node=H100:4."""
    assert _export(gpuplan, tmp_path, "--gpu-sharing", "shard", "--gpu-request",
                   "gpus-per-node").code == 0
    assert _directives(tmp_path / "jobs" / "1-gang.sbatch")["--gpus-per-node"] == "H100:4"


def test_a_shared_gpu_is_refused_without_shards(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """Two jobs on one GPU at once: exit 2 naming the GPU, the jobs, the time and the flag.

    Nothing is written.
    """
    outcome = _export(gpuplan, tmp_path / "out")
    assert outcome.code == 2
    assert ("GPU l1/0 is held by 'infer-1' and 'infer-2' at once from 0 s to 7 s: a Slurm "
            "GPU runs one job at a time; L4 is declared sharing: export with --gpu-sharing "
            "shard") in outcome.err
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


@pytest.mark.parametrize(("flags", "infer_1", "infer_2"), [
    ((), "50", "25"),
    (("--shards-per-gpu", "8"), "4", "2"),
    # Memory: 12 and 8 of 24 GiB, a third rounded up.
    (("--share-resource", "memory_gib"), "50", "34"),
])
def test_jobs_sharing_a_gpu_ask_for_their_shards(gpuplan: Gpuplan, tmp_path: Path,
                                                  flags: tuple[str, ...], infer_1: str,
                                                  infer_2: str) -> None:
    """With shards, each job sharing the L4 asks for its share of it; the others for GPUs.

    The share is the job's demand over the GPU's capacity on --share-resource (compute by
    default), times --shards-per-gpu (100 by default), rounded up.
    """
    assert _export(gpuplan, tmp_path, "--gpu-sharing", "shard", *flags).code == 0
    assert _directives(tmp_path / "jobs" / "3-infer-1.sbatch")["--gres"] == \
        f"shard:L4:{infer_1}"
    assert _directives(tmp_path / "jobs" / "4-infer-2.sbatch")["--gres"] == \
        f"shard:L4:{infer_2}"
    assert _directives(tmp_path / "jobs" / "2-pref.sbatch")["--gres"] == "gpu:H100:4"


def test_shards_that_overfill_a_gpu_are_refused(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """Halves of a GPU in 3 shards round up to 2 + 2: exit 2 naming the GPU, time and jobs."""
    instance = _racks_with(tmp_path, lambda d: d["jobs"][4]["demand"].update(compute=0.5))
    outcome = _export(gpuplan, tmp_path / "out", "--gpu-sharing", "shard",
                      "--shards-per-gpu", "3", instance=instance)
    assert outcome.code == 2
    assert ("GPU l1/0 would hold 4 shards of its 3 from 0 s to 7 s ('infer-1' 2, "
            "'infer-2' 2, their compute rounded up)") in outcome.err
    assert _export(gpuplan, tmp_path / "ok", "--gpu-sharing", "shard",
                   instance=instance).code == 0


def test_a_job_sharing_several_gpus_of_a_node_is_refused(gpuplan: Gpuplan,
                                                          tmp_path: Path) -> None:
    """Slurm gives a job's shards on a node from one GPU: a 2-GPU job may not share."""
    def two_l4(document: dict[str, Any]) -> None:
        document["nodes"][4]["gpus"]["L4"] = 2
        document["jobs"][3]["gpus"] = 2
    instance = _racks_with(tmp_path, two_l4)
    plan = json.loads(RACKS_PLAN.read_text())
    next(s for s in plan["segments"] if s["job"] == "infer-1")["gpu_ids"] = ["l1/0", "l1/1"]
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    outcome = _export(gpuplan, tmp_path / "out", "--gpu-sharing", "shard",
                      plan=tmp_path / "plan.json", instance=instance)
    assert outcome.code == 2
    assert "job 'infer-1' shares its 2 GPUs per node with other jobs" in outcome.err


@pytest.mark.parametrize(("flags", "message"), [
    (("--gpu-sharing", "shard"), "A GPUs are held whole (these are colocation partners)"),
    (("--gpu-sharing", "shard", "--share-resource", "vram"),
     "'vram' is not a per-GPU resource"),
    (("--gpu-sharing", "mps"), "invalid choice: 'mps'"),
])
def test_what_shards_cannot_express_is_refused(gpuplan: Gpuplan, tmp_path: Path,
                                               flags: tuple[str, ...], message: str) -> None:
    """Shards only on types declared sharing, of a resource the GPUs have; exit 2."""
    outcome = _export(gpuplan, tmp_path, "--rehearse", "true", *flags,
                      plan=DATA / "schedule_v2_segments.json",
                      instance=DATA / "segments_small.json")
    assert outcome.code == 2
    assert message in outcome.err


def test_slurm_conf_writes_the_switch_tree_and_shards(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """The racks fleet: topology.conf (a switch per rack and block, and a top one), shards.

    slurm.conf's lines enable topology/tree and GRES shards; the sharing L4 carries
    --shards-per-gpu shards in its Gres and a shard line in gres.conf, the H100s none.
    """
    assert gpuplan("export", "slurm-conf", "--instance", RACKS, "-o", tmp_path,
                   "--gpu-sharing", "shard", "--shards-per-gpu", "8").code == 0
    assert (tmp_path / "topology.conf").read_text().splitlines()[2:] == [
        "SwitchName=rack-b1-r1 Nodes=h1,h2",
        "SwitchName=rack-b1-r2 Nodes=h3,h4",
        "SwitchName=rack-b2-r1 Nodes=l1",
        "SwitchName=block-b1 Switches=rack-b1-r1,rack-b1-r2",
        "SwitchName=block-b2 Switches=rack-b2-r1",
        "SwitchName=top Switches=block-b1,block-b2"]
    nodes = (tmp_path / "nodes.conf").read_text()
    assert "GresTypes=gpu,shard\nTopologyPlugin=topology/tree\n" in nodes
    assert "NodeName=l1 CPUs=16 RealMemory=64000 Gres=gpu:L4:1,shard:8 " in nodes
    assert "NodeName=h1 CPUs=32 RealMemory=256000 Gres=gpu:H100:4 " in nodes
    assert "NodeName=l1 Name=shard Count=8 File=/dev/nvidia0" in \
        (tmp_path / "gres.conf").read_text()
    fleet = read_slurm_fleet(tmp_path / "nodes.conf", tmp_path / "gres.conf",
                             tmp_path / "topology.conf")
    assert fleet["topology"] == {"levels": ["tier3", "tier2", "tier1"]}
    assert {n["id"]: n["topology"]["tier1"] for n in fleet["nodes"]} == {
        "h1": "rack-b1-r1", "h2": "rack-b1-r1", "h3": "rack-b1-r2", "h4": "rack-b1-r2",
        "l1": "rack-b2-r1"}


def test_slurm_conf_without_topology_or_sharing_is_as_before(gpuplan: Gpuplan,
                                                             tmp_path: Path) -> None:
    """No topology: no topology.conf and no plugin; shards of a fleet without sharing: exit 2."""
    assert gpuplan("export", "slurm-conf", "--instance", INSTANCES / "quickstart.json",
                   "-o", tmp_path / "a").code == 0
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["gres.conf", "nodes.conf"]
    assert "Topology" not in (tmp_path / "a" / "nodes.conf").read_text()
    outcome = gpuplan("export", "slurm-conf", "--instance", INSTANCES / "quickstart.json",
                      "-o", tmp_path / "b", "--gpu-sharing", "shard")
    assert outcome.code == 2
    assert "no GPU type of 'quickstart' is declared sharing" in outcome.err


def test_nodes_labelled_part_way_hang_from_switches_of_their_own(gpuplan: Gpuplan,
                                                                 tmp_path: Path) -> None:
    """A node with a block but no rack, one with no label, a label Slurm cannot take.

    Slurm's switches hold nodes or switches, not both, and a job runs only on nodes under
    some switch: the node labelled down to its block sits under a leaf of its own in the
    block, the unlabelled one under 'unlabelled', and 'top' joins them. A label with a
    space gives a switch name hashed to one Slurm takes.
    """
    instance = tmp_path / "partial.json"
    instance.write_text(json.dumps({
        "topology": {"levels": ["block", "rack"]},
        "gpu_types": [{"id": "A", "capacity": {"compute": 1}}],
        "nodes": [{"id": "a", "gpus": {"A": 1}, "topology": {"block": "b 1", "rack": "r1"}},
                  {"id": "b", "gpus": {"A": 1}, "topology": {"block": "b 1"}},
                  {"id": "c", "gpus": {"A": 1}}],
        "jobs": [{"id": "j", "duration_s": 1}], "objective": "makespan"}))
    assert gpuplan("export", "slurm-conf", "--instance", instance, "-o", tmp_path / "out"
                   ).code == 0
    lines = (tmp_path / "out" / "topology.conf").read_text().splitlines()[2:]
    switches = dict(line.removeprefix("SwitchName=").split(" ", 1) for line in lines)
    assert all(SLURM_NAME.match(name) for name in switches)
    block = next(name for name in switches if name.startswith("block-b-1-"))
    rack = next(name for name in switches if name.startswith("rack-b-1-r1-"))
    leaf = next(name for name in switches if name.startswith("rack-b-1-unlabelled-"))
    assert (switches[rack], switches[leaf]) == ("Nodes=a", "Nodes=b")
    assert switches[block] == f"Switches={rack},{leaf}"
    assert (switches["unlabelled"], switches["top"]) == ("Nodes=c",
                                                        f"Switches={block},unlabelled")


QUOTAS = DATA / "quotas.json"


def test_each_job_asks_for_its_partition_account_and_qos(gpuplan: Gpuplan,
                                                          tmp_path: Path) -> None:
    """A job's own partition goes first; --partition is for the jobs that name none.

    Its account and QOS become --account and --qos; a job without one asks for neither.
    """
    plan = tmp_path / "plan.json"
    assert gpuplan("solve", QUOTAS, "-o", plan).code == 0
    assert _export(gpuplan, tmp_path / "out", "--rehearse", "true", "--partition", "batch",
                   plan=plan, instance=QUOTAS).code == 0
    asked = {}
    for script in (tmp_path / "out" / "jobs").glob("*.sbatch"):
        flags = _directives(script)
        asked[flags["--job-name"]] = tuple(flags.get(f) for f in ("--partition", "--account",
                                                                  "--qos"))
    assert asked["ops-2"] == ("mixed", "ops", "urgent")
    assert asked["nlp-3"] == ("batch", "nlp", None)
    assert asked["vision-1"] == ("infer", "vision", None)
    assert asked["batch-1"] == ("batch", None, None)


def test_slurm_conf_writes_partitions_and_the_accounts_with_their_gpu_limits(
        gpuplan: Gpuplan, tmp_path: Path) -> None:
    """A PartitionName line per partition beside the default (read back by import slurm).

    An account without a limit has its limit cleared (-1); every QOS is allowed the users.
    The emulated cluster enforces them, and start.sh runs accounts.sh before slurmctld.
    """
    assert gpuplan("export", "slurm-conf", "--instance", QUOTAS, "-o", tmp_path / "a").code == 0
    nodes = (tmp_path / "a" / "nodes.conf").read_text().splitlines()
    assert [line for line in nodes if line.startswith("PartitionName=")] == [
        "PartitionName=gpuplan Nodes=ALL Default=YES MaxTime=INFINITE State=UP",
        "PartitionName=train Nodes=a1,a2 MaxTime=INFINITE State=UP",
        "PartitionName=infer Nodes=l1,l2 MaxTime=INFINITE State=UP",
        "PartitionName=mixed Nodes=a2,l1 MaxTime=INFINITE State=UP"]
    assert read_slurm_fleet(tmp_path / "a" / "nodes.conf")["partitions"] == {
        "gpuplan": ["a1", "a2", "l1", "l2"], "train": ["a1", "a2"], "infer": ["l1", "l2"],
        "mixed": ["a2", "l1"]}
    script = (tmp_path / "a" / "accounts.sh").read_text()
    for line in ("apply modify account where name=nlp cluster=$cluster set GrpTRES=gres/gpu=4",
                 "apply modify account where name=ops cluster=$cluster set GrpTRES=gres/gpu=-1",
                 "apply modify qos where name=urgent set GrpTRES=gres/gpu=2",
                 '  apply modify user where name="$user" cluster=$cluster set qos+=urgent'):
        assert line in script.splitlines()
    root = tmp_path / "emulated"
    assert gpuplan("export", "slurm-conf", "--instance", QUOTAS, "--emulate", root,
                   "-o", root).code == 0
    assert "AccountingStorageEnforce=associations,limits,qos" in (
        root / "slurm.conf").read_text().splitlines()
    start = (root / "start.sh").read_text()
    assert start.index("./accounts.sh") < start.index("\nslurmctld\n")
    quickstart = tmp_path / "quickstart"
    assert gpuplan("export", "slurm-conf", "--instance", INSTANCES / "quickstart.json",
                   "--emulate", quickstart, "-o", quickstart).code == 0
    assert "AccountingStorageEnforce" not in (quickstart / "slurm.conf").read_text()
    assert not (quickstart / "accounts.sh").exists()


def test_a_partition_named_as_the_default_one_is_refused(gpuplan: Gpuplan,
                                                         tmp_path: Path) -> None:
    """Partition 'train' and --cluster-name train would be two partitions of one name."""
    outcome = gpuplan("export", "slurm-conf", "--instance", QUOTAS, "--cluster-name", "train",
                      "-o", tmp_path)
    assert outcome.code == 2
    assert "'train' names the default partition of all nodes, and a partition of the " \
        "instance: give another --cluster-name" in " ".join(outcome.err.split())
    assert not list(tmp_path.iterdir())
