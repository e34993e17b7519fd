"""File input with clear errors, strict parsing, and safe atomic output.

Inputs are read only when they are regular files of at most :data:`MAX_READ_BYTES`
(:func:`read_text`, :func:`read_bytes`): a pipe or a device is refused at once, where
reading it would wait for ever or fill the memory.

A reader of a file gpuplan writes sees the old file or the whole new one, never a part.
Outputs are checked before any work is done (:func:`check_output`,
:func:`check_output_folder`): gpuplan never writes over an input of the same command,
writes through a symbolic link to its target, and writes only regular files; an output
folder a failed command made is removed again (:func:`output_folder`). Temporary
files carry the writer's process id, so that a later run removes those a killed run left.

JSON and YAML documents are parsed strictly (:func:`parse_json`, :func:`parse_yaml`): a key
given twice in one object, nesting deeper than :data:`MAX_DEPTH` and integers longer than
:data:`MAX_INT_DIGITS` digits are errors that name the file and the place.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import os
import re
import secrets
import shutil
import socket
import stat
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import chain, compress
from operator import not_
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

import yaml

from gpuplan.core.errors import InputError

#: Deepest nesting of objects and lists a document may have; gpuplan's formats need 6.
MAX_DEPTH = 64
#: Integers with more digits are refused while parsing (shorter ones that are out of range
#: are refused by the format, with their JSON path).
MAX_INT_DIGITS = 100
#: The largest file gpuplan reads: its largest inputs (run logs of millions of segments,
#: instances of a million jobs) hold well under 1 GiB, and parsing takes several times a
#: file's size in memory.
MAX_READ_BYTES = 4 * 2**30
#: A temporary file whose writer is gone, or that is older than this, is removed.
STALE_AFTER_S = 3600.0

#: This machine's tag in temporary names: a process id says something only on its host.
HOST_TAG = hashlib.sha256(socket.gethostname().encode()).hexdigest()[:6]
#: What :func:`_read` returns: the text or the bytes of a file.
Read = TypeVar("Read", str, bytes)

_TEMPORARY = re.compile(r"^\.gpuplan-([0-9a-f]{6})-(\d+)-[0-9a-f]{8}\.tmp$")


def read_text(path: Path) -> str:
    """Read a whole text file (UTF-8); see :func:`read_bytes`.

    Raises
    ------
    InputError
        If the file is missing, unreadable, not UTF-8, not a regular file or too large,
        naming it.
    """
    return _read(path, lambda checked: checked.read_text(encoding="utf-8"))


def read_bytes(path: Path) -> bytes:
    """Read a whole file, once it is known to be a regular file of at most :data:`MAX_READ_BYTES`.

    Raises
    ------
    InputError
        If the file is missing, unreadable, not a regular file (a pipe, a device, a
        folder) or larger than :data:`MAX_READ_BYTES`, naming it.
    """
    return _read(path, Path.read_bytes)


def _read(path: Path, read: Callable[[Path], Read]) -> Read:
    """``read(path)`` after :func:`_check_readable`, a failure as an error naming the file."""
    _check_readable(path)
    try:
        return read(path)
    except FileNotFoundError:
        raise InputError(str(path), "", "file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(str(path), "", f"cannot read file: {exc}") from None


def _check_readable(path: Path) -> None:
    """Refuse, before opening it, a file that reading would hang on or never finish.

    Opening a pipe waits for a writer, and a device such as ``/dev/zero`` never ends (its
    bytes fill the memory): only regular files are read, and none past
    :data:`MAX_READ_BYTES`.
    """
    try:
        info = path.stat()
    except FileNotFoundError:
        raise InputError(str(path), "", "file not found") from None
    except OSError as exc:
        raise InputError(str(path), "", f"cannot read file: {exc}") from None
    if not stat.S_ISREG(info.st_mode):
        raise InputError(str(path), "", f"not a regular file (it is {_kind(info.st_mode)})")
    if info.st_size > MAX_READ_BYTES:
        raise InputError(str(path), "", f"the file holds {info.st_size / 2**30:.1f} GiB; "
                         f"gpuplan reads files of up to {MAX_READ_BYTES / 2**30:g} GiB")


class _Duplicated(dict[str, Any]):
    """An object in which a key was given more than once: found and reported after parsing."""

    def __init__(self, pairs: list[tuple[str, Any]], key: str) -> None:
        super().__init__(pairs)
        self.key = key
        self.given = [value for k, value in pairs if k == key]


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    whole = dict(pairs)
    if len(whole) == len(pairs):
        return whole
    counts = Counter(k for k, _ in pairs)
    return _Duplicated(pairs, next(k for k, n in counts.items() if n > 1))


def _integer(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _TooLongError(text)
    return int(text)


class _TooLongError(ValueError):
    """An integer with more than :data:`MAX_INT_DIGITS` digits."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


