"""Instance format v1 (JSON or YAML): the document model, and its checks and translation.

The pydantic models below are the single definition of the format: they validate files,
and ``gpuplan schema instance`` publishes them as JSON Schema. :func:`build_instance` then
checks what a schema cannot (references, duplicates, cycles, fit) and produces the
index-based :class:`~gpuplan.core.instance.Instance`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

import numpy as np
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictStr,
    TypeAdapter,
    ValidationError,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from gpuplan.core.errors import ALL_TYPES, InputError, json_path, validation_message
from gpuplan.core.files import check_output, write_text_atomic
from gpuplan.core.instance import (
    MAX_AMOUNT,
    MAX_GPUS,
    MAX_JOBS,
    MAX_MONEY,
    MAX_TIME_S,
    MAX_TYPES,
    MAX_WEIGHT,
    MIN_DURATION_S,
    BoolArray,
    FloatArray,
    Instance,
    IntArray,
    check_objective_data,
)
from gpuplan.core.objectives import ObjectiveKind

logger = logging.getLogger(__name__)

FORMAT_VERSION = 1

Seconds = Annotated[float, Field(ge=0, le=MAX_TIME_S)]
Duration = Annotated[float, Field(ge=MIN_DURATION_S, le=MAX_TIME_S)]
Money = Annotated[float, Field(ge=0, le=MAX_MONEY)]
Demand = Annotated[float, Field(ge=0, le=MAX_AMOUNT)]
Capacity = Annotated[float, Field(gt=0, le=MAX_AMOUNT)]
Count = Annotated[int, Field(ge=1, le=MAX_GPUS)]

def _spread_scalar(value: Any) -> Any:
    """Hold a bare number as ``{ALL_TYPES: number}`` so both spellings validate alike."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return {ALL_TYPES: value}
    if isinstance(value, dict) and ALL_TYPES in value:
        raise ValueError(f"{ALL_TYPES!r} is not a GPU type id; give one number for every "
                         "type, or a number per type id")
    return value


def _per_type_schema(value_schema: dict[str, Any]) -> WithJsonSchema:
    """Publish a per-type field as what users write: a number, or type id to number."""
    return WithJsonSchema(
        {
            "anyOf": [value_schema, {"type": "object", "additionalProperties": value_schema}],
            "description": "One value for every GPU type, or a value per GPU type id.",
        }
    )


DurationPerType = Annotated[
    dict[str, Duration], BeforeValidator(_spread_scalar),
    _per_type_schema({"type": "number", "minimum": MIN_DURATION_S, "maximum": MAX_TIME_S}),
]
DemandPerType = Annotated[
    dict[str, Demand], BeforeValidator(_spread_scalar),
    _per_type_schema({"type": "number", "minimum": 0, "maximum": MAX_AMOUNT}),
]
MoneyPerType = Annotated[
    dict[str, Money], BeforeValidator(_spread_scalar),
    _per_type_schema({"type": "number", "minimum": 0, "maximum": MAX_MONEY}),
]
Id = Annotated[StrictStr, Field(min_length=1, max_length=256)]


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False, frozen=True)


class GpuTypeSpec(_Strict):
    """A GPU type and the capacity of one GPU of it."""

    id: Id = Field(description=f"Any id but {ALL_TYPES!r}.")
    capacity: dict[str, Capacity] = Field(
        min_length=1, max_length=MAX_TYPES,
        description="Capacity of one GPU per named resource, e.g. memory_gib and compute. "
        "Every GPU type names the same resources.",
    )
    cost_per_hour: Money | None = Field(
        default=None, description="Price of one GPU-hour."
    )

    @field_validator("id")
    @classmethod
    def _not_all_types(cls, value: str) -> str:
        if value == ALL_TYPES:
            raise ValueError(f"{ALL_TYPES!r} may not be a GPU type id (it would stand for "
                             "every type in per-type values)")
        return value


