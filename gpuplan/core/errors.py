"""Exceptions of gpuplan; the CLI maps them to exit codes (:class:`gpuplan.cli.common.ExitCode`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

#: Key under which a single number given for "every GPU type" is held while it is validated
#: (files may not use it); left out of JSON paths because the user never wrote it.
ALL_TYPES = "*"


def json_path(loc: tuple[str | int, ...]) -> str:
    """Format a pydantic error location as a JSON path such as ``jobs[3].duration_s.A100``."""
    path = ""
    for part in loc:
        if part == ALL_TYPES:
            continue
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else part
    return path


def validation_message(error: Mapping[str, Any]) -> str:
    """Say a pydantic error in plain words ("required field is missing", "unknown field")."""
    kind = error["type"]
    if kind == "missing":
        return "required field is missing"
    if kind == "extra_forbidden":
        return "unknown field"
    message: str = error["msg"]
    return message.removeprefix("Value error, ")


def setting(name: str) -> str:
    """A setting as messages name it: ``name`` between backticks.

    Library errors name the settings a caller gives by their names in the library
    (``round_s``, ``partitions``, ``backend``), never by a command-line flag; the command
    line shows each as its flag (:func:`gpuplan.cli.common.shown`).
    """
    return f"`{name}`"


class InputError(Exception):
    """Invalid user input, located by file and JSON path.

    Parameters
    ----------
    source
        The file the input came from, or the setting (:func:`setting`) at fault.
    path
        Where in the document the problem is, as a JSON path such as ``jobs[3].gpus``;
        empty for the document as a whole.
    message
        What is wrong, in words a user can act on.
    """

    def __init__(self, source: str, path: str, message: str) -> None:
        self.source = source
        self.path = path
        self.message = message
        super().__init__(str(self))

    def __str__(self) -> str:
        where = f"{self.source}: {self.path}" if self.path else self.source
        return f"{where}: {self.message}"


class BackendUnavailableError(Exception):
    """A solver backend cannot be imported; says what to install.

    Parameters
    ----------
    backend
        The backend asked for.
    package
        The package that provides it.
    cause
        The import error.
    """

    def __init__(self, backend: str, package: str, cause: Exception) -> None:
        self.backend = backend
        super().__init__(
            f"backend {backend!r} is not available ({cause}); install it with: "
            f"pip install {package}"
        )


class VerificationError(Exception):
    """A solver returned a schedule that the verifier rejected: always a bug in gpuplan.

    Parameters
    ----------
    method
        The method whose schedule was rejected.
    violations
        One readable line per violated constraint.
    """

    def __init__(self, method: str, violations: Sequence[str]) -> None:
        self.method = method
        self.violations = list(violations)
        lines = "\n  ".join(self.violations)
        super().__init__(
            f"BUG: method {method!r} returned a schedule that fails verification "
            f"({len(self.violations)} violation(s)); it was not written:\n  {lines}"
        )


class RejectedScheduleError(Exception):
    """A schedule file fails verification against its instance, so it is not used.

    Unlike :class:`VerificationError` this is not gpuplan's bug: the file was handed in
    (edited, or planned for another instance). The command exits 1.

    Parameters
    ----------
    source
        The schedule file.
    against
        The instance it was checked against.
    violations
        One readable line per violated constraint.
    """

    def __init__(self, source: str, against: str, violations: Sequence[str]) -> None:
        self.violations = list(violations)
        lines = "\n  ".join(self.violations)
        super().__init__(
            f"{source}: fails verification against {against} ({len(self.violations)} "
            f"violation(s)); nothing was written:\n  {lines}")
