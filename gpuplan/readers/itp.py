"""Microsoft's ITP trace, as ElasticFlow published it, as instance documents.

The trace (microsoft/elasticflow-traces, MIT licence; Gu et al., ElasticFlow, ASPLOS'23)
holds the deep-learning training jobs of ten of Microsoft's internal ITP clusters, March
to May 2021: one CSV file per cluster, ``cluster01.csv`` .. ``cluster10.csv``, with a
header line. It comes in two variants, each with a reader:

- **raw** (:func:`itp_document`, ``gpuplan convert itp``): ``job_id, submission_time,
  duration, num_gpu``;
- **ElasticFlow** (:func:`itp_elasticflow_document`, ``gpuplan convert itp-elasticflow``):
  the same jobs as ElasticFlow used them, plus its 128-GPU testbed trace ``195job.csv``:
  ``job_id, submission_time, num_iteration, model_name, deadline, batch_size, num_gpu,
  duration``; rigid jobs due by their deadlines;
- **ElasticFlow, elastic** (:func:`itp_elastic_document`, ``gpuplan convert itp
  --deadlines``): the same files as ElasticFlow simulated them: elastic jobs whose work is
  their iterations and whose speed per GPU count is ElasticFlow's measured A100 throughput
  (see the end of this description).

Columns are found by the header's names, so the raw reader also reads ElasticFlow's files.
The mapping:

- **release**: ``submission_time`` minus the earliest ``submission_time`` of the jobs
  kept, in seconds. Jobs are listed by submission time (file order among equal times);
  ``limit`` keeps the first N of them.
- **duration**: ``duration`` (seconds), as measured on the first GPU type (see types).
- **gang**: ``num_gpu`` whole GPUs of one type, each with demand ``compute`` 1.0 of its
  capacity 1.0, so no two jobs share a GPU. A gang of up to 8 GPUs stays on one node, as
  ElasticFlow's buddy placement gives it; a larger one spans whole 8-GPU nodes
  (``gpus_per_node`` 8), so ``num_gpu`` above 8 must be a multiple of 8.
- **fleet**: nodes of :data:`ITP_GPUS_PER_NODE` GPUs, as many as ElasticFlow gave the
  cluster (:data:`ITP_NODES`, recognised by the file's name as the archives ship it:
  clusters 01, 02, 03, 05, 06 have 64 nodes; 04, 07, 08, 09 have 128; 10 has 32;
  ``195job.csv`` has 16). ``node_count`` sets another number of nodes, and a file of
  another name needs it. The trace names no GPU type: by default every node holds
  :data:`ITP_TYPE` GPUs.
- **types**: ``types`` makes the fleet heterogeneous: ``TYPE=SPEED`` pairs such as
  ``A100=1,V100=0.5,K80=0.2``, the speed of each type relative to the first, the
  reference type on which the trace's durations were measured (so its speed is 1, and may
  be left out: ``--types H100`` renames the one type). The nodes are split among the types
  as evenly as possible, in the order given, the first types taking one more node each
  when the count does not divide (64 nodes over three types: 22, 21, 21). A job runs
  ``duration / SPEED`` seconds on a type, and may use every type with nodes enough for
  its gang.
- **due date** (ElasticFlow variant): ``deadline``, absolute like ``submission_time``,
  becomes ``due_s`` from the same origin as the releases: a soft due date, not a hard
  ``deadline_s``, so a run that misses it is still a valid run. The objective is then
  tardiness, which counts the lateness; ElasticFlow's own measure, the share of jobs done
  by their deadline, is read off the run's completion times.
- every job is preemptible (ElasticFlow and its baselines preempt and restart jobs), of
  weight 1; the raw variant's objective is weighted completion time, the simulator's
  measure. ElasticFlow's ``num_iteration``, ``model_name`` and ``batch_size`` (drawn at
  random by ElasticFlow) have no place in an instance and are not read; nor does an
  instance scale a job's GPUs as ElasticFlow does: each keeps its ``num_gpu``.
- the trace records no job status: every row is a job to simulate (the files hold the
  jobs ElasticFlow kept: not failed, at least 10 minutes, at most 64 GPUs), and
  ``statuses`` is refused.

The elastic variant (:func:`itp_elastic_document`) reads ElasticFlow's columns and makes
each job **elastic**, as ElasticFlow schedules it:

- **work**: ``num_iteration`` iterations; **reference count** (the job's ``gpus``):
  ``num_gpu``; **due date**: ``deadline`` (soft ``due_s``, as above); the objective is
  ``deadlines-met``, whose value over the number of jobs is ElasticFlow's deadline
  satisfactory ratio.
- **speed**: the row of the model's throughput table (``<model_name>.csv``: rows by
  ``global_batch_size``, columns by GPU count, iterations per second of the whole job) for
  the job's ``batch_size``: ElasticFlow's A100 tables by default (shipped with gpuplan,
  :data:`ELASTICFLOW_TABLES`), or the tables of another folder (``throughputs``). With
  ``types``, a type's speed is the table's times its speed.
- **counts**: the table's columns that are powers of two or multiples of 8 (its nodes'
  GPUs), whose throughput is above 0, at most the batch size (a GPU takes at least one
  sample of the global batch) and held by the fleet (up to 8 on one node, whole nodes
  above): 1 to 64 with ElasticFlow's tables, as its simulator lets every policy but
  ElasticFlow's own scale (ElasticFlow caps each model lower: :func:`elasticflow_max_gpus`,
  a policy's choice, not the job's).
- **rescale_s**: the least ElasticFlow's simulator charges a job at a decision round that
  runs it, its base overhead (:data:`ELASTICFLOW_BASE_OVERHEAD_S`: 2 s, 7 s on a fleet of
  256 GPUs or more); ``rescale_s`` sets another. Its simulator charges more where the
  job's GPUs are new to it and every 60th round; a run may charge that, at least this.
- every job is preemptible, of weight 1.

A model without a table, a batch size not in its table, a ``num_gpu`` that is not one of
the job's counts (no column for it, or a throughput of 0 there) is an
:class:`~gpuplan.core.errors.InputError` naming the file, the line and the field; a table
that is not a table of throughputs names the table's file, line and column.

Every row is checked: a value that is not a number from 0 (``num_gpu``: a whole number
from 1; ``duration``: above 0; ``deadline``: not before the submission), a ``num_gpu``
above 8 that is not whole nodes, a row of another number of fields or a job id used twice
is an :class:`~gpuplan.core.errors.InputError` naming the file, the line and the field.
So is a kept job whose gang no type has the nodes for, or whose times pass gpuplan's
limits. The columns are read and checked as arrays: ``cluster04.csv``'s 15,802 rows read
in about 0.05 s.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from importlib import resources
from operator import itemgetter
from pathlib import Path
from typing import Any

import numpy as np

from gpuplan.core.errors import InputError, setting
from gpuplan.core.files import read_text
from gpuplan.core.instance import (
    MAX_GPUS,
    MAX_JOBS,
    MAX_TIME_S,
    MIN_DURATION_S,
    BoolArray,
    FloatArray,
    IntArray,
)
from gpuplan.core.objectives import ObjectiveKind
from gpuplan.readers.instance_file import MAX_SPEED, MAX_WORK

#: GPUs of every node: ElasticFlow's A100 servers.
ITP_GPUS_PER_NODE = 8
#: Nodes of each cluster, by its file's name: the cluster sizes of ElasticFlow's
#: simulations (Fig. 8) and of its 128-GPU testbed (``195job.csv``).
ITP_NODES = {**{f"cluster{k:02d}.csv": 64 for k in (1, 2, 3, 5, 6)},
             **{f"cluster{k:02d}.csv": 128 for k in (4, 7, 8, 9)},
             "cluster10.csv": 32, "195job.csv": 16}
#: The GPU type of every node when ``types`` is not given: ElasticFlow's.
ITP_TYPE = "A100"
#: ElasticFlow's A100 throughput tables, in gpuplan's package (pkusys/ElasticFlow,
#: Apache-2.0): one ``<model>.csv`` per model.
ELASTICFLOW_TABLES = "data/elasticflow_a100"
#: ElasticFlow's base overhead per decision round, in seconds: on fleets of fewer than
#: :data:`ELASTICFLOW_LARGE_GPUS` GPUs, and on those of that many or more.
ELASTICFLOW_BASE_OVERHEAD_S = (2.0, 7.0)
#: The fleet size from which ElasticFlow charges its larger overheads.
ELASTICFLOW_LARGE_GPUS = 256

#: What every job asks of each GPU of its gang: all of it.
_WHOLE_GPU = 1.0
#: A GPU type named in ``types``: short (node ids add to it), free of the list's separators.
_TYPE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_TYPES_FORM = ("TYPE[=SPEED],... such as A100=1,V100=0.5,K80=0.2 (the speed relative to "
               "the first type, whose speed is 1)")
_COUNT = re.compile(r"[0-9]{1,9}")

#: A type of the fleet: its name, its speed relative to the first, its number of nodes.
_Type = tuple[str, float, int]


def itp_document(trace: Path, node_count: int | str | None = None,
                 types: str | Mapping[str, float] | None = None, *, limit: int | None = None,
                 statuses: Collection[str] | None = None) -> dict[str, Any]:
    """The instance document of one file of Microsoft's raw ITP trace (see the module docstring).

    Parameters
    ----------
    trace
        ``clusterNN.csv`` (``job_id, submission_time, duration, num_gpu``).
    node_count
        Nodes of 8 GPUs (a number or digits); None: :data:`ITP_NODES` of the file's name.
    types
        GPU types and their speeds relative to the first, as ``"A100=1,V100=0.5"`` or a
        mapping; None: every node of type :data:`ITP_TYPE`.
    limit
        Keep the first ``limit`` jobs by submission time; None: all.
    statuses
        Refused unless None: the trace records no status.

    Returns
    -------
    dict
        An instance document; its description says how many jobs were read and kept.

    Raises
    ------
    InputError
        Naming the file, line and field of a malformed row or of a gang the fleet cannot
        hold; naming the setting (``node_count``, ``types``, ``limit``, ``statuses``) that
        is not what it should be, or ``node_count`` for a file of another name.
    """
    return _document(trace, node_count, types, limit, statuses, due=False)


def itp_elasticflow_document(trace: Path, node_count: int | str | None = None,
                             types: str | Mapping[str, float] | None = None, *,
                             limit: int | None = None,
                             statuses: Collection[str] | None = None) -> dict[str, Any]:
    """The instance document of one file of ElasticFlow's ITP trace, with its due dates.

    As :func:`itp_document`, and each job's ``deadline`` becomes its soft ``due_s``; the
    objective is tardiness (see the module docstring). ``trace`` is ElasticFlow's
    ``clusterNN.csv`` or ``195job.csv`` (``job_id, submission_time, num_iteration,
    model_name, deadline, batch_size, num_gpu, duration``); the other parameters and the
    returned document are :func:`itp_document`'s.

    Raises
    ------
    InputError
        As :func:`itp_document`, and for a ``deadline`` before its job's submission.
    """
    return _document(trace, node_count, types, limit, statuses, due=True)


def itp_elastic_document(trace: Path, node_count: int | str | None = None,
                         types: str | Mapping[str, float] | None = None, *,
                         throughputs: Path | None = None,
                         rescale_s: float | str | None = None, limit: int | None = None,
                         statuses: Collection[str] | None = None) -> dict[str, Any]:
    """The instance document of one file of ElasticFlow's ITP trace, as elastic jobs.

    See the module docstring: work in iterations, speeds per GPU count from throughput
    tables, due dates, objective ``deadlines-met``.

    Parameters
    ----------
    trace
        ElasticFlow's ``clusterNN.csv`` or ``195job.csv``.
    node_count, types, limit, statuses
        As :func:`itp_document`.
    throughputs
        A folder of throughput tables (``<model>.csv``); None: ElasticFlow's A100 tables.
    rescale_s
        Seconds each piece of a job that starts, resumes or changes GPUs makes no progress
        (a number or its text); None: :data:`ELASTICFLOW_BASE_OVERHEAD_S` for the fleet.

    Raises
    ------
    InputError
        As :func:`itp_document`; naming the file, line and field of a model without a
        table, a batch size not in it, a ``num_gpu`` that is not one of the job's counts,
        or a ``num_iteration`` that is not above 0; naming a table's file, line and column
        where it is not a table of throughputs; naming ``rescale_s`` when it is not
        seconds from 0.
    """
    _check_settings(limit, statuses)
    nodes, sized = _node_count(trace, node_count)
    fleet = _fleet(types, nodes)
    overhead = _rescale(rescale_s, nodes)
    tables = _tables(throughputs)
    source = str(trace)
    lines, columns = _table(trace, ("job_id", "submission_time", "num_iteration",
                                    "model_name", "deadline", "batch_size", "num_gpu"))
    ids = _ids(source, lines, columns["job_id"])
    seconds = "a number of seconds from 0"
    submit = _numbers(source, lines, "submission_time", columns["submission_time"],
                      lambda v: v >= 0, seconds)
    work = _numbers(source, lines, "num_iteration", columns["num_iteration"],
                    lambda v: (v > 0) & (v <= MAX_WORK),
                    f"a number of iterations above 0, at most {MAX_WORK:g}")
    deadline = _numbers(source, lines, "deadline", columns["deadline"], lambda v: v >= 0,
                        seconds)
    _first_bad(source, lines, deadline < submit, lambda i: (
        f"deadline is {deadline[i]:g}, before the job's submission_time {submit[i]:g} "
        f"(job {ids[i]!r})"))
    batch = _numbers(source, lines, "batch_size", columns["batch_size"],
                     lambda v: (v >= 1) & (v == np.floor(v)) & (v <= 1e9),
                     "a whole number of samples from 1").astype(np.int64)
    gang = _gangs(source, lines, ids, columns["num_gpu"])
    models = [text.strip() for text in columns["model_name"]]

    kept, summary, _, job_ids, release, due = _kept(source, lines, ids, submit, deadline,
                                                    limit)
    assert due is not None, "the ElasticFlow columns hold a deadline"
    holds = [_held_counts(share) for _, _, share in fleet]
    jobs = []
    for k, row in enumerate(kept.tolist()):
        model, size, asks = models[row], int(batch[row]), int(gang[row])
        speeds = _row(tables, model, size, source, int(lines[row]))
        counts = [c for c, v in speeds.items() if v > 0 and c <= size
                  and any(c in held for held in holds)]
        if asks not in counts:
            raise InputError(source, f"line {lines[row]}", f"num_gpu is {asks} (job "
                             f"{job_ids[k]!r}), which is not one of its GPU counts: "
                             + _why_not(asks, speeds, size, tables[model].source, fleet))
        jobs.append({
            "id": job_ids[k], "gpus": asks, "demand": {"compute": _WHOLE_GPU},
            "release_s": float(release[k]), "due_s": float(due[k]), "preemptible": True,
            "elastic": {
                "gpus": counts, "work": float(work[row]),
                "speed": {name: {str(c): speeds[c] * speed for c in counts}
                          for name, speed, _ in fleet},
                "rescale_s": overhead}})
    names = [name for name, _, _ in fleet]
    where = ("ElasticFlow's A100 tables" if throughputs is None
             else f"the tables of {throughputs}")
    about = (f"Microsoft ITP trace as ElasticFlow simulated it, elastic "
             f"(microsoft/elasticflow-traces), {trace} on {nodes} nodes of "
             f"{ITP_GPUS_PER_NODE} GPUs ({sized}): " + ", ".join(
                 f"{share} {name} (speed {speed:g})" for name, speed, share in fleet)
             + f". Work: num_iteration; speed per GPU count: {where}, row batch_size; "
             f"reference count: num_gpu; due: deadline; rescale_s {overhead:g} s.")
    return {
        "name": f"itp-elastic-{trace.name.split('.')[0] or trace.name}",
        "description": f"{about} {summary}.",
        "gpu_types": [{"id": name, "capacity": {"compute": _WHOLE_GPU}} for name in names],
        "nodes": [{"id": f"{name}-{k}", "gpus": {name: ITP_GPUS_PER_NODE}}
                  for name, _, share in fleet for k in range(share)],
        "jobs": jobs,
        "objective": ObjectiveKind.DEADLINES_MET.value,
    }


def elasticflow_max_gpus(model: str, batch_size: int) -> int:
    """The most GPUs ElasticFlow's own policy gives a job of this model and batch size.

    ElasticFlow's profiled cap on A100s (``get_max_gpu`` of its ``models.py``), below the
    counts the job may use: a policy reproducing ElasticFlow applies it.
    """
    caps = {("gpt2", 128): 16, ("gpt2", 256): 32, ("bert", 64): 8, ("inception3", 64): 16,
            ("inception3", 128): 32, ("resnet50", 64): 32, ("vgg16", 64): 32}
    if model == "deepspeech2":
        return batch_size
    if model == "bert":
        return caps.get((model, batch_size), 16)
    return caps.get((model, batch_size), min(batch_size, 64))


@dataclass(frozen=True)
class _ThroughputTable:
    """One model's throughputs: by batch size, by GPU count (0: not valid)."""

    source: str
    rows: dict[int, dict[int, float]]


