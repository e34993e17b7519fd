"""Kubernetes: a verified plan as Kueue or Volcano manifests and a gating submit script.

Kubernetes has no start-time field, so the plan reaches the cluster in three ways:

* **where**: each pod is pinned to its planned node (node affinity on ``metadata.name``)
  and asks for the planned number of ``nvidia.com/gpu``; the GPU type's flavor (Kueue) or
  the node itself (Volcano) fixes the type;
* **in what order**: jobs are created in planned start order into a first-in-first-out
  queue (Kueue ``StrictFIFO``, Volcano ``dequeueStrategy: fifo``), with a priority class
  from the job's weight (higher weight, higher priority);
* **when**: ``submit.sh`` is a small gating controller: it creates each job at its planned
  start (the schedule's epoch plus the start), so no job starts before its plan; for
  Kueue it also holds a job until its predecessors succeeded (and drops it when one
  failed). Volcano takes the instance's dependencies natively, as a JobFlow.

A multi-node gang is one pod per node, each with the node's share of the gang, pinned to
the gang's nodes and kept apart by a required pod anti-affinity on the host name, all
admitted together (Kueue's single PodSet, Volcano's ``minAvailable``). The topology goes
to Kueue as a ``Topology`` (levels by node label, with ``label-nodes.sh`` to label the
nodes) and the podset topology annotations, and to Volcano as ``HyperNode`` objects and
each job's ``networkTopology``.

What is not guaranteed: that a job starts *at* its planned time (a cluster busier than
planned admits it later), and, once created, Kueue orders by priority before creation
time. Paused plans (several segments per job) are refused, since a pod does not pause at
a planned time; so is a GPU held by several jobs at once, since an ``nvidia.com/gpu``
belongs to one pod, unless its type is declared sharing and the export asks for NVIDIA's
time-slicing (``--gpu-sharing time-slicing``): the jobs on such GPUs then ask for
``nvidia.com/gpu.shared``, which gives no GPU index and no memory isolation.
"""

from __future__ import annotations

import functools
import json
import math
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import yaml

from gpuplan._version import __version__
from gpuplan.core.errors import InputError, setting
from gpuplan.core.instance import Instance
from gpuplan.core.options import option, parse_number
from gpuplan.exporters.base import (
    CheckedPlan,
    PlannedJob,
    command_of,
    domain_tree,
    epoch_option,
    limit_s,
    margin_option,
    refuse_crowd,
    refuse_elastic_pieces,
    rehearse_option,
    safe_name,
    segment_nodes,
)
from gpuplan.readers.kubernetes import LABEL_KEY, parse_level_labels

#: The API version of the Kueue objects (its CRDs' stored version).
KUEUE_API = "kueue.x-k8s.io/v1beta2"
#: The extended resource of NVIDIA's device plugin.
GPU_RESOURCE = "nvidia.com/gpu"
#: The resource of its time-sliced GPUs (``renameByDefault: true``).
SHARED_GPU_RESOURCE = "nvidia.com/gpu.shared"
#: The node label of a node's host name, which keeps a gang's pods on distinct nodes.
HOSTNAME_LABEL = "kubernetes.io/hostname"
#: The node label key of a topology level unless ``--topology-label`` gives one.
DEFAULT_LEVEL_LABEL = "topology.gpuplan.io/{level}"
#: The node label NVIDIA's GPU feature discovery sets to the GPU's product name.
GPU_LABEL = "nvidia.com/gpu.product"
#: The image a rehearsal runs (it only sleeps).
REHEARSAL_IMAGE = "busybox:1.36"
#: A DNS-1123 label: Kubernetes' rule for Job, queue and class names.
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
# Leaves room within 63 for a JobFlow's prefix (16 and '-') and pods' '-worker-NN'.
_NAME_MAX = 36
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_Dumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_PLAIN_KEY = re.compile(r"^[A-Za-z][A-Za-z0-9._/-]*$")


def dns_name(text: str, limit: int = _NAME_MAX) -> str:
    """``text`` as a DNS-1123 label; when it has to change, a hash of it keeps it unique."""
    return safe_name(text, _DNS_LABEL, "[^a-z0-9]", limit, lower=True)


def _scalar(value: Any) -> str:
    """A scalar as YAML; a string double-quoted (JSON's quoting is YAML's).

    Quoted, no string reads as a number, a boolean or null.
    """
    if isinstance(value, str):
        if value.isprintable():
            return json.dumps(value, ensure_ascii=False)
        # Line breaks, tabs, control characters: YAML's own escapes.
        return str(yaml.dump(value, Dumper=_Dumper, default_style='"', width=1 << 16)
                   ).removesuffix("\n")
    if value is None:
        return "null"
    if not isinstance(value, int):  # bool is an int; manifests hold no floats
        raise TypeError(f"a manifest holds no {type(value).__name__}: {value!r}")
    return json.dumps(value)


@functools.cache
def _key(key: str) -> str:
    """A mapping key as YAML: plain where YAML reads it back as that string."""
    return key if _PLAIN_KEY.match(key) and yaml.safe_load(key) == key else _scalar(key)


