"""OR-Library generalized assignment problem (GAP) files, as gpuplan instance documents.

The files are whitespace-separated integers in which line breaks mean nothing. A
multi-problem file (``gap1.txt`` ... ``gap12.txt``, ``gapa.txt`` ... ``gapd.txt``) starts
with the number of problems ``P``; a single-problem file (Yagiura's ``d05100`` ...) does
not. Each problem is ``m n``, then the costs ``c[i][j]``, then the demands ``a[i][j]`` (both
agent-major), then the capacities ``b[i]``.

In gpuplan terms an agent is a GPU type with one GPU on its own node, with a single resource
``units`` of capacity ``b[i]``; a job has demand ``a[i][j]`` and cost (or profit)
``c[i][j]`` on agent ``i``. The OR-Library publishes gap1-12 as maximisation problems,
while later literature (and the Chu-Beasley and Yagiura sets) minimises: ``sense`` chooses
between ``assign-cost`` and ``assign-profit``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import numpy as np

from gpuplan.core.errors import InputError
from gpuplan.core.files import read_text

Sense = Literal["min", "max"]
RESOURCE = "units"


def _problems(tokens: np.ndarray, source: str) -> list[np.ndarray]:
    """Split the token stream into one array per problem."""

    def size(at: int) -> int:
        if at + 2 > tokens.size:
            raise InputError(source, "", "file ends before a problem's 'm n' header")
        m, n = int(tokens[at]), int(tokens[at + 1])
        if m <= 0 or n <= 0:
            raise InputError(source, "", f"problem header 'm n' must be positive, got {m} {n}")
        return 2 + 2 * m * n + m

    if tokens.size >= 2 and size(0) == tokens.size:
        return [tokens]
    count = int(tokens[0]) if tokens.size else 0
    problems, at = [], 1
    for k in range(count):
        length = size(at)
        if at + length > tokens.size:
            raise InputError(source, f"problem {k + 1}", "file ends inside the problem")
        problems.append(tokens[at : at + length])
        at += length
    if count <= 0 or at != tokens.size:
        raise InputError(
            source, "", f"not an OR-Library GAP file: {tokens.size} numbers do not form "
            f"{max(count, 0)} problem(s)"
        )
    return problems


def read_orlib_gap(path: Path) -> list[tuple[int, int, np.ndarray, np.ndarray, np.ndarray]]:
    """Read every problem of a GAP file as ``(m, n, c, a, b)``; ``c``, ``a`` are ``(m, n)``.

    Raises
    ------
    InputError
        If the file cannot be read, is empty, or its numbers do not form GAP problems.
    """
    source = str(path)
    text = read_text(path)
    if not text.strip():
        raise InputError(source, "", "the file is empty; expected the numbers of OR-Library "
                         "GAP problems (m n, costs, demands, capacities)")
    try:
        tokens = np.array([int(token) for token in text.split()], dtype=np.int64)
    except ValueError as exc:
        raise InputError(source, "", f"not an OR-Library GAP file: {exc}") from None
    out = []
    for problem in _problems(tokens, source):
        m, n = int(problem[0]), int(problem[1])
        c = problem[2 : 2 + m * n].reshape(m, n)
        a = problem[2 + m * n : 2 + 2 * m * n].reshape(m, n)
        b = problem[2 + 2 * m * n :]
        out.append((m, n, c, a, b))
    return out


def gap_document(
    name: str, c: np.ndarray, a: np.ndarray, b: np.ndarray, sense: Sense
) -> dict[str, Any]:
    """An instance document for one GAP problem.

    Parameters
    ----------
    name
        The instance name.
    c, a
        ``(m, n)`` costs (or profits) and demands.
    b
        ``(m,)`` capacities.
    sense
        ``"min"`` for total cost (``assign-cost``), ``"max"`` for total profit
        (``assign-profit``).
    """
    m, n = c.shape
    agents = [f"agent{i + 1}" for i in range(m)]
    value_field = "cost" if sense == "min" else "profit"
    jobs = [
        {
            "id": f"job{j + 1}",
            "duration_s": 1,
            "demand": {RESOURCE: {agents[i]: int(a[i, j]) for i in range(m)}},
            value_field: {agents[i]: int(c[i, j]) for i in range(m)},
        }
        for j in range(n)
    ]
    return {
        "name": name,
        "description": f"OR-Library GAP problem, {m} agents x {n} jobs, "
        f"{'minimising cost' if sense == 'min' else 'maximising profit'}.",
        "gpu_types": [
            # An agent takes as many jobs as its capacity holds: the GPU is shared.
            {"id": agents[i], "capacity": {RESOURCE: int(b[i])}, "sharing": True}
            for i in range(m)
        ],
        "nodes": [{"id": f"node{i + 1}", "gpus": {agents[i]: 1}} for i in range(m)],
        "jobs": jobs,
        "objective": "assign-cost" if sense == "min" else "assign-profit",
    }


def split_spec(spec: str) -> tuple[Path, int | None]:
    """Split ``FILE#k`` into the file and the 1-based problem number (None without ``#k``).

    Raises
    ------
    InputError
        If ``k`` is not a positive integer.
    """
    path, sep, number = spec.rpartition("#")
    if not sep:
        return Path(spec), None
    if not number.isdigit() or int(number) < 1:
        raise InputError(spec, "", f"problem number after '#' must be 1 or more, got {number!r}")
    return Path(path), int(number)


def gap_documents(spec: str, sense: Sense) -> list[dict[str, Any]]:
    """Instance documents for ``FILE`` (every problem) or ``FILE#k`` (problem k).

    Names are the file stem, with ``-k`` added for multi-problem files (``gap1-1``).

    Raises
    ------
    InputError
        If the file is not a GAP file, or ``k`` is out of range.
    """
    path, number = split_spec(spec)
    problems = read_orlib_gap(path)
    if number is not None and number > len(problems):
        raise InputError(spec, "", f"the file holds {len(problems)} problem(s), not {number}")
    chosen = range(len(problems)) if number is None else [number - 1]
    return [
        gap_document(
            path.stem if len(problems) == 1 else f"{path.stem}-{k + 1}",
            problems[k][2], problems[k][3], problems[k][4], sense,
        )
        for k in chosen
    ]