class NodeSpec(_Strict):
    """A machine holding GPUs; a gang job's GPUs are all on one node and of one type."""

    id: Id
    gpus: dict[str, Count] = Field(
        min_length=1, description="Number of GPUs per GPU type id."
    )
    resources: dict[str, Capacity] = Field(
        default_factory=dict,
        description="Node-level capacities, e.g. cpu_milli and memory_mib, that a job's "
        "node_demand draws on. Every node names the same resources.",
    )


class JobSpec(_Strict):
    """A deep-learning job: a gang of GPUs for a time, with per-GPU demands."""

    id: Id
    gpus: Annotated[int, Field(ge=0, le=MAX_GPUS)] = Field(
        default=1, description="Gang size: GPUs needed at once, all on one node and of one "
        "type; 0 for a CPU-only job, which still draws its node_demand on one node.")
    duration_s: DurationPerType = Field(
        description="Run time in seconds: one value, or a value per GPU type. "
        "A type with no duration is not allowed for the job."
    )
    demand: dict[str, DemandPerType] = Field(
        default_factory=dict,
        description="Per-GPU demand per named resource (one value, or a value per GPU "
        "type). A resource not named is not used.",
    )
    node_demand: dict[str, Demand] = Field(
        default_factory=dict,
        description="What the whole job draws on its node, per node resource (e.g. "
        "cpu_milli, memory_mib). A resource not named is not used.",
    )
    cost: MoneyPerType | None = Field(
        default=None,
        description="Cost of running the job on each type. Default: duration_s / 3600 x "
        "gpus x the type's cost_per_hour.",
    )
    profit: MoneyPerType | None = Field(
        default=None, description="Profit of running the job on each type (assign-profit)."
    )
    weight: Annotated[float, Field(ge=0, le=MAX_WEIGHT)] = Field(
        default=1.0, description="Priority weight.")
    release_s: Seconds = Field(default=0.0, description="Earliest start.")
    deadline_s: Annotated[float, Field(gt=0, le=MAX_TIME_S)] | None = Field(
        default=None, description="Latest end (hard).")
    due_s: Seconds | None = Field(
        default=None, description="Due date (soft): lateness past it is tardiness."
    )
    depends_on: list[Id] = Field(
        default_factory=list, description="Ids of jobs that must end before this one starts."
    )
    allowed_types: list[Id] | None = Field(
        default=None, min_length=1, description="GPU type ids the job may run on."
    )
    preemptible: bool = Field(
        default=False,
        description="Whether the job may be paused and resumed, on other GPUs or another "
        "type (time-based objectives). Its segments then add up to its work: the sum of "
        "each segment's length over the job's duration on that segment's type is 1.",
    )
    command: Annotated[StrictStr, Field(min_length=1, max_length=100_000)] | None = Field(
        default=None,
        description="The shell command that runs the job, for exporters (gpuplan export "
        "slurm, kueue, volcano); planning never reads it.")
    colocation_class: Id | None = Field(
        default=None,
        description="Space-sharing class (e.g. the model and batch size): with the "
        "instance's colocation speeds, which jobs may share GPUs and how fast they then run.",
    )

    @model_validator(mode="after")
    def _cpu_only_needs_node_demand(self) -> JobSpec:
        if self.gpus == 0 and not any(self.node_demand.values()):
            raise ValueError("gpus is 0 (a CPU-only job) but node_demand names nothing it "
                             "draws: give it, e.g. cpu_milli, or a gang of at least 1 GPU")
        return self


class ColocationSpec(_Strict):
    """Two classes of preemptible jobs that may share GPUs (Gavel's space sharing)."""

    gpu_type: Id
    classes: list[Id] = Field(min_length=2, max_length=2, description="The two classes.")
    speeds: list[Annotated[float, Field(gt=0, le=1)]] = Field(
        min_length=2, max_length=2,
        description="Speed of each class while sharing, as a share of its speed alone.")


