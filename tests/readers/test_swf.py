"""SWF traces: header sizes, the 18 fields, gzip, and bad lines named by line and field."""

from __future__ import annotations

import gzip
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import BENCHMARKS, Gpuplan
from core.test_files import at_most, device_as, pipe_in

from gpuplan.core.errors import InputError
from gpuplan.readers.swf import RUN, SUBMIT, is_swf, read_swf

LUBLIN = BENCHMARKS / "hpc-traces" / "lublin_256.swf.gz"
HEADER = "; Version: 2.2\n; MaxNodes: 338 (batch partition; 512 total)\n; MaxProcs: 338\n"
JOB = "1 0 10 100 4 -1 -1 4 200 -1 1 3 1 -1 1 1 -1 -1\n"


def write(tmp_path: Path, text: str, name: str = "t.swf") -> Path:
    """Write an SWF text into the test folder."""
    path = tmp_path / name
    path.write_text(text)
    return path


def test_reads_rlscheduler_lublin_trace() -> None:
    """Lublin-1 (gzip) has 10,000 jobs on 256 nodes and no MaxProcs line."""
    trace = read_swf(LUBLIN)
    assert trace.name == "lublin_256"
    assert (trace.n_jobs, trace.max_nodes, trace.max_procs) == (10_000, 256, None)
    submit = trace.column(SUBMIT)
    assert (submit >= 0).all() and (submit[1:] >= submit[:-1]).all()
    assert (trace.column(RUN) > 0).all()


def test_header_value_with_a_note_reads_its_leading_number(tmp_path: Path) -> None:
    """The archive's '338 (batch partition; 512 total)' is 338 nodes."""
    trace = read_swf(write(tmp_path, HEADER + JOB + JOB.replace("1 0 10", "2 5 10", 1)))
    assert (trace.max_nodes, trace.max_procs, trace.n_jobs) == (338, 338, 2)
    assert trace.lines.tolist() == [4, 5]


def test_gzip_file_reads_like_the_plain_one(tmp_path: Path) -> None:
    """A .swf.gz holds the same jobs as its .swf."""
    plain = write(tmp_path, HEADER + JOB)
    packed = tmp_path / "t.swf.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    assert (read_swf(packed).fields == read_swf(plain).fields).all()
    assert is_swf(packed) and is_swf(plain) and not is_swf(tmp_path / "t.json")


@pytest.mark.parametrize(("text", "where", "words"), [
    (HEADER + "1 0 10 100 4\n", "line 4", "18 fields, this one has 5"),
    (HEADER + JOB.replace(" 200 ", " 2h "), "line 4", "field 9 (requested time)"),
    (HEADER + JOB.replace(" 200 ", " nan "), "line 4", "expected a number"),
    ("; MaxNodes: many\n" + JOB, "line 1", "header MaxNodes"),
    (HEADER, "", "no job lines"),
])
def test_bad_lines_name_file_line_and_field(tmp_path: Path, text: str, where: str,
                                            words: str) -> None:
    """Each defect is refused naming the file, the line and what is wrong."""
    path = write(tmp_path, text)
    with pytest.raises(InputError) as caught:
        read_swf(path)
    assert caught.value.source == str(path) and caught.value.path == where
    assert words in caught.value.message


def test_missing_and_corrupt_files_are_input_errors(tmp_path: Path) -> None:
    """A missing file, or a .gz that is not gzip, is an InputError, not a traceback."""
    with pytest.raises(InputError, match="file not found"):
        read_swf(tmp_path / "none.swf")
    with pytest.raises(InputError, match="cannot read"):
        read_swf(write(tmp_path, "not gzip", "bad.swf.gz"))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX named pipes")
@pytest.mark.parametrize(("make", "name", "kind"), [
    (pipe_in, "jobs.swf", "a pipe"),
    (pipe_in, "jobs.swf.gz", "a pipe"),
    (device_as, "jobs.swf.gz", "a device"),
], ids=["pipe", "gzip-pipe", "gzip-dev-zero"])
def test_hpc_on_a_pipe_or_a_device_is_exit_2_at_once(
        gpuplan: Gpuplan, tmp_path: Path, make: Callable[[Path, str], Path], name: str,
        kind: str) -> None:
    """``gpuplan hpc`` on a named pipe or /dev/zero stops at once, naming the file.

    Reading a pipe used to wait for a writer for ever, and /dev/zero to fill the memory.
    """
    trace = make(tmp_path, name)
    with at_most(5):
        ran = gpuplan("hpc", trace, "--policy", "fifo")
    assert ran.code == 2
    assert f"{trace}: not a regular file (it is {kind})" in ran.err