def _describe(value: Any) -> str:
    text = json.dumps(value) if isinstance(value, str | int | float | bool) or value is None \
        else type(value).__name__
    return text if len(text) <= 40 else text[:37] + "..."


#: The types of the containers a parsed document is made of (JSON and YAML alike).
_CONTAINERS = frozenset({dict, list, _Duplicated})
_OBJECTS = frozenset({dict, _Duplicated})


def _has_defect(data: Any) -> bool:
    """Whether the document holds a duplicated key or nests too deeply.

    The check runs level by level over the containers only, with every per-value step in
    C (``map``, ``compress``, ``chain``): even a big file costs little per value, and no
    path is formatted.
    """
    level = [data] if type(data) in _CONTAINERS else []
    for depth in range(MAX_DEPTH + 1):
        if not level:
            return False
        kinds = list(map(type, level))
        if _Duplicated in kinds:
            return True
        if depth == MAX_DEPTH:
            # Anything inside a container this deep is one level too deep.
            return any(level)
        objects = list(map(_OBJECTS.__contains__, kinds))
        children = list(chain(chain.from_iterable(map(dict.values, compress(level, objects))),
                              chain.from_iterable(compress(level, map(not_, objects)))))
        level = list(compress(children, map(_CONTAINERS.__contains__, map(type, children))))
    return False


#: Where a container sits in the document: its parent's place, and its key there (an index
#: when the parent is a list). Paths are formatted from these links only for a message.
_Place = tuple["_Place | None", Any, bool]


def _path(place: _Place | None) -> str:
    """The JSON path of a place, e.g. ``jobs[1].demand``; ``""`` for the top level."""
    steps: list[tuple[Any, bool]] = []
    while place is not None:
        place, key, in_list = place
        steps.append((key, in_list))
    path = ""
    for key, in_list in reversed(steps):
        path = f"{path}[{key}]" if in_list else f"{path}.{key}" if path else str(key)
    return path


def _find_defects(data: Any, source: str) -> None:
    """Refuse a parsed document with a duplicated key or nesting deeper than :data:`MAX_DEPTH`.

    :func:`_has_defect` decides cheaply; only a defective document is walked again, depth
    first from each container's last child, to name the defect met first in that order.

    Raises
    ------
    InputError
        Naming the JSON path of the object with the duplicated key (and both values), or
        of the first value nested too deeply.
    """
    if not _has_defect(data):
        return
    stack: list[tuple[Any, _Place | None, int]] = [(data, None, 0)]
    while stack:
        value, place, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise InputError(source, _path(place), f"nested more than {MAX_DEPTH} levels deep")
        if isinstance(value, _Duplicated):
            shown = " and ".join(_describe(v) for v in value.given[:2])
            raise InputError(source, _path(place) or "(top level)",
                             f"key {value.key!r} is given {len(value.given)} times in one "
                             f"object ({shown}); give it once")
        if isinstance(value, dict):
            stack.extend((child, (place, key, False), depth + 1) for key, child in value.items())
        elif isinstance(value, list):
            stack.extend((child, (place, i, True), depth + 1) for i, child in enumerate(value))


def _check_not_empty(text: str, source: str) -> None:
    """Refuse a document with nothing in it: an empty file, not a malformed one."""
    if not text.strip():
        raise InputError(source, "", "the file is empty")