class ObjectiveSpec(_Strict):
    """What plans optimise."""

    kind: StrictStr = Field(
        description="One of: " + ", ".join(kind.value for kind in ObjectiveKind),
        json_schema_extra={"enum": [kind.value for kind in ObjectiveKind]},
    )

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, kind: str) -> str:
        if kind not in ObjectiveKind._value2member_map_:
            known = ", ".join(k.value for k in ObjectiveKind)
            raise ValueError(f"unknown objective {kind!r}; choose one of: {known}")
        return kind


def _supported_version(version: int) -> int:
    if version != FORMAT_VERSION:
        raise ValueError(
            f"unsupported format version {version}; this gpuplan reads version {FORMAT_VERSION}"
        )
    return version


_OBJECTIVE_KIND_SCHEMA = {"type": "string", "enum": [kind.value for kind in ObjectiveKind]}


def _objective_shorthand(value: Any) -> Any:
    return {"kind": value} if isinstance(value, str) else value


class InstanceDocument(_Strict):
    """A gpuplan instance file, format version 1."""

    format_version: int = Field(default=FORMAT_VERSION)
    name: StrictStr | None = None
    description: StrictStr | None = None
    gpu_types: list[GpuTypeSpec] = Field(min_length=1, max_length=MAX_TYPES)
    nodes: list[NodeSpec] = Field(min_length=1, max_length=MAX_GPUS)
    jobs: list[JobSpec] = Field(min_length=1, max_length=MAX_JOBS)
    colocation: list[ColocationSpec] = Field(
        default_factory=list,
        description="Class pairs that may share GPUs (same gang size, both preemptible, same "
        "GPUs over the same interval), with their speeds; pairs not listed do not share.",
    )
    objective: Annotated[
        ObjectiveSpec,
        BeforeValidator(_objective_shorthand),
        WithJsonSchema(
            {
                "anyOf": [
                    _OBJECTIVE_KIND_SCHEMA,
                    {
                        "type": "object",
                        "properties": {"kind": _OBJECTIVE_KIND_SCHEMA},
                        "required": ["kind"],
                        "additionalProperties": False,
                    },
                ],
                "description": 'What plans optimise: a kind, or {"kind": ...}.',
            }
        ),
    ]

    _version = field_validator("format_version")(_supported_version)


def parse_document(data: Any, source: str) -> InstanceDocument:
    """Validate parsed JSON or YAML data against the format.

    Parameters
    ----------
    data
        The parsed file.
    source
        The file name, for messages.

    Raises
    ------
    InputError
        For the first problem pydantic finds, with its JSON path.
    """
    try:
        return InstanceDocument.model_validate(data)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        loc = error["loc"]
        raise InputError(
            source, json_path(loc) + _named(data, loc), validation_message(error)
        ) from None


def _named(data: Any, loc: tuple[str | int, ...]) -> str:
    """Say which item a path points into by its id, e.g. `` (job 'train')``."""
    if len(loc) < 2 or loc[0] not in _SECTIONS or not isinstance(loc[1], int):
        return ""
    try:
        item_id = data[loc[0]][loc[1]]["id"]
    except (KeyError, IndexError, TypeError):
        return ""
    return f" ({_SECTIONS[str(loc[0])]} {item_id!r})" if isinstance(item_id, str) else ""


_SECTIONS = {"jobs": "job", "nodes": "node", "gpu_types": "GPU type"}


def _duplicates(ids: list[str], section: str, source: str) -> None:
    first: dict[str, int] = {}
    for i, item in enumerate(ids):
        if item in first:
            raise InputError(
                source,
                f"{section}[{i}].id",
                f"duplicate id {item!r} (also {section}[{first[item]}])",
            )
        first[item] = i


def _spread(
    values: dict[str, float],
    type_index: dict[str, int],
    path: str,
    source: str,
    fill: float,
) -> np.ndarray:
    """Turn a per-type mapping (or ``{ALL_TYPES: v}``) into a ``(T,)`` array."""
    out = np.full(len(type_index), fill)
    for key, value in values.items():
        if key == ALL_TYPES:
            out[:] = value
        elif key in type_index:
            out[type_index[key]] = value
        else:
            raise InputError(source, f"{path}.{key}", f"unknown GPU type {key!r}")
    return out


