"""Readers: one per file format, each producing a validated instance."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpuplan.core.errors import InputError
from gpuplan.core.files import parse_json, parse_yaml, read_text
from gpuplan.core.instance import Instance
from gpuplan.core.objectives import ObjectiveKind
from gpuplan.readers.instance_file import instance_from_data
from gpuplan.readers.orlib_gap import Sense, gap_documents

#: File formats ``gpuplan solve --format`` reads.
FORMATS = ("gpuplan", "orlib-gap")

__all__ = ["FORMATS", "load_data", "parse_data", "read_instance"]


def load_data(path: Path) -> Any:
    """Read a JSON or YAML file (by suffix) into Python data, strictly.

    Raises
    ------
    InputError
        If the file cannot be read or parsed, with line and column where known, or holds a
        key twice, nests too deeply or an integer too long (see :mod:`gpuplan.core.files`).
    """
    return parse_data(read_text(path), path)


def parse_data(text: str, path: Path) -> Any:
    """Parse a JSON or YAML file's text (by ``path``'s suffix) strictly, as :func:`load_data` does.

    Raises
    ------
    InputError
        If the text cannot be parsed, naming ``path``.
    """
    if path.suffix.lower() in (".yaml", ".yml"):
        return parse_yaml(text, str(path))
    return parse_json(text, str(path))


def read_instance(
    path: str | Path,
    objective: ObjectiveKind | None = None,
    file_format: str = "gpuplan",
    sense: Sense = "min",
) -> Instance:
    """Read and validate an instance file.

    Parameters
    ----------
    path
        The instance file: a gpuplan instance (``.json``, ``.yaml``, ``.yml``), or for
        ``orlib-gap`` an OR-Library GAP file, with ``#k`` to pick problem k of several.
    objective
        Plan for this objective instead of the file's.
    file_format
        One of :data:`FORMATS`.
    sense
        For ``orlib-gap``: minimise cost or maximise profit.

    Raises
    ------
    InputError
        Naming the file, the JSON path and the problem.
    """
    source = str(path)
    if file_format == "orlib-gap":
        documents = gap_documents(source, sense)
        if len(documents) > 1:
            raise InputError(
                source, "", f"the file holds {len(documents)} problems: pick one as {source}#k"
            )
        data: Any = documents[0]
        default_name = str(data["name"])
    elif file_format == "gpuplan":
        data = load_data(Path(path))
        default_name = Path(path).stem
    else:
        raise InputError(source, "", f"unknown format {file_format!r}; choose from {FORMATS}")
    instance = instance_from_data(data, source, default_name=default_name)
    return instance if objective is None else instance.with_objective(objective)