def parse_json(text: str, source: str) -> Any:
    """Parse JSON strictly.

    Raises
    ------
    InputError
        For an empty text (nothing but white space), malformed JSON (with line and
        column), a key given twice in one object (with its JSON path and both values),
        nesting deeper than :data:`MAX_DEPTH`, and integers of more than
        :data:`MAX_INT_DIGITS` digits.
    """
    _check_not_empty(text, source)
    try:
        data = json.loads(text, object_pairs_hook=_object, parse_int=_integer)
    except json.JSONDecodeError as exc:
        raise InputError(
            source, "", f"malformed JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None
    except _TooLongError as exc:
        at = text.find(exc.text)
        line = text.count("\n", 0, at) + 1
        column = at - text.rfind("\n", 0, at)
        raise InputError(source, "", f"integer at line {line}, column {column} has more than "
                         f"{MAX_INT_DIGITS} digits") from None
    except RecursionError:
        raise InputError(source, "", f"nested more than {MAX_DEPTH} levels deep") from None
    _find_defects(data, source)
    return data


class _StrictLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a key given twice in one mapping."""

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        # An alias repeats a node without its text: a few lines can stand for 2**40 nodes.
        if self.check_event(yaml.events.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]
            raise yaml.constructor.ConstructorError(
                None, None, f"aliases (*{event.anchor}) are not allowed; write the value out",
                event.start_mark)
        node: yaml.Node | None = super().compose_node(parent, index)
        return node

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, yaml.Node] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            with contextlib.suppress(TypeError):
                if key in seen:
                    first = seen[key].start_mark.line + 1
                    raise yaml.constructor.ConstructorError(
                        None, None, f"key {key!r} is given twice in one mapping (lines {first} "
                        f"and {key_node.start_mark.line + 1}); give it once",
                        key_node.start_mark)
                seen[key] = key_node
        return super().construct_mapping(node, deep=deep)


def _yaml_integer(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> Any:
    if len(node.value.lstrip("+-").replace("_", "")) > MAX_INT_DIGITS:
        raise yaml.constructor.ConstructorError(
            None, None, f"integer {node.value[:20]}... has more than {MAX_INT_DIGITS} digits",
            node.start_mark)
    return loader.construct_yaml_int(node)


_StrictLoader.add_constructor("tag:yaml.org,2002:int", _yaml_integer)


def parse_yaml(text: str, source: str) -> Any:
    """Parse YAML strictly (safe loader: no Python objects); see :func:`parse_json`.

    Raises
    ------
    InputError
        For an empty text (nothing but white space), or with line and column where known.
    """
    _check_not_empty(text, source)
    try:
        data = yaml.load(text, Loader=_StrictLoader)  # a SafeLoader: data only
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        # A constructor error is well-formed YAML that the strict loader refuses.
        kind = "YAML" if isinstance(exc, yaml.constructor.ConstructorError) else "malformed YAML"
        raise InputError(source, "", f"{kind}{where}: {problem}") from None
    except RecursionError:
        raise InputError(source, "", f"nested more than {MAX_DEPTH} levels deep") from None
    _find_defects(data, source)
    return data


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISCHR, "a device"),
                       (stat.S_ISBLK, "a device"), (stat.S_ISFIFO, "a pipe"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "a special file"


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def remove_stale_temporaries(folder: Path) -> None:
    """Remove the temporary files of writes that never finished (their writer was killed).

    A temporary file is stale when the process on this machine that made it no longer
    runs, or when it is older than :data:`STALE_AFTER_S` (a writer on another machine
    sharing the folder, whose process id says nothing here).
    """
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        match = _TEMPORARY.match(name)
        if match is None:
            continue
        path = folder / name
        here = match.group(1) == HOST_TAG
        with contextlib.suppress(OSError):
            if (here and not _running(int(match.group(2)))) or \
                    time.time() - path.stat().st_mtime > STALE_AFTER_S:
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path)  # a folder of files written together
                else:
                    path.unlink()


def _running(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def check_output(path: str | Path, inputs: Iterable[str | Path] = (),
                 option: str = "-o") -> Path:
    """Check, before any work, that a file can be written at ``path``; return its target.

    A symbolic link is written through: the target is the file it points to. Stale
    temporary files in the target's folder are removed.

    Parameters
    ----------
    path
        The output the user named.
    inputs
        The files the same command reads: the output may not be one of them.
    option
        The option that named the output, for messages.

    Raises
    ------
    InputError
        If the output is one of the inputs, exists but is not a regular file (a folder,
        a device, a pipe), its folder is missing or not writable, or its name is longer
        than the file system allows.
    """
    given = Path(path)
    target = Path(os.path.realpath(given))
    where = str(given)
    for source in inputs:
        if _same_file(target, Path(source)) or target == Path(os.path.realpath(source)):
            raise InputError(where, "", f"{option} names {source}, an input of this command; "
                             "choose another output file")
    folder = target.parent
    if not folder.is_dir():
        raise InputError(where, "", f"folder {str(folder)!r} does not exist")
    with contextlib.suppress(OSError, ValueError):
        limit = os.pathconf(folder, "PC_NAME_MAX")
        if len(target.name.encode()) > limit:
            raise InputError(where, "", f"the file name is longer than this file system's "
                             f"limit of {limit} bytes")
    try:
        mode = target.stat().st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise InputError(where, "", f"cannot write here: {exc.strerror}") from None
    if mode is not None and not stat.S_ISREG(mode):
        raise InputError(where, "", f"is {_kind(mode)}: gpuplan writes only regular files "
                         "(use '-' for standard output where the command offers it)")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputError(where, "", f"folder {str(folder)!r} is not writable")
    remove_stale_temporaries(folder)
    return target


def check_output_folder(path: str | Path, inputs: Iterable[str | Path] = (),
                        option: str = "-o") -> Path:
    """Create the output folder if needed and check it can be written; see :func:`check_output`.

    Raises
    ------
    InputError
        If it is an input file, not a folder, cannot be created or is not writable.
    """
    folder = Path(path)
    for source in inputs:
        if _same_file(folder, Path(source)):
            raise InputError(str(folder), "", f"{option} names {source}, an input of this "
                             "command; choose another output folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(str(folder), "", f"cannot create the folder: {exc.strerror}") from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputError(str(folder), "", "the folder is not writable")
    remove_stale_temporaries(folder)
    return folder


def missing_folder(folder: str | Path) -> Path | None:
    """The outermost folder on the way to ``folder`` that does not exist yet; None if it does."""
    path, top = Path(os.path.abspath(folder)), None
    while not os.path.lexists(path):
        top = path
        if path.parent == path:
            break
        path = path.parent
    return top


def remove_made(folder: str | Path | None, made: Path | None) -> None:
    """Remove the folders a failed run made, from ``folder`` up to ``made``; only empty ones.

    Nothing when the run made none (``folder`` or ``made`` None): a folder the user had
    stays.
    """
    if folder is None or made is None:
        return
    path = Path(os.path.abspath(folder))
    while True:
        try:
            path.rmdir()
        except OSError:
            return
        if path == made or path.parent == path:
            return
        path = path.parent


@contextlib.contextmanager
def output_folder(path: str | Path, inputs: Iterable[str | Path] = (),
                  option: str = "-o") -> Iterator[Path]:
    """The checked output folder (:func:`check_output_folder`) for a command's work.

    When the work fails (an exception, Ctrl-C among them), the folders this made are
    removed again if they are still empty: a failed command leaves no empty folder behind,
    and never removes one the user had.
    """
    made = missing_folder(path)
    try:
        yield check_output_folder(path, inputs, option)
    except BaseException:
        remove_made(path, made)
        raise


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically; see :func:`write_bytes_atomic`."""
    write_bytes_atomic(path, text.encode("utf-8"))


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically; see :func:`atomic_writer`."""
    with atomic_writer(path) as handle:
        handle.write(data)


@contextlib.contextmanager
def atomic_writer(path: Path) -> Iterator[BinaryIO]:
    """A file to write ``path``'s whole content to, in pieces; it replaces ``path`` at the end.

    The content goes to a temporary file in the same folder, which a rename puts in place
    when the block ends without an exception; otherwise it is removed and ``path`` is left
    as it was. A symbolic link is written through to its target. An existing file keeps its
    permissions; a new one gets those the umask gives.

    Parameters
    ----------
    path
        The destination; its folder must exist.

    Raises
    ------
    InputError
        If ``path`` exists and is not a regular file: it is never replaced.
    OSError
        If the folder cannot be written.
    """
    target = Path(os.path.realpath(path))
    try:
        mode: int | None = target.stat().st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        raise InputError(str(path), "", f"is {_kind(mode)}: gpuplan writes only regular files")
    if mode is None:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    # A short name of its own: a temporary named after a long file name would pass the
    # file system's limit. Host and pid let a later run tell a killed writer's leftovers.
    tmp = target.parent / f".gpuplan-{HOST_TAG}-{os.getpid()}-{secrets.token_hex(4)}.tmp"
    handle = os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb")
    try:
        with handle:
            os.fchmod(handle.fileno(), stat.S_IMODE(mode))
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_files_atomic(folder: Path, files: Mapping[str, str],
                       executable: Iterable[str] = ()) -> list[Path]:
    """Write text files under ``folder``: all are written and on disk before any is in place.

    Every file goes first to a temporary folder inside ``folder``; one ``sync`` puts them
    all on disk (a per-file ``fsync`` costs about 0.4 ms, which thousands of files
    notice), and then each is moved onto its path with a rename, which replaces an existing
    file at once (a sub-folder that does not exist yet moves in whole). A failure while
    writing leaves ``folder`` as it was; the temporary folder of a killed writer is
    removed by :func:`remove_stale_temporaries`.

    Parameters
    ----------
    folder
        An existing folder; the caller has checked that each path may be written
        (:func:`check_output`).
    files
        UTF-8 text by path relative to ``folder`` (sub-folders are made).
    executable
        Paths among ``files`` to mark executable.

    Returns
    -------
    list
        The files written, in the order of ``files``.
    """
    staging = folder / f".gpuplan-{HOST_TAG}-{os.getpid()}-{secrets.token_hex(4)}.tmp"
    staging.mkdir()
    try:
        marked = set(executable)
        for parent in {(staging / name).parent for name in files}:
            parent.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            path = staging / name
            path.write_text(text, encoding="utf-8")
            if name in marked:
                path.chmod(path.stat().st_mode | 0o111)
        if hasattr(os, "sync"):
            os.sync()
        else:  # pragma: no cover - a platform without sync(2)
            for name in files:
                with open(staging / name, "rb+") as handle:
                    os.fsync(handle.fileno())
        # A sub-folder that is new moves in whole (one rename for thousands of files);
        # into one that exists, each file moves on its own.
        moved = set()
        for name in files:
            top = Path(name).parts[0]
            if top not in moved and not os.path.lexists(folder / top):
                os.rename(staging / top, folder / top)
                moved.add(top)
        for name in files:
            if Path(name).parts[0] not in moved:
                target = folder / name
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(staging / name, target)
        return [folder / name for name in files]
    finally:
        shutil.rmtree(staging, ignore_errors=True)


#: First characters with which a spreadsheet reads a text cell as a formula.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _cell_text(value: Any) -> Any:
    """A cell as CSV writes it, a text a spreadsheet would run as a formula quoted by ``'``.

    Numbers, and text that reads as one (``-1.5``), are left as they are.
    """
    if not isinstance(value, str) or not value.startswith(_FORMULA_START):
        return value
    with contextlib.suppress(ValueError):
        float(value)
        return value
    return "'" + value


def csv_text(fields: Sequence[str], rows: Iterable[Mapping[str, Any] | Sequence[Any]]) -> str:
    """Rows as CSV text under the header ``fields``, safe to open in a spreadsheet.

    A row is a mapping (keys outside ``fields`` are left out) or a sequence in the order
    of ``fields``. Text cells starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage
    return (a pod list named ``=1+2.csv``) get a leading ``'``, so a spreadsheet shows
    them instead of evaluating them (OWASP's CSV injection advice); commas and quotes are
    quoted as CSV quotes them.
    """
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(fields)
    for row in rows:
        cells = ([row.get(name, "") for name in fields] if isinstance(row, Mapping)
                 else list(row))
        writer.writerow([_cell_text(cell) for cell in cells])
    return buffer.getvalue()