def _find_cycle(predecessors: list[list[int]]) -> list[int] | None:
    """Return one dependency cycle as a list of job indices, or None."""
    white, grey, black = 0, 1, 2
    colour = [white] * len(predecessors)
    for root in range(len(predecessors)):
        if colour[root] != white:
            continue
        stack: list[tuple[int, int]] = [(root, 0)]
        path = [root]
        colour[root] = grey
        while stack:
            node, i = stack[-1]
            if i < len(predecessors[node]):
                stack[-1] = (node, i + 1)
                nxt = predecessors[node][i]
                if colour[nxt] == grey:
                    return [*path[path.index(nxt) :], nxt]
                if colour[nxt] == white:
                    colour[nxt] = grey
                    stack.append((nxt, 0))
                    path.append(nxt)
            else:
                colour[node] = black
                stack.pop()
                path.pop()
    return None


#: Jobs validated at a time when an instance is built from parsed data
#: (:func:`instance_from_data`): a chunk's models are dropped once their values are in the
#: instance's arrays, so a million-job file never holds a model of every job at once.
JOB_CHUNK = 20_000


def instance_from_data(data: Any, source: str, default_name: str = "instance") -> Instance:
    """Validate parsed JSON or YAML data and build its instance.

    The same checks as :func:`build_instance` on :func:`parse_document`'s result, with the
    jobs validated :data:`JOB_CHUNK` at a time.

    Raises
    ------
    InputError
        As :func:`parse_document` and :func:`build_instance` raise it.
    """
    jobs = data.get("jobs") if isinstance(data, dict) else None
    if not isinstance(jobs, list) or not JOB_CHUNK < len(jobs) <= MAX_JOBS:
        return build_instance(parse_document(data, source), source, default_name)
    # Everything but the jobs past the first, validated as a document; then the jobs.
    head = parse_document({**data, "jobs": jobs[:1]}, source)

    def chunks() -> Iterator[list[JobSpec]]:
        for first in range(0, len(jobs), JOB_CHUNK):
            try:
                yield _JOBS.validate_python(jobs[first:first + JOB_CHUNK])
            except ValidationError as exc:
                error = exc.errors(include_url=False)[0]
                loc = ("jobs", first + int(error["loc"][0]), *error["loc"][1:])
                raise InputError(source, json_path(loc) + _named(data, loc),
                                 validation_message(error)) from None

    def job_at(j: int) -> JobSpec:
        return JobSpec.model_validate(jobs[j])

    return _build(head, len(jobs), chunks(), job_at, source, default_name)


_JOBS = TypeAdapter(list[JobSpec])
_NONE_LISTED: list[str] = []
_NO_DRAW: dict[str, float] = {}


def build_instance(
    document: InstanceDocument, source: str, default_name: str = "instance"
) -> Instance:
    """Check cross-references and feasibility of single jobs, and index the document.

    Parameters
    ----------
    document
        A document that passed :func:`parse_document`.
    source
        The file name, for messages.
    default_name
        The instance name when the document gives none.

    Raises
    ------
    InputError
        For duplicate ids, unknown references, dependency cycles, a job that fits no GPU
        type or node (unless the objective lets jobs be left out), a gang larger than every
        node, or data the objective needs but lacks.
    """
    return _build(document, len(document.jobs), iter([document.jobs]),
                  document.jobs.__getitem__, source, default_name)


class _JobColumns:
    """What the instance keeps of each job, filled a job at a time.

    Parameters
    ----------
    n_jobs, n_types, n_resources
        The jobs, GPU types and resources there are.
    """

    def __init__(self, n_jobs: int, n_types: int, n_resources: int) -> None:
        self.ids: list[str] = []
        self.depends_on: list[list[str]] = []
        self.node_demand: list[dict[str, float]] = []
        self.colocation_class: list[str | None] = []
        self.command: list[str | None] = []
        self.preemptible = np.zeros(n_jobs, dtype=bool)
        self.gang = np.zeros(n_jobs, dtype=np.int64)
        # weight, release, deadline and due, by column.
        self.times = np.zeros((n_jobs, 4))
        self.duration = np.full((n_jobs, n_types), np.nan)
        self.demand = np.zeros((n_jobs, n_types, n_resources))
        self.cost = np.full((n_jobs, n_types), np.nan)
        self.profit = np.full((n_jobs, n_types), np.nan)
        self.allowed = np.ones((n_jobs, n_types), dtype=bool)


