"""The changes file: what happened to the fleet and the batch since a plan was made.

A re-plan (``gpuplan replan``) reads one, in YAML or JSON, beside the instance and the
previous schedule. The same changes are Python objects (:class:`Changes`), and
``gpuplan schema changes`` publishes the format::

    down:                          # GPUs that fail at the re-plan's time
      - node: v100-0               # all of its GPUs, for good
      - node: k80-1
        gpus: [k80-1/0, k80-1/1]   # only these
        for_s: 3600                # back after an hour
    nodes_added:                   # as the instance file's nodes
      - {id: v100-5, gpus: {v100: 8}}
    jobs_added:                    # as the instance file's jobs
      - {id: late, gpus: 1, duration_s: {v100: 3600}}
    jobs_removed:
      - job: job0007
      - job: job0012
        running: true              # it runs now: stop it (say so, or it is an error)
    jobs_changed:                  # re-estimated, moved
      - {job: job0003, duration_s: {v100: 7200}, weight: 2}

Applying changes to an instance file's document (:func:`changed_document`) gives the
instance as it now is; :func:`outages` gives the GPUs down from the re-plan's time.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Annotated, Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gpuplan.core.errors import ALL_TYPES, InputError, json_path, validation_message
from gpuplan.core.files import read_text
from gpuplan.core.instance import MAX_TIME_S, MAX_WEIGHT, FloatArray, Instance, Outage
from gpuplan.readers import load_data, parse_data
from gpuplan.readers.instance_file import (
    DurationPerType,
    Id,
    JobSpec,
    NodeSpec,
    Seconds,
)


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False, frozen=True)


class Down(_Strict):
    """GPUs that fail at the re-plan's time: a whole node, or some of its GPUs."""

    node: Id
    gpus: list[Id] | None = Field(
        default=None, min_length=1,
        description='GPU ids "<node>/<k>" of the node that fail; null: all of them.')
    for_s: Annotated[float, Field(gt=0, le=MAX_TIME_S)] | None = Field(
        default=None, description="Seconds until they are back; null: for good.")


class Removed(_Strict):
    """A job taken out of the batch."""

    job: Id
    running: bool = Field(
        default=False, description="Say true to stop a job that runs at the re-plan's "
        "time; removing a running job without saying so is an error.")


class Changed(_Strict):
    """New estimates or times for a job; fields left out stay as they were."""

    job: Id
    duration_s: DurationPerType | None = Field(
        default=None, description="The whole job's new duration per GPU type.")
    release_s: Seconds | None = None
    deadline_s: Annotated[float, Field(gt=0, le=MAX_TIME_S)] | None = None
    due_s: Seconds | None = None
    weight: Annotated[float, Field(ge=0, le=MAX_WEIGHT)] | None = None


class Changes(_Strict):
    """What changed since a plan was made."""

    down: list[Down] = Field(default_factory=list)
    nodes_added: list[NodeSpec] = Field(default_factory=list)
    jobs_added: list[JobSpec] = Field(default_factory=list)
    jobs_removed: list[Removed] = Field(default_factory=list)
    jobs_changed: list[Changed] = Field(default_factory=list)

    @property
    def empty(self) -> bool:
        """Whether nothing changed."""
        return not (self.down or self.nodes_added or self.jobs_added or self.jobs_removed
                    or self.jobs_changed)

    @classmethod
    def read(cls, path: str | Path) -> Changes:
        """Read a changes file (``.yaml``, ``.yml`` or ``.json``).

        A file that holds nothing (empty, white space, YAML comments only, or null) is no
        change, as ``{}`` is.

        Raises
        ------
        InputError
            Naming the file, the path of the field and the problem.
        """
        text = read_text(Path(path))
        # An empty file is what a user writes when nothing changed.
        data = parse_data(text, Path(path)) if text.strip() else None
        return cls.parse({} if data is None else data, str(path))

    @classmethod
    def parse(cls, data: Any, source: str) -> Changes:
        """Validate parsed data as changes.

        Raises
        ------
        InputError
            Naming ``source``, the path of the field and the problem.
        """
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            error = exc.errors(include_url=False)[0]
            raise InputError(source, json_path(error["loc"]), validation_message(error)) from None