def _emit(value: Any, indent: str, out: list[str]) -> None:
    """Block-style YAML lines of ``value`` (mappings, lists and scalars) at ``indent``."""
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for key, item in items:
        head = (f"{_key(key)}:"
                if isinstance(value, dict) else "-")
        if isinstance(item, dict | list) and item:
            if isinstance(value, dict):
                out.append(f"{indent}{head}")
                _emit(item, indent + "  ", out)
            else:
                nested: list[str] = []
                _emit(item, indent + "  ", nested)
                out.append(f"{indent}- {nested[0].removeprefix(indent + '  ')}")
                out.extend(nested[1:])
        else:
            flow = ("{}" if isinstance(item, dict) else "[]") if isinstance(
                item, dict | list) else _scalar(item)
            out.append(f"{indent}{head} {flow}")


def manifest_yaml(manifest: Mapping[str, Any]) -> str:
    """A manifest as a YAML document.

    Written here rather than by PyYAML's representer, which takes a third of a millisecond
    per Job: a plan of 10,000 jobs is a few seconds of it.
    """
    out: list[str] = []
    _emit(manifest, "", out)
    return "\n".join(out) + "\n"


def manifests_yaml(manifests: list[dict[str, Any]]) -> str:
    """Manifests as one multi-document YAML file."""
    return "---\n".join(manifest_yaml(m) for m in manifests)


@dataclass(frozen=True)
class KubernetesOptions:
    """Options of ``gpuplan export kueue`` and ``gpuplan export volcano``."""

    epoch: Any = epoch_option()
    time_margin: float = margin_option()
    rehearse: bool = rehearse_option()
    image: str | None = option(None, "--image", "the container image that runs the jobs' "
                               f"commands (required unless rehearsing; a rehearsal runs "
                               f"{REHEARSAL_IMAGE})", metavar="IMAGE")
    namespace: str = option("default", "--namespace", "the namespace of the jobs and their "
                            "queue (default: default)", metavar="NAME")
    queue: str = option("gpuplan", "--queue", "the name of the queue the plan writes "
                        "(default: gpuplan)", metavar="NAME")
    gpu_label: str = option(GPU_LABEL, "--gpu-label", "the node label holding the GPU "
                            f"type (default: {GPU_LABEL})", metavar="KEY")
    gpu_sharing: str = option("none", "--gpu-sharing", "none: a GPU belongs to one pod; "
                              "time-slicing: jobs on GPUs of types declared sharing ask for "
                              f"{SHARED_GPU_RESOURCE} (NVIDIA's device plugin, renameByDefault)"
                              " (default: none)", choices=("none", "time-slicing"))
    replicas: int | None = option(None, "--replicas", "with --gpu-sharing time-slicing: the "
                                  "device plugin's replicas per GPU, the most jobs one GPU "
                                  "may hold at once", parse=parse_number(int, 1, 1000),
                                  metavar="R")


@dataclass(frozen=True)
class KueueOptions(KubernetesOptions):
    """Options of ``gpuplan export kueue``."""

    topology_label: tuple[tuple[str, str], ...] = option(
        (), "--topology-label", "the node label of each topology level, as "
        "LEVEL=KEY,... (default: topology.gpuplan.io/LEVEL)", parse=parse_level_labels,
        metavar="LEVEL=KEY,...")


@dataclass(frozen=True)
class _Names:
    """The Kubernetes names of the plan's parts."""

    jobs: dict[str, str]
    flavors: dict[str, str]
    priority: dict[float, tuple[str, int]]


def _check(instance: Instance, plan: CheckedPlan, o: KubernetesOptions) -> _Names:
    """Refuse what a pod cannot do; name every object."""
    for name, value in (("namespace", o.namespace), ("queue", o.queue)):
        if not _DNS_LABEL.match(value) or len(value) > 63:
            raise InputError(setting(name), "", f"{value!r} is not a Kubernetes name: lower "
                             "case letters, digits and '-', at most 63")
    if not o.rehearse and o.image is None:
        raise InputError(setting("image"), "", "give the container image that runs the jobs' "
                         "commands (--image), or export with --rehearse true")
    _check_sharing(instance, plan, o)
    refuse_elastic_pieces(plan, "a Kubernetes Job")
    for job in plan.jobs:
        if len(job.segments) > 1:
            raise InputError(plan.source, f"segments of job {job.id!r}", f"job {job.id!r} is "
                             f"planned in {len(job.segments)} segments (paused or moved): a "
                             "pod cannot pause at a planned time; export it to Slurm (segment "
                             "chains), or plan without preemption")
    names = {job.id: dns_name(job.id) for job in plan.jobs}
    taken: dict[str, str] = {}
    for job_id, name in names.items():
        if taken.setdefault(name, job_id) != job_id:
            raise InputError(instance.source, "jobs", f"jobs {taken[name]!r} and {job_id!r} "
                             f"both become the Kubernetes name {name!r}: rename one")
    weights = sorted({float(instance.weight[j.index]) for j in plan.jobs})
    priority = {w: (dns_name(f"{o.queue}-weight-{w:g}".replace(".", "-")), 1000 * (k + 1))
                for k, w in enumerate(weights)}
    return _Names(names, {t: dns_name(t) for t in instance.type_ids}, priority)


