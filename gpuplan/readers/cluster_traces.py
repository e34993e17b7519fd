"""Public GPU-cluster traces as instance documents: Philly, Helios, PAI 2020 and ITP.

Each reader turns one trace into a gpuplan instance document (the data an instance file
holds), which ``gpuplan simulate`` plays out: the trace's cluster becomes nodes of one or
more GPU types, and each job kept becomes a gang of whole GPUs, released at its submit
time and running for its recorded run time. :data:`TRACE_FORMATS` describes the
readers (their files and settings) for a command line. The mapping, in common:

- **release**: the job's submit time minus the earliest submit time of the jobs kept, in
  seconds. Jobs are listed by submit time (file order among equal times); ``limit`` keeps
  the first N of them.
- **duration**: the job's recorded run time, the same on every type it may use (a trace
  measures a job on one type only).
- **gang**: whole GPUs on one node of one type, each GPU with demand ``compute`` 1.0 of its
  capacity 1.0, so no two jobs share a GPU. gpuplan keeps a gang on one node, where the
  traces also ran jobs over several machines: a job larger than every node of its types is
  left out and counted, never capped.
- **left out, and counted**: jobs without a GPU, without a submit time, without a complete
  run time (never started, still running, or not logged) or with a run time of 0.
- **statuses**: jobs of every final status are kept by default. Failed and killed jobs held
  their GPUs for their run time, and the traces' own analyses and simulators count them
  (Philly's notebook plots every job's run time; Helios' simulator replays every GPU job).
  ``statuses`` keeps jobs of the given statuses only. A status the trace does not document
  is kept as text, not refused: gpuplan does not depend on it.
- every job is preemptible (so that preemptive policies, Tiresias' LAS or SRTF, can act on
  it as in the simulations of these traces), of weight 1; the objective is weighted
  completion time, the simulator's measure. What else a trace records (users, virtual
  clusters, CPUs, memory, queueing times, utilisation) is not modelled and is ignored.
- times, numbers and the files' structure are checked: a malformed value is an
  :class:`~gpuplan.core.errors.InputError` naming the file, the line (CSV) or JSON path,
  and the field. A file ending in ``.gz`` is read through gzip, one ending in ``.tar.gz``
  or ``.tgz`` (an archive of one file, as PAI ships its tables) through tarfile.

The document's description says how many jobs were read and kept, and how many were left
out for each reason.

**Philly** (msr-fiddle/philly-traces, Jeon et al., ATC'19; :func:`philly_document`).
``cluster_job_log`` is a JSON list of jobs (``jobid``, ``status`` Pass/Killed/Failed,
``submitted_time``, ``attempts`` each with ``start_time``, ``end_time`` and ``detail``, a
list of ``{ip, gpus}``). Times are ``YYYY-MM-DD HH:MM:SS`` read as written (the trace's
notebook subtracts them as naive times); ``None``, ``""`` and ``"None"`` are no time, as
in the notebook. The run time is the sum of the attempts' run times: the time between
attempts is queueing, which a simulation produces itself (the notebook's run time, last
end minus first start, includes it). A job with no attempt, or an attempt without a start
or an end (the job still running, or a logging gap), has no complete run time. The gang is
the number of GPUs of the last attempt, the one that ended the job (retries normally keep
the gang; the notebook counts the first). ``cluster_machine_list`` (``machineId``,
``number of GPUs``, ``single GPU mem`` such as ``24GB``; a header line is optional)
gives the nodes, and one GPU type per GPU memory size, ``12GB`` and ``24GB`` in Philly. A
job may use the type of the machines of its last attempt; one that ran on machines the list
lacks, or on machines of both types, may use either (the description counts them).
Without the list, the nodes are the machines the log names, each with as many GPUs as the
most it shows in use (by count and by ``gpuN`` index), all of one type ``philly``.

**Helios** (S-Lab-System-Group/HeliosData, Hu et al., SC'21; :func:`helios_document`).
``cluster_log.csv`` (``job_id, user, vc, gpu_num, cpu_num, node_num, state, submit_time,
start_time, end_time, duration, queue``, with its header) of one cluster. The gang is
``gpu_num`` (0 is a CPU job, left out), the run time ``duration`` (seconds; the README
defines it as end minus start), states COMPLETED, CANCELLED, FAILED, TIMEOUT, NODE_FAIL
(and SUSPENDED, once). The cluster is named (Venus, Earth, Saturn, Uranus: by default the
log's folder, as the dataset lays them out) or given as a node count; its nodes hold
:data:`HELIOS_GPUS_PER_NODE` GPUs each, all of one type named after the cluster (Saturn
mixes Pascal and Volta GPUs, but the log does not say which job ran on which).
:data:`HELIOS_NODES` are the paper's node counts; ``cluster_gpu_number.csv`` (GPUs per
virtual cluster per day) is not read.

**PAI** (alibaba/clusterdata ``cluster-trace-gpu-v2020``, Weng et al., NSDI'22;
:func:`pai_document`). The tables come without a header (Alibaba ships the column names
in ``*.header`` files); a header line naming the columns is accepted. ``pai_job_table``
gives each job (``job_name``), its status (Terminated, Failed, Running, Waiting) and its
submit time (``start_time``, seconds). ``pai_task_table`` gives its tasks: ``inst_num``
instances each asking ``plan_gpu`` percent of a GPU, launched at ``start_time`` and ended
at ``end_time`` (0 or empty: not started or not ended), on GPUs of ``gpu_type``. The gang
is the job's whole GPU request rounded up once, ``ceil(sum of plan_gpu x inst_num / 100)``
over its tasks: the simulator runs one job per GPU, so a job asking half a GPU takes a
whole one (PAI shares GPUs; this overstates their load). An empty ``inst_num`` counts as
one instance, as Alibaba's own simulator counts it. The run time is the longest run
(``end_time - start_time``) of the job's GPU tasks. A job may use the ``gpu_type`` of its
GPU tasks (``MISC``, PAI's older generations such as K40m, K80 and M60, is a type of its
own), or every type when they name none. ``pai_machine_spec`` (``machine, gpu_type,
cap_cpu, cap_mem, cap_gpu``) gives the nodes, its CPU machines (``cap_gpu`` 0) left out;
without it the nodes are :data:`PAI_FLEET`, the trace's own 1,814 GPU machines.
"""

