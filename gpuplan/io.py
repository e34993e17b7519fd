"""File input with clear errors, and atomic output.

A reader of a file gpuplan writes sees the old file or the whole new one, never a part.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from gpuplan.errors import InputError


def read_text(path: Path) -> str:
    """Read a whole text file (UTF-8).

    Raises
    ------
    InputError
        If the file is missing or unreadable, naming it.
    """
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(str(path), "", "file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(str(path), "", f"cannot read file: {exc}") from None


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder and a rename.

    Parameters
    ----------
    path
        The destination; its folder must exist.
    text
        The whole content.
    """
    directory = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