def _check_sharing(instance: Instance, plan: CheckedPlan, o: KubernetesOptions) -> None:
    """Refuse a GPU held by several jobs at once that time-slicing cannot give them.

    Raises
    ------
    InputError
        Without time-slicing, for the first such GPU (naming it, the jobs, the time and
        the flags); with it, for ``replicas`` missing, a GPU of a type not declared
        sharing, a GPU held by more jobs at once than ``replicas``, or a node holding
        sharing and whole GPU types (the device plugin time-slices all GPUs of a node);
        ``replicas`` without time-slicing.
    """
    slicing = o.gpu_sharing == "time-slicing"
    if slicing != (o.replicas is not None):
        raise InputError(setting("replicas"), "", "--gpu-sharing time-slicing and "
                         "--replicas R go together: R is the device plugin's replicas of "
                         "each GPU")
    why = f"an {GPU_RESOURCE} belongs to one pod"
    how = ("export with --gpu-sharing time-slicing --replicas R (R: the replicas of NVIDIA's "
           "device plugin time-slicing, with renameByDefault)")
    for crowd in plan.crowds:
        if not slicing or not instance.shared[instance.gpu_type[instance.gpu_index[crowd.gpu]]]:
            raise refuse_crowd(plan, crowd, why, how)
        if len(crowd.segments) > (o.replicas or 0):
            raise InputError(plan.source, f"segments of job {crowd.segments[0].job!r}",
                             f"GPU {crowd.gpu} is held by {crowd.holders} at once from "
                             f"{crowd.start_s:g} s to {crowd.end_s:g} s: {len(crowd.segments)} "
                             f"jobs, more than the {o.replicas} --replicas of a time-sliced "
                             "GPU")
    if slicing:
        for n, node in enumerate(instance.node_ids):
            held = instance.node_gpus[n] > 0
            if (held & instance.shared).any() and (held & ~instance.shared).any():
                raise InputError(instance.source, f"nodes[{n}].gpus", f"node {node!r} holds "
                                 "GPU types declared sharing and held whole, but NVIDIA's "
                                 "device plugin time-slices all GPUs of a node alike")


def _gpu_resource(instance: Instance, o: KubernetesOptions, job: PlannedJob) -> str:
    """The extended resource a job's pods ask for: time-sliced GPUs of a sharing type."""
    shared = instance.shared[instance.type_index[job.segments[0].gpu_type]]
    return SHARED_GPU_RESOURCE if o.gpu_sharing == "time-slicing" and shared else GPU_RESOURCE


def _pods(instance: Instance, job: PlannedJob, one_per_gpu: bool) -> tuple[int, int]:
    """How many pods a job runs and how many GPUs each asks for.

    A pod per node of a multi-node gang with the node's GPUs; a pod per GPU of a
    single-node gang when ``one_per_gpu`` (Volcano's ranks), else one pod.
    """
    segment = job.segments[0]
    nodes = len(segment_nodes(instance, segment))
    gpus = len(segment.gpu_ids)
    if nodes > 1:
        return nodes, gpus // nodes
    return (gpus, 1) if one_per_gpu and gpus > 1 else (1, gpus)


def _pod_spec(instance: Instance, plan: CheckedPlan, o: KubernetesOptions, job: PlannedJob,
              pods: tuple[int, int], deadline: bool) -> dict[str, Any]:
    """The pod template's spec: pinned to the nodes, the GPUs, the command.

    ``pods``: the job's pods and GPUs per pod (:func:`_pods`). The node demand, per node,
    is split over the pods on a node (rounded down, so that pods the plan packs on a node
    fit it); a multi-node gang's pods are kept on distinct nodes by a pod anti-affinity.
    """
    segment = job.segments[0]
    length = segment.end_s - segment.start_s
    command = command_of(instance, job.index, o.rehearse, instance.source)
    count, gpus = pods
    nodes = segment_nodes(instance, segment)
    limits: dict[str, str] = {_gpu_resource(instance, o, job): str(gpus)} if gpus else {}
    on_a_node = count // len(nodes)
    requests: dict[str, str] = {}
    for resource, key, unit in (("cpu_milli", "cpu", "m"), ("memory_mib", "memory", "Mi")):
        if resource in instance.node_resources:
            amount = instance.node_demand[job.index, instance.node_resources.index(resource)]
            if math.floor(amount / on_a_node) > 0:
                requests[key] = f"{math.floor(amount / on_a_node)}{unit}"
    resources: dict[str, Any] = {"limits": limits} if limits else {}
    if requests:
        resources["requests"] = requests
    env = [{"name": "GPUPLAN_JOB", "value": job.id},
           {"name": "GPUPLAN_WORK", "value": "1" if segment.work is None
            else f"{segment.work:.6g}"}]
    container: dict[str, Any] = {
        "name": "job",
        "image": REHEARSAL_IMAGE if o.rehearse and o.image is None else o.image,
        "command": ["/bin/sh", "-c", f"sleep {math.ceil(length)}" if command is None
                    else command],
        "env": env,
    }
    if resources:
        container["resources"] = resources
    affinity: dict[str, Any] = {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In",
                              "values": list(nodes)}]}]}}}
    if len(nodes) > 1:
        affinity["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"gpuplan.io/job": _job_label(job)}},
             "topologyKey": HOSTNAME_LABEL}]}
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "affinity": affinity,
        "containers": [container],
    }
    if deadline:
        spec["activeDeadlineSeconds"] = limit_s(length, o.time_margin)
    return spec