def _rescale(value: float | str | None, nodes: int) -> float:
    """The jobs' rescale_s: the one given, or ElasticFlow's base overhead for the fleet."""
    if value is None:
        small, large = ELASTICFLOW_BASE_OVERHEAD_S
        return large if nodes * ITP_GPUS_PER_NODE >= ELASTICFLOW_LARGE_GPUS else small
    seconds = _number(value) if isinstance(value, str) else float(value)
    if isinstance(value, bool) or not (math.isfinite(seconds) and 0 <= seconds <= MAX_TIME_S):
        raise InputError(setting("rescale_s"), "", f"{value!r} is not a number of seconds "
                         f"from 0 to {MAX_TIME_S:.0e}")
    return seconds


def _tables(folder: Path | None) -> dict[str, _ThroughputTable]:
    """The throughput tables of a folder (``<model>.csv``), or ElasticFlow's shipped ones.

    Raises
    ------
    InputError
        Naming the folder when it holds no table; naming a table's file, line and column
        where it is not one (a header ``global_batch_size`` and GPU counts, a row of a
        whole batch size and throughputs from 0, empty for 0).
    """
    if folder is None:
        shipped = resources.files("gpuplan").joinpath(ELASTICFLOW_TABLES)
        files = [(f"gpuplan/{ELASTICFLOW_TABLES}/{entry.name}", entry.read_text("utf-8"))
                 for entry in sorted(shipped.iterdir(), key=lambda e: e.name)
                 if entry.name.endswith(".csv")]
    else:
        if not folder.is_dir():
            raise InputError(setting("throughputs"), "", f"{folder} is not a folder of "
                             "throughput tables (<model>.csv)")
        files = [(str(path), read_text(path)) for path in sorted(folder.glob("*.csv"))]
        if not files:
            raise InputError(str(folder), "", "no throughput table (<model>.csv) in the "
                             "folder")
    return {Path(name).stem: _parse_table(name, text) for name, text in files}


