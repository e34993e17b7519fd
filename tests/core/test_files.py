"""Writes never destroy what ``-o`` names, and are checked before any work is done."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import DATA, Gpuplan

from gpuplan import cli
from gpuplan.cli import solve as solve_command
from gpuplan.core.errors import InputError
from gpuplan.core.files import (
    HOST_TAG,
    MAX_DEPTH,
    MAX_READ_BYTES,
    STALE_AFTER_S,
    check_output,
    parse_json,
    parse_yaml,
    remove_stale_temporaries,
    write_files_atomic,
    write_text_atomic,
)

SMALL = DATA / "valid_small.json"


def _solve(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str]:
    code = cli.main(["solve", *map(str, args)])
    return code, capsys.readouterr().err


def test_output_over_the_input_is_refused(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """``-o`` naming the instance itself is exit 2, and the instance is left as it was."""
    instance = tmp_path / "mine.json"
    shutil.copy(SMALL, instance)
    before = instance.read_bytes()
    code, err = _solve(capsys, instance, "-o", instance)
    assert code == 2 and "an input of this command" in err
    assert instance.read_bytes() == before


def test_output_over_the_input_through_a_link_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A symbolic link to the instance is the instance: refused as well."""
    instance = tmp_path / "mine.json"
    shutil.copy(SMALL, instance)
    link = tmp_path / "alias.json"
    link.symlink_to(instance)
    code, err = _solve(capsys, instance, "-o", link)
    assert code == 2 and "an input of this command" in err
    assert instance.read_bytes() == SMALL.read_bytes()


def test_a_symlink_is_written_through(tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Writing to a link updates the file it points to; the link stays a link."""
    target = tmp_path / "real.json"
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    code, _ = _solve(capsys, SMALL, "-o", link)
    assert code == 0
    assert link.is_symlink() and '"status"' in target.read_text()


@pytest.mark.parametrize("kind", ["pipe", "folder"])
def test_a_non_regular_file_is_never_replaced(tmp_path: Path, kind: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """A pipe or folder named by ``-o`` is exit 2 and stays what it was (as /dev/null would)."""
    path = tmp_path / "special"
    if kind == "pipe":
        os.mkfifo(path)
    else:
        path.mkdir()
    code, err = _solve(capsys, SMALL, "-o", path)
    assert code == 2 and "gpuplan writes only regular files" in err
    assert (path.is_fifo() if kind == "pipe" else path.is_dir())
    with pytest.raises(InputError, match="writes only regular files"):
        write_text_atomic(path, "{}")


def test_output_folder_is_checked_before_solving(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A missing output folder is reported before the method runs, not after the solve."""
    def never(*_: object, **__: object) -> None:
        raise AssertionError("the method ran before the output was checked")
    monkeypatch.setattr(solve_command, "plan", never)
    code, err = _solve(capsys, SMALL, "--method", "sa", "--time-limit", "30",
                       "-o", "/no/such/folder/out.json")
    assert code == 2 and "does not exist" in err


def test_a_long_legal_file_name_is_written(tmp_path: Path) -> None:
    """A 250-character file name works: the temporary name does not grow with it."""
    path = tmp_path / ("s" * 245 + ".json")
    write_text_atomic(path, "{}\n")
    assert path.read_text() == "{}\n"
    assert [p.name for p in tmp_path.iterdir()] == [path.name]


def test_a_file_name_past_the_limit_is_bad_input(tmp_path: Path) -> None:
    """A name longer than the file system allows is named as such before any work."""
    with pytest.raises(InputError, match="longer than this file system's limit"):
        check_output(tmp_path / ("s" * 300 + ".json"))


def test_killed_writers_leave_nothing_behind(tmp_path: Path) -> None:
    """The temporary file of a writer that was killed is removed by the next run."""
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                              capture_output=True, text=True, check=True)
    dead = tmp_path / f".gpuplan-{HOST_TAG}-{finished.stdout.strip()}-0123abcd.tmp"
    dead.write_text('{"half": ')
    mine = tmp_path / f".gpuplan-{HOST_TAG}-{os.getpid()}-0123abcd.tmp"
    mine.write_text("in progress")
    # Another machine's writer: its process id says nothing here, only its age does.
    elsewhere = tmp_path / f".gpuplan-ffffff-{finished.stdout.strip()}-0123abcd.tmp"
    elsewhere.write_text("in progress there")
    check_output(tmp_path / "out.json")
    assert not dead.exists() and mine.exists() and elsewhere.exists()
    old = time.time() - 2 * STALE_AFTER_S
    os.utime(elsewhere, (old, old))
    remove_stale_temporaries(tmp_path)
    assert mine.exists() and not elsewhere.exists()