def _annotations(plan: CheckedPlan, job: PlannedJob) -> dict[str, str]:
    segment = job.segments[0]
    return {"gpuplan.io/job": job.id,
            "gpuplan.io/planned-start": plan.at(segment.start_s).isoformat(),
            "gpuplan.io/planned-end": plan.at(segment.end_s).isoformat(),
            "gpuplan.io/planned-node": ",".join(segment_nodes(plan.instance, segment)),
            "gpuplan.io/planned-gpus": ",".join(segment.gpu_ids)}


def _job_label(job: PlannedJob) -> str:
    """The job's ``gpuplan.io/job`` label: its id, else its Kubernetes name."""
    return job.id if len(job.id) <= 63 and _LABEL_VALUE.match(job.id) else dns_name(job.id)


def _labels(job: PlannedJob) -> dict[str, str]:
    return {"app.kubernetes.io/managed-by": "gpuplan", "gpuplan.io/job": _job_label(job)}


def _file(k: int, width: int, name: str) -> str:
    return f"jobs/{k:0{width}d}-{name}.yaml"


@dataclass(frozen=True)
class _Timed:
    """A manifest submit.sh creates at a planned time, once the jobs it waits for succeeded."""

    start_s: float
    path: str
    name: str
    waits: tuple[str, ...] = ()


class _KubernetesExporter:
    """What the Kueue and Volcano exporters share: the checks, the pods, submit.sh."""

    options_type: ClassVar[type[Any]] = KubernetesOptions
    needs_schedule: ClassVar[bool] = True

    def files(self, instance: Instance, plan: CheckedPlan | None,
              options: Any) -> dict[str, str]:
        """``queue.yaml``, the manifests under ``jobs/`` and ``submit.sh``.

        With a topology, ``topology.yaml`` too (and what else :meth:`topology` writes).

        Raises
        ------
        InputError
            For a plan without an epoch, a paused job, a GPU held by several jobs at once
            that the export cannot give them, a job without a command (unless rehearsing)
            or without ``--image``, names that collide, or a topology the target cannot
            take.
        """
        assert plan is not None
        o: KubernetesOptions = options
        names = _check(instance, plan, o)
        files = self.topology(instance, o)
        files["queue.yaml"] = manifests_yaml(self.queue(instance, plan, o, names))
        setup, timed = self.manifests(instance, plan, o, names, files)
        files["submit.sh"] = self._submit(instance, plan, o, [
            *(["topology.yaml"] if "topology.yaml" in files else []), "queue.yaml", *setup],
            timed)
        return files

    def topology(self, instance: Instance, o: KubernetesOptions) -> dict[str, str]:
        """The files that give the cluster the instance's topology (none without one)."""
        raise NotImplementedError

    def queue(self, instance: Instance, plan: CheckedPlan, o: KubernetesOptions,
              names: _Names) -> list[dict[str, Any]]:
        """The queue, its flavors and priority classes."""
        raise NotImplementedError

    def manifests(self, instance: Instance, plan: CheckedPlan, o: KubernetesOptions,
                  names: _Names, files: dict[str, str]) -> tuple[list[str], list[_Timed]]:
        """Add the jobs' manifests to ``files``.

        Returns
        -------
        tuple
            The paths applied up front, and the manifests created at planned times.
        """
        raise NotImplementedError

    def gate(self, o: KubernetesOptions) -> list[str]:
        """The shell function ``succeeded NAME``: waits for a job others wait for.

        True once it succeeded, false once it failed. Only exporters whose jobs
        ``submit.sh`` holds (Kueue's) define it.
        """
        raise NotImplementedError

    def _submit(self, instance: Instance, plan: CheckedPlan, o: KubernetesOptions,
                setup: list[str], timed: list[_Timed]) -> str:
        """The gating controller: applies ``setup`` in order, then creates ``timed``."""
        lines = [
            "#!/bin/bash",
            f"# gpuplan {__version__}: a gating controller for the plan {plan.source} of "
            f"{instance.name!r} ({plan.schedule.method}): applies the queue, then creates "
            "each job at its planned start",
            "# (and, where it waits for jobs, once they succeeded). Keep it running while the "
            "plan runs (e.g. under nohup).",
            "#   ./submit.sh          creates each job at its planned time",
            "#   ./submit.sh --now    creates them all now, in planned order: the queue's "
            "order and priorities remain",
            "set -euo pipefail",
            'cd "$(dirname "$0")"',
            'now=0; [ "${1:-}" = "--now" ] && now=1',
            "at() {  # at EPOCH_SECONDS: sleep until then",
            '  [ "$now" = 1 ] && return 0',
            '  local left=$(( $1 - $(date +%s) ))',
            '  if [ "$left" -gt 0 ]; then sleep "$left"; fi',
            "}",
            *(self.gate(o) if any(item.waits for item in timed) else []),
            *(f"kubectl apply -f {path}" for path in setup),
        ]
        # Planned order is creation order, which the FIFO queues keep.
        for item in sorted(timed, key=lambda t: t.start_s):
            begin = plan.at(item.start_s)
            create = f"at {int(begin.timestamp())} && kubectl create -f {item.path}"
            if not item.waits:
                lines.append(f"{create}  # {begin.isoformat()}")
                continue
            # A gated job waits in the background, so later jobs are not held up.
            gate = " && ".join(f"succeeded {w}" for w in item.waits)
            lines.append(f"( if {gate}; then {create}; else echo \"not created: {item.name} "
                         f"(a job it waits for failed)\" >&2; fi ) &  # {begin.isoformat()}")
        lines += ["wait", f'echo "created {len(timed)} objects of the plan"']
        return "\n".join(lines) + "\n"