def _parse_table(source: str, text: str) -> _ThroughputTable:
    """One throughput table, checked cell by cell."""
    rows = [row for row in csv.reader(io.StringIO(text, newline="")) if row]
    if not rows or rows[0][0].strip() != "global_batch_size":
        raise InputError(source, "line 1", "expected a header global_batch_size,1,2,4,... "
                         "(GPU counts)")
    counts = []
    for k, name in enumerate(rows[0][1:], start=2):
        count = _whole(name)
        if count is None or count < 1 or count in counts:
            raise InputError(source, f"line 1, column {k}", f"{_shown(name)} is not a GPU "
                             "count (a whole number from 1, once)")
        counts.append(count)
    table: dict[int, dict[int, float]] = {}
    for line, row in enumerate(rows[1:], start=2):
        size = _whole(row[0])
        if size is None or size < 1 or size in table:
            raise InputError(source, f"line {line}, column 1", f"global_batch_size is "
                             f"{_shown(row[0])}; expected a whole number from 1, once")
        if len(row) != len(counts) + 1:
            raise InputError(source, f"line {line}", f"{len(row)} fields; expected "
                             f"{len(counts) + 1} (global_batch_size and one per GPU count)")
        values = {}
        for k, (count, cell) in enumerate(zip(counts, row[1:], strict=True), start=2):
            value = 0.0 if not cell.strip() else _number(cell)
            if not (math.isfinite(value) and 0 <= value <= MAX_SPEED):
                raise InputError(source, f"line {line}, column {k}", f"the throughput on "
                                 f"{count} GPUs is {_shown(cell)}; expected iterations per "
                                 "second from 0 (0 or empty: not valid)")
            values[count] = value
        table[size] = values
    return _ThroughputTable(source, table)


