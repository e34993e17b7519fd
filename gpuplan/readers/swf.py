"""HPC job traces in the Standard Workload Format (SWF) of the Parallel Workloads Archive.

An SWF file (``.swf``, or gzip-compressed ``.swf.gz``) has header comments starting with
``;`` and one line per job of 18 whitespace-separated numbers, -1 where unknown
(:data:`FIELDS`). The header's ``MaxNodes`` and ``MaxProcs`` give the machine's size; the
archive writes notes after some values (``; MaxNodes: 338 (batch partition; 512 total)``),
and the leading number is the value. :func:`read_swf` reads a file into a
:class:`SwfTrace`, the fields as one array; how a simulator turns them into jobs is its own
protocol (:mod:`gpuplan.simulate.hpc`).

A line that is not 18 numbers is refused with the file, the line number and the field at
fault, never skipped: a trace read short would change every sequence drawn from it.
"""

from __future__ import annotations

import gzip
import re
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gpuplan.core.errors import InputError
from gpuplan.core.files import read_bytes, read_text
from gpuplan.core.instance import FloatArray, IntArray

#: The 18 job fields of SWF, in file order.
FIELDS = (
    "job number", "submit time", "wait time", "run time", "allocated processors",
    "average CPU time", "used memory", "requested processors", "requested time",
    "requested memory", "status", "user id", "group id", "executable number",
    "queue number", "partition number", "preceding job number", "think time",
)
#: Index of each field by a short name, for readers of :attr:`SwfTrace.fields`.
JOB, SUBMIT, WAIT, RUN, ALLOCATED, CPU, MEMORY, REQUESTED, REQUEST_TIME = range(9)
REQUEST_MEMORY, STATUS, USER, GROUP, EXECUTABLE, QUEUE, PARTITION, PRECEDING, THINK = range(
    9, 18)

_HEADER_NUMBER = re.compile(r";\s*(MaxNodes|MaxProcs)\s*:\s*(\S.*)?$")
_LEADING_INT = re.compile(r"[0-9]+")


@dataclass(frozen=True)
class SwfTrace:
    """The jobs of an SWF file, as written.

    Attributes
    ----------
    name
        The file name without ``.swf`` / ``.swf.gz``.
    source
        The path, named in messages.
    max_nodes, max_procs
        The header's machine size; None where the header does not give it.
    fields
        ``(J, 18)`` the job lines' fields in file order (-1: unknown).
    lines
        ``(J,)`` each job's line number in the file (1-based), for messages.
    """

    name: str
    source: str
    max_nodes: int | None
    max_procs: int | None
    fields: FloatArray
    lines: IntArray

    @property
    def n_jobs(self) -> int:
        """Number of job lines."""
        return int(self.fields.shape[0])

    def column(self, index: int) -> FloatArray:
        """One field of every job (see the field indices of this module)."""
        return self.fields[:, index]


def trace_name(path: Path) -> str:
    """The name of a trace file: its file name without ``.gz`` and ``.swf``."""
    name = path.name
    for suffix in (".gz", ".swf"):
        name = name.removesuffix(suffix)
    return name


def is_swf(path: str | Path) -> bool:
    """Whether a file name is an SWF trace's (``.swf`` or ``.swf.gz``)."""
    name = str(path)
    return name.endswith((".swf", ".swf.gz"))


def _read_lines(path: Path) -> list[str]:
    """The file's lines (a ``.gz`` decompressed), read once it is known to be a regular file.

    Raises
    ------
    InputError
        Naming the file when it is missing, unreadable, not a regular file (a pipe, a
        device), too large, a broken gzip file, or not UTF-8.
    """
    if not path.name.endswith(".gz"):
        return read_text(path).splitlines()
    packed = read_bytes(path)
    try:
        return gzip.decompress(packed).decode("utf-8").splitlines()
    except (OSError, EOFError, zlib.error, UnicodeDecodeError) as exc:
        raise InputError(str(path), "", f"cannot read the SWF file: {exc}") from None


def _header_value(line: str, number: int, source: str) -> tuple[str, int] | None:
    match = _HEADER_NUMBER.match(line.strip())
    if match is None:
        return None
    key, text = match.group(1), (match.group(2) or "").strip()
    value = _LEADING_INT.match(text)
    if value is None or int(value.group()) <= 0:
        raise InputError(source, f"line {number}", f"header {key}: expected a positive "
                         f"number of {'nodes' if key == 'MaxNodes' else 'processors'}, got "
                         f"{text!r}")
    return key, int(value.group())


def _job_fields(line: str, number: int, source: str) -> list[float]:
    parts = line.split()
    if len(parts) != len(FIELDS):
        raise InputError(source, f"line {number}", f"an SWF job line has {len(FIELDS)} "
                         f"fields, this one has {len(parts)}")
    values = []
    for k, text in enumerate(parts):
        try:
            value = float(text)
        except ValueError:
            value = float("nan")
        if not np.isfinite(value):
            raise InputError(source, f"line {number}", f"field {k + 1} ({FIELDS[k]}): "
                             f"expected a number (-1 for unknown), got {text!r}")
        values.append(value)
    return values


def read_swf(path: str | Path) -> SwfTrace:
    """Read an SWF trace (``.swf`` or ``.swf.gz``).

    Parameters
    ----------
    path
        The file.

    Returns
    -------
    SwfTrace
        Its header's machine size and its job lines' fields.

    Raises
    ------
    InputError
        Naming the file and, for a bad line, its number and the field: a job line without
        18 fields, a field that is not a number, a ``MaxNodes``/``MaxProcs`` header
        without a positive count, a file without job lines, or one that cannot be read.
    """
    file = Path(path)
    source = str(path)
    header: dict[str, int] = {}
    rows: list[list[float]] = []
    numbers: list[int] = []
    for number, line in enumerate(_read_lines(file), start=1):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith(";"):
            found = _header_value(stripped, number, source)
            if found is not None:
                header[found[0]] = found[1]
            continue
        rows.append(_job_fields(stripped, number, source))
        numbers.append(number)
    if not rows:
        raise InputError(source, "", "no job lines: an SWF file has one line of 18 numbers "
                         "per job after its ';' header")
    return SwfTrace(name=trace_name(file), source=source, max_nodes=header.get("MaxNodes"),
                    max_procs=header.get("MaxProcs"),
                    fields=np.array(rows, dtype=np.float64),
                    lines=np.array(numbers, dtype=np.int64))