def _build(
    document: InstanceDocument, n_jobs: int, job_chunks: Iterable[list[JobSpec]],
    job_at: Callable[[int], JobSpec], source: str, default_name: str,
) -> Instance:
    """:func:`build_instance` of a document whose ``n_jobs`` jobs come in chunks.

    ``job_at`` gives job ``j`` again, for the message of a job that fits nowhere.
    """
    gpu_types, nodes = document.gpu_types, document.nodes
    _duplicates([g.id for g in gpu_types], "gpu_types", source)
    _duplicates([n.id for n in nodes], "nodes", source)

    resources = tuple(gpu_types[0].capacity)
    for t, gpu_type in enumerate(gpu_types[1:], start=1):
        if set(gpu_type.capacity) != set(resources):
            raise InputError(
                source,
                f"gpu_types[{t}].capacity",
                f"names resources {sorted(gpu_type.capacity)} but gpu_types[0] "
                f"({gpu_types[0].id!r}) names {sorted(resources)}: every GPU type names the same",
            )
    type_index = {g.id: t for t, g in enumerate(gpu_types)}
    resource_index = {r: k for k, r in enumerate(resources)}
    n_types, n_res = len(gpu_types), len(resources)

    capacity = np.array([[g.capacity[r] for r in resources] for g in gpu_types], dtype=float)
    price = np.array(
        [np.nan if g.cost_per_hour is None else g.cost_per_hour for g in gpu_types]
    )

    node_gpus = np.zeros((len(nodes), n_types), dtype=np.int64)
    for n, node in enumerate(nodes):
        for type_id, count in node.gpus.items():
            if type_id not in type_index:
                raise InputError(
                    source, f"nodes[{n}].gpus.{type_id}", f"unknown GPU type {type_id!r}"
                )
            node_gpus[n, type_index[type_id]] = count
    largest_gang = node_gpus.max(axis=0)
    if node_gpus.sum() > MAX_GPUS:
        raise InputError(source, "nodes", f"the nodes hold {node_gpus.sum()} GPUs; gpuplan "
                         f"plans at most {MAX_GPUS} in one instance")

    columns = _JobColumns(n_jobs, n_types, n_res)
    j = 0
    for chunk in job_chunks:
        for job in chunk:
            _add_job(columns, j, job, type_index, resource_index, price, source)
            j += 1
    job_ids = columns.ids
    _duplicates(job_ids, "jobs", source)
    job_index = {job_id: k for k, job_id in enumerate(job_ids)}
    predecessors: list[list[int]] = []
    for k, depends_on in enumerate(columns.depends_on):
        preds = []
        for i, dep in enumerate(depends_on):
            if dep not in job_index:
                raise InputError(source, f"jobs[{k}].depends_on[{i}]", f"unknown job {dep!r}")
            preds.append(job_index[dep])
        predecessors.append(preds)

    cycle = _find_cycle(predecessors)
    if cycle is not None:
        names = " -> ".join(repr(job_ids[k]) for k in reversed(cycle))
        raise InputError(source, "jobs", f"dependency cycle: {names}")

    gang, duration, demand, allowed = (columns.gang, columns.duration, columns.demand,
                                       columns.allowed)
    node_resources, node_capacity, node_demand = _node_resources(
        document, columns.node_demand, source)
    candidate: BoolArray = allowed & ~np.isnan(duration)
    fits: BoolArray = np.all(demand <= capacity[None, :, :], axis=2)
    # A CPU-only job still sits on a node holding a GPU of the type it is placed by.
    gang_fits = np.maximum(gang, 1)[:, None] <= largest_gang[None, :]
    node_fits = _node_fits(gang, node_demand, node_gpus, node_capacity)
    eligible = candidate & fits & gang_fits & node_fits
    unplaceable = np.flatnonzero(~eligible.any(axis=1))
    if unplaceable.size and ObjectiveKind(document.objective.kind).allows_unplaced:
        # A plan may leave jobs out, so one that fits nowhere is simply never placed (a
        # trace keeps what production submitted, such as pods no node could hold).
        logger.warning("%s: %d jobs fit no node (first: %r); no plan can place them",
                       source, unplaceable.size, job_ids[int(unplaceable[0])])
        unplaceable = unplaceable[:0]
    for bad in unplaceable:
        if (candidate[bad] & fits[bad] & gang_fits[bad]).any():
            _explain_node_misfit(int(bad), job_at(int(bad)), node_resources, node_capacity,
                                 source)
        _explain_ineligible(
            int(bad), job_at(int(bad)), candidate[bad], fits[bad], demand[bad], capacity,
            resources, gpu_types, largest_gang, source,
        )

    instance = Instance(
        name=document.name or default_name,
        source=source,
        resources=resources,
        type_ids=tuple(g.id for g in gpu_types),
        capacity=capacity,
        price_per_hour=price,
        node_ids=tuple(n.id for n in nodes),
        node_gpus=node_gpus,
        job_ids=tuple(job_ids),
        gang=gang,
        demand=demand,
        duration=duration,
        eligible=eligible,
        cost=columns.cost,
        profit=columns.profit,
        weight=columns.times[:, 0].copy(),
        release=columns.times[:, 1].copy(),
        deadline=columns.times[:, 2].copy(),
        due=columns.times[:, 3].copy(),
        predecessors=tuple(tuple(p) for p in predecessors),
        preemptible=columns.preemptible,
        objective=ObjectiveKind(document.objective.kind),
        **_colocation(document, columns.colocation_class, type_index, source),
        node_resources=node_resources,
        node_capacity=node_capacity,
        node_demand=node_demand,
        command=(np.array(columns.command, dtype=object)
                 if any(c is not None for c in columns.command) else np.zeros(0, dtype=object)),
    )
    check_objective_data(instance, source)
    return instance