def _whole(text: str) -> int | None:
    """A field's whole number; None when it is not one."""
    text = text.strip()
    return int(text) if _COUNT.fullmatch(text) else None


def _held_counts(nodes: int) -> set[int]:
    """The counts a piece may have on ``nodes`` nodes of 8 GPUs (one node, or whole nodes)."""
    return {*range(1, ITP_GPUS_PER_NODE + 1),
            *range(ITP_GPUS_PER_NODE, ITP_GPUS_PER_NODE * nodes + 1, ITP_GPUS_PER_NODE)}


def _row(tables: dict[str, _ThroughputTable], model: str, size: int, source: str,
         line: int) -> dict[int, float]:
    """The throughputs of the model's table at a batch size, its counts an ElasticFlow level.

    The columns that are powers of two or whole nodes (multiples of 8) are kept.
    """
    table = tables.get(model)
    if table is None:
        raise InputError(source, f"line {line}", f"model_name is {_shown(model)}, which has "
                         f"no throughput table (tables: {', '.join(sorted(tables))})")
    row = table.rows.get(size)
    if row is None:
        raise InputError(source, f"line {line}", f"batch_size is {size}, which {table.source} "
                         f"has no row for (batch sizes: "
                         f"{', '.join(map(str, sorted(table.rows)))})")
    return {c: v for c, v in row.items()
            if c & (c - 1) == 0 or c % ITP_GPUS_PER_NODE == 0}