def changed_document(document: dict[str, Any], changes: Changes, source: str) -> dict[str, Any]:
    """The instance file's document with the changes applied (a new one; ``document`` stays).

    Added nodes come after the others, so every GPU keeps its index. A removed job leaves
    the batch, and the jobs that waited for it no longer do.

    Raises
    ------
    InputError
        Naming the changes file and the entry that names an unknown job or node, or
        adds one that exists.
    """
    changed = copy.deepcopy(document)
    jobs: list[dict[str, Any]] = changed.get("jobs", [])
    by_id = {job.get("id"): k for k, job in enumerate(jobs)}
    nodes = {node.get("id") for node in changed.get("nodes", [])}
    for k, node in enumerate(changes.nodes_added):
        if node.id in nodes:
            raise InputError(source, f"nodes_added[{k}].id", f"node {node.id!r} is in the "
                             "instance already")
        nodes.add(node.id)
        changed["nodes"].append(node.model_dump(exclude_defaults=True))
    for k, down in enumerate(changes.down):
        if down.node not in nodes:
            raise InputError(source, f"down[{k}].node", f"unknown node {down.node!r}")
    for k, edit in enumerate(changes.jobs_changed):
        if edit.job not in by_id:
            raise InputError(source, f"jobs_changed[{k}].job", f"unknown job {edit.job!r}")
        job = jobs[by_id[edit.job]]
        for name, value in _written(edit.model_dump(exclude={"job"}, exclude_none=True)).items():
            job[name] = value
    removed: set[str] = set()
    for k, gone in enumerate(changes.jobs_removed):
        if gone.job not in by_id:
            raise InputError(source, f"jobs_removed[{k}].job", f"unknown job {gone.job!r}")
        removed.add(gone.job)
    kept = [job for job in jobs if job.get("id") not in removed]
    for job in kept:
        if "depends_on" in job:
            job["depends_on"] = [p for p in job["depends_on"] if p not in removed]
    for k, job_spec in enumerate(changes.jobs_added):
        if job_spec.id in by_id:
            raise InputError(source, f"jobs_added[{k}].id", f"job {job_spec.id!r} is in the "
                             "instance already")
        kept.append(_written(job_spec.model_dump(exclude_defaults=True)))
    changed["jobs"] = kept
    return changed


def _written(fields: dict[str, Any]) -> dict[str, Any]:
    """A model's fields as a file writes them: one value for every type as that value."""
    return {name: _value(value) for name, value in fields.items()}


def _value(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {ALL_TYPES}:
            return value[ALL_TYPES]
        return {key: _value(inner) for key, inner in value.items()}
    return value


def outages(instance: Instance, changes: Changes, at: float, source: str) -> tuple[Outage, ...]:
    """The GPUs the changes take down, from ``at`` for their ``for_s`` (or for good).

    Raises
    ------
    InputError
        Naming the entry that lists a GPU the node does not hold.
    """
    found = []
    for k, down in enumerate(changes.down):
        n = instance.node_index[down.node]
        mine = np.flatnonzero(instance.gpu_node == n)
        if down.gpus is None:
            gpus = mine
        else:
            index = instance.gpu_index
            stray = [g for g in down.gpus if index.get(g, -1) not in set(mine.tolist())]
            if stray:
                raise InputError(source, f"down[{k}].gpus", f"{stray[0]!r} is no GPU of node "
                                 f"{down.node!r} (its GPUs are {instance.gpu_ids[mine[0]]} to "
                                 f"{instance.gpu_ids[mine[-1]]})")
            gpus = np.array(sorted(index[g] for g in down.gpus), dtype=np.int64)
        end = np.inf if down.for_s is None else at + down.for_s
        what = f"node {down.node}" if down.gpus is None else ", ".join(down.gpus)
        found.append(Outage(gpus, at, end, f"{what} down from {at:g} s"
                            + ("" if down.for_s is None else f" for {down.for_s:g} s")))
    return tuple(found)


class Failed(Down):
    """GPUs that fail at a time of a run: a whole node, or some of its GPUs."""

    at_s: Seconds = Field(description="When they fail, in the run's seconds.")


class FailureList(_Strict):
    """A failures file: GPUs that go down during a simulated run."""

    failures: list[Failed] = Field(min_length=1)


def read_failures(path: str | Path, instance: Instance) -> tuple[Outage, ...]:
    """The outages of a failures file (``failures: [{node, gpus?, at_s, for_s?}]``).

    Raises
    ------
    InputError
        Naming the file and the entry: an unknown node, or a GPU not on it.
    """
    source = str(path)
    try:
        listed = FailureList.model_validate(load_data(Path(path)))
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        raise InputError(source, json_path(error["loc"]), validation_message(error)) from None
    found: list[Outage] = []
    for k, failed in enumerate(listed.failures):
        if failed.node not in instance.node_index:
            raise InputError(source, f"failures[{k}].node", f"unknown node {failed.node!r}")
        down = Changes(down=[Down(node=failed.node, gpus=failed.gpus, for_s=failed.for_s)])
        found.extend(outages(instance, down, failed.at_s, f"{source}: failures[{k}]"))
    return tuple(found)


def read_actuals(path: str | Path, instance: Instance) -> FloatArray:
    """Each job's actual duration over its estimate, from a file of actual run times.

    The file maps job ids to the seconds each actually takes on its fastest type; jobs it
    does not list run as estimated.

    Raises
    ------
    InputError
        Naming the file and the entry: an unknown job or a time that is no positive
        number.
    """
    source = str(path)
    data = load_data(Path(path))
    if not isinstance(data, dict):
        raise InputError(source, "", "expected a mapping of job ids to actual seconds")
    scale = np.ones(instance.n_jobs)
    for job, seconds in data.items():
        j = instance.job_index.get(job)
        if j is None:
            raise InputError(source, str(job), f"unknown job {job!r}")
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not (
                0 < seconds <= MAX_TIME_S):
            raise InputError(source, str(job), f"{seconds!r} is no number of seconds in "
                             f"(0, {MAX_TIME_S:g}]")
        scale[j] = float(seconds) / float(instance.min_duration[j])
    return scale