def _add_job(columns: _JobColumns, j: int, job: JobSpec, type_index: dict[str, int],
             resource_index: dict[str, int], price: FloatArray, source: str) -> None:
    """Check job ``j`` on its own and keep what the instance needs of it."""
    where = f"jobs[{j}]"
    duration = _spread(job.duration_s, type_index, f"{where}.duration_s", source, np.nan)
    columns.duration[j] = duration
    for resource, values in job.demand.items():
        if resource not in resource_index:
            raise InputError(
                source,
                f"{where}.demand.{resource}",
                f"unknown resource {resource!r} (GPU types name: "
                f"{', '.join(resource_index)})",
            )
        columns.demand[j, :, resource_index[resource]] = _spread(
            values, type_index, f"{where}.demand.{resource}", source, 0.0
        )
    if job.cost is not None:
        columns.cost[j] = _spread(job.cost, type_index, f"{where}.cost", source, np.nan)
    else:
        columns.cost[j] = duration / 3600.0 * job.gpus * price
    if job.profit is not None:
        columns.profit[j] = _spread(job.profit, type_index, f"{where}.profit", source, np.nan)
    if job.allowed_types is not None:
        columns.allowed[j] = False
        for k, type_id in enumerate(job.allowed_types):
            if type_id not in type_index:
                raise InputError(
                    source, f"{where}.allowed_types[{k}]", f"unknown GPU type {type_id!r}"
                )
            columns.allowed[j, type_index[type_id]] = True
    if job.deadline_s is not None and job.deadline_s <= job.release_s:
        raise InputError(
            source,
            f"{where}.deadline_s",
            f"deadline {job.deadline_s:g} s is not after release {job.release_s:g} s",
        )
    columns.ids.append(job.id)
    # Shared empties: a million jobs without dependencies keep no list each.
    columns.depends_on.append(job.depends_on or _NONE_LISTED)
    columns.node_demand.append(job.node_demand or _NO_DRAW)
    columns.colocation_class.append(job.colocation_class)
    columns.command.append(job.command)
    columns.gang[j] = job.gpus
    columns.preemptible[j] = job.preemptible
    columns.times[j] = (job.weight, job.release_s,
                        np.inf if job.deadline_s is None else job.deadline_s,
                        np.inf if job.due_s is None else job.due_s)