def _why_not(asks: int, speeds: dict[int, float], size: int, table: str,
             fleet: list[_Type]) -> str:
    """Why a job's ``num_gpu`` is none of its counts."""
    if asks not in speeds:
        return f"{table} has no column for {asks} GPUs"
    if not speeds[asks] > 0:
        return f"{table} gives no throughput on {asks} GPUs at this batch size"
    if asks > size:
        return f"{asks} GPUs exceed its batch_size {size} (a GPU takes one sample at least)"
    most = max(share for _, _, share in fleet)
    return f"the fleet has no {asks // ITP_GPUS_PER_NODE} nodes of one type (at most {most})"


def _document(trace: Path, node_count: int | str | None,
              types: str | Mapping[str, float] | None, limit: int | None,
              statuses: Collection[str] | None, *, due: bool) -> dict[str, Any]:
    """Either variant's document; ``due``: read ``deadline`` as the due date."""
    _check_settings(limit, statuses)
    # The settings before the file: a wrong one is told before a large file is read.
    nodes, sized = _node_count(trace, node_count)
    fleet = _fleet(types, nodes)
    source = str(trace)
    lines, columns = _table(trace, ("job_id", "submission_time", "duration", "num_gpu",
                                    *(("deadline",) if due else ())))
    ids = _ids(source, lines, columns["job_id"])
    seconds = "a number of seconds from 0"
    submit = _numbers(source, lines, "submission_time", columns["submission_time"],
                      lambda v: v >= 0, seconds)
    duration = _numbers(source, lines, "duration", columns["duration"], lambda v: v > 0,
                        "a number of seconds above 0")
    gang = _gangs(source, lines, ids, columns["num_gpu"])
    deadline = None
    if due:
        deadline = _numbers(source, lines, "deadline", columns["deadline"], lambda v: v >= 0,
                            seconds)
        _first_bad(source, lines, deadline < submit, lambda i: (
            f"deadline is {deadline[i]:g}, before the job's submission_time {submit[i]:g} "
            f"(job {ids[i]!r})"))

    kept, summary, at, job_ids, release, due_s = _kept(source, lines, ids, submit, deadline,
                                                       limit)
    runs, fits = _runs(source, at, job_ids, duration[kept], gang[kept], fleet)

    names = [name for name, _, _ in fleet]
    jobs = []
    for k, (gpus, start, times, where) in enumerate(zip(
            gang[kept].tolist(), release.tolist(), runs.tolist(), fits.tolist(), strict=True)):
        job: dict[str, Any] = {"id": job_ids[k], "gpus": gpus}
        if gpus > ITP_GPUS_PER_NODE:
            job["gpus_per_node"] = ITP_GPUS_PER_NODE
        job["demand"] = {"compute": _WHOLE_GPU}
        # Per type, the types without nodes enough for the gang left out: not allowed.
        job["duration_s"] = times[0] if len(names) == 1 else {
            name: time for name, time, fit in zip(names, times, where, strict=True) if fit}
        job["release_s"] = start
        if due_s is not None:
            job["due_s"] = float(due_s[k])
        job["preemptible"] = True
        jobs.append(job)
    about = (f"Microsoft ITP trace, {'ElasticFlow' if due else 'raw'} variant "
             f"(microsoft/elasticflow-traces), {trace} on {nodes} nodes of "
             f"{ITP_GPUS_PER_NODE} GPUs ({sized}): " + ", ".join(
                 f"{share} {name} (speed {speed:g})" for name, speed, share in fleet)
             + ". Release: submission_time; duration: duration / the type's speed; gang: "
             f"num_gpu, over whole nodes above {ITP_GPUS_PER_NODE}"
             + ("; due: deadline." if due else "."))
    return {
        "name": f"itp-{'elasticflow-' if due else ''}{trace.name.split('.')[0] or trace.name}",
        "description": f"{about} {summary}.",
        "gpu_types": [{"id": name, "capacity": {"compute": _WHOLE_GPU}} for name in names],
        "nodes": [{"id": f"{name}-{k}", "gpus": {name: ITP_GPUS_PER_NODE}}
                  for name, _, share in fleet for k in range(share)],
        "jobs": jobs,
        "objective": (ObjectiveKind.TARDINESS if due
                      else ObjectiveKind.WEIGHTED_COMPLETION).value,
    }