def test_a_rewrite_keeps_the_file_permissions(tmp_path: Path) -> None:
    """Replacing a file keeps its mode: a private schedule stays private."""
    path = tmp_path / "private.json"
    path.write_text("old")
    path.chmod(0o600)
    write_text_atomic(path, "new")
    assert path.read_text() == "new" and (path.stat().st_mode & 0o777) == 0o600


def test_a_duplicated_key_deep_in_a_big_document_names_its_exact_path() -> None:
    """A key given twice in one object among thousands is reported at its own JSON path.

    The object is ``segments[1234].gpu.node`` after 2000 clean segments are walked past;
    a key twice at the top level is named as the top level.
    """
    segments = [f'{{"job": "j{k}", "gpu_ids": ["a/0", "a/1"], "work": 1.0}}'
                for k in range(2000)]
    segments[1234] = '{"job": "j", "gpu": {"node": {"id": 1, "id": 2}}}'
    text = '{"format_version": 2, "segments": [' + ", ".join(segments) + "]}"
    with pytest.raises(InputError) as caught:
        parse_json(text, "run.json")
    assert caught.value.path == "segments[1234].gpu.node"
    assert caught.value.message == ("key 'id' is given 2 times in one object (1 and 2); "
                                    "give it once")
    with pytest.raises(InputError) as caught:
        parse_json('{"a": [1], "b": 2, "a": 3}', "run.json")
    assert caught.value.path == "(top level)"


@pytest.mark.parametrize("parse", [parse_json, parse_yaml])
def test_nesting_one_level_too_deep_names_the_value_there(
        parse: Callable[[str, str], Any]) -> None:
    """MAX_DEPTH levels are read; a value one deeper is refused at its exact path.

    Beside a clean sibling the path runs through list indices and object keys alike:
    ``deep[1].k[1].k...``; the same document one level shallower parses.
    """
    def nest(levels: int) -> str:
        inner = "7"
        for level in range(levels):
            inner = f'{{"k": {inner}}}' if level % 2 else f"[0, {inner}]"
        return f'{{"clean": [[1]], "deep": {inner}}}'
    parse(nest(MAX_DEPTH - 1), "doc")
    with pytest.raises(InputError, match=f"nested more than {MAX_DEPTH} levels deep") as caught:
        parse(nest(MAX_DEPTH), "doc")
    expected = "deep" + "".join(".k" if level % 2 else "[1]"
                                for level in reversed(range(MAX_DEPTH)))
    assert caught.value.path == expected


def test_a_set_of_files_is_written_whole(tmp_path: Path) -> None:
    """A set of files lands whole.

    New sub-folders and files land, an existing file is replaced, scripts are executable,
    and no temporary folder is left.
    """
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "old.sbatch").write_text("old")
    written = write_files_atomic(tmp_path, {"submit.sh": "#!/bin/bash\n",
                                            "jobs/old.sbatch": "new",
                                            "flows/1.yaml": "a: 1\n"}, ["submit.sh"])
    assert written == [tmp_path / "submit.sh", tmp_path / "jobs" / "old.sbatch",
                       tmp_path / "flows" / "1.yaml"]
    assert (tmp_path / "jobs" / "old.sbatch").read_text() == "new"
    assert (tmp_path / "flows" / "1.yaml").read_text() == "a: 1\n"
    assert (tmp_path / "submit.sh").stat().st_mode & 0o111
    assert sorted(p.name for p in tmp_path.iterdir()) == ["flows", "jobs", "submit.sh"]