from __future__ import annotations

import csv
import gzip
import io
import math
import re
import tarfile
import zlib
from collections import Counter
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from datetime import datetime
from itertools import chain
from pathlib import Path
from typing import Any

from gpuplan.core.errors import InputError, setting
from gpuplan.core.files import parse_json, read_bytes, read_text
from gpuplan.core.instance import MAX_GPUS, MAX_JOBS, MAX_TIME_S
from gpuplan.core.objectives import ObjectiveKind
from gpuplan.readers.itp import itp_document, itp_elasticflow_document

#: The documented final statuses of Philly's jobs.
PHILLY_STATUSES = ("Pass", "Killed", "Failed")
#: The columns of Philly's ``cluster_machine_list``, in order.
PHILLY_MACHINE_COLUMNS = ("machineId", "number of GPUs", "single GPU mem")
#: The GPU type of every node when Philly's nodes are read from the job log alone.
PHILLY_TYPE = "philly"

#: The columns of Helios' ``cluster_log.csv``, in order.
HELIOS_COLUMNS = ("job_id", "user", "vc", "gpu_num", "cpu_num", "node_num", "state",
                  "submit_time", "start_time", "end_time", "duration", "queue")
#: The documented final states of Helios' jobs (SUSPENDED occurs once, in Uranus).
HELIOS_STATUSES = ("COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "SUSPENDED")
#: Nodes of each Helios cluster, from the configuration table of the Helios paper (SC'21);
#: the README's example day of Earth counts 1,144 GPUs, 143 nodes of 8.
HELIOS_NODES = {"Venus": 133, "Earth": 143, "Saturn": 262, "Uranus": 264}
#: GPUs of every Helios node.
HELIOS_GPUS_PER_NODE = 8
#: The GPU type of a Helios cluster given by its node count.
HELIOS_TYPE = "helios"

#: The columns of PAI's ``pai_job_table``, in order.
PAI_JOB_COLUMNS = ("job_name", "inst_id", "user", "status", "start_time", "end_time")
#: The columns of PAI's ``pai_task_table``, in order.
PAI_TASK_COLUMNS = ("job_name", "task_name", "inst_num", "status", "start_time", "end_time",
                    "plan_cpu", "plan_mem", "plan_gpu", "gpu_type")
#: The columns of PAI's ``pai_machine_spec``, in order.
PAI_MACHINE_COLUMNS = ("machine", "gpu_type", "cap_cpu", "cap_mem", "cap_gpu")
#: The documented statuses of PAI's jobs.
PAI_STATUSES = ("Terminated", "Failed", "Running", "Waiting")
#: PAI's GPU machines by type: (machines, GPUs each), counted in the trace's
#: ``pai_machine_spec.csv`` (1,897 machines; its 83 CPU machines hold no GPU).
PAI_FLEET = {"MISC": (280, 8), "P100": (798, 2), "T4": (497, 2), "V100": (104, 8),
             "V100M32": (135, 8)}

#: What every job asks of each GPU of its gang: all of it.
_WHOLE_GPU = 1.0
#: A wall-clock time as Philly and Helios write it.
_CLOCK = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}")
_CLOCK_FORM = "a time YYYY-MM-DD HH:MM:SS"
_EPOCH = datetime(1970, 1, 1)
#: Philly's values for "no time", as its notebook's ``parse_date`` reads them.
_NO_TIME = (None, "", "None")
#: A GPU name in Philly's attempt details.
_GPU_NAME = re.compile(r"gpu([0-9]{1,4})")
#: A GPU memory size in Philly's machine list, e.g. ``24GB`` (written with a blank before).
_MEMORY = re.compile(r"([0-9]{1,4})\s*GB", re.IGNORECASE)
_COUNT = re.compile(r"[0-9]{1,9}")

# Why a job is left out, as the description says it.
_STATUS = "of a status not selected"
_NO_SUBMIT = "without a submit time"
_NO_RUN = "without a complete run time"
_BACKWARDS = "with an attempt that ends before it starts"
_ZERO_RUN = "with a run time of 0"
_NO_GPU = "without a GPU"
_NO_TYPE = "on GPU types the cluster lacks"
_TOO_BIG = "larger than every node of their GPU types"


@dataclass(slots=True)
class _Job:
    """A job of a trace that can be simulated, before the cluster's nodes are checked."""

    id: str
    at: int  # its line (CSV) or index (JSON) in the trace, for messages
    submit: float
    duration: float
    gpus: int
    types: frozenset[str] | None  # None: any type of the cluster


@dataclass(slots=True)
class _PaiJob:
    """A row of PAI's job table and what its tasks add up to."""

    line: int
    submit: float | None
    status: str
    percent: float = 0.0  # GPU request, in percent of one GPU
    longest: float | None = None  # longest run of a GPU task; None: none has run
    types: frozenset[str] = frozenset()  # the gpu_type of its GPU tasks


