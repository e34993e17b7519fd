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
    Discriminator,
    Field,
    StrictStr,
    Tag,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

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
    sharing: bool = Field(
        default=False,
        description="Whether a GPU of this type may hold several jobs at once (MPS, "
        "shards, time-slicing), packed by their per-GPU demand within its capacity. False "
        "(the default): a job holds each of its GPUs whole, whatever its demand.",
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
    topology: dict[Id, Id] = Field(
        default_factory=dict,
        description="The node's domain at each topology level, e.g. {\"block\": \"b1\", "
        "\"rack\": \"r3\"}. A domain is named by its labels at its level and every wider "
        "one, so rack r3 of block b1 and rack r3 of block b2 are two racks.",
    )


class JobTopologySpec(_Strict):
    """Where a job's gang may go in the network: within one domain of a level, or rather so."""

    required: Id | None = Field(
        default=None, description="A topology level (e.g. rack): the job's nodes are all in "
        "one domain of it.")
    preferred: Id | None = Field(
        default=None, description="A topology level the job would rather stay within: "
        "spread over several of its domains, it runs spread_slowdown times longer.")
    spread_slowdown: Annotated[float, Field(ge=1, le=100)] | None = Field(
        default=None, description="How many times longer the job runs when its nodes span "
        "several domains of its preferred level; given with preferred, and only then.")

    @model_validator(mode="after")
    def _complete(self) -> JobTopologySpec:
        if self.required is None and self.preferred is None:
            raise ValueError("name a required or a preferred topology level (or leave "
                             "topology out)")
        if (self.preferred is None) != (self.spread_slowdown is None):
            raise ValueError("preferred and spread_slowdown go together: a preferred level "
                             "is priced by how much longer the job runs spread over it")
        return self


#: Largest number of iterations of an elastic job.
MAX_WORK = 1e15
#: Largest speed, in iterations per second of the whole job.
MAX_SPEED = 1e12


class ElasticRangeSpec(_Strict):
    """Every GPU count from ``min`` to ``max``."""

    min: Count
    max: Count

    @model_validator(mode="after")
    def _ordered(self) -> ElasticRangeSpec:
        if self.max < self.min:
            raise ValueError(f"max {self.max} is below min {self.min}")
        return self


def _counts_kind(value: Any) -> str:
    """Which spelling of an elastic job's counts ``value`` is: a range object or a list."""
    return "range" if isinstance(value, dict) else "list"


# Told apart by their JSON kind, so an error names the field of the one the file wrote
# (not "should be a valid list" for a range).
ElasticCounts = Annotated[
    Annotated[list[Count], Tag("list")] | Annotated[ElasticRangeSpec, Tag("range")],
    Discriminator(_counts_kind),
]


class ElasticSpec(_Strict):
    """An elastic job: its GPU counts, its work, and its speed on each count and type."""

    gpus: ElasticCounts = Field(
        description="The GPU counts the job may run on: a list (e.g. the powers of two "
        "[1, 2, 4, 8, 16]), or {\"min\": 1, \"max\": 8} for every count in between. The "
        "job's gpus (its reference count, the one it asks for) is one of them.")
    work: Annotated[float, Field(gt=0, le=MAX_WORK)] | None = Field(
        default=None, description="Iterations to do (give work or work_s).")
    work_s: Duration | None = Field(
        default=None, description="The work as seconds at the reference count (the job's "
        "gpus) on the first GPU type of speed (give work or work_s).")
    speed: dict[Id, dict[StrictStr, Annotated[float, Field(gt=0, le=MAX_SPEED)]]] = Field(
        min_length=1, max_length=MAX_TYPES,
        description="Iterations per second of the whole job, per GPU type id, per GPU count "
        "(a string key, e.g. {\"A100\": {\"1\": 10.1, \"2\": 19.6}}). A type listed gives "
        "every count; a type not listed is not used; every count has a speed on some type.")
    rescale_s: Seconds = Field(
        default=0.0, description="Seconds without progress at the start of every piece "
        "that starts the job, resumes it, or runs it on other GPUs than the piece before "
        "(a count change): checkpoint, restart, restore.")

    @model_validator(mode="after")
    def _one_work(self) -> ElasticSpec:
        if (self.work is None) == (self.work_s is None):
            raise ValueError("give the job's work as work (iterations) or as work_s "
                             "(seconds at its reference count), one of the two")
        if isinstance(self.gpus, list):
            twice = [c for k, c in enumerate(self.gpus) if c in self.gpus[:k]]
            if twice:
                raise ValueError(f"gpus lists count {twice[0]} twice")
        return self

    def allowed_counts(self) -> list[int]:
        """The GPU counts the job may run on, ascending."""
        if isinstance(self.gpus, ElasticRangeSpec):
            return list(range(self.gpus.min, self.gpus.max + 1))
        return sorted(self.gpus)


class JobSpec(_Strict):
    """A deep-learning job: a gang of GPUs for a time, with per-GPU demands."""

    id: Id
    gpus: Annotated[int, Field(ge=0, le=MAX_GPUS)] = Field(
        default=1, description="Gang size: GPUs needed at once, all of one type and by "
        "default on one node (see gpus_per_node); 0 for a CPU-only job, which still draws "
        "its node_demand on one node. For an elastic job, the count it asks for (one of "
        "elastic.gpus), which a plan that does not change counts gives it.")
    gpus_per_node: Count | None = Field(
        default=None, description="GPUs of the gang on each node it uses: the gang spans "
        "gpus / gpus_per_node nodes of one type (Slurm's --nodes and --gpus-per-node), all "
        "starting and ending together. Default: gpus, one node.")
    topology: JobTopologySpec | None = Field(
        default=None, description="The topology level the gang's nodes must (required) or "
        "would rather (preferred) stay within.")
    # Before duration_s, which is required only of a job that is not elastic.
    elastic: ElasticSpec | None = Field(
        default=None,
        description="Makes the job elastic: it runs on any of these GPU counts, changing "
        "count over time (preemptible) or keeping the one it starts on, at the speed given "
        "per count and type, until its work is done.")
    duration_s: DurationPerType | None = Field(
        default=None, validate_default=True,
        description="Run time in seconds: one value, or a value per GPU type. "
        "A type with no duration is not allowed for the job. Required, except for an "
        "elastic job (whose run time follows from its work and speed)."
    )
    demand: dict[str, DemandPerType] = Field(
        default_factory=dict,
        description="Per-GPU demand per named resource (one value, or a value per GPU "
        "type). A resource not named is not used.",
    )
    node_demand: dict[str, Demand] = Field(
        default_factory=dict,
        description="What the job draws on each node it uses, per node resource (e.g. "
        "cpu_milli, memory_mib; per node, as Slurm's --mem). A resource not named is not "
        "used.",
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
        "each segment's length over the job's duration on that segment's type is 1. An "
        "elastic job that is preemptible may also change its GPU count from one segment to "
        "the next; one that is not runs in one segment on one count.",
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
    partition: Id | None = Field(
        default=None, description="A partition of the instance's partitions: the job runs "
        "only on its nodes (Slurm's --partition). Default: any node.")
    account: Id | None = Field(
        default=None, description="An account of the instance's accounts (Slurm's "
        "--account, a Kueue queue), whose GPU limit the job counts against.")
    qos: Id | None = Field(
        default=None, description="A QOS of the instance's qos (Slurm's --qos), whose GPU "
        "limit the job counts against.")

    @field_validator("duration_s")
    @classmethod
    def _duration_or_elastic(cls, value: dict[str, float] | None,
                             info: ValidationInfo) -> dict[str, float] | None:
        elastic = info.data.get("elastic")
        if value is None and elastic is None and "elastic" in info.data:
            # Said as pydantic says a missing field, at the field's path.
            raise PydanticCustomError("missing", "Field required")
        if value is not None and elastic is not None:
            raise ValueError("an elastic job's run time follows from its elastic work and "
                             "speed: leave duration_s out")
        return value

    @model_validator(mode="after")
    def _elastic_layout(self) -> JobSpec:
        if self.elastic is not None and self.gpus_per_node is not None:
            raise ValueError("an elastic job's GPUs are laid out by count (one node up to a "
                             "node's GPUs, whole nodes beyond): leave gpus_per_node out")
        return self

    @model_validator(mode="after")
    def _cpu_only_needs_node_demand(self) -> JobSpec:
        if self.gpus == 0 and not any(self.node_demand.values()):
            raise ValueError("gpus is 0 (a CPU-only job) but node_demand names nothing it "
                             "draws: give it, e.g. cpu_milli, or a gang of at least 1 GPU")
        return self

    @field_validator("gpus_per_node")
    @classmethod
    def _divides_gang(cls, value: int | None, info: ValidationInfo) -> int | None:
        gpus = info.data.get("gpus")
        if value is None or not isinstance(gpus, int):
            return value
        if gpus == 0:
            raise ValueError("a CPU-only job (gpus 0) has no GPUs to spread over nodes")
        if gpus % value:
            raise ValueError(f"gpus {gpus} is not a multiple of gpus_per_node {value}: a "
                             "gang spans whole nodes, the same number of GPUs on each")
        return value


class ColocationSpec(_Strict):
    """Two classes of preemptible jobs that may share GPUs (Gavel's space sharing)."""

    gpu_type: Id
    classes: list[Id] = Field(min_length=2, max_length=2, description="The two classes.")
    speeds: list[Annotated[float, Field(gt=0, le=1)]] = Field(
        min_length=2, max_length=2,
        description="Speed of each class while sharing, as a share of its speed alone.")


class TopologySpec(_Strict):
    """The network's levels (e.g. block > rack) that nodes are labelled with."""

    levels: list[Id] = Field(
        min_length=1, max_length=16, description="Level names, widest first, e.g. "
        "[\"block\", \"rack\"] (Kueue's Topology levels, Slurm's switch tree).")

    @field_validator("levels")
    @classmethod
    def _unique(cls, levels: list[str]) -> list[str]:
        twice = [level for k, level in enumerate(levels) if level in levels[:k]]
        if twice:
            raise ValueError(f"level {twice[0]!r} is named twice")
        return levels


class GpuLimitSpec(_Strict):
    """An account or QOS: a group of jobs, and the most GPUs they may hold at once."""

    gpus: Count | None = Field(
        default=None, description="The most GPUs the group's running jobs hold at any "
        "instant (Slurm's GrpTRES=gres/gpu=N, a Kueue ClusterQueue's nominal quota). "
        "Default: no limit.")


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
    topology: TopologySpec | None = Field(
        default=None, description="Topology levels the nodes are labelled with (nodes[]."
        "topology) and jobs stay within (jobs[].topology).")
    colocation: list[ColocationSpec] = Field(
        default_factory=list,
        description="Class pairs that may share GPUs (same gang size, both preemptible, same "
        "GPUs over the same interval), with their speeds; pairs not listed do not share.",
    )
    partitions: dict[Id, list[Id]] = Field(
        default_factory=dict, max_length=MAX_TYPES,
        description="Partitions by id, each the ids of the nodes it holds (Slurm's "
        "PartitionName ... Nodes=): a job naming one (jobs[].partition) runs only on them.")
    accounts: dict[Id, GpuLimitSpec] = Field(
        default_factory=dict, max_length=MAX_TYPES,
        description="Accounts by id (jobs[].account), each with the most GPUs its jobs hold "
        "at once, if limited.")
    qos: dict[Id, GpuLimitSpec] = Field(
        default_factory=dict, max_length=MAX_TYPES,
        description="Slurm QOS by id (jobs[].qos), each with the most GPUs its jobs hold at "
        "once, if limited.")
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
        loc = _untagged(error["loc"])
        raise InputError(
            source, json_path(loc) + _named(data, loc), validation_message(error)
        ) from None


def _untagged(loc: tuple[str | int, ...]) -> tuple[str | int, ...]:
    """An error's location without the tag of the spelling of elastic counts it is in."""
    return tuple(part for k, part in enumerate(loc)
                 if not (part in ("list", "range") and loc[k - 2:k] == ("elastic", "gpus")))


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


def _spread(values: dict[str, float], row: np.ndarray, type_index: dict[str, int],
            path: str, source: str) -> None:
    """Write a per-type mapping (or ``{ALL_TYPES: v}``) into ``row``, a ``(T,)`` view.

    Types the mapping leaves out keep what ``row`` holds (the column's fill).
    """
    for key, value in values.items():
        if key == ALL_TYPES:
            row[:] = value
        elif key in type_index:
            row[type_index[key]] = value
        else:
            raise InputError(source, f"{path}.{key}", f"unknown GPU type {key!r}")


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
                loc = ("jobs", first + int(error["loc"][0]), *_untagged(error["loc"][1:]))
                raise InputError(source, json_path(loc) + _named(data, loc),
                                 validation_message(error)) from None

    def job_at(j: int) -> JobSpec:
        return JobSpec.model_validate(jobs[j])

    return _build(head, len(jobs), chunks(), job_at, source, default_name)


_JOBS = TypeAdapter(list[JobSpec])
_NONE_LISTED: list[str] = []
_NO_LEVELS = np.zeros(0, dtype=np.int64)
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
        self.topology: dict[int, JobTopologySpec] = {}
        # Only the jobs that name one: a million jobs without keep no entry each.
        self.partition: dict[int, str] = {}
        self.account: dict[int, str] = {}
        self.qos: dict[int, str] = {}
        self.preemptible = np.zeros(n_jobs, dtype=bool)
        self.gang = np.zeros(n_jobs, dtype=np.int64)
        self.gpus_per_node = np.zeros(n_jobs, dtype=np.int64)
        # weight, release, deadline and due, by column.
        self.times = np.zeros((n_jobs, 4))
        self.duration = np.full((n_jobs, n_types), np.nan)
        self.demand = np.zeros((n_jobs, n_types, n_resources))
        self.cost = np.full((n_jobs, n_types), np.nan)
        self.profit = np.full((n_jobs, n_types), np.nan)
        self.allowed = np.ones((n_jobs, n_types), dtype=bool)
        # The elastic jobs' specs, and whether each gives its cost.
        self.elastic: dict[int, tuple[ElasticSpec, bool]] = {}


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

    elastic = _elastic_jobs(columns, node_gpus, [g.id for g in gpu_types], type_index, price,
                            source)
    gang, duration, demand, allowed = (columns.gang, columns.duration, columns.demand,
                                       columns.allowed)
    node_resources, node_capacity, node_demand = _node_resources(
        document, columns.node_demand, source)
    topology = _topology(document, columns.topology, source)
    candidate: BoolArray = allowed & ~np.isnan(duration)
    fits: BoolArray = np.all(demand <= capacity[None, :, :], axis=2)
    _check_labels(columns.topology, topology, candidate & fits, node_gpus,
                  [n.id for n in nodes], job_ids, source)
    # A CPU-only job still sits on a node holding a GPU of the type it is placed by.
    per_node = np.maximum(columns.gpus_per_node, 1)
    nodes_needed = np.where(gang > 0, gang // per_node, 1)
    gang_fits = _gang_fits(per_node, nodes_needed, node_gpus)
    node_fits = _node_fits(per_node, nodes_needed, node_demand, node_gpus, node_capacity,
                           topology.get("required_level", _NO_LEVELS),
                           topology.get("node_domain", _NO_LEVELS))
    eligible = candidate & fits & gang_fits & node_fits
    if elastic:
        # A type the job may not use, or whose GPU it does not fit, has no speed at any count.
        elastic["speed"] *= (allowed & fits)[:, :, None]
    partitions = _partitions(document, columns.partition, n_jobs, source)
    limits = {**_limits(document.accounts, columns.account, "account", n_jobs, source),
              **_limits(document.qos, columns.qos, "qos", n_jobs, source)}
    # What the whole fleet allows, for the message of a job its partition or a limit bars.
    anywhere = eligible
    inside = _partition_fits(partitions, per_node, nodes_needed, node_demand, node_gpus,
                             node_capacity, topology)
    if inside is not None:
        eligible = eligible & inside
    over = _over_limit(gang, limits)
    if over is not None:
        eligible = eligible & ~over[:, None]
    unplaceable = np.flatnonzero(~eligible.any(axis=1))
    if unplaceable.size and ObjectiveKind(document.objective.kind).allows_unplaced:
        # A plan may leave jobs out, so one that fits nowhere is simply never placed (a
        # trace keeps what production submitted, such as pods no node could hold).
        logger.warning("%s: %d jobs fit no node (first: %r); no plan can place them",
                       source, unplaceable.size, job_ids[int(unplaceable[0])])
        unplaceable = unplaceable[:0]
    for bad in unplaceable:
        if int(bad) in columns.elastic and not (candidate[bad] & fits[bad]).any():
            _explain_elastic_types(int(bad), job_at(int(bad)), candidate[bad], source)
        if over is not None and over[bad]:
            _explain_over_limit(int(bad), job_at(int(bad)), limits, source)
        if anywhere[bad].any():
            _explain_partition(int(bad), job_at(int(bad)), partitions, [n.id for n in nodes],
                               source)
        if (candidate[bad] & fits[bad] & gang_fits[bad]).any():
            _explain_node_misfit(int(bad), job_at(int(bad)), candidate[bad] & fits[bad],
                                 node_gpus, node_resources, node_capacity, topology, source)
        _explain_ineligible(
            int(bad), job_at(int(bad)), candidate[bad], fits[bad], demand[bad], capacity,
            resources, gpu_types, node_gpus, source,
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
        shared=np.array([g.sharing for g in gpu_types], dtype=bool),
        gpus_per_node=columns.gpus_per_node,
        **_colocation(document, columns.colocation_class, type_index, source),
        **topology,
        **partitions,
        **limits,
        **elastic,
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
    duration = columns.duration[j]
    for resource, values in job.demand.items():
        if resource not in resource_index:
            raise InputError(
                source,
                f"{where}.demand.{resource}",
                f"unknown resource {resource!r} (GPU types name: "
                f"{', '.join(resource_index)})",
            )
        _spread(values, columns.demand[j, :, resource_index[resource]], type_index,
                f"{where}.demand.{resource}", source)
    if job.duration_s is not None:
        _spread(job.duration_s, duration, type_index, f"{where}.duration_s", source)
    if job.cost is not None:
        _spread(job.cost, columns.cost[j], type_index, f"{where}.cost", source)
    elif job.elastic is None:
        # An elastic job's run time, and so its cost, is known once the fleet's layouts are.
        columns.cost[j] = duration / 3600.0 * job.gpus * price
    if job.profit is not None:
        _spread(job.profit, columns.profit[j], type_index, f"{where}.profit", source)
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
    if job.elastic is not None:
        if job.due_s is not None and job.due_s < job.release_s:
            raise InputError(source, f"{where}.due_s", f"job {job.id!r} is due at "
                             f"{job.due_s:g} s, before its release at {job.release_s:g} s")
        columns.elastic[j] = (job.elastic, job.cost is not None)
    columns.ids.append(job.id)
    # Shared empties: a million jobs without dependencies keep no list each.
    columns.depends_on.append(job.depends_on or _NONE_LISTED)
    columns.node_demand.append(job.node_demand or _NO_DRAW)
    columns.colocation_class.append(job.colocation_class)
    columns.command.append(job.command)
    columns.gang[j] = job.gpus
    columns.gpus_per_node[j] = job.gpus if job.gpus_per_node is None else job.gpus_per_node
    if job.topology is not None:
        columns.topology[j] = job.topology
    if job.partition is not None:
        columns.partition[j] = job.partition
    if job.account is not None:
        columns.account[j] = job.account
    if job.qos is not None:
        columns.qos[j] = job.qos
    columns.preemptible[j] = job.preemptible
    columns.times[j] = (job.weight, job.release_s,
                        np.inf if job.deadline_s is None else job.deadline_s,
                        np.inf if job.due_s is None else job.due_s)


def _listed(names: list[str], most: int = 8) -> str:
    """Names joined by commas, the first ``most`` of them and how many more."""
    return ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most
                                      else "")


def _count_key(key: str) -> int | None:
    """The GPU count a speed table's key names (``"16"``); None for any other text."""
    if key.isascii() and key.isdigit() and str(int(key)) == key:
        return int(key)
    return None


def _elastic_jobs(columns: _JobColumns, node_gpus: IntArray, type_ids: list[str],
                  type_index: dict[str, int], price: FloatArray,
                  source: str) -> dict[str, Any]:
    """The instance's elastic arrays: ``counts``, ``speed``, ``work``, ``rescale_s``.

    Checks each elastic job's counts and speed table against the fleet, and fills in what
    rigid code reads of it: its duration at its reference count on each type that lays
    that count out alike (``rescale_s + work / speed``), its ``gpus_per_node`` there and,
    unless given, its cost. A count no node layout of a type holds
    (:meth:`~gpuplan.core.instance.Instance.piece_nodes`) has no speed on that type.
    Empty without elastic jobs.
    """
    if not columns.elastic:
        return {}
    size = node_gpus.max(axis=0)
    full = (node_gpus == size[None, :]).sum(axis=0)

    def layout(t: int, count: int) -> int:
        # As Instance.piece_nodes, which needs the instance this builds.
        if count <= size[t]:
            return 1
        nodes = count // int(size[t])
        return nodes if count % size[t] == 0 and full[t] >= nodes else 0

    counts = sorted(set().union(*(spec.allowed_counts() for spec, _ in
                                  columns.elastic.values())))
    position = {c: k for k, c in enumerate(counts)}
    n_jobs, n_types = columns.gang.size, len(type_ids)
    speed = np.zeros((n_jobs, n_types, len(counts)))
    work, rescale = np.zeros(n_jobs), np.zeros(n_jobs)
    for j, (spec, cost_given) in columns.elastic.items():
        me, where, gang = columns.ids[j], f"jobs[{j}].elastic", int(columns.gang[j])
        mine = spec.allowed_counts()
        listed = _listed([str(c) for c in mine])
        if gang not in mine:
            raise InputError(source, f"jobs[{j}].gpus", f"job {me!r} asks for {gang} GPUs "
                             f"(its reference count), which is not one of its elastic GPU "
                             f"counts ({listed})")
        types = []
        for type_id, table in spec.speed.items():
            t = type_index.get(type_id)
            if t is None:
                raise InputError(source, f"{where}.speed.{type_id}",
                                 f"unknown GPU type {type_id!r}")
            types.append(t)
            for key, value in table.items():
                count = _count_key(key)
                if count not in position or count not in mine:
                    raise InputError(source, f"{where}.speed.{type_id}.{key}", f"job {me!r}: "
                                     f"{key!r} is not one of its GPU counts ({listed})")
                speed[j, t, position[count]] = value
            missing = [c for c in mine if str(c) not in table]
            if missing:
                raise InputError(source, f"{where}.speed.{type_id}.{missing[0]}", f"job "
                                 f"{me!r} has no speed for {missing[0]} GPUs of {type_id}: a "
                                 f"type in the speed table gives every count the job may "
                                 f"use ({len(missing)} count(s) missing)")
        for count in mine:
            if not any(layout(t, count) for t in types):
                shapes = "; ".join(f"{type_ids[t]}: at most {size[t]} on a node, beyond that "
                                   f"a multiple of {size[t]} up to {size[t] * full[t]}"
                                   for t in types)
                raise InputError(source, f"{where}.gpus", f"job {me!r} may run on {count} "
                                 f"GPUs, but no node layout holds {count} GPUs of a type in "
                                 f"its speed table ({shapes}): leave the count out")
            for t in types:
                if not layout(t, count):
                    speed[j, t, position[count]] = 0.0
        first = type_index[next(iter(spec.speed))]
        work[j] = (spec.work if spec.work is not None
                   else spec.work_s * speed[j, first, position[gang]])
        if not work[j] > 0:
            raise InputError(source, f"{where}.work_s", f"job {me!r}: its reference count "
                             f"({gang} GPUs) cannot be laid out on {type_ids[first]}, the "
                             "type work_s is measured on: give work in iterations")
        rescale[j] = spec.rescale_s
        # Rigid code runs the job at its reference count with one gang shape: the largest
        # share of it one node of a type takes; types that lay it out otherwise it skips.
        at_gang = speed[j, :, position[gang]]
        per_type = np.minimum(gang, size)
        per_node = int(per_type[at_gang > 0].max())
        alike = (at_gang > 0) & (per_type == per_node)
        columns.duration[j] = np.where(alike, rescale[j] + work[j] / np.where(
            alike, at_gang, 1.0), np.nan)
        columns.gpus_per_node[j] = per_node
        if not cost_given:
            columns.cost[j] = columns.duration[j] / 3600.0 * gang * price
    return {"counts": np.array(counts, dtype=np.int64), "speed": speed, "work": work,
            "rescale_s": rescale}


def _explain_elastic_types(j: int, job: JobSpec, candidate: BoolArray, source: str) -> None:
    """Raise the error that says elastic job ``j`` may use no type of its speed table."""
    assert job.elastic is not None
    listed = ", ".join(job.elastic.speed)
    why = ("none of them is among its allowed_types" if not candidate.any()
           else "it fits no GPU of them (its per-GPU demand)")
    raise InputError(source, f"jobs[{j}].elastic.speed", f"job {job.id!r} has speeds on "
                     f"{listed}, but {why}")


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


def _gang_fits(per_node: IntArray, nodes: IntArray, node_gpus: IntArray) -> BoolArray:
    """``(J, T)``: whether enough nodes hold ``per_node`` GPUs of the type, all else aside."""
    # Nodes with at least k GPUs of each type, for every k a job asks: one count per k.
    sizes, inverse = np.unique(per_node, return_inverse=True)
    holding = (node_gpus[None, :, :] >= sizes[:, None, None]).sum(axis=1)
    fits: BoolArray = holding[inverse] >= nodes[:, None]
    return fits


def _node_fits(per_node: IntArray, nodes: IntArray, node_demand: FloatArray,
               node_gpus: IntArray, node_capacity: FloatArray, required: IntArray,
               node_domain: IntArray) -> BoolArray:
    """``(J, T)``: whether enough nodes of the type hold the job's GPUs and node demand.

    Enough: ``nodes`` of them each with ``per_node`` GPUs of the type and room for the
    node demand, all in one domain of the job's required topology level (if any).
    """
    n_jobs, n_types = per_node.size, node_gpus.shape[1]
    fits: BoolArray = np.ones((n_jobs, n_types), dtype=bool)
    spread = (nodes > 1) | (required >= 0 if required.size else np.zeros(n_jobs, dtype=bool))
    simple = np.flatnonzero(~spread)
    if node_capacity.shape[1] and simple.size:
        # Nodes alike in GPUs and capacities decide alike: test each kind of node once.
        kinds = np.unique(np.hstack([node_gpus, node_capacity]), axis=0)
        gpus, capacity = kinds[:, :n_types], kinds[:, n_types:]
        room = np.all(node_demand[simple, None, :] <= capacity[None, :, :], axis=2)
        enough = gpus[None, :, :] >= per_node[simple, None, None]
        fits[simple] = (room[:, :, None] & enough).any(axis=1)
    hard = np.flatnonzero(spread)
    if not hard.size:
        return fits
    # Jobs alike in shape (GPUs per node, nodes, level, node demand) decide alike.
    level = required[hard] if required.size else np.full(hard.size, -1)
    shapes = np.column_stack([per_node[hard], nodes[hard], level, node_demand[hard]])
    unique, inverse = np.unique(shapes, axis=0, return_inverse=True)
    for u, shape in enumerate(unique):
        k, m, lvl = int(shape[0]), int(shape[1]), int(shape[2])
        room = np.all(shape[3:][None, :] <= node_capacity, axis=1)
        ok = (node_gpus >= k) & room[:, None]
        if lvl < 0:
            most = ok.sum(axis=0)
        else:
            domain = node_domain[:, lvl]
            counts = np.zeros((int(domain.max(initial=-1)) + 1, n_types), dtype=np.int64)
            labelled = domain >= 0
            np.add.at(counts, domain[labelled], ok[labelled].astype(np.int64))
            most = counts.max(axis=0, initial=0)
        fits[hard[inverse.ravel() == u]] = most >= m
    return fits


def _explain_node_misfit(j: int, job: JobSpec, types: BoolArray, node_gpus: IntArray,
                         names: tuple[str, ...], node_capacity: FloatArray,
                         topology: dict[str, Any], source: str) -> None:
    """Raise the error that says job ``j`` fits its GPUs but no set of nodes for its gang.

    ``types`` are the types it may use and fits one GPU of.
    """
    per_node = job.gpus_per_node or max(job.gpus, 1)
    nodes = job.gpus // per_node if job.gpus else 1
    if names:
        largest = node_capacity.max(axis=0)
        over = [f"{r} {job.node_demand.get(r, 0.0):g} > {largest[k]:g}"
                for k, r in enumerate(names) if job.node_demand.get(r, 0.0) > largest[k]]
        if over:
            raise InputError(source, f"jobs[{j}].node_demand", f"job {job.id!r} fits no "
                             f"node: it needs more than any node has ({', '.join(over)})")
    draw = np.array([job.node_demand.get(r, 0.0) for r in names])
    room = np.all(draw[None, :] <= node_capacity, axis=1) if names else np.ones(
        node_gpus.shape[0], dtype=bool)
    holding = ((node_gpus >= per_node) & room[:, None])[:, types]
    required = job.topology.required if job.topology is not None else None
    level = -1 if required is None else topology["levels"].index(required)
    what = (f"{nodes} nodes with {per_node} GPUs of one type it may use" if nodes > 1
            else f"a node with {per_node} GPU(s) of a type it may use")
    with_room = " and room for its node_demand" if names and draw.any() else ""
    if level >= 0:
        domain = topology["node_domain"][:, level]
        best = max((int(holding[domain == d].any(axis=1).sum() if holding.size else 0)
                    for d in np.unique(domain[domain >= 0]).tolist()), default=0)
        raise InputError(source, f"jobs[{j}].topology.required",
                         f"job {job.id!r} requires its gang within one {required!r} "
                         f"(required) and needs {what}{with_room}, but no {required} has "
                         f"more than {best} such node(s)")
    field = "node_demand" if names and draw.any() else "gpus_per_node"
    most = int(holding.sum(axis=0).max(initial=0))
    raise InputError(source, f"jobs[{j}].{field}", f"job {job.id!r} needs {what}"
                     f"{with_room} (gpus {job.gpus}, gpus_per_node {per_node}), but at most "
                     f"{most} node(s) of one such type have that")


def _topology(document: InstanceDocument, jobs: dict[int, JobTopologySpec],
              source: str) -> dict[str, Any]:
    """The instance's topology arrays: levels, domains, node domains, job levels.

    ``jobs`` are the jobs' ``topology`` by job index. A domain at a level is named by the
    node's labels at that level and every wider one (``b1/r3``); a node with no label at a
    level (or a wider one) is in no domain of it.
    """
    levels = tuple(document.topology.levels) if document.topology else ()
    nodes = document.nodes
    if not levels:
        for n, node in enumerate(nodes):
            if node.topology:
                raise InputError(source, f"nodes[{n}].topology", "nodes are labelled with "
                                 "topology levels, but the instance declares none: add "
                                 "topology.levels (widest first)")
        if jobs:
            j = min(jobs)
            raise InputError(source, f"jobs[{j}].topology", "the job names a topology level, "
                             "but the instance declares none: add topology.levels")
        return {}
    node_domain = np.full((len(nodes), len(levels)), -1, dtype=np.int64)
    domain_ids: list[dict[str, int]] = [{} for _ in levels]
    for n, node in enumerate(nodes):
        for key in node.topology:
            if key not in levels:
                raise InputError(source, f"nodes[{n}].topology.{key}", f"unknown topology "
                                 f"level {key!r} (levels: {', '.join(levels)})")
        path: list[str] = []
        for i, level in enumerate(levels):
            label = node.topology.get(level)
            if label is None:
                break
            path.append(label)
            node_domain[n, i] = domain_ids[i].setdefault("/".join(path), len(domain_ids[i]))
    n_jobs = len(document.jobs)
    required = np.full(n_jobs, -1, dtype=np.int64)
    preferred = np.full(n_jobs, -1, dtype=np.int64)
    slowdown = np.ones(n_jobs)
    for j, spec in jobs.items():
        for field, value, out in (("required", spec.required, required),
                                  ("preferred", spec.preferred, preferred)):
            if value is None:
                continue
            if value not in levels:
                raise InputError(source, f"jobs[{j}].topology.{field}", f"unknown topology "
                                 f"level {value!r} (levels: {', '.join(levels)})")
            out[j] = levels.index(value)
        if 0 <= preferred[j] <= required[j]:
            raise InputError(source, f"jobs[{j}].topology.preferred", f"level "
                             f"{spec.preferred!r} is not narrower than the required "
                             f"{spec.required!r}: within one {spec.required} the job's "
                             f"nodes are within one {spec.preferred} or the preference "
                             "means nothing")
        if spec.spread_slowdown is not None:
            slowdown[j] = spec.spread_slowdown
    return {"levels": levels, "domain_ids": tuple(tuple(d) for d in domain_ids),
            "node_domain": node_domain, "required_level": required,
            "preferred_level": preferred, "spread_slowdown": slowdown}


def _check_labels(jobs: dict[int, JobTopologySpec], topology: dict[str, Any],
                  usable: BoolArray, node_gpus: IntArray, node_ids: list[str],
                  job_ids: list[str], source: str) -> None:
    """Every node a job with a topology level could use is labelled with that level.

    Raises
    ------
    InputError
        Naming the job, its ``topology`` field and the first unlabelled node.
    """
    if not jobs:
        return
    node_domain = topology["node_domain"]
    for j, spec in jobs.items():
        hosts = (node_gpus[:, usable[j]] > 0).any(axis=1)
        for field, value in (("required", spec.required), ("preferred", spec.preferred)):
            if value is None:
                continue
            level = topology["levels"].index(value)
            bare = np.flatnonzero(hosts & (node_domain[:, level] < 0))
            if bare.size:
                raise InputError(source, f"jobs[{j}].topology.{field}", f"job "
                                 f"{job_ids[j]!r} stays within one {value!r} ({field}), but "
                                 f"node {node_ids[int(bare[0])]!r} holds "
                                 f"GPUs it may use and is in no {value!r} (label it at that "
                                 f"level and every wider one); {bare.size} such node(s) in "
                                 "all")


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


def _partitions(document: InstanceDocument, jobs: dict[int, str], n_jobs: int,
                source: str) -> dict[str, Any]:
    """The instance's partition arrays: ids, ``(P, N)`` node masks, each job's partition.

    ``jobs`` are the jobs' ``partition`` by job index. Empty without partitions.
    """
    declared = document.partitions
    if not declared:
        if jobs:
            j = min(jobs)
            raise InputError(source, f"jobs[{j}].partition", f"the job names partition "
                             f"{jobs[j]!r}, but the instance declares none: add partitions "
                             "(each partition's id and the ids of its nodes)")
        return {}
    node_index = {node.id: n for n, node in enumerate(document.nodes)}
    ids = tuple(declared)
    holds = np.zeros((len(ids), len(node_index)), dtype=bool)
    for p, (name, members) in enumerate(declared.items()):
        if not members:
            raise InputError(source, f"partitions.{name}", f"partition {name!r} holds no "
                             "node: list the ids of its nodes")
        for k, node in enumerate(members):
            n = node_index.get(node)
            if n is None:
                raise InputError(source, f"partitions.{name}[{k}]", f"unknown node {node!r}")
            if holds[p, n]:
                raise InputError(source, f"partitions.{name}[{k}]", f"node {node!r} is "
                                 f"listed twice in partition {name!r}")
            holds[p, n] = True
    index = {name: p for p, name in enumerate(ids)}
    job_partition = np.full(n_jobs, -1, dtype=np.int64)
    for j, name in jobs.items():
        if name not in index:
            raise InputError(source, f"jobs[{j}].partition", f"unknown partition {name!r} "
                             f"(partitions: {', '.join(ids)})")
        job_partition[j] = index[name]
    return {"partition_ids": ids, "partition_nodes": holds, "job_partition": job_partition}


#: Of an account or QOS group: the document's section, the job's field, its name in words
#: (one, several).
_GROUPS = {"account": ("accounts", "account", "account", "accounts"),
           "qos": ("qos", "qos", "QOS", "QOS")}


def _limits(declared: dict[str, GpuLimitSpec], jobs: dict[int, str], kind: str,
            n_jobs: int, source: str) -> dict[str, Any]:
    """The ``{kind}_ids``, ``{kind}_gpus`` (-1: no limit) and ``job_{kind}`` arrays.

    ``kind`` is ``account`` or ``qos``; ``jobs`` are the jobs' ``account`` (``qos``) by job
    index. Empty when the document declares none.
    """
    if not declared and not jobs:
        return {}
    _, field, one, several = _GROUPS[kind]
    ids = tuple(declared)
    index = {name: k for k, name in enumerate(ids)}
    member = np.full(n_jobs, -1, dtype=np.int64)
    for j, name in jobs.items():
        if name not in index:
            known = f"{several}: {', '.join(ids)}" if ids else f"the instance declares no {several}"
            raise InputError(source, f"jobs[{j}].{field}", f"unknown {one} {name!r} ({known})")
        member[j] = index[name]
    gpus = np.array([-1 if spec.gpus is None else spec.gpus for spec in declared.values()],
                    dtype=np.int64)
    return {f"{kind}_ids": ids, f"{kind}_gpus": gpus, f"job_{kind}": member}


def _partition_fits(partitions: dict[str, Any], per_node: IntArray, nodes: IntArray,
                    node_demand: FloatArray, node_gpus: IntArray, node_capacity: FloatArray,
                    topology: dict[str, Any]) -> BoolArray | None:
    """``(J, T)``: whether each job's partition holds nodes for its gang; None: no job has one.

    As :func:`_gang_fits` and :func:`_node_fits` on the partition's nodes alone; True for
    the jobs without a partition.
    """
    job_partition = partitions.get("job_partition")
    if job_partition is None or not (job_partition >= 0).any():
        return None
    required = topology.get("required_level", _NO_LEVELS)
    fits: BoolArray = np.ones((per_node.size, node_gpus.shape[1]), dtype=bool)
    for p in np.unique(job_partition[job_partition >= 0]).tolist():
        rows = np.flatnonzero(job_partition == p)
        mine = partitions["partition_nodes"][p]
        fits[rows] = _gang_fits(per_node[rows], nodes[rows], node_gpus[mine]) & _node_fits(
            per_node[rows], nodes[rows], node_demand[rows], node_gpus[mine],
            node_capacity[mine], required[rows] if required.size else required,
            topology["node_domain"][mine] if topology else _NO_LEVELS)
    return fits


def _over_limit(gang: IntArray, limits: dict[str, Any]) -> BoolArray | None:
    """``(J,)``: whether a job's gang is larger than its account's or QOS's GPU limit.

    None when no account or QOS has a limit.
    """
    over: BoolArray | None = None
    for kind in _GROUPS:
        caps = limits.get(f"{kind}_gpus")
        if caps is None or not (caps >= 0).any():
            continue
        member = limits[f"job_{kind}"]
        cap = np.where(member >= 0, caps[np.maximum(member, 0)], -1)
        mine = (cap >= 0) & (gang > cap)
        over = mine if over is None else over | mine
    return over


def _explain_over_limit(j: int, job: JobSpec, limits: dict[str, Any], source: str) -> None:
    """Raise the error that says job ``j``'s gang is larger than a GPU limit it is under."""
    for kind, (section, field, one, _) in _GROUPS.items():
        name = getattr(job, field)
        if name is None:
            continue
        cap = int(limits[f"{kind}_gpus"][limits[f"{kind}_ids"].index(name)])
        if 0 <= cap < job.gpus:
            raise InputError(source, f"jobs[{j}].{field}", f"job {job.id!r} needs {job.gpus} "
                             f"GPUs at once, but its {one} {name!r} lets its jobs hold at "
                             f"most {cap} at a time ({section}.{name}.gpus): no plan can run "
                             "it")


def _explain_partition(j: int, job: JobSpec, partitions: dict[str, Any],
                       node_ids: list[str], source: str) -> None:
    """Raise the error that says job ``j`` fits the fleet, but not its partition's nodes."""
    p = int(partitions["job_partition"][j])
    members = [node_ids[n] for n in np.flatnonzero(partitions["partition_nodes"][p])]
    listed = ", ".join(members[:5]) + (f" and {len(members) - 5} more" if len(members) > 5
                                       else "")
    per_node = job.gpus_per_node or job.gpus
    shape = (f"no {job.gpus // per_node} nodes have {per_node} GPUs each" if per_node < job.gpus
             else f"no node has {job.gpus} GPU(s)" if job.gpus else "no node has room")
    raise InputError(source, f"jobs[{j}].partition", f"job {job.id!r} runs in partition "
                     f"{job.partition!r} (nodes {listed}), where {shape} of a type it may use "
                     "(with its node demand and topology); nodes outside the partition do")


def _explain_ineligible(
    j: int,
    job: JobSpec,
    candidate: np.ndarray,
    fits: np.ndarray,
    demand: np.ndarray,
    capacity: np.ndarray,
    resources: tuple[str, ...],
    gpu_types: list[GpuTypeSpec],
    node_gpus: np.ndarray,
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
    largest_gang = node_gpus.max(axis=0)
    t_best = fitting[int(np.argmax(largest_gang[fitting]))]
    per_node = job.gpus_per_node or job.gpus
    if per_node == job.gpus:
        raise InputError(
            source,
            f"{where}.gpus",
            f"job {job.id!r} needs a gang of {job.gpus} GPUs on one node, but no node has "
            f"more than {int(largest_gang[t_best])} GPUs of a type the job fits "
            f"({gpu_types[t_best].id}); to spread it over nodes give gpus_per_node",
        )
    holding = (node_gpus[:, fitting] >= per_node).sum(axis=0)
    t_most = fitting[int(np.argmax(holding))]
    raise InputError(
        source,
        f"{where}.gpus_per_node",
        f"job {job.id!r} needs {job.gpus // per_node} nodes with {per_node} GPUs of one "
        f"type (gpus {job.gpus}, gpus_per_node {per_node}), but only {int(holding.max())} "
        f"node(s) hold {per_node} GPUs of a type the job fits ({gpu_types[t_most].id})",
    )