def _fleet_quota(instance: Instance, o: KubernetesOptions, covered: list[str],
                 t: int) -> dict[str, str]:
    """The GPUs of type ``t`` (time-sliced: R per GPU), and its nodes' CPUs and memory.

    Every covered resource has a quota, 0 where the type has none.
    """
    holders = instance.node_gpus[:, t] > 0
    count = int(instance.node_gpus[:, t].sum())
    sliced = o.gpu_sharing == "time-slicing" and bool(instance.shared[t])
    quota = {GPU_RESOURCE: "0" if sliced else str(count)}
    if SHARED_GPU_RESOURCE in covered:
        quota[SHARED_GPU_RESOURCE] = str(count * (o.replicas or 0)) if sliced else "0"
    for resource, key, unit in (("cpu_milli", "cpu", "m"), ("memory_mib", "memory", "Mi")):
        if key in covered:
            r = instance.node_resources.index(resource)
            quota[key] = f"{math.floor(float(instance.node_capacity[holders, r].sum()))}{unit}"
    return quota


def _covered(instance: Instance, plan: CheckedPlan, o: KubernetesOptions) -> list[str]:
    """The resources the jobs ask for: GPUs, and time-sliced GPUs, CPUs and memory if any do."""
    covered = [GPU_RESOURCE]
    if any(job.segments[0].gpu_ids and _gpu_resource(instance, o, job) == SHARED_GPU_RESOURCE
           for job in plan.jobs):
        covered.append(SHARED_GPU_RESOURCE)
    jobs = [j.index for j in plan.jobs]
    for resource, key in (("cpu_milli", "cpu"), ("memory_mib", "memory")):
        if resource in instance.node_resources and np.any(
                instance.node_demand[jobs, instance.node_resources.index(resource)] > 0):
            covered.append(key)
    return covered


def _queues(o: KubernetesOptions, name: str, covered: list[str],
            flavors: list[tuple[str, dict[str, str]]]) -> list[dict[str, Any]]:
    """A StrictFIFO ClusterQueue with these flavors' nominal quotas, and its LocalQueue."""
    return [{"apiVersion": KUEUE_API, "kind": "ClusterQueue", "metadata": {"name": name},
             "spec": {
                 "namespaceSelector": {},
                 "queueingStrategy": "StrictFIFO",
                 "resourceGroups": [{"coveredResources": covered, "flavors": [
                     {"name": flavor, "resources": [{"name": key, "nominalQuota": value}
                                                    for key, value in quota.items()]}
                     for flavor, quota in flavors]}],
             }},
            {"apiVersion": KUEUE_API, "kind": "LocalQueue",
             "metadata": {"name": name, "namespace": o.namespace},
             "spec": {"clusterQueue": name}}]


def _capped(quota: dict[str, str], gpus: int) -> dict[str, str]:
    """A flavor's quota with its GPUs at most ``gpus`` (-1: as it is)."""
    if gpus < 0:
        return quota
    return {key: str(min(int(value), gpus)) if key in (GPU_RESOURCE, SHARED_GPU_RESOURCE)
            else value for key, value in quota.items()}


def _account_queues(instance: Instance, o: KubernetesOptions) -> dict[int, str]:
    """The name of each account's ClusterQueue and LocalQueue (``QUEUE-ACCOUNT``), by index.

    Raises
    ------
    InputError
        For a QOS with a GPU limit that some job is under: a workload goes through one
        queue, its account's, so Kueue has nothing to hold a second limit with.
    """
    qos = next((limit for limit in instance.gpu_limits if limit.kind == "QOS"), None)
    if qos is not None:
        raise InputError(instance.source, f"qos.{qos.id}.gpus", f"{qos} limits its jobs' "
                         "GPUs, which Kueue cannot hold: a workload goes through one queue, "
                         "its account's; give the limit to an account, or export to Slurm")
    names = {a: dns_name(f"{o.queue}-{account}", 63)
             for a, account in enumerate(instance.account_ids)}
    if o.queue in names.values() or len(set(names.values())) < len(names):
        raise InputError(setting("queue"), "", f"the queues of the accounts of "
                         f"{instance.name!r} ({', '.join(names.values())}) and {o.queue!r} "
                         "must have distinct names: give another --queue")
    return names


def _level_keys(instance: Instance, o: KueueOptions) -> list[str]:
    """The node label key of each topology level: ``--topology-label``'s, else the default.

    Raises
    ------
    InputError
        For a level the instance lacks, a level whose default key is no label key, two
        levels with one key, or the host name label above the lowest level.
    """
    given = dict(o.topology_label)
    unknown = [level for level in given if level not in instance.levels]
    if unknown:
        raise InputError(setting("topology_label"), "", f"{unknown[0]!r} is not a topology "
                         f"level of {instance.name!r} (levels: "
                         f"{', '.join(instance.levels) or 'none'})")
    keys = [given.get(level, DEFAULT_LEVEL_LABEL.format(level=level))
            for level in instance.levels]
    for level, key in zip(instance.levels, keys, strict=True):
        if LABEL_KEY.match(key) is None:
            raise InputError(instance.source, "topology.levels", f"level {level!r} makes "
                             f"no node label key ({key!r}): give its label with "
                             "--topology-label LEVEL=KEY")
    twice = [key for k, key in enumerate(keys) if key in keys[:k]]
    if twice or HOSTNAME_LABEL in keys[:-1]:
        raise InputError(setting("topology_label"), "", f"{(twice or [HOSTNAME_LABEL])[0]!r}: "
                         f"each level needs a label of its own, and {HOSTNAME_LABEL} can only "
                         "be the lowest")
    return keys