def write_documents(documents: Sequence[Mapping[str, Any]], source: str, out_folder: Path,
                    inputs: Iterable[str | Path]) -> list[Path]:
    """Write converted documents as instance files ``OUT_FOLDER/<name>.json``; all or none.

    Every document is validated (it must load as it is written) and every target checked
    before any is written, so a bad one leaves nothing behind; each is then written
    atomically.

    Parameters
    ----------
    documents
        Instance documents, each with a ``name``.
    source
        The file they were converted from, for messages.
    out_folder
        An existing folder (:func:`~gpuplan.core.files.check_output_folder`).
    inputs
        The files the conversion read: no target may be one of them.

    Returns
    -------
    list
        The files written, in the documents' order.

    Raises
    ------
    InputError
        For the first document that is not a valid instance, or a target that cannot be
        written; nothing is written then.
    """
    inputs = list(inputs)
    targets = []
    for document in documents:
        instance_from_data(document, source)
        targets.append(check_output(out_folder / f"{document['name']}.json", inputs))
    for document, target in zip(documents, targets, strict=True):
        write_text_atomic(target, json.dumps(document, indent=1) + "\n")
    return targets


def _node_resources(document: InstanceDocument, jobs: list[dict[str, float]],
                    source: str) -> tuple[tuple[str, ...], FloatArray, FloatArray]:
    """The node resource names, the ``(N, Q)`` node capacities and ``(J, Q)`` job draws.

    ``jobs`` are the jobs' ``node_demand``.
    """
    nodes = document.nodes
    names = tuple(nodes[0].resources)
    for n, node in enumerate(nodes[1:], start=1):
        if set(node.resources) != set(names):
            raise InputError(
                source, f"nodes[{n}].resources",
                f"names resources {sorted(node.resources)} but nodes[0] ({nodes[0].id!r}) "
                f"names {sorted(names)}: every node names the same")
    capacity = np.array([[node.resources[r] for r in names] for node in nodes],
                        dtype=float).reshape(len(nodes), len(names))
    index = {r: k for k, r in enumerate(names)}
    draw = np.zeros((len(jobs), len(names)))
    for j, node_demand in enumerate(jobs):
        for resource, amount in node_demand.items():
            if resource not in index:
                known = ", ".join(names) if names else "none"
                raise InputError(source, f"jobs[{j}].node_demand.{resource}",
                                 f"unknown node resource {resource!r} (nodes name: {known})")
            draw[j, index[resource]] = amount
    return names, capacity, draw


def _node_fits(gang: IntArray, node_demand: FloatArray, node_gpus: IntArray,
               node_capacity: FloatArray) -> BoolArray:
    """``(J, T)``: whether some node of the type has the job's gang and its node demand."""
    if node_capacity.shape[1] == 0:
        return np.ones((gang.size, node_gpus.shape[1]), dtype=bool)
    # Nodes alike in GPUs and capacities decide alike: test each kind of node once.
    kinds = np.unique(np.hstack([node_gpus, node_capacity]), axis=0)
    gpus, capacity = kinds[:, :node_gpus.shape[1]], kinds[:, node_gpus.shape[1]:]
    room = np.all(node_demand[:, None, :] <= capacity[None, :, :], axis=2)
    enough = gpus[None, :, :] >= np.maximum(gang, 1)[:, None, None]
    fits: BoolArray = (room[:, :, None] & enough).any(axis=1)
    return fits