def test_a_set_of_files_that_fails_leaves_the_folder_as_it_was(tmp_path: Path) -> None:
    """A file that cannot be written stops the write before anything is in place.

    Here the folder of one file would be another file.
    """
    (tmp_path / "keep.txt").write_text("kept")
    with pytest.raises(OSError):
        write_files_atomic(tmp_path, {"a.sh": "x", "a.sh/b": "y", "keep.txt": "lost"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt"]
    assert (tmp_path / "keep.txt").read_text() == "kept"


def test_a_killed_writers_folder_is_removed(tmp_path: Path) -> None:
    """The temporary folder of a set of files whose writer was killed goes, like a file."""
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                              capture_output=True, text=True, check=True)
    dead = tmp_path / f".gpuplan-{HOST_TAG}-{finished.stdout.strip()}-0123abcd.tmp"
    (dead / "jobs").mkdir(parents=True)
    (dead / "jobs" / "1.sbatch").write_text("#!/bin/bash")
    remove_stale_temporaries(tmp_path)
    assert not dead.exists()


@contextlib.contextmanager
def at_most(seconds: float) -> Iterator[None]:
    """Fail the block, instead of hanging the suite, if it runs longer than ``seconds``."""
    def late(signum: int, frame: Any) -> None:
        raise TimeoutError(f"still running after {seconds} s")

    before = signal.signal(signal.SIGALRM, late)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)


def pipe_in(folder: Path, name: str) -> Path:
    """A named pipe no one writes to: opening it to read would wait for ever."""
    path = folder / name
    os.mkfifo(path)
    return path


def device_as(folder: Path, name: str) -> Path:
    """``/dev/zero`` under ``name``: a file name that says JSON or gzip, endless zeros inside."""
    path = folder / name
    path.symlink_to("/dev/zero")
    return path


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX named pipes")
@pytest.mark.parametrize(("make", "name", "command", "kind"), [
    (pipe_in, "pipe.json", ("solve",), "a pipe"),
    (device_as, "zero.json", ("solve",), "a device"),
    (pipe_in, "gap.txt", ("convert", "orlib-gap"), "a pipe"),
    (device_as, "log.csv.gz", ("convert", "helios", "--cluster", "Venus"), "a device"),
    (device_as, "jobs.tar.gz", ("convert", "pai", "--task-table", DATA / "valid_small.json"),
     "a device"),
], ids=["solve-pipe", "solve-dev-zero", "gap-pipe", "gzip-dev-zero", "tar-dev-zero"])
def test_a_pipe_or_a_device_is_exit_2_at_once(
        gpuplan: Gpuplan, tmp_path: Path, make: Callable[[Path, str], Path], name: str,
        command: tuple[str, ...], kind: str) -> None:
    """An input that is a pipe or /dev/zero: exit 2 at once, naming the file.

    Reading a pipe used to wait for a writer for ever, and /dev/zero ended in an internal
    MemoryError.
    """
    source = make(tmp_path, name)
    out = tmp_path / "out"
    with at_most(5):
        ran = gpuplan(*command[:2], source, *command[2:], "-o", out)
    assert ran.code == 2, ran.err
    assert f"{source}: not a regular file (it is {kind})" in ran.err


def test_a_file_past_the_size_limit_is_refused_before_reading(gpuplan: Gpuplan,
                                                             tmp_path: Path) -> None:
    """A file larger than gpuplan reads is exit 2, naming its size, without reading it.

    The file is sparse: it takes no room on disk, and reading it would take 4 GiB.
    """
    huge = tmp_path / "huge.json"
    with huge.open("wb") as handle:
        handle.truncate(MAX_READ_BYTES + 1)
    with at_most(5):
        ran = gpuplan("solve", huge)
    assert ran.code == 2
    assert f"{huge}: the file holds 4.0 GiB; gpuplan reads files of up to 4 GiB" in ran.err


def test_a_folder_given_as_a_file_says_so(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """A folder where a file belongs is named as a folder, not an OS error number."""
    ran = gpuplan("solve", tmp_path)
    assert ran.code == 2 and "not a regular file (it is a folder)" in ran.err
