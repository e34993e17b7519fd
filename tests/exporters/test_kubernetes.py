"""gpuplan export kueue|volcano: manifests the projects' schemas take, and what is refused."""

from __future__ import annotations

import copy
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
    # get: every job has succeeded (".status.succeeded/.status.failed").
    (bin_ / "kubectl").write_text(f'#!/bin/bash\necho "$*" >> {log}\n'
                                  '[ "$3" = get ] && echo "1/"\nexit 0\n')
    (bin_ / "kubectl").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_}:{os.environ['PATH']}"}
    done = subprocess.run([str(tmp_path / "out" / "submit.sh"), "--now"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    calls = log.read_text().splitlines()
    assert calls[0] == "apply -f queue.yaml"
    created = [c.split("/")[-1].removesuffix(".yaml") for c in calls if c.startswith("create")]
    assert sorted(created) == sorted(p.stem for p in (tmp_path / "out" / "jobs").iterdir())
    assert created[:4] == ["1-prepare", "2-sweep-1", "3-embed", "5-sweep-2"]
    for job, before in (("4-train", "prepare"), ("7-evaluate", "train")):
        asked = calls.index(f"-n default get job {before} -o jsonpath="
                            "{.status.succeeded}/{.status.failed}")
        assert asked < calls.index(f"create -f jobs/{job}.yaml")


@pytest.mark.parametrize("target", ["kueue", "volcano"])
def test_paused_and_shared_plans_are_refused(gpuplan: Gpuplan, tmp_path: Path,
                                             target: str) -> None:
    """A job in several segments, or sharing GPUs, is refused with the reason; no file."""
    paused = gpuplan("export", target, DATA / "slurm" / "paused_plan.json", "--instance",
                     DATA / "slurm" / "paused.json", "-o", tmp_path / "a", "--image", "x")
    assert paused.code == 2
    assert "'long' is planned in 2 segments" in paused.err
    shared = gpuplan("export", target, DATA / "schedule_v2_segments.json", "--instance",
                     DATA / "segments_small.json", "-o", tmp_path / "b", "--rehearse", "true")
    assert shared.code == 2
    assert "shares its GPUs" in shared.err
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
