"""Readers: one per file format, each producing a validated :class:`~gpuplan.instance.Instance`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from gpuplan.errors import InputError
from gpuplan.instance import Instance, ObjectiveKind
from gpuplan.readers.instance_file import build_instance, parse_document

__all__ = ["load_data", "read_instance"]


def load_data(path: Path) -> Any:
    """Read a JSON or YAML file (by suffix) into Python data.

    Raises
    ------
    InputError
        If the file cannot be read or parsed, with line and column where known.
    """
    source = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(source, "", "file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(source, "", f"cannot read file: {exc}") from None
    if path.suffix.lower() in (".yaml", ".yml"):
        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
            problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            raise InputError(source, "", f"malformed YAML{where}: {problem}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            source, "", f"malformed JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None


def read_instance(path: str | Path, objective: ObjectiveKind | None = None) -> Instance:
    """Read and validate a gpuplan instance file (``.json``, ``.yaml`` or ``.yml``).

    Parameters
    ----------
    path
        The instance file.
    objective
        Plan for this objective instead of the file's.

    Raises
    ------
    InputError
        Naming the file, the JSON path and the problem.
    """
    path = Path(path)
    document = parse_document(load_data(path), str(path))
    instance = build_instance(document, str(path), default_name=path.stem)
    return instance if objective is None else instance.with_objective(objective)
