"""gpuplan export kueue|volcano: manifests the projects' schemas take, and what is refused."""

from __future__ import annotations

import copy
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from gpuplan.exporters.kubernetes import dns_name, manifest_yaml
from tests.conftest import DATA, INSTANCES, Gpuplan
from tests.exporters.k8s_schemas import documents, manifest_errors

SLEEPERS = DATA / "slurm" / "sleepers.json"
SLEEPERS_PLAN = DATA / "slurm" / "sleepers_plan.json"
EPOCH = "2026-12-07T06:00:00+00:00"


@pytest.fixture(scope="module")
def quickstart_plan(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A greedy plan of the shipped quickstart (dependencies, weights, two GPU types)."""
    from gpuplan.cli import main
    plan = tmp_path_factory.mktemp("plan") / "plan.json"
    assert main(["solve", str(INSTANCES / "quickstart.json"), "-o", str(plan)]) == 0
    return plan


@pytest.fixture(scope="module")
def quickstart_exports(quickstart_plan: Path, tmp_path_factory: pytest.TempPathFactory
                       ) -> dict[str, Path]:
    """The quickstart plan exported (rehearsed) to Kueue and to Volcano, once."""
    from gpuplan.cli import main
    folders = {}
    for target in ("kueue", "volcano"):
        folders[target] = tmp_path_factory.mktemp(target)
        assert main(["export", target, str(quickstart_plan), "--instance",
                     str(INSTANCES / "quickstart.json"), "-o", str(folders[target]),
                     "--epoch", EPOCH, "--rehearse", "true"]) == 0
    return folders


def _export(gpuplan: Gpuplan, target: str, plan: Path, instance: Path, out: Path,
            *flags: str) -> None:
    outcome = gpuplan("export", target, plan, "--instance", instance, "-o", out,
                      "--epoch", EPOCH, *flags)
    assert outcome.code == 0, outcome.out + outcome.err


@pytest.mark.parametrize("target", ["kueue", "volcano"])
def test_every_manifest_passes_the_schemas(quickstart_exports: dict[str, Path],
                                           target: str) -> None:
    """Every object written for the quickstart plan is one the CRDs and Kubernetes take."""
    found = documents(quickstart_exports[target])
    kinds = {m["kind"] for _, m in found}
    expected = ({"ResourceFlavor", "ClusterQueue", "LocalQueue", "WorkloadPriorityClass",
                 "Job"} if target == "kueue" else
                {"Queue", "PriorityClass", "Job", "JobTemplate", "JobFlow"})
    assert kinds == expected
    assert {f: manifest_errors(m) for f, m in found if manifest_errors(m)} == {}


#: Deliberate mistakes, each a change to one manifest, that the API server refuses.
BROKEN: dict[str, tuple[str, Any]] = {
    "misspelt Job field": ("Job", lambda m: m["spec"].update(completion=1)),
    "unknown container field": ("Job", lambda m: m["spec"]["template"]["spec"][
        "containers"][0].update(imagee="x")),
    "GPU limit not a quantity": ("Job", lambda m: m["spec"]["template"]["spec"][
        "containers"][0]["resources"]["limits"].update({"nvidia.com/gpu": "eight"})),
    "upper-case name": ("Job", lambda m: m["metadata"].update(name="Train")),
    "StrictFIFO misspelt": ("ClusterQueue", lambda m: m["spec"].update(
        queueingStrategy="StrictFifo")),
    "no covered resources": ("ClusterQueue", lambda m: m["spec"]["resourceGroups"][0].update(
        coveredResources=[])),
    "flavor name with '_'": ("ResourceFlavor", lambda m: m["metadata"].update(name="a_b")),
    "priority not an integer": ("WorkloadPriorityClass", lambda m: m.update(value="high")),
    "LocalQueue without spec field": ("LocalQueue", lambda m: m["spec"].update(
        clusterqueue="x")),
}
BROKEN_VOLCANO: dict[str, tuple[str, Any]] = {
    "replicas as text": ("JobTemplate", lambda m: m["spec"]["tasks"][0].update(
        replicas="four")),
    "dequeue strategy unknown": ("Queue", lambda m: m["spec"].update(dequeueStrategy="lifo")),
    "flow without name": ("JobFlow", lambda m: m["spec"]["flows"][0].pop("name")),
    "minAvailable negative": ("Job", lambda m: m["spec"].update(minAvailable=-1)),
    "PriorityClass unknown field": ("PriorityClass", lambda m: m.update(priority=3)),
}


@pytest.mark.parametrize(("target", "case"), [("kueue", c) for c in BROKEN]
                         + [("volcano", c) for c in BROKEN_VOLCANO])
def test_the_check_refuses_broken_manifests(quickstart_exports: dict[str, Path],
                                            target: str, case: str) -> None:
    """A manifest with one deliberate mistake fails the check: the check can fail."""
    kind, breaks = (BROKEN if target == "kueue" else BROKEN_VOLCANO)[case]
    manifest = copy.deepcopy(next(m for _, m in documents(quickstart_exports[target])
                                  if m["kind"] == kind))
    assert manifest_errors(manifest) == []
    breaks(manifest)
    assert manifest_errors(manifest) != []


def test_kueue_jobs_say_where_when_and_how_important(gpuplan: Gpuplan, tmp_path: Path
                                                     ) -> None:
    """Each Job: suspended, in the queue, pinned to its node, its GPUs, its priority."""
    _export(gpuplan, "kueue", SLEEPERS_PLAN, SLEEPERS, tmp_path, "--image", "ghcr.io/x:1")
    train = yaml.safe_load((tmp_path / "jobs" / "4-train.yaml").read_text())
    labels = train["metadata"]["labels"]
    assert train["spec"]["suspend"] is True
    assert labels["kueue.x-k8s.io/queue-name"] == "gpuplan"
    assert labels["kueue.x-k8s.io/priority-class"] == "gpuplan-weight-3"
    pod = train["spec"]["template"]["spec"]
    term = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["nodeSelectorTerms"][0]["matchFields"][0]["values"] == ["dgx-a"]
    assert pod["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "8"}
    assert pod["containers"][0]["command"][-1] == "sleep 8"
    assert pod["containers"][0]["image"] == "ghcr.io/x:1"
    assert train["metadata"]["annotations"]["gpuplan.io/planned-start"] == \
        "2026-12-07T06:00:06+00:00"
    classes = [m for _, m in documents(tmp_path) if m["kind"] == "WorkloadPriorityClass"]
    assert sorted((c["metadata"]["name"], c["value"]) for c in classes) == [
        ("gpuplan-weight-1", 1000), ("gpuplan-weight-3", 2000)]
    queue = next(m for _, m in documents(tmp_path) if m["kind"] == "ClusterQueue")
    quota = {f["name"]: f["resources"][0]["nominalQuota"]
             for f in queue["spec"]["resourceGroups"][0]["flavors"]}
    assert sorted(quota.values()) == ["16", "4"]


def test_volcano_gangs_and_job_flows(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """A gang of N GPUs is N one-GPU pods, all or none; dependencies are a JobFlow."""
    _export(gpuplan, "volcano", SLEEPERS_PLAN, SLEEPERS, tmp_path, "--rehearse", "true")
    found = dict(documents(tmp_path))
    template = found["jobs/4-train.yaml"]
    assert template["kind"] == "JobTemplate"
    assert template["spec"]["minAvailable"] == 8
    assert template["spec"]["tasks"][0]["replicas"] == 8
    limits = template["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["resources"]
    assert limits == {"limits": {"nvidia.com/gpu": "1"}}
    (flow,) = [m for m in found.values() if m["kind"] == "JobFlow"]
    depends = {f["name"]: f.get("dependsOn", {}).get("targets", []) for f in
               flow["spec"]["flows"]}
    assert depends == {"prepare": [], "train": ["prepare"], "evaluate": ["train"]}
    assert found["jobs/2-sweep-1.yaml"]["kind"] == "Job"


def test_kueue_submit_creates_each_job_in_order_and_gates_dependencies(
        gpuplan: Gpuplan, tmp_path: Path) -> None:
    """submit.sh applies the queue, then creates the jobs in planned order.

    A successor is created only once its predecessors succeeded; the script runs against
    a kubectl that records what it is asked and says every job succeeded.
    """
    _export(gpuplan, "kueue", SLEEPERS_PLAN, SLEEPERS, tmp_path / "out", "--rehearse", "true")
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    log = tmp_path / "kubectl.log"
    # get: every job has succeeded (its Complete condition, then its Failed one).
    (bin_ / "kubectl").write_text(f'#!/bin/bash\necho "$*" >> {log}\n'
                                  '[ "$3" = get ] && echo "True/"\nexit 0\n')
    (bin_ / "kubectl").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_}:{os.environ['PATH']}"}
    done = subprocess.run([str(tmp_path / "out" / "submit.sh"), "--now"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    calls = log.read_text().splitlines()
    assert calls[0] == "apply -f queue.yaml"
    created = [c.split("/")[-1].removesuffix(".yaml") for c in calls if c.startswith("create")]
    assert sorted(created) == sorted(p.stem for p in (tmp_path / "out" / "jobs").iterdir())
    # Jobs that wait for others are created in the background, whenever those succeed.
    gated = ("4-train", "7-evaluate")
    assert [c for c in created if c not in gated] == [
        "1-prepare", "2-sweep-1", "3-embed", "5-sweep-2", "6-smoke"]
    for job, before in (("4-train", "prepare"), ("7-evaluate", "train")):
        asked = calls.index(f"-n default get job {before} -o jsonpath="
                            '{.status.conditions[?(@.type=="Complete")].status}/'
                            '{.status.conditions[?(@.type=="Failed")].status}')
        assert asked < calls.index(f"create -f jobs/{job}.yaml")


@pytest.mark.parametrize("target", ["kueue", "volcano"])
def test_paused_and_shared_plans_are_refused(gpuplan: Gpuplan, tmp_path: Path,
                                             target: str) -> None:
    """A job in several segments, or colocation partners on one GPU, is refused; no file."""
    paused = gpuplan("export", target, DATA / "slurm" / "paused_plan.json", "--instance",
                     DATA / "slurm" / "paused.json", "-o", tmp_path / "a", "--image", "x")
    assert paused.code == 2
    assert "'long' is planned in 2 segments" in paused.err
    shared = gpuplan("export", target, DATA / "schedule_v2_segments.json", "--instance",
                     DATA / "segments_small.json", "-o", tmp_path / "b", "--rehearse", "true")
    assert shared.code == 2
    assert "GPU n/0 is held by 'a' and 'b' at once from 0 s to 50 s" in shared.err
    assert not (tmp_path / "a").exists() or not any((tmp_path / "a").iterdir())
    assert not (tmp_path / "b").exists() or not any((tmp_path / "b").iterdir())


def test_commands_need_an_image(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """Without --image (and not rehearsing) the export says what to give."""
    outcome = gpuplan("export", "kueue", SLEEPERS_PLAN, "--instance", SLEEPERS, "-o",
                      tmp_path, "--epoch", EPOCH)
    assert outcome.code == 2
    assert "--image" in outcome.err


def test_names_kubernetes_cannot_take_are_hashed_apart() -> None:
    """Ids become DNS-1123 labels; a changed one carries a hash, so two stay apart."""
    assert dns_name("train-1") == "train-1"
    assert dns_name("Train_1") != dns_name("train-1")
    assert dns_name("Train_1").startswith("train-1-")
    long = dns_name("x" * 80)
    assert len(long) <= 36 and long != dns_name("x" * 81)


_SCALARS = st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=20)
_DATA = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
    st.text(min_size=1, max_size=12), inner, max_size=3), max_leaves=12)


@given(st.dictionaries(st.text(min_size=1, max_size=12), _DATA, min_size=1, max_size=4))
def test_manifests_read_back_as_written(manifest: dict[str, Any]) -> None:
    """The YAML written reads back as the data, whatever the strings hold.

    Quotes, line breaks, 'yes', '16', control characters, astral characters, keys YAML
    would read otherwise.
    """
    assert yaml.safe_load(manifest_yaml(manifest)) == manifest


RACKS, RACKS_PLAN = DATA / "slurm" / "racks.json", DATA / "slurm" / "racks_plan.json"
#: Time-slicing as the racks plan needs it: two jobs on the one L4 at once.
SLICED = ("--gpu-sharing", "time-slicing", "--replicas", "4")


@pytest.fixture(scope="module")
def racks_exports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The racks plan (gangs over nodes, racks, a shared L4) to Kueue and Volcano, once."""
    from gpuplan.cli import main
    folders = {}
    for target in ("kueue", "volcano"):
        folders[target] = tmp_path_factory.mktemp(f"racks-{target}")
        assert main(["export", target, str(RACKS_PLAN), "--instance", str(RACKS), "-o",
                     str(folders[target]), "--epoch", EPOCH, "--rehearse", "true",
                     *SLICED]) == 0
    return folders


@pytest.mark.parametrize("target", ["kueue", "volcano"])
def test_topology_and_gang_manifests_pass_the_schemas(racks_exports: dict[str, Path],
                                                      target: str) -> None:
    """The racks plan's objects, the Topology and HyperNodes among them, pass the schemas."""
    found = documents(racks_exports[target])
    assert ("Topology" if target == "kueue" else "HyperNode") in {m["kind"] for _, m in found}
    assert {f: manifest_errors(m) for f, m in found if manifest_errors(m)} == {}


#: Deliberate mistakes in the topology objects, refused as the API server would.
BROKEN_TOPOLOGY: dict[str, tuple[str, str, Any]] = {
    "Topology without levels": ("kueue", "Topology", lambda m: m["spec"].update(levels=[])),
    "level label with a space": ("kueue", "Topology", lambda m: m["spec"]["levels"][0].update(
        nodeLabel="rack name")),
    "HyperNode member of no type": ("volcano", "HyperNode", lambda m: m["spec"]["members"][
        0].update(type="Rack")),
    "HyperNode tier below 0": ("volcano", "HyperNode", lambda m: m["spec"].update(tier=-1)),
    "node name upper case": ("volcano", "HyperNode", lambda m: m["spec"]["members"][0][
        "selector"]["exactMatch"].update(name="H1")),
}


@pytest.mark.parametrize("case", list(BROKEN_TOPOLOGY))
def test_the_check_refuses_broken_topology_objects(racks_exports: dict[str, Path],
                                                   case: str) -> None:
    """A Topology or HyperNode with one deliberate mistake fails the check."""
    target, kind, breaks = BROKEN_TOPOLOGY[case]
    manifest = copy.deepcopy(next(m for _, m in documents(racks_exports[target])
                                  if m["kind"] == kind))
    assert manifest_errors(manifest) == []
    breaks(manifest)
    assert manifest_errors(manifest) != []


def _pod(manifest: dict[str, Any]) -> dict[str, Any]:
    """The pod template of a Job or a Volcano Job's only task."""
    spec = manifest["spec"]
    template = spec["tasks"][0]["template"] if "tasks" in spec else spec["template"]
    return dict(template)


def test_a_kueue_gang_is_a_pod_per_node_in_one_rack(racks_exports: dict[str, Path]) -> None:
    """The 2-node gang: one Job of 2 indexed pods, one per planned node, within a rack.

    Each pod asks for the node's 4 GPUs and the job's CPUs and memory per node; the pods
    may go only to the gang's nodes and never two to one node; Kueue keeps them in one
    rack (the required topology annotation).
    """
    gang = dict(documents(racks_exports["kueue"]))["jobs/1-gang.yaml"]
    spec = gang["spec"]
    assert (spec["parallelism"], spec["completions"], spec["completionMode"]) == (
        2, 2, "Indexed")
    pod = _pod(gang)
    assert pod["metadata"]["annotations"] == {
        "kueue.x-k8s.io/podset-required-topology": "topology.gpuplan.io/rack"}
    affinity = pod["spec"]["affinity"]
    terms = affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"][0]["matchFields"][0]["values"] == ["h3", "h4"]
    (apart,) = affinity["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert apart == {"labelSelector": {"matchLabels": {"gpuplan.io/job": "gang"}},
                     "topologyKey": "kubernetes.io/hostname"}
    assert pod["spec"]["containers"][0]["resources"] == {
        "limits": {"nvidia.com/gpu": "4"}, "requests": {"cpu": "8000m", "memory": "64000Mi"}}
    assert gang["metadata"]["annotations"]["gpuplan.io/planned-node"] == "h3,h4"
    pref = _pod(dict(documents(racks_exports["kueue"]))["jobs/2-pref.yaml"])
    assert pref["metadata"]["annotations"] == {
        "kueue.x-k8s.io/podset-preferred-topology": "topology.gpuplan.io/rack"}


def test_kueue_gets_the_topology_and_the_node_labels(racks_exports: dict[str, Path]) -> None:
    """A Topology of the levels' node labels, flavors naming it, label-nodes.sh to label.

    Each node is labelled with its own label at each level (rack r1 of block b2 is
    'r1'), as Kueue names a domain by the labels of its level and the wider ones.
    """
    found = documents(racks_exports["kueue"])
    (topology,) = [m for _, m in found if m["kind"] == "Topology"]
    assert topology["spec"]["levels"] == [{"nodeLabel": "topology.gpuplan.io/block"},
                                          {"nodeLabel": "topology.gpuplan.io/rack"}]
    flavors = [m for _, m in found if m["kind"] == "ResourceFlavor"]
    assert {f["spec"]["topologyName"] for f in flavors} == {topology["metadata"]["name"]}
    script = racks_exports["kueue"] / "label-nodes.sh"
    assert script.stat().st_mode & 0o100
    assert ("kubectl label node l1 topology.gpuplan.io/block=b2 topology.gpuplan.io/rack=r1 "
            "--overwrite") in script.read_text().splitlines()
    submit = (racks_exports["kueue"] / "submit.sh").read_text()
    assert submit.index("kubectl apply -f topology.yaml") < submit.index(
        "kubectl apply -f queue.yaml")


def test_topology_labels_can_be_the_clusters_own(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """--topology-label names the node label of a level in the Topology, jobs and script."""
    _export(gpuplan, "kueue", RACKS_PLAN, RACKS, tmp_path, "--rehearse", "true", *SLICED,
            "--topology-label", "rack=cloud.provider.com/topology-rack")
    found = dict(documents(tmp_path))
    assert found["topology.yaml"]["spec"]["levels"][1] == {
        "nodeLabel": "cloud.provider.com/topology-rack"}
    assert _pod(found["jobs/1-gang.yaml"])["metadata"]["annotations"] == {
        "kueue.x-k8s.io/podset-required-topology": "cloud.provider.com/topology-rack"}
    assert "cloud.provider.com/topology-rack=r2" in (tmp_path / "label-nodes.sh").read_text()


@pytest.mark.parametrize(("target", "instance", "plan", "flags", "message"), [
    ("kueue", RACKS, RACKS_PLAN, ("--topology-label", "zone=acme.io/zone"),
     "'zone' is not a topology level of 'racks'"),
    ("kueue", RACKS, RACKS_PLAN, ("--topology-label", "rack=Bad Key"),
     "'Bad Key' is not a Kubernetes label key"),
    ("kueue", RACKS, RACKS_PLAN, ("--topology-label", "block=acme.io/x,rack=acme.io/x"),
     "label 'acme.io/x' is named twice"),
    ("kueue", SLEEPERS, SLEEPERS_PLAN, ("--topology-label", "rack=a"),
     "has no topology levels"),
    ("volcano", RACKS, RACKS_PLAN, ("--topology-label", "rack=a"), "--topology-label"),
])
def test_bad_topology_labels_are_refused(gpuplan: Gpuplan, tmp_path: Path, target: str,
                                         instance: Path, plan: Path, flags: tuple[str, ...],
                                         message: str) -> None:
    """A level the instance lacks, a bad or repeated key, a flag Volcano does not take."""
    outcome = gpuplan("export", target, plan, "--instance", instance, "-o", tmp_path,
                      "--epoch", EPOCH, "--rehearse", "true", *SLICED, *flags)
    assert outcome.code == 2
    assert message in outcome.err


def test_volcano_gets_hypernodes_and_each_gangs_tier(racks_exports: dict[str, Path]) -> None:
    """HyperNodes: tier 1 the racks over their nodes, tier 2 the blocks over their racks.

    A gang required within a rack is hard at tier 1, within a block hard at tier 2; one
    that would rather stay in a rack is soft at tier 1. A multi-node gang is a pod per
    node with the node's GPUs, all or none (minAvailable).
    """
    found = dict(documents(racks_exports["volcano"]))
    hypernodes = {m["metadata"]["name"]: m["spec"] for _, m in documents(
        racks_exports["volcano"]) if m["kind"] == "HyperNode"}
    assert hypernodes["rack-b1-r2"] == {"tier": 1, "tierName": "rack", "members": [
        {"type": "Node", "selector": {"exactMatch": {"name": "h3"}}},
        {"type": "Node", "selector": {"exactMatch": {"name": "h4"}}}]}
    assert hypernodes["block-b1"]["tier"] == 2
    assert [m["selector"]["exactMatch"]["name"] for m in hypernodes["block-b1"]["members"]] \
        == ["rack-b1-r1", "rack-b1-r2"]
    tiers = {job: found[f"jobs/{job}.yaml"]["spec"]["networkTopology"]
             for job in ("1-gang", "6-wide", "2-pref")}
    assert tiers == {"1-gang": {"mode": "hard", "highestTierAllowed": 1},
                     "6-wide": {"mode": "hard", "highestTierAllowed": 2},
                     "2-pref": {"mode": "soft", "highestTierAllowed": 1}}
    wide = found["jobs/6-wide.yaml"]["spec"]
    assert (wide["minAvailable"], wide["tasks"][0]["replicas"]) == (4, 4)
    assert _pod(found["jobs/6-wide.yaml"])["spec"]["containers"][0]["resources"] == {
        "limits": {"nvidia.com/gpu": "4"}}
    assert "networkTopology" not in found["jobs/5-cpu.yaml"]["spec"]


def test_time_sliced_jobs_ask_for_shared_gpus(racks_exports: dict[str, Path]) -> None:
    """With time-slicing, jobs on the sharing L4 ask for nvidia.com/gpu.shared.

    The L4's flavor has replicas x GPUs of it as quota and no nvidia.com/gpu; the H100
    jobs keep whole GPUs.
    """
    found = dict(documents(racks_exports["kueue"]))
    limits = {job: _pod(found[f"jobs/{job}.yaml"])["spec"]["containers"][0]["resources"][
        "limits"] for job in ("3-infer-1", "4-infer-2", "1-gang")}
    assert limits == {"3-infer-1": {"nvidia.com/gpu.shared": "1"},
                      "4-infer-2": {"nvidia.com/gpu.shared": "1"},
                      "1-gang": {"nvidia.com/gpu": "4"}}
    queue = next(m for _, m in documents(racks_exports["kueue"]) if m["kind"] == "ClusterQueue")
    l4 = next(f for f in queue["spec"]["resourceGroups"][0]["flavors"]
              if f["name"].startswith("l4"))
    quota = {r["name"]: r["nominalQuota"] for r in l4["resources"]}
    assert (quota["nvidia.com/gpu"], quota["nvidia.com/gpu.shared"]) == ("0", "4")


@pytest.mark.parametrize("target", ["kueue", "volcano"])
@pytest.mark.parametrize(("flags", "message"), [
    ((), "GPU l1/0 is held by 'infer-1' and 'infer-2' at once from 0 s to 7 s: an "
         "nvidia.com/gpu belongs to one pod; L4 is declared sharing: export with "
         "--gpu-sharing time-slicing --replicas R"),
    (("--gpu-sharing", "time-slicing", "--replicas", "1"),
     "2 jobs, more than the 1 --replicas of a time-sliced GPU"),
    (("--gpu-sharing", "time-slicing"), "--gpu-sharing time-slicing and --replicas R go "
                                        "together"),
    (("--replicas", "4"), "--gpu-sharing time-slicing and --replicas R go together"),
])
def test_a_shared_gpu_needs_time_slicing_with_enough_replicas(
        gpuplan: Gpuplan, tmp_path: Path, target: str, flags: tuple[str, ...],
        message: str) -> None:
    """Two jobs on one GPU: refused naming the GPU, jobs, time and flags; nothing written."""
    outcome = gpuplan("export", target, RACKS_PLAN, "--instance", RACKS, "-o",
                      tmp_path / "out", "--epoch", EPOCH, "--rehearse", "true", *flags)
    assert outcome.code == 2
    assert message in outcome.err
    assert not (tmp_path / "out").exists()


def test_volcano_splits_a_jobs_node_demand_over_its_pods(gpuplan: Gpuplan,
                                                         tmp_path: Path) -> None:
    """A 2-GPU job on one node is 2 one-GPU pods: each asks for half its CPUs and memory."""
    instance = tmp_path / "one.json"
    instance.write_text(json.dumps({
        "gpu_types": [{"id": "A", "capacity": {"compute": 1}}],
        "nodes": [{"id": "n1", "gpus": {"A": 2},
                   "resources": {"cpu_milli": 16000, "memory_mib": 1000}}],
        "jobs": [{"id": "j", "gpus": 2, "duration_s": 5,
                  "node_demand": {"cpu_milli": 8000, "memory_mib": 301}}],
        "objective": "makespan"}))
    assert gpuplan("solve", instance, "-o", tmp_path / "plan.json").code == 0
    _export(gpuplan, "volcano", tmp_path / "plan.json", instance, tmp_path / "out",
            "--rehearse", "true")
    job = dict(documents(tmp_path / "out"))["jobs/1-j.yaml"]
    assert job["spec"]["tasks"][0]["replicas"] == 2
    assert _pod(job)["spec"]["containers"][0]["resources"] == {
        "limits": {"nvidia.com/gpu": "1"}, "requests": {"cpu": "4000m", "memory": "150Mi"}}


def test_kueue_gives_each_account_a_queue_with_its_gpu_limit(gpuplan: Gpuplan,
                                                             tmp_path: Path) -> None:
    """Each account's jobs go to its own ClusterQueue, whose GPU quota is its limit.

    quotas.json without its QOS: nlp (4 GPUs) and vision (2) are capped on each GPU type
    (at most the type's GPUs), ops has the fleet's; a job without an account stays in the
    plan's queue. Every object passes the CRDs' schemas.
    """
    document = json.loads((DATA / "quotas.json").read_text())
    del document["qos"]
    for job in document["jobs"]:
        job.pop("qos", None)
    instance, plan = tmp_path / "quotas.json", tmp_path / "plan.json"
    instance.write_text(json.dumps(document))
    assert gpuplan("solve", instance, "-o", plan).code == 0
    _export(gpuplan, "kueue", plan, instance, tmp_path / "out", "--rehearse", "true")
    found = documents(tmp_path / "out")
    assert {f: manifest_errors(m) for f, m in found if manifest_errors(m)} == {}
    quotas = {m["metadata"]["name"]: [
        int(r["nominalQuota"]) for flavor in m["spec"]["resourceGroups"][0]["flavors"]
        for r in flavor["resources"]] for _, m in found if m["kind"] == "ClusterQueue"}
    assert quotas == {"gpuplan": [8, 4], "gpuplan-nlp": [4, 4], "gpuplan-vision": [2, 2],
                      "gpuplan-ops": [8, 4]}
    local = {m["metadata"]["name"]: m["spec"]["clusterQueue"]
             for _, m in found if m["kind"] == "LocalQueue"}
    assert local == {name: name for name in quotas}
    queue_of = {m["metadata"]["annotations"]["gpuplan.io/job"]:
                m["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]
                for _, m in found if m["kind"] == "Job"}
    assert (queue_of["nlp-4"], queue_of["vision-3"], queue_of["ops-1"],
            queue_of["batch-1"]) == ("gpuplan-nlp", "gpuplan-vision", "gpuplan-ops", "gpuplan")


def test_kueue_refuses_a_qos_gpu_limit(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """A job goes through one Kueue queue, its account's: a QOS limit beside it is exit 2."""
    plan = tmp_path / "plan.json"
    assert gpuplan("solve", DATA / "quotas.json", "-o", plan).code == 0
    outcome = gpuplan("export", "kueue", plan, "--instance", DATA / "quotas.json", "-o",
                      tmp_path / "out", "--epoch", EPOCH, "--rehearse", "true")
    assert outcome.code == 2
    assert "qos.urgent.gpus: QOS 'urgent' limits its jobs' GPUs, which Kueue cannot hold" \
        in " ".join(outcome.err.split())
    assert not (tmp_path / "out").exists()
