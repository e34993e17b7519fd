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

What is not guaranteed: that a job starts *at* its planned time (a cluster busier than
planned admits it later), and, once created, Kueue orders by priority before creation
time. Paused plans (several segments per job) and space-shared GPUs are refused, since a
pod neither pauses at a planned time nor shares an ``nvidia.com/gpu``.
"""

from __future__ import annotations

import functools
import hashlib
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
from gpuplan.core.options import option
from gpuplan.exporters.base import (
    CheckedPlan,
    PlannedJob,
    command_of,
    epoch_option,
    limit_s,
    margin_option,
    rehearse_option,
)

#: The extended resource of NVIDIA's device plugin.
GPU_RESOURCE = "nvidia.com/gpu"
#: The node label NVIDIA's GPU feature discovery sets to the GPU's product name.
GPU_LABEL = "nvidia.com/gpu.product"
#: The image a rehearsal runs (it only sleeps).
REHEARSAL_IMAGE = "busybox:1.36"
#: A DNS-1123 label: Kubernetes' rule for Job, queue and class names.
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
# Leaves room within 63 for a JobFlow's prefix (16 and '-') and pods' '-worker-NN'.
_NAME_MAX = 36
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_Dumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_PLAIN_KEY = re.compile(r"^[A-Za-z][A-Za-z0-9._/-]*$")


def dns_name(text: str, limit: int = _NAME_MAX) -> str:
    """``text`` as a DNS-1123 label; when it has to change, a hash of it keeps it unique."""
    if len(text) <= limit and _DNS_LABEL.match(text):
        return text
    digest = hashlib.sha256(text.encode()).hexdigest()[:8]
    stem = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:limit - 9].strip("-")
    return f"{stem}-{digest}" if stem else f"x-{digest}"


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
    for job in plan.jobs:
        where = f"segments of job {job.id!r}"
        shared = next((s.partner for s in job.segments if s.partner is not None), None)
        if shared is not None:
            raise InputError(plan.source, where, f"job {job.id!r} shares its GPUs with "
                             f"{shared!r}: an nvidia.com/gpu belongs to one pod; plan "
                             "without space sharing")
        if len(job.segments) > 1:
            raise InputError(plan.source, where, f"job {job.id!r} is planned in "
                             f"{len(job.segments)} segments (paused or moved): a pod cannot "
                             "pause at a planned time; export it to Slurm (segment chains), "
                             "or plan without preemption")
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


def _pod_spec(instance: Instance, plan: CheckedPlan, o: KubernetesOptions, job: PlannedJob,
              gpus: int, deadline: bool) -> dict[str, Any]:
    """The pod template's spec: pinned to the node, the GPUs, the command."""
    segment = job.segments[0]
    length = segment.end_s - segment.start_s
    command = command_of(instance, job.index, o.rehearse, instance.source)
    limits: dict[str, str] = {GPU_RESOURCE: str(gpus)} if gpus else {}
    requests: dict[str, str] = {}
    for resource, key, unit in (("cpu_milli", "cpu", "m"), ("memory_mib", "memory", "Mi")):
        if resource in instance.node_resources:
            amount = instance.node_demand[job.index, instance.node_resources.index(resource)]
            if amount > 0:
                requests[key] = f"{math.ceil(amount)}{unit}"
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
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [segment.node]}]}]}}},
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
            "gpuplan.io/planned-node": segment.node,
            "gpuplan.io/planned-gpus": ",".join(segment.gpu_ids)}