def _explain_node_misfit(j: int, job: JobSpec, names: tuple[str, ...],
                         node_capacity: FloatArray, source: str) -> None:
    """Raise the error that says job ``j`` fits its GPUs but no node's capacities."""
    largest = node_capacity.max(axis=0)
    over = [f"{r} {job.node_demand.get(r, 0.0):g} > {largest[k]:g}"
            for k, r in enumerate(names) if job.node_demand.get(r, 0.0) > largest[k]]
    why = (f"it needs more than any node has ({', '.join(over)})" if over else
           "no single node of a type it may use has all of it at once with enough GPUs")
    raise InputError(source, f"jobs[{j}].node_demand",
                     f"job {job.id!r} fits no node: {why}")


def _colocation(document: InstanceDocument, classes: list[str | None],
                type_index: dict[str, int], source: str) -> dict[str, Any]:
    """The class ids, job classes and pair speeds of the space-sharing data.

    ``classes`` are the jobs' ``colocation_class``.
    """
    class_ids = tuple(dict.fromkeys(
        [c for c in classes if c is not None]
        + [c for entry in document.colocation for c in entry.classes]))
    index = {c: k for k, c in enumerate(class_ids)}
    speed = np.zeros((len(class_ids), len(class_ids), len(type_index)))
    for k, entry in enumerate(document.colocation):
        if entry.gpu_type not in type_index:
            raise InputError(source, f"colocation[{k}].gpu_type",
                             f"unknown GPU type {entry.gpu_type!r}")
        t = type_index[entry.gpu_type]
        a, b = (index[c] for c in entry.classes)
        speed[a, b, t], speed[b, a, t] = entry.speeds
    job_class = np.array([-1 if c is None else index[c] for c in classes], dtype=np.int64)
    return {"class_ids": class_ids, "job_class": job_class, "colocation_speed": speed}


def _explain_ineligible(
    j: int,
    job: JobSpec,
    candidate: np.ndarray,
    fits: np.ndarray,
    demand: np.ndarray,
    capacity: np.ndarray,
    resources: tuple[str, ...],
    gpu_types: list[GpuTypeSpec],
    largest_gang: np.ndarray,
    source: str,
) -> None:
    """Raise the error that says why job ``j`` can run on no GPU type."""
    where = f"jobs[{j}]"
    types = np.flatnonzero(candidate)
    if types.size == 0:
        raise InputError(
            source,
            f"{where}.duration_s",
            f"job {job.id!r} has a duration for none of its allowed GPU types",
        )
    fitting = types[fits[types]]
    if fitting.size == 0:
        over = demand[types] / capacity[types]
        best_case = over.min(axis=0)
        r = int(np.argmax(best_case))
        if best_case[r] > 1:
            # One resource blocks every type: name it with the closest type's numbers.
            t = types[int(np.argmin(over[:, r]))]
            raise InputError(
                source,
                f"{where}.demand.{resources[r]}",
                f"job {job.id!r} fits no GPU type: it needs {resources[r]} "
                f"{demand[t, r]:g} per GPU, the largest capacity among its types is "
                f"{capacity[t, r]:g} ({gpu_types[t].id})",
            )
        lacks = []
        for i, t in enumerate(types):
            k = int(np.argmax(over[i]))
            lacks.append(
                f"{gpu_types[t].id} lacks {resources[k]} ({demand[t, k]:g} > {capacity[t, k]:g})"
            )
        raise InputError(
            source, f"{where}.demand", f"job {job.id!r} fits no GPU type: " + ", ".join(lacks)
        )
    t_best = fitting[int(np.argmax(largest_gang[fitting]))]
    raise InputError(
        source,
        f"{where}.gpus",
        f"job {job.id!r} needs a gang of {job.gpus} GPUs on one node, but no node has more "
        f"than {int(largest_gang[t_best])} GPUs of a type the job fits "
        f"({gpu_types[t_best].id})",
    )