def _check_settings(limit: int | None, statuses: Collection[str] | None) -> None:
    """Refuse statuses (the trace records none) and a limit that is not a positive count."""
    if statuses is not None:
        raise InputError(setting("statuses"), "", "the ITP trace records no job status; "
                         "every job it lists is kept")
    if limit is not None and (isinstance(limit, bool) or limit < 1):
        raise InputError(setting("limit"), "", f"expected a positive number of jobs, got {limit}")


def _kept(source: str, lines: IntArray, ids: list[str], submit: FloatArray,
          deadline: FloatArray | None, limit: int | None
          ) -> tuple[IntArray, str, IntArray, list[str], FloatArray, FloatArray | None]:
    """The jobs kept, by submission time, with their lines, ids, releases and due dates.

    Also a line saying how many were read and kept. Raises InputError for none, more than
    an instance holds, or times past gpuplan's limits, naming the line.
    """
    # Stable, so that jobs submitted at the same time keep the file's order.
    kept = np.argsort(submit, kind="stable")[:limit]
    summary = f"{len(ids)} jobs read; {kept.size} kept" + (
        f", the first {limit} by submission time" if kept.size < len(ids) else "")
    if kept.size == 0:
        raise InputError(source, "", "no job to simulate: the file has a header and no rows")
    if kept.size > MAX_JOBS:
        raise InputError(source, "", f"{kept.size} jobs kept, and an instance holds at most "
                         f"{MAX_JOBS:,}: read a slice with `limit`")
    at, job_ids = lines[kept], [ids[k] for k in kept]
    origin = submit[kept[0]]
    release = submit[kept] - origin
    _first_bad(source, at, release > MAX_TIME_S, lambda i: (
        f"submission_time is {release[i]:.0f} s after the first job kept's (job "
        f"{job_ids[i]!r}); gpuplan's times end at {MAX_TIME_S:.0e} s"))
    due = None if deadline is None else deadline[kept] - origin
    if due is not None:
        _first_bad(source, at, due > MAX_TIME_S, lambda i: (
            f"deadline is {due[i]:.0f} s after the first job kept's submission_time (job "
            f"{job_ids[i]!r}); gpuplan's times end at {MAX_TIME_S:.0e} s"))
    return kept, summary, at, job_ids, release, due