def _labels(names: _Names, job: PlannedJob) -> dict[str, str]:
    label = job.id if len(job.id) <= 63 and _LABEL_VALUE.match(job.id) else names.jobs[job.id]
    return {"app.kubernetes.io/managed-by": "gpuplan", "gpuplan.io/job": label}


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

        Raises
        ------
        InputError
            For a plan without an epoch, a paused or space-shared job, a job without a
            command (unless rehearsing) or without ``--image``, or names that collide.
        """
        assert plan is not None
        o: KubernetesOptions = options
        names = _check(instance, plan, o)
        files = {"queue.yaml": manifests_yaml(self.queue(instance, plan, o, names))}
        setup, timed = self.manifests(instance, plan, o, names, files)
        files["submit.sh"] = self._submit(instance, plan, o, setup, timed)
        return files

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
            "kubectl apply -f queue.yaml",
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


def _fleet_quota(instance: Instance, covered: list[str], t: int) -> dict[str, str]:
    """The GPUs of type ``t``, and the CPUs and memory of the nodes holding them."""
    holders = instance.node_gpus[:, t] > 0
    quota = {GPU_RESOURCE: str(int(instance.node_gpus[:, t].sum()))}
    for resource, key, unit in (("cpu_milli", "cpu", "m"), ("memory_mib", "memory", "Mi")):
        if key in covered:
            r = instance.node_resources.index(resource)
            quota[key] = f"{math.floor(float(instance.node_capacity[holders, r].sum()))}{unit}"
    return quota


def _covered(instance: Instance, plan: CheckedPlan) -> list[str]:
    """The resources the jobs ask for: the GPUs, and CPUs and memory when any job does."""
    covered = [GPU_RESOURCE]
    jobs = [j.index for j in plan.jobs]
    for resource, key in (("cpu_milli", "cpu"), ("memory_mib", "memory")):
        if resource in instance.node_resources and np.any(
                instance.node_demand[jobs, instance.node_resources.index(resource)] > 0):
            covered.append(key)
    return covered


class KueueExporter(_KubernetesExporter):
    """Kueue: flavors, a ClusterQueue and LocalQueue, priority classes, suspended Jobs."""

    name: ClassVar[str] = "kueue"
    description: ClassVar[str] = ("Kueue (v1beta2): a ResourceFlavor per GPU type, a "
                                  "StrictFIFO ClusterQueue with the fleet's quota, a "
                                  "LocalQueue, and a suspended batch/v1 Job per job")

    def gate(self, o: KubernetesOptions) -> list[str]:
        """``succeeded NAME``: polls the Job's succeeded and failed counts."""
        return [
            "succeeded() {  # succeeded NAME: wait for the Job to end; false when it failed",
            "  local state",
            "  while true; do",
            f"    state=$(kubectl -n {shlex.quote(o.namespace)} get job \"$1\" -o "
            "jsonpath='{.status.succeeded}/{.status.failed}' 2>/dev/null || true)",
            '    case "$state" in 1/*) return 0 ;; */[1-9]*) return 1 ;; esac',
            "    sleep 10",
            "  done",
            "}",
        ]

    def queue(self, instance: Instance, plan: CheckedPlan, o: KubernetesOptions,
              names: _Names) -> list[dict[str, Any]]:
        """ResourceFlavors, the ClusterQueue, the LocalQueue, WorkloadPriorityClasses."""
        api = "kueue.x-k8s.io/v1beta2"
        covered = _covered(instance, plan)
        types = [t for t in range(len(instance.type_ids)) if instance.node_gpus[:, t].sum()]
        flavors: list[dict[str, Any]] = [
            {"apiVersion": api, "kind": "ResourceFlavor",
             "metadata": {"name": names.flavors[instance.type_ids[t]]},
             "spec": {"nodeLabels": {o.gpu_label: instance.type_ids[t]}}} for t in types]
        queue = {
            "apiVersion": api, "kind": "ClusterQueue", "metadata": {"name": o.queue},
            "spec": {
                "namespaceSelector": {},
                "queueingStrategy": "StrictFIFO",
                "resourceGroups": [{"coveredResources": covered, "flavors": [
                    {"name": names.flavors[instance.type_ids[t]],
                     "resources": [{"name": name, "nominalQuota": quota}
                                   for name, quota in _fleet_quota(instance, covered,
                                                                   t).items()]}
                    for t in types]}],
            },
        }
        local = {"apiVersion": api, "kind": "LocalQueue",
                 "metadata": {"name": o.queue, "namespace": o.namespace},
                 "spec": {"clusterQueue": o.queue}}
        classes = [{"apiVersion": api, "kind": "WorkloadPriorityClass",
                    "metadata": {"name": name}, "value": value,
                    "description": f"gpuplan: jobs of weight {weight:g}"}
                   for weight, (name, value) in names.priority.items()]
        return [*flavors, queue, local, *classes]

    def manifests(self, instance: Instance, plan: CheckedPlan, o: KubernetesOptions,
                  names: _Names, files: dict[str, str]) -> tuple[list[str], list[_Timed]]:
        """A suspended Job per job, created at its start once its predecessors succeeded."""
        timed = []
        width = len(str(len(plan.jobs)))
        for k, job in enumerate(plan.jobs, start=1):
            name = names.jobs[job.id]
            labels = {**_labels(names, job), "kueue.x-k8s.io/queue-name": o.queue,
                      "kueue.x-k8s.io/priority-class":
                          names.priority[float(instance.weight[job.index])][0]}
            path = _file(k, width, name)
            files[path] = manifest_yaml({
                "apiVersion": "batch/v1", "kind": "Job",
                "metadata": {"name": name, "namespace": o.namespace,
                             "labels": labels, "annotations": _annotations(plan, job)},
                "spec": {
                    "suspend": True,
                    "parallelism": 1,
                    "completions": 1,
                    "backoffLimit": 0,
                    "activeDeadlineSeconds": limit_s(job.end_s - job.start_s, o.time_margin),
                    "template": {"metadata": {"labels": _labels(names, job)},
                                 "spec": _pod_spec(instance, plan, o, job,
                                                   len(job.segments[0].gpu_ids), False)},
                },
            })
            timed.append(_Timed(job.start_s, path, name, tuple(
                names.jobs[instance.job_ids[p]] for p in instance.predecessors[job.index])))
        return [], timed


class VolcanoExporter(_KubernetesExporter):
    """Volcano: a queue, priority classes, a gang Job per job, JobFlows for dependencies."""

    name: ClassVar[str] = "volcano"
    description: ClassVar[str] = ("Volcano: a fifo Queue with the fleet's capability, a "
                                  "batch.volcano.sh Job per job (one pod per GPU, "
                                  "minAvailable the gang), JobFlows for the dependencies")

    def queue(self, instance: Instance, plan: CheckedPlan, o: KubernetesOptions,
              names: _Names) -> list[dict[str, Any]]:
        """The Queue, with the fleet's capability, and PriorityClasses."""
        covered = _covered(instance, plan)
        capability: dict[str, list[str]] = {}
        for t in range(len(instance.type_ids)):
            for key, value in _fleet_quota(instance, covered, t).items():
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
        gang = len(job.segments[0].gpu_ids)
        pods = max(gang, 1)
        spec: dict[str, Any] = {
            "schedulerName": "volcano",
            "queue": o.queue,
            "minAvailable": pods,
            "maxRetry": 1,
            "priorityClassName": names.priority[float(instance.weight[job.index])][0],
            "tasks": [{"name": "worker", "replicas": pods, "minAvailable": pods,
                       "template": {"metadata": {"labels": _labels(names, job)},
                                    "spec": _pod_spec(instance, plan, o, job, min(gang, 1),
                                                      True)}}],
        }
        if pods > 1:
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
                             "labels": _labels(names, job),
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