def _own_label(instance: Instance, n: int, level: int) -> str:
    """Node ``n``'s own label at a level: its domain's id less the wider domain's."""
    ident = str(instance.domain_ids[level][instance.node_domain[n, level]])
    if not level:
        return ident
    wider = str(instance.domain_ids[level - 1][instance.node_domain[n, level - 1]])
    return ident[len(wider) + 1:]


def _topology_annotation(instance: Instance, keys: list[str], j: int) -> dict[str, str]:
    """Kueue's podset topology annotation of job ``j``: its required level, else preferred.

    A preference narrower than a requirement has no annotation of its own (a podset takes
    one of them); the plan's nodes keep it anyway.
    """
    if not len(instance.required_level):
        return {}
    for kind, level in (("required", instance.required_level[j]),
                        ("preferred", instance.preferred_level[j])):
        if level >= 0:
            return {f"kueue.x-k8s.io/podset-{kind}-topology": keys[level]}
    return {}


class KueueExporter(_KubernetesExporter):
    """Kueue: flavors, a ClusterQueue and LocalQueue, priority classes, suspended Jobs."""

    name: ClassVar[str] = "kueue"
    description: ClassVar[str] = ("Kueue (v1beta2): a ResourceFlavor per GPU type, a "
                                  "StrictFIFO ClusterQueue with the fleet's quota and one "
                                  "per account with its GPU limit, their LocalQueues, a "
                                  "suspended batch/v1 Job per job, and the Topology with "
                                  "label-nodes.sh")
    options_type: ClassVar[type[Any]] = KueueOptions

    def gate(self, o: KubernetesOptions) -> list[str]:
        """``succeeded NAME``: polls the Job's Complete and Failed conditions."""
        return [
            "succeeded() {  # succeeded NAME: wait for the Job to end; false when it failed",
            "  local state",
            "  while true; do",
            f"    state=$(kubectl -n {shlex.quote(o.namespace)} get job \"$1\" -o "
            "jsonpath='{.status.conditions[?(@.type==\"Complete\")].status}/"
            "{.status.conditions[?(@.type==\"Failed\")].status}' 2>/dev/null || true)",
            '    case "$state" in True/*) return 0 ;; */True) return 1 ;; esac',
            "    sleep 10",
            "  done",
            "}",
        ]

    def topology(self, instance: Instance, o: KubernetesOptions) -> dict[str, str]:
        """``topology.yaml``, the Topology of the levels' node labels, and ``label-nodes.sh``.

        ``label-nodes.sh`` labels each node with its own label at each level (``kubectl
        label node``), which Kueue reads the domains from; the host name is no level,
        as the pods are pinned to their nodes.

        Raises
        ------
        InputError
            For ``--topology-label`` without topology levels or naming a level the
            instance lacks, or a node label that is not a Kubernetes label value.
        """
        assert isinstance(o, KueueOptions)
        if not instance.levels:
            if o.topology_label:
                raise InputError(setting("topology_label"), "", f"{instance.name!r} has no "
                                 "topology levels")
            return {}
        keys = _level_keys(instance, o)
        lines = [
            "#!/bin/bash",
            f"# gpuplan {__version__}: labels the nodes of {instance.name!r} with their "
            "topology domains, the node labels of the Kueue Topology in topology.yaml.",
            "# Run it once (it needs the right to label nodes) before submit.sh.",
            "set -euo pipefail",
        ]
        for n, node in enumerate(instance.node_ids):
            pairs = []
            for i, key in enumerate(keys):
                if instance.node_domain[n, i] < 0:
                    break
                value = _own_label(instance, n, i)
                if len(value) > 63 or not _LABEL_VALUE.match(value):
                    raise InputError(instance.source, f"nodes[{n}].topology.{instance.levels[i]}",
                                     f"{value!r} is not a Kubernetes label value (at most 63 "
                                     "letters, digits, '-', '_' and '.')")
                pairs.append(shlex.quote(f"{key}={value}"))
            if pairs:
                lines.append(f"kubectl label node {shlex.quote(node)} {' '.join(pairs)} "
                             "--overwrite")
        return {"topology.yaml": manifest_yaml({
                    "apiVersion": KUEUE_API, "kind": "Topology",
                    "metadata": {"name": o.queue},
                    "spec": {"levels": [{"nodeLabel": key} for key in keys]}}),
                "label-nodes.sh": "\n".join(lines) + "\n"}

    def queue(self, instance: Instance, plan: CheckedPlan, o: KubernetesOptions,
              names: _Names) -> list[dict[str, Any]]:
        """ResourceFlavors, the ClusterQueue, the LocalQueue, WorkloadPriorityClasses.

        With a topology, each flavor names the Topology (``topologyName``). Each account
        has a ClusterQueue and LocalQueue of its own (:func:`_account_queues`), whose jobs
        it admits: with its GPU limit as the nominal quota of each GPU type (Kueue counts
        quota per flavor; the plan keeps the total over types within the limit).
        """
        api = KUEUE_API
        covered = _covered(instance, plan, o)
        types = [t for t in range(len(instance.type_ids)) if instance.node_gpus[:, t].sum()]
        topology = {"topologyName": o.queue} if instance.levels else {}
        flavors: list[dict[str, Any]] = [
            {"apiVersion": api, "kind": "ResourceFlavor",
             "metadata": {"name": names.flavors[instance.type_ids[t]]},
             "spec": {"nodeLabels": {o.gpu_label: instance.type_ids[t]}, **topology}}
            for t in types]

        fleet = [(names.flavors[instance.type_ids[t]], _fleet_quota(instance, o, covered, t))
                 for t in types]
        queues = _queues(o, o.queue, covered, fleet)
        for a, name in _account_queues(instance, o).items():
            queues += _queues(o, name, covered, [(flavor, _capped(quota, int(
                instance.account_gpus[a]))) for flavor, quota in fleet])
        classes = [{"apiVersion": api, "kind": "WorkloadPriorityClass",
                    "metadata": {"name": name}, "value": value,
                    "description": f"gpuplan: jobs of weight {weight:g}"}
                   for weight, (name, value) in names.priority.items()]
        return [*flavors, *queues, *classes]

    def manifests(self, instance: Instance, plan: CheckedPlan, o: KubernetesOptions,
                  names: _Names, files: dict[str, str]) -> tuple[list[str], list[_Timed]]:
        """A suspended Job per job, created at its start once its predecessors succeeded.

        A multi-node gang's Job runs a pod per node (``parallelism`` and ``completions``,
        indexed), which Kueue admits as one PodSet.
        """
        assert isinstance(o, KueueOptions)
        keys = _level_keys(instance, o) if instance.levels else []
        accounts = _account_queues(instance, o)
        timed = []
        width = len(str(len(plan.jobs)))
        for k, job in enumerate(plan.jobs, start=1):
            pods = _pods(instance, job, one_per_gpu=False)
            annotations = _topology_annotation(instance, keys, job.index)
            name = names.jobs[job.id]
            account = int(instance.job_account[job.index]) if instance.account_ids else -1
            labels = {**_labels(job), "kueue.x-k8s.io/queue-name": accounts.get(account,
                                                                               o.queue),
                      "kueue.x-k8s.io/priority-class":
                          names.priority[float(instance.weight[job.index])][0]}
            path = _file(k, width, name)
            files[path] = manifest_yaml({
                "apiVersion": "batch/v1", "kind": "Job",
                "metadata": {"name": name, "namespace": o.namespace,
                             "labels": labels, "annotations": _annotations(plan, job)},
                "spec": {
                    "suspend": True,
                    "parallelism": pods[0],
                    "completions": pods[0],
                    # Pod k of a gang is the gang's rank k (JOB_COMPLETION_INDEX).
                    **({"completionMode": "Indexed"} if pods[0] > 1 else {}),
                    "backoffLimit": 0,
                    "activeDeadlineSeconds": limit_s(job.end_s - job.start_s, o.time_margin),
                    "template": {"metadata": {"labels": _labels(job),
                                              **({"annotations": annotations}
                                                 if annotations else {})},
                                 "spec": _pod_spec(instance, plan, o, job, pods, False)},
                },
            })
            timed.append(_Timed(job.start_s, path, name, tuple(
                names.jobs[instance.job_ids[p]] for p in instance.predecessors[job.index])))
        return [], timed