def _node_count(trace: Path, node_count: int | str | None) -> tuple[int, str]:
    """The fleet's number of nodes, and where it comes from (for the description)."""
    if node_count is None:
        nodes = ITP_NODES.get(trace.name)
        if nodes is None:
            raise InputError(setting("node_count"), "", f"{trace.name!r} is not a file of the "
                             "ITP trace whose cluster size is known (cluster01.csv .. "
                             "cluster10.csv, 195job.csv): give the number of nodes of "
                             f"{ITP_GPUS_PER_NODE} GPUs")
        return nodes, f"ElasticFlow's size of {trace.name}"
    most = MAX_GPUS // ITP_GPUS_PER_NODE
    if isinstance(node_count, bool) or not (isinstance(node_count, int) or (
            isinstance(node_count, str) and _COUNT.fullmatch(node_count.strip()))):
        raise InputError(setting("node_count"), "", f"{node_count!r} is not a number of nodes "
                         f"(1 to {most})")
    nodes = int(node_count)
    if not 1 <= nodes <= most:
        raise InputError(setting("node_count"), "", f"{nodes} nodes; expected 1 to {most}")
    return nodes, "node_count given"


def _fleet(types: str | Mapping[str, float] | None, nodes: int) -> list[_Type]:
    """The GPU types with their speeds, and the nodes split among them in their order."""
    if types is None:
        pairs = [(ITP_TYPE, 1.0)]
    elif isinstance(types, str):
        pairs = [_pair(item) for item in types.split(",")]
    else:
        pairs = []
        for name, speed in types.items():
            if isinstance(speed, bool) or not isinstance(speed, int | float):
                raise InputError(setting("types"), "", f"the speed of {name!r} is "
                                 f"{speed!r}; expected a number above 0")
            pairs.append((name, float(speed)))
    for k, (name, speed) in enumerate(pairs):
        if not isinstance(name, str) or not _TYPE_NAME.fullmatch(name):
            raise InputError(setting("types"), "", f"{name!r} is not a GPU type name (1 to 64 "
                             "letters, digits, '.', '_', '-', from a letter or digit)")
        if any(name == other for other, _ in pairs[:k]):
            raise InputError(setting("types"), "", f"{name!r} is named twice")
        if not (math.isfinite(speed) and speed > 0):
            raise InputError(setting("types"), "", f"the speed of {name!r} is {speed:g}; "
                             "expected a number above 0")
    if not pairs:
        raise InputError(setting("types"), "", f"no type given; expected {_TYPES_FORM}")
    if pairs[0][1] != 1:
        raise InputError(setting("types"), "", f"the first type, {pairs[0][0]!r}, is the one "
                         "the trace's durations were measured on: its speed is 1, not "
                         f"{pairs[0][1]:g}")
    if len(pairs) > nodes:
        raise InputError(setting("types"), "", f"{len(pairs)} types and {nodes} nodes: every "
                         "type needs a node")
    share, extra = divmod(nodes, len(pairs))
    return [(name, speed, share + (k < extra)) for k, (name, speed) in enumerate(pairs)]


def _pair(item: str) -> tuple[str, float]:
    """``A100=0.5`` as a type and its speed; ``A100`` alone has speed 1."""
    name, given, text = item.partition("=")
    try:
        speed = float(text) if given else 1.0
    except ValueError:
        raise InputError(setting("types"), "", f"{item!r} is not TYPE=SPEED; expected "
                         f"{_TYPES_FORM}") from None
    return name.strip(), speed


def _table(path: Path, needed: tuple[str, ...]) -> tuple[IntArray, dict[str, list[str]]]:
    """The line of each data row, and the ``needed`` columns (as text) by name.

    Raises
    ------
    InputError
        At ``line 1`` for a file of blank lines only; at the header's line for a header
        without a needed column; at the line of a row with another number of fields than
        the header, or that is not CSV.
    """
    source = str(path)
    reader = csv.reader(io.StringIO(read_text(path), newline=""))
    rows: list[list[str]] = []
    lines: list[int] = []
    try:
        # Blank lines before the header are skipped, as between rows.
        names = [name.strip() for name in next(
            (row for row in reader if any(field.strip() for field in row)), [])]
        if not names:
            raise InputError(source, "line 1", "the file is empty; expected a header line "
                             f"naming {', '.join(needed)}")
        header = reader.line_num
        for row in reader:
            if row:  # a blank line, as at the end of a file
                rows.append(row)
                lines.append(reader.line_num)
    except csv.Error as exc:
        raise InputError(source, f"line {reader.line_num}", f"not CSV: {exc}") from None
    missing = [name for name in needed if name not in names]
    if missing:
        raise InputError(source, f"line {header}", f"missing column {', '.join(missing)} (the "
                         f"header has {', '.join(names)})")
    at = np.array(lines, dtype=np.int64)
    widths = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
    _first_bad(source, at, widths != len(names), lambda i: (
        f"{widths[i]} fields; expected {len(names)} ({', '.join(names)})"))
    return at, {name: list(map(itemgetter(names.index(name)), rows)) for name in needed}