def _read(path: Path) -> str:
    """A text file, through gzip for ``.gz`` and tarfile for a one-file ``.tar.gz``/``.tgz``.

    Raises
    ------
    InputError
        Naming the file when it is missing, unreadable, not a regular file, too large,
        not UTF-8, or a broken archive or one that does not hold exactly one file.
    """
    name = path.name.lower()
    if not name.endswith((".gz", ".tgz")):
        return read_text(path)
    packed = read_bytes(path)
    try:
        if name.endswith((".tar.gz", ".tgz")):
            with tarfile.open(fileobj=io.BytesIO(packed), mode="r:gz") as archive:
                members = [m for m in archive.getmembers() if m.isfile()]
                if len(members) != 1:
                    raise InputError(str(path), "", f"the archive holds {len(members)} files;"
                                     " expected one table")
                handle = archive.extractfile(members[0])
                data = handle.read() if handle is not None else b""
        else:
            data = gzip.decompress(packed)
        return data.decode("utf-8")
    except (OSError, EOFError, zlib.error, tarfile.TarError, UnicodeDecodeError) as exc:
        raise InputError(str(path), "", f"cannot read the compressed file: {exc}") from None


def _shown(value: object) -> str:
    """A value as a message quotes it, cut to 40 characters."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _csv(path: Path, layout: tuple[str, ...], needed: tuple[str, ...], *,
         header: bool) -> tuple[list[int], Iterator[tuple[int, list[str]]]]:
    """The positions of the ``needed`` columns and each data row with its line number.

    Parameters
    ----------
    path
        The CSV file.
    layout
        The trace's columns in their order.
    needed
        The columns the reader uses.
    header
        Whether the first line must name the columns. Otherwise it may (when its first
        field is ``layout[0]``), or the rows hold ``layout``'s columns in order.

    Raises
    ------
    InputError
        At ``line 1`` for a file of blank lines only; at the line of a header without a
        needed column, or of a row with another number of fields or that is not CSV.
    """
    source = str(path)
    reader = csv.reader(io.StringIO(_read(path), newline=""))
    try:
        # Blank lines before the first row are skipped, as between rows.
        first = next((row for row in reader if any(field.strip() for field in row)), [])
    except csv.Error as exc:
        raise InputError(source, f"line {reader.line_num}", f"not CSV: {exc}") from None
    if not first:
        raise InputError(source, "line 1", "the file is empty; expected rows of "
                         f"{', '.join(layout)}")
    start = reader.line_num
    names = [name.strip() for name in first]
    if header or names[0] == layout[0]:
        missing = [name for name in needed if name not in names]
        if missing:
            raise InputError(source, f"line {start}", f"missing column "
                             f"{', '.join(missing)} (the header has {', '.join(names)})")
        pending: list[str] | None = None
    else:
        names, pending = list(layout), first

    def rows() -> Iterator[tuple[int, list[str]]]:
        width = len(names)
        try:
            for row in reader if pending is None else chain([pending], reader):
                line = start if row is pending else reader.line_num
                if not row:
                    continue
                if len(row) != width:
                    raise InputError(source, f"line {line}", f"{len(row)} fields; expected "
                                     f"{width} ({', '.join(names)})")
                yield line, row
        except csv.Error as exc:
            raise InputError(source, f"line {reader.line_num}", f"not CSV: {exc}") from None

    return [names.index(name) for name in needed], rows()


def _refusal(source: str, where: str, name: str, value: object, expected: str) -> InputError:
    """The error for a field that does not hold what the format says."""
    return InputError(source, where, f"{name} is {_shown(value)}; expected {expected}")


def _clock(source: str, where: str, name: str, text: str) -> float | None:
    """Seconds since 1970 of a wall-clock time as written (no zone); None for no time."""
    if text in _NO_TIME:
        return None
    try:
        if not _CLOCK.fullmatch(text):
            raise ValueError(text)
        return (datetime.fromisoformat(text) - _EPOCH).total_seconds()
    except ValueError:
        raise _refusal(source, where, name, text, _CLOCK_FORM) from None


def _count(source: str, where: str, name: str, text: str) -> int:
    """A whole number from 0, as written in a CSV field."""
    text = text.strip()
    if not _COUNT.fullmatch(text):
        raise _refusal(source, where, name, text, "a whole number from 0")
    return int(text)


def _amount(source: str, where: str, name: str, text: str) -> float | None:
    """A finite number from 0 in a CSV field; None for an empty field."""
    text = text.strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise _refusal(source, where, name, text, "a number from 0")
    return value


def _name(source: str, where: str, name: str, text: str) -> str:
    """An id: 1 to 256 characters (gpuplan's ids), surrounding blanks dropped."""
    text = text.strip()
    if not 1 <= len(text) <= 256:
        raise _refusal(source, where, name, text, "an id of 1 to 256 characters")
    return text


def _selection(trace: str, known: tuple[str, ...], statuses: Collection[str] | None
               ) -> frozenset[str] | None:
    """The statuses to keep (None: all), each one the trace documents."""
    if statuses is None:
        return None
    unknown = sorted(set(statuses) - set(known))
    if unknown or not statuses:
        raise InputError(setting("statuses"), "", f"{', '.join(map(repr, unknown)) or 'none'} "
                         f"given; {trace}'s statuses are {', '.join(known)}")
    return frozenset(statuses)


def _check_limit(limit: int | None) -> None:
    """Refuse a ``limit`` that is not a positive number of jobs."""
    if limit is not None and (isinstance(limit, bool) or limit < 1):
        raise InputError(setting("limit"), "", f"expected a positive number of jobs, got {limit}")


def _finish(jobs: list[_Job], dropped: Counter[str], *, read: int, limit: int | None,
            gpu_types: list[dict[str, Any]], nodes: list[dict[str, Any]], name: str,
            about: str, source: str, at: Callable[[int], str]) -> dict[str, Any]:
    """The instance document of a trace's jobs on its nodes.

    Leaves out (and counts) the jobs larger than every node of their types, orders the rest
    by submit time, keeps the first ``limit``, and releases them from the first one's
    submit time.

    Raises
    ------
    InputError
        Naming ``source`` and the job's place (``at``) for an id used twice or a time past
        gpuplan's limit; ``source`` when no job is left, or more than an instance holds.
    """
    largest: dict[str, int] = {}
    for node in nodes:
        for gpu_type, count in node["gpus"].items():
            largest[gpu_type] = max(largest.get(gpu_type, 0), count)
    anywhere = max(largest.values())
    first_at: dict[str, int] = {}
    runnable = []
    for job in jobs:
        if first_at.setdefault(job.id, job.at) != job.at:
            raise InputError(source, at(job.at), f"job id {job.id!r} is also the id of the job "
                             f"at {at(first_at[job.id])}")
        if job.duration > MAX_TIME_S:
            raise InputError(source, at(job.at), f"run time {job.duration:.0f} s; gpuplan's "
                             f"times end at {MAX_TIME_S:.0e} s")
        room = anywhere if job.types is None else max(largest.get(t, 0) for t in job.types)
        if job.gpus > room:
            dropped[_TOO_BIG] += 1
        else:
            runnable.append(job)
    runnable.sort(key=lambda job: job.submit)
    kept = runnable[:limit]
    left_out = ", ".join(f"{n} {why}" for why, n in dropped.items() if n) or "none"
    summary = (f"{read} jobs read; left out: {left_out}; {len(kept)} kept"
               + (f", the first {limit} of {len(runnable)} by submit time"
                  if len(kept) < len(runnable) else ""))
    if not kept:
        raise InputError(source, "", f"no job to simulate: {summary}")
    if len(kept) > MAX_JOBS:
        raise InputError(source, "", f"{len(kept)} jobs kept, and an instance holds at most "
                         f"{MAX_JOBS:,}: read a slice with `limit`")
    origin, every_type = kept[0].submit, set(largest)
    entries = []
    for job in kept:
        release = job.submit - origin
        if release > MAX_TIME_S:
            raise InputError(source, at(job.at), f"submitted {release:.0f} s after the first "
                             f"job kept; gpuplan's times end at {MAX_TIME_S:.0e} s")
        entry: dict[str, Any] = {"id": job.id, "gpus": job.gpus,
                                 "demand": {"compute": _WHOLE_GPU},
                                 "duration_s": job.duration, "release_s": release,
                                 "preemptible": True}
        if job.types is not None and job.types != every_type:
            entry["allowed_types"] = sorted(job.types)
        entries.append(entry)
    return {
        "name": name,
        "description": f"{about} {summary}.",
        "gpu_types": gpu_types,
        "nodes": nodes,
        "jobs": entries,
        "objective": ObjectiveKind.WEIGHTED_COMPLETION.value,
    }


def _stem(path: Path) -> str:
    """A file's name without its extensions (``pai_job_table.tar.gz``: ``pai_job_table``)."""
    return path.name.split(".")[0] or path.name


# --- Philly -----------------------------------------------------------------------------

def _philly_machines(path: Path) -> dict[str, tuple[str, int, float]]:
    """Philly's machine list: machine id -> (GPU type, GPUs, GPU memory in GB)."""
    source, machines = str(path), {}
    (c_id, c_gpus, c_memory), rows = _csv(path, PHILLY_MACHINE_COLUMNS,
                                          PHILLY_MACHINE_COLUMNS, header=False)
    for line, row in rows:
        where = f"line {line}"
        machine = _name(source, where, "machineId", row[c_id])
        if machine in machines:
            raise InputError(source, where, f"machineId {machine!r} is listed twice")
        gpus = _count(source, where, "number of GPUs", row[c_gpus])
        size = _MEMORY.fullmatch(row[c_memory].strip())
        if size is None:
            raise _refusal(source, where, "single GPU mem", row[c_memory],
                           "a GPU memory size such as 24GB")
        memory = int(size[1])
        machines[machine] = (f"{memory}GB", gpus, float(memory))
    if not any(gpus for _, gpus, _ in machines.values()):
        raise InputError(source, "", "no machine with GPUs")
    return machines


def philly_document(job_log: Path, machine_list: Path | None = None, *,
                    limit: int | None = None,
                    statuses: Collection[str] | None = None) -> dict[str, Any]:
    """The instance document of Microsoft's Philly trace (see the module docstring).

    Parameters
    ----------
    job_log
        ``cluster_job_log``, the JSON list of jobs (``.gz`` accepted).
    machine_list
        ``cluster_machine_list``; None: the machines the job log names.
    limit
        Keep the first ``limit`` jobs by submit time; None: all.
    statuses
        Keep jobs of these statuses only (of :data:`PHILLY_STATUSES`); None: all.

    Returns
    -------
    dict
        An instance document; its description counts the jobs read, kept and left out.

    Raises
    ------
    InputError
        Naming the file and the JSON path (``[12].attempts[0].start_time``) of a value
        that is missing or malformed, the file and line of a bad machine, or ``statuses``
        and ``limit`` when they are not what they should be.
    """
    keep = _selection("Philly", PHILLY_STATUSES, statuses)
    _check_limit(limit)
    machines = None if machine_list is None else _philly_machines(machine_list)
    source = str(job_log)
    text = _read(job_log)
    if not text.strip():
        raise InputError(source, "", "the file is empty; expected a JSON list of jobs")
    data = parse_json(text, source)
    if not isinstance(data, list):
        raise InputError(source, "", f"expected a JSON list of jobs, got {type(data).__name__}")
    seen: dict[str, int] = {}  # GPUs each machine is seen to have, when there is no list
    jobs: list[_Job] = []
    dropped: Counter[str] = Counter()
    loose: set[str] = set()  # jobs allowed on any type for want of their machines' type
    for i, raw in enumerate(data):
        entry = _philly_entry(source, i, raw, seen if machines is None else None)
        why = _philly_reason(entry, keep)
        if why is not None:
            dropped[why] += 1
            continue
        types = None
        if machines is not None:
            kinds = frozenset(machines[ip][0] for ip in entry.machines if ip in machines)
            if len(kinds) == 1 and all(ip in machines for ip in entry.machines):
                types = kinds
            else:
                loose.add(entry.id)
        jobs.append(_Job(entry.id, i, entry.submit or 0.0, sum(r or 0.0 for r in entry.runs),
                         entry.gpus, types))
    if machines is None:
        nodes = [{"id": ip, "gpus": {PHILLY_TYPE: count}} for ip, count in seen.items() if count]
        if not nodes:
            raise InputError(source, "", "no attempt names a machine with GPUs; give the "
                             "machine list")
        gpu_types = [{"id": PHILLY_TYPE, "capacity": {"compute": _WHOLE_GPU}}]
        cluster = f"on the {len(nodes)} machines its attempts name (one GPU type)"
    else:
        nodes = [{"id": m, "gpus": {t: n}} for m, (t, n, _) in machines.items() if n]
        sizes = sorted({(memory, t) for t, n, memory in machines.values() if n})
        gpu_types = [{"id": t, "capacity": {"compute": _WHOLE_GPU, "memory_gib": memory}}
                     for memory, t in sizes]
        cluster = f"on the {len(nodes)} GPU machines of {machine_list}"
    about = (f"Microsoft Philly trace (msr-fiddle/philly-traces) {job_log} {cluster}. Release: "
             "submit time; duration: the sum of the attempts' run times; gang: the GPUs of "
             "the last attempt, whole GPUs on one node.")
    document = _finish(jobs, dropped, read=len(data), limit=limit, gpu_types=gpu_types,
                       nodes=nodes, name=f"philly-{_stem(job_log)}", about=about,
                       source=source, at=lambda i: f"[{i}]")
    if machines is not None:
        anywhere = sum(job["id"] in loose for job in document["jobs"])
        document["description"] += (f" {anywhere} kept jobs ran on machines the list lacks or "
                                    "of several GPU types, and may use any type.")
    return document


def _philly_field(source: str, where: str, entry: Any, key: str) -> Any:
    """The value of ``key`` in a JSON object of the job log."""
    if not isinstance(entry, dict):
        name = where.rpartition(".")[2] if "." in where else "job"
        raise _refusal(source, where, name, entry, "an object")
    if key not in entry:
        raise InputError(source, f"{where}.{key}", "required field is missing")
    return entry[key]


def _philly_text(source: str, where: str, entry: Any, key: str) -> str:
    """A text field of a JSON object of the job log."""
    value = _philly_field(source, where, entry, key)
    if not isinstance(value, str):
        raise _refusal(source, f"{where}.{key}", key, value, "text")
    return value


def _philly_list(source: str, where: str, entry: Any, key: str) -> list[Any]:
    """A list field of a JSON object of the job log."""
    value = _philly_field(source, where, entry, key)
    if not isinstance(value, list):
        raise _refusal(source, f"{where}.{key}", key, value, "a list")
    return value


def _philly_time(source: str, where: str, entry: Any, key: str) -> float | None:
    """A time field of a JSON object of the job log, in seconds; None for no time."""
    value = _philly_field(source, where, entry, key)
    if value is not None and not isinstance(value, str):
        raise _refusal(source, f"{where}.{key}", key, value, f"{_CLOCK_FORM} or None")
    return _clock(source, f"{where}.{key}", key, value or "")


@dataclass(slots=True)
class _PhillyEntry:
    """What the reader takes from one job of Philly's job log."""

    id: str
    status: str
    submit: float | None
    runs: list[float | None]  # each attempt's run time; None: it lacks a start or an end
    gpus: int  # of the last attempt
    machines: list[str]  # of the last attempt


def _philly_entry(source: str, i: int, entry: Any, seen: dict[str, int] | None) -> _PhillyEntry:
    """Read job ``i`` of the job log, checking every field it uses.

    ``seen`` (when there is no machine list) gets the most GPUs each machine is seen to
    have, by count and by ``gpuN`` index.
    """
    where = f"[{i}]"
    job_id = _name(source, f"{where}.jobid", "jobid", _philly_text(source, where, entry, "jobid"))
    status = _philly_text(source, where, entry, "status")
    submit = _philly_time(source, where, entry, "submitted_time")
    runs: list[float | None] = []
    machines: list[str] = []
    gpus = 0
    for k, attempt in enumerate(_philly_list(source, where, entry, "attempts")):
        there = f"{where}.attempts[{k}]"
        start = _philly_time(source, there, attempt, "start_time")
        end = _philly_time(source, there, attempt, "end_time")
        runs.append(None if start is None or end is None else end - start)
        gpus, machines = 0, []
        for d, placement in enumerate(_philly_list(source, there, attempt, "detail")):
            place = f"{there}.detail[{d}]"
            ip = _name(source, f"{place}.ip", "ip", _philly_text(source, place, placement, "ip"))
            names = _philly_list(source, place, placement, "gpus")
            if not all(isinstance(name, str) for name in names):
                raise _refusal(source, f"{place}.gpus", "gpus", names, "a list of GPU names")
            gpus += len(names)
            machines.append(ip)
            if seen is not None:
                seen[ip] = max(seen.get(ip, 0), len(names), *(
                    int(match[1]) + 1 for match in map(_GPU_NAME.fullmatch, names) if match))
    return _PhillyEntry(job_id, status, submit, runs, gpus, machines)


def _philly_reason(entry: _PhillyEntry, keep: frozenset[str] | None) -> str | None:
    """Why a Philly job is left out, or None to keep it."""
    if keep is not None and entry.status not in keep:
        return _STATUS
    if entry.submit is None:
        return _NO_SUBMIT
    if not entry.runs or None in entry.runs:
        return _NO_RUN
    if any(run is not None and run < 0 for run in entry.runs):
        return _BACKWARDS
    if sum(run or 0.0 for run in entry.runs) <= 0:
        return _ZERO_RUN
    return _NO_GPU if entry.gpus == 0 else None


# --- Helios -----------------------------------------------------------------------------

def _helios_cluster(cluster: str | int | None, cluster_log: Path) -> tuple[str, int]:
    """The GPU type and node count of a Helios cluster given by name or node count.

    None takes the name of the log's folder (the dataset's ``data/Venus/cluster_log.csv``).
    """
    given = cluster_log.resolve().parent.name if cluster is None else cluster
    form = ("a Helios cluster (Venus, Earth, Saturn, Uranus) or a number of nodes of "
            f"{HELIOS_GPUS_PER_NODE} GPUs")
    if (isinstance(given, int) and not isinstance(given, bool)) or (
            isinstance(given, str) and _COUNT.fullmatch(given)):
        nodes = int(given)
        most = MAX_GPUS // HELIOS_GPUS_PER_NODE
        if not 1 <= nodes <= most:
            raise InputError(setting("cluster"), "", f"{nodes} nodes; expected 1 to {most}")
        return HELIOS_TYPE, nodes
    names = {name.lower(): name for name in HELIOS_NODES}
    name = names.get(given.lower()) if isinstance(given, str) else None
    if name is None:
        origin = f" (the folder of {cluster_log})" if cluster is None else ""
        raise InputError(setting("cluster"), "", f"{given!r}{origin} is not {form}")
    return name, HELIOS_NODES[name]


def helios_document(cluster_log: Path, cluster: str | int | None = None, *,
                    limit: int | None = None,
                    statuses: Collection[str] | None = None) -> dict[str, Any]:
    """The instance document of one cluster of SenseTime's Helios trace (see the module docstring).

    Parameters
    ----------
    cluster_log
        The cluster's ``cluster_log.csv`` (``.gz`` accepted).
    cluster
        Venus, Earth, Saturn or Uranus (:data:`HELIOS_NODES`, any case), or a number of
        nodes (as a number or digits); None: the name of ``cluster_log``'s folder.
    limit
        Keep the first ``limit`` jobs by submit time; None: all.
    statuses
        Keep jobs of these states only (of :data:`HELIOS_STATUSES`); None: all.

    Returns
    -------
    dict
        An instance document; its description counts the jobs read, kept and left out.

    Raises
    ------
    InputError
        Naming the file, line and field of a malformed row, the header's line for a
        missing column, ``line 1`` for an empty file, ``cluster`` when it names no cluster,
        or ``statuses`` and ``limit`` when they are not what they should be.
    """
    keep = _selection("Helios", HELIOS_STATUSES, statuses)
    _check_limit(limit)
    source = str(cluster_log)
    # The file first: one that is missing or empty is the problem, not the cluster its
    # folder does not name.
    (c_id, c_gpus, c_state, c_submit, c_duration), rows = _csv(
        cluster_log, HELIOS_COLUMNS, ("job_id", "gpu_num", "state", "submit_time", "duration"),
        header=True)
    gpu_type, count = _helios_cluster(cluster, cluster_log)
    jobs: list[_Job] = []
    dropped: Counter[str] = Counter()
    read = 0
    for line, row in rows:
        read += 1
        where = f"line {line}"
        job_id = _name(source, where, "job_id", row[c_id])
        gpus = _count(source, where, "gpu_num", row[c_gpus])
        submit = _clock(source, where, "submit_time", row[c_submit].strip())
        duration = _amount(source, where, "duration", row[c_duration])
        if keep is not None and row[c_state].strip() not in keep:
            dropped[_STATUS] += 1
        elif submit is None:
            dropped[_NO_SUBMIT] += 1
        elif duration is None:
            dropped[_NO_RUN] += 1
        elif duration == 0:
            dropped[_ZERO_RUN] += 1
        elif gpus == 0:
            dropped[_NO_GPU] += 1
        else:
            jobs.append(_Job(job_id, line, submit, duration, gpus, None))
    nodes = [{"id": f"{gpu_type.lower()}-{k}", "gpus": {gpu_type: HELIOS_GPUS_PER_NODE}}
             for k in range(count)]
    about = (f"SenseTime Helios trace (S-Lab-System-Group/HeliosData) {cluster_log} on "
             f"{gpu_type} ({count} nodes of {HELIOS_GPUS_PER_NODE} GPUs). Release: submit_time; "
             "duration: duration; gang: gpu_num whole GPUs on one node.")
    label = f"{count}-nodes" if gpu_type == HELIOS_TYPE else gpu_type.lower()
    return _finish(jobs, dropped, read=read, limit=limit,
                   gpu_types=[{"id": gpu_type, "capacity": {"compute": _WHOLE_GPU}}],
                   nodes=nodes, name=f"helios-{label}", about=about, source=source,
                   at=lambda line: f"line {line}")


# --- PAI --------------------------------------------------------------------------------

def _pai_nodes(machine_spec: Path | None) -> tuple[list[dict[str, Any]], str]:
    """PAI's GPU machines as nodes, and how the description names them."""
    if machine_spec is None:
        nodes = [{"id": f"{gpu_type}-{k}", "gpus": {gpu_type: gpus}}
                 for gpu_type, (count, gpus) in PAI_FLEET.items() for k in range(count)]
        return nodes, f"the trace's {len(nodes):,} GPU machines (PAI_FLEET)"
    source, nodes, seen, cpus = str(machine_spec), [], set(), 0
    (c_id, c_type, c_gpus), rows = _csv(machine_spec, PAI_MACHINE_COLUMNS,
                                        ("machine", "gpu_type", "cap_gpu"), header=False)
    for line, row in rows:
        where = f"line {line}"
        machine = _name(source, where, "machine", row[c_id])
        if machine in seen:
            raise InputError(source, where, f"machine {machine!r} is listed twice")
        seen.add(machine)
        gpus = _count(source, where, "cap_gpu", row[c_gpus])
        if gpus == 0:
            cpus += 1
            continue
        nodes.append({"id": machine, "gpus": {_name(source, where, "gpu_type", row[c_type]):
                                              gpus}})
    if not nodes:
        raise InputError(source, "", "no machine with GPUs (cap_gpu above 0)")
    return nodes, f"the {len(nodes)} GPU machines of {machine_spec} ({cpus} CPU machines left out)"


def pai_document(job_table: Path, task_table: Path, machine_spec: Path | None = None, *,
                 limit: int | None = None,
                 statuses: Collection[str] | None = None) -> dict[str, Any]:
    """The instance document of Alibaba's PAI trace of 2020 (see the module docstring).

    Parameters
    ----------
    job_table
        ``pai_job_table`` (``.csv``, ``.gz`` or Alibaba's one-file ``.tar.gz``).
    task_table
        ``pai_task_table``, likewise.
    machine_spec
        ``pai_machine_spec``, likewise; None: :data:`PAI_FLEET`.
    limit
        Keep the first ``limit`` jobs by submit time; None: all.
    statuses
        Keep jobs of these statuses only (of :data:`PAI_STATUSES`); None: all.

    Returns
    -------
    dict
        An instance document; its description counts the jobs read, kept and left out.

    Raises
    ------
    InputError
        Naming the file, line and field of a malformed row, a job listed twice, ``line 1``
        for an empty file, the header's line for a missing column, or ``statuses`` and
        ``limit`` when they are not what they should be.
    """
    keep = _selection("PAI", PAI_STATUSES, statuses)
    _check_limit(limit)
    nodes, cluster = _pai_nodes(machine_spec)
    source = str(job_table)
    found: dict[str, _PaiJob] = {}
    (c_name, c_status, c_submit), rows = _csv(job_table, PAI_JOB_COLUMNS,
                                              ("job_name", "status", "start_time"), header=False)
    for line, row in rows:
        where = f"line {line}"
        name = _name(source, where, "job_name", row[c_name])
        if name in found:
            raise InputError(source, where, f"job_name {name!r} is also the job at line "
                             f"{found[name].line}")
        found[name] = _PaiJob(line, _amount(source, where, "start_time", row[c_submit]),
                              row[c_status].strip())
    orphans = _pai_tasks(task_table, found)
    fleet = {gpu_type for node in nodes for gpu_type in node["gpus"]}
    jobs: list[_Job] = []
    dropped: Counter[str] = Counter()
    for name, job in found.items():
        types = job.types & fleet
        if keep is not None and job.status not in keep:
            dropped[_STATUS] += 1
        elif not job.submit:  # 0 or empty: PAI's "no time"
            dropped[_NO_SUBMIT] += 1
        elif job.percent == 0:
            dropped[_NO_GPU] += 1
        elif job.longest is None:
            dropped[_NO_RUN] += 1
        elif job.longest == 0:
            dropped[_ZERO_RUN] += 1
        elif job.types and not types:
            dropped[_NO_TYPE] += 1
        else:
            # Rounded to a millionth first, so that 3 x 33.3333 % is one GPU, not two.
            gpus = math.ceil(round(job.percent / 100, 6))
            jobs.append(_Job(name, job.line, job.submit, job.longest, gpus, types or None))
    gpu_types = [{"id": t, "capacity": {"compute": _WHOLE_GPU}} for t in sorted(fleet)]
    about = (f"Alibaba PAI trace of 2020 (alibaba/clusterdata cluster-trace-gpu-v2020) "
             f"{job_table} and {task_table} on {cluster}. Release: the job's start_time "
             "(submission); duration: the longest run of its GPU tasks; gang: "
             "ceil(sum of plan_gpu x inst_num / 100) whole GPUs on one node"
             + (f"; {orphans} task rows of jobs the job table lacks ignored" if orphans else "")
             + ".")
    return _finish(jobs, dropped, read=len(found), limit=limit, gpu_types=gpu_types,
                   nodes=nodes, name=f"pai-{_stem(job_table)}", about=about, source=source,
                   at=lambda line: f"line {line}")


def _pai_tasks(task_table: Path, found: dict[str, _PaiJob]) -> int:
    """Add each task's GPU request, run and type to its job; the number of task rows without one."""
    source, orphans = str(task_table), 0
    (c_job, c_instances, c_start, c_end, c_gpu, c_type), rows = _csv(
        task_table, PAI_TASK_COLUMNS,
        ("job_name", "inst_num", "start_time", "end_time", "plan_gpu", "gpu_type"), header=False)
    for line, row in rows:
        where = f"line {line}"
        instances = _amount(source, where, "inst_num", row[c_instances])
        percent = _amount(source, where, "plan_gpu", row[c_gpu])
        start = _amount(source, where, "start_time", row[c_start])
        end = _amount(source, where, "end_time", row[c_end])
        job = found.get(row[c_job].strip())
        if job is None:
            orphans += 1
            continue
        if not percent:
            continue  # a CPU task (parameter server, evaluator): no GPU, not modelled
        job.percent += percent * (1.0 if instances is None else instances)
        # PAI writes 0 for a time that never came (the trace's own analysis reads it so).
        if start and end and end >= start:
            job.longest = max(job.longest or 0.0, end - start)
        gpu_type = row[c_type].strip()
        if gpu_type and gpu_type not in job.types:
            job.types |= {gpu_type}
    return orphans


# --- The registry -----------------------------------------------------------------------

@dataclass(frozen=True)
class TraceInput:
    """One input of a trace reader: a keyword of its function and what to give.

    Attributes
    ----------
    parameter
        The reader's keyword, e.g. ``job_log``.
    description
        What it is, for a command line's help.
    required
        Whether the reader needs it.
    """

    parameter: str
    description: str
    required: bool = True


@dataclass(frozen=True)
class TraceFormat:
    """A public trace a reader turns into an instance document.

    Every reader takes its ``files`` and ``options`` as keywords, and ``limit`` (the first
    N jobs by submit time) and ``statuses`` (a collection of ``statuses``) besides; it
    returns the instance document.

    Attributes
    ----------
    name
        The format's name, e.g. ``philly``.
    description
        One line on the trace.
    files
        The reader's file inputs (paths).
    options
        Its other inputs (text).
    statuses
        The final statuses the trace documents, which ``statuses`` may select.
    read
        The reader, e.g. :func:`philly_document`.
    """

    name: str
    description: str
    files: tuple[TraceInput, ...]
    options: tuple[TraceInput, ...]
    statuses: tuple[str, ...]
    read: Callable[..., dict[str, Any]]


#: The settings of both ITP readers: the fleet's size and its GPU types.
_ITP_OPTIONS = (
    TraceInput("node_count", "nodes of 8 GPUs (default: ElasticFlow's size of the cluster "
               "the file's name gives)", required=False),
    TraceInput("types", "GPU types and speeds relative to the first, nodes split evenly, "
               "e.g. A100=1,V100=0.5,K80=0.2 (default: A100)", required=False))

#: The trace readers, by format name.
TRACE_FORMATS: dict[str, TraceFormat] = {
    "philly": TraceFormat(
        "philly", "Microsoft Philly (msr-fiddle/philly-traces, ATC'19): 117k jobs, 2017",
        (TraceInput("job_log", "cluster_job_log, the JSON list of jobs"),
         TraceInput("machine_list", "cluster_machine_list (default: the machines the job log "
                    "names, one GPU type)", required=False)),
        (), PHILLY_STATUSES, philly_document),
    "helios": TraceFormat(
        "helios", "SenseTime Helios (S-Lab-System-Group/HeliosData, SC'21): one cluster, 2020",
        (TraceInput("cluster_log", "the cluster's cluster_log.csv"),),
        (TraceInput("cluster", "Venus, Earth, Saturn, Uranus or a number of 8-GPU nodes "
                    "(default: the name of cluster_log's folder)", required=False),),
        HELIOS_STATUSES, helios_document),
    "pai": TraceFormat(
        "pai", "Alibaba PAI (alibaba/clusterdata cluster-trace-gpu-v2020, NSDI'22): 2020",
        (TraceInput("job_table", "pai_job_table (.csv or Alibaba's .tar.gz)"),
         TraceInput("task_table", "pai_task_table (.csv or .tar.gz)"),
         TraceInput("machine_spec", "pai_machine_spec (default: the trace's 1,814 GPU "
                    "machines)", required=False)),
        (), PAI_STATUSES, pai_document),
    "itp": TraceFormat(
        "itp", "Microsoft ITP (microsoft/elasticflow-traces): 10 clusters, 69k jobs, 2021",
        (TraceInput("trace", "clusterNN.csv of the raw trace"),),
        _ITP_OPTIONS,
        (), itp_document),
    "itp-elasticflow": TraceFormat(
        "itp-elasticflow", "ITP as ElasticFlow used it (ASPLOS'23): deadlines as due dates",
        (TraceInput("trace", "ElasticFlow's clusterNN.csv or 195job.csv"),),
        _ITP_OPTIONS,
        (), itp_elasticflow_document),
}