class VolcanoExporter(_KubernetesExporter):
    """Volcano: a queue, priority classes, a gang Job per job, JobFlows for dependencies."""

    name: ClassVar[str] = "volcano"
    description: ClassVar[str] = ("Volcano: a fifo Queue with the fleet's capability, a "
                                  "batch.volcano.sh Job per job (one pod per GPU, or per "
                                  "node of a multi-node gang; minAvailable all of them), "
                                  "JobFlows for the dependencies, HyperNodes for the "
                                  "topology")

    def topology(self, instance: Instance, o: KubernetesOptions) -> dict[str, str]:
        """``topology.yaml``: a HyperNode per topology domain, tier 1 the narrowest level.

        Tier-1 HyperNodes hold their nodes by name, wider ones the HyperNodes under them
        (:func:`~gpuplan.exporters.base.domain_tree`).

        Raises
        ------
        InputError
            For a node name a HyperNode cannot match (not a DNS-1123 subdomain).
        """
        if not instance.levels:
            return {}
        for n, node in enumerate(instance.node_ids):
            if instance.node_domain[n, 0] >= 0 and (len(node) > 253
                                                    or not _DNS_SUBDOMAIN.match(node)):
                raise InputError(instance.source, f"nodes[{n}].id", f"node {node!r} is not a "
                                 "Kubernetes node name (a DNS-1123 subdomain), which a "
                                 "HyperNode matches")
        return {"topology.yaml": manifests_yaml([
            {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode",
             "metadata": {"name": domain.name},
             "spec": {"tier": domain.tier, "tierName": domain.level, "members": [
                 {"type": "Node", "selector": {"exactMatch": {"name": node}}}
                 for node in domain.nodes] + [
                 {"type": "HyperNode", "selector": {"exactMatch": {"name": child}}}
                 for child in domain.children]}}
            for domain in domain_tree(instance, lambda text: dns_name(text, 63))])}

    def queue(self, instance: Instance, plan: CheckedPlan, o: KubernetesOptions,
              names: _Names) -> list[dict[str, Any]]:
        """The Queue, with the fleet's capability, and PriorityClasses."""
        covered = _covered(instance, plan, o)
        capability: dict[str, list[str]] = {}
        for t in range(len(instance.type_ids)):
            for key, value in _fleet_quota(instance, o, covered, t).items():
                capability.setdefault(key, []).append(value)
        queue = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                 "metadata": {"name": o.queue},
                 "spec": {"weight": 1, "reclaimable": False, "dequeueStrategy": "fifo",
                          "capability": {key: _sum_quantities(values)
                                         for key, values in capability.items()}}}
        classes = [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                    "metadata": {"name": name}, "value": value, "globalDefault": False,
                    "preemptionPolicy": "Never",
                    "description": f"gpuplan: jobs of weight {weight:g}"}
                   for weight, (name, value) in names.priority.items()]
        return [queue, *classes]

    def _spec(self, instance: Instance, plan: CheckedPlan, o: KubernetesOptions,
              names: _Names, job: PlannedJob) -> dict[str, Any]:
        """A gang's spec: all its pods or none, within its topology tier."""
        pods = _pods(instance, job, one_per_gpu=True)
        spec: dict[str, Any] = {
            "schedulerName": "volcano",
            "queue": o.queue,
            "minAvailable": pods[0],
            "maxRetry": 1,
            "priorityClassName": names.priority[float(instance.weight[job.index])][0],
            "tasks": [{"name": "worker", "replicas": pods[0], "minAvailable": pods[0],
                       "template": {"metadata": {"labels": _labels(job)},
                                    "spec": _pod_spec(instance, plan, o, job, pods, True)}}],
        }
        if len(instance.required_level):
            # The tier of a level: 1 for the narrowest, as topology.yaml numbers them.
            for mode, level in (("hard", instance.required_level[job.index]),
                                ("soft", instance.preferred_level[job.index])):
                if level >= 0:
                    spec["networkTopology"] = {
                        "mode": mode, "highestTierAllowed": len(instance.levels) - int(level)}
                    break
        if pods[0] > 1:
            # VC_TASK_INDEX and the pods' host names, for a distributed job's ranks.
            spec["plugins"] = {"env": [], "svc": []}
        return spec

    def manifests(self, instance: Instance, plan: CheckedPlan, o: KubernetesOptions,
                  names: _Names, files: dict[str, str]) -> tuple[list[str], list[_Timed]]:
        """A Job per job without dependencies, and JobTemplates and a JobFlow for the rest.

        Each connected group of jobs with dependencies is one JobFlow, created at the
        group's first planned start.
        """
        width = len(str(len(plan.jobs)))
        group = _groups(instance)
        setup: list[str] = []
        timed: list[_Timed] = []
        flows: dict[int, list[PlannedJob]] = {}
        for k, job in enumerate(plan.jobs, start=1):
            name = names.jobs[job.id]
            path = _file(k, width, name)
            kind = "Job" if group[job.index] < 0 else "JobTemplate"
            files[path] = manifest_yaml({
                "apiVersion": ("batch.volcano.sh/v1alpha1" if kind == "Job"
                               else "flow.volcano.sh/v1alpha1"),
                "kind": kind,
                "metadata": {"name": name, "namespace": o.namespace,
                             "labels": _labels(job),
                             "annotations": _annotations(plan, job)},
                "spec": self._spec(instance, plan, o, names, job)})
            if kind == "Job":
                timed.append(_Timed(job.start_s, path, name))
            else:
                setup.append(path)
                flows.setdefault(group[job.index], []).append(job)
        for g, (_, members) in enumerate(sorted(flows.items()), start=1):
            name = dns_name(f"{o.queue[:8]}-flow-{g}", 16)
            path = f"jobflows/{g:0{len(str(len(flows)))}d}-{name}.yaml"
            files[path] = manifest_yaml({
                "apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow",
                "metadata": {"name": name, "namespace": o.namespace,
                             "annotations": {"gpuplan.io/jobs": ",".join(
                                 m.id for m in members)}},
                "spec": {"jobRetainPolicy": "retain", "flows": [
                    {"name": names.jobs[m.id],
                     **({"dependsOn": {"targets": [names.jobs[instance.job_ids[p]]
                                                   for p in instance.predecessors[m.index]]}}
                        if instance.predecessors[m.index] else {})}
                    for m in members]}})
            timed.append(_Timed(min(m.start_s for m in members), path, name))
        return setup, timed


def _groups(instance: Instance) -> list[int]:
    """Each job's group of jobs linked by dependencies (its smallest index); -1 alone."""
    parent = list(range(len(instance.job_ids)))

    def find(j: int) -> int:
        while parent[j] != j:
            parent[j] = parent[parent[j]]
            j = parent[j]
        return j

    linked = set()
    for j, before in enumerate(instance.predecessors):
        for p in before:
            a, b = find(j), find(p)
            parent[max(a, b)] = min(a, b)
            linked |= {j, p}
    return [find(j) if j in linked else -1 for j in range(len(parent))]


def _sum_quantities(values: list[str]) -> str:
    """Quantities of one unit summed (``["4", "8"]`` is ``"12"``, ``["1000m"]`` stays)."""
    unit = values[0].lstrip("0123456789")
    return f"{sum(int(v[:len(v) - len(unit)]) for v in values)}{unit}"