def _first_bad(source: str, lines: IntArray, bad: BoolArray,
               message: Callable[[int], str]) -> None:
    """Raise ``message(i)`` at the line of the first row ``i`` that is ``bad``, if any."""
    if bad.any():
        i = int(np.argmax(bad))
        raise InputError(source, f"line {lines[i]}", message(i))


def _shown(text: str) -> str:
    """A field's text as a message quotes it, cut to 40 characters."""
    shown = repr(text)
    return shown if len(shown) <= 40 else shown[:37] + "..."


def _numbers(source: str, lines: IntArray, name: str, texts: list[str],
             good: Callable[[FloatArray], BoolArray], expected: str) -> FloatArray:
    """A column as numbers, each finite and ``good``, else an error at its line."""
    try:
        values = np.array(texts, dtype=np.float64)
    except ValueError:
        # Some field is not a number: find which, one by one (only on this error path).
        values = np.array([_number(text) for text in texts], dtype=np.float64)
    ok = np.isfinite(values) & good(values)
    _first_bad(source, lines, ~ok, lambda i: f"{name} is {_shown(texts[i])}; expected {expected}")
    return values


def _number(text: str) -> float:
    """A field as a number; NaN when it is not one."""
    try:
        return float(text)
    except ValueError:
        return math.nan


def _ids(source: str, lines: IntArray, texts: list[str]) -> list[str]:
    """The job ids, each 1 to 256 characters (gpuplan's ids) and used once."""
    ids = [text.strip() for text in texts]
    sizes = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
    _first_bad(source, lines, (sizes < 1) | (sizes > 256), lambda i: (
        f"job_id is {_shown(texts[i])}; expected an id of 1 to 256 characters"))
    if len(set(ids)) < len(ids):
        first: dict[str, int] = {}
        for i, job in enumerate(ids):
            if first.setdefault(job, i) != i:
                raise InputError(source, f"line {lines[i]}", f"job_id {job!r} is also the job "
                                 f"at line {lines[first[job]]}")
    return ids


def _gangs(source: str, lines: IntArray, ids: list[str], texts: list[str]) -> IntArray:
    """``num_gpu``: whole numbers from 1, and whole nodes above one node's GPUs."""
    gpus = _numbers(source, lines, "num_gpu", texts,
                    lambda v: (v >= 1) & (v <= MAX_GPUS) & (v == np.floor(v)),
                    f"a whole number of GPUs, 1 to {MAX_GPUS:,}")
    gang = gpus.astype(np.int64)
    _first_bad(source, lines, (gang > ITP_GPUS_PER_NODE) & (gang % ITP_GPUS_PER_NODE != 0),
               lambda i: (f"num_gpu is {gang[i]} (job {ids[i]!r}): a gang of more than "
                          f"{ITP_GPUS_PER_NODE} GPUs spans whole {ITP_GPUS_PER_NODE}-GPU "
                          f"nodes; expected 1 to {ITP_GPUS_PER_NODE} or a multiple of "
                          f"{ITP_GPUS_PER_NODE}"))
    return gang


def _runs(source: str, lines: IntArray, ids: list[str], duration: FloatArray, gang: IntArray,
          fleet: list[_Type]) -> tuple[FloatArray, BoolArray]:
    """Each job's run time on each type, and whether the type has nodes for its gang.

    Raises
    ------
    InputError
        At the line of a job that no type has nodes enough for, or whose run time on a type
        it fits is outside gpuplan's durations.
    """
    speeds = np.array([speed for _, speed, _ in fleet])
    shares = np.array([share for _, _, share in fleet])
    needs = np.maximum(gang // ITP_GPUS_PER_NODE, 1)  # gangs above 8 are whole nodes
    fits = needs[:, None] <= shares[None, :]

    def too_big(i: int) -> str:
        what = (f"the fleet has {shares[0]} node(s)" if len(fleet) == 1 else "no type has "
                f"more than {shares.max()} node(s) (" + ", ".join(
                    f"{name} {share}" for name, _, share in fleet) + ")")
        return (f"num_gpu is {gang[i]} (job {ids[i]!r}): the gang needs {needs[i]} nodes of "
                f"{ITP_GPUS_PER_NODE} GPUs, but {what}")

    _first_bad(source, lines, fits.sum(axis=1) == 0, too_big)
    runs = duration[:, None] / speeds[None, :]
    outside = fits & ((runs < MIN_DURATION_S) | (runs > MAX_TIME_S))

    def out_of_range(i: int) -> str:
        t = int(np.argmax(outside[i]))
        return (f"duration is {duration[i]:g} s (job {ids[i]!r}), {runs[i, t]:g} s on "
                f"{fleet[t][0]} (speed {speeds[t]:g}); gpuplan's durations are "
                f"{MIN_DURATION_S:g} s to {MAX_TIME_S:.0e} s")

    _first_bad(source, lines, outside.sum(axis=1) > 0, out_of_range)
    return runs, fits
