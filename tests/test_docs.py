r"""The documentation: the site builds warning-free, and every example in it runs as shown.

Which examples run
------------------
Every fenced block of language ``bash``, ``sh``, ``shell``, ``console`` or ``python`` in
README.md and docs/**/*.md (not docs/results/, the benchmark scripts' output) is an
example. The blocks of one page run in order, in one temporary working directory per page
that holds symbolic links to the repository's ``instances/``, ``tests/``, ``scripts/``,
``docs/`` and ``policies/``, so relative paths work as in a fresh clone and outputs land in
the temporary directory; the venv's ``bin/`` comes first on ``PATH`` (``gpuplan`` and
``python`` are the venv's).

- ``bash``/``sh``/``shell``: every line is a command (a line ending in ``\`` continues on
  the next; blank lines and ``#`` comment lines are skipped), run by ``bash -c``; it must
  exit 0.
- ``console``: lines starting with ``$ `` are commands (continued as above); the other lines
  are the output shown, and each must appear in the command's stdout or stderr (compared
  with runs of whitespace made one space, so line wrapping does not matter).
- ``python``: the block runs as a script (``python -``); it must exit 0.

How a block is marked
---------------------
An HTML comment line ``<!-- example: WHAT -->`` just before the fence (blank lines between
are allowed; several markers may stack) changes how the block is checked. ``WHAT`` is one of:

``exit N``
    Every command of the block must exit with code N (an error shown on purpose).
``parse-only``
    For examples that cannot run in a fresh clone in reasonable time (benchmark scripts
    that take minutes to hours, data in ``../shared``, a Dask scheduler). Nothing runs, but
    every line is still checked: a ``gpuplan ...`` line is parsed by gpuplan's own parser
    (``gpuplan.cli.build_parser().parse_args``; an unknown flag or a bad choice fails), a
    ``python scripts/NAME.py ...`` line must use only flags that ``python scripts/NAME.py
    --help`` shows, ``NAME=value`` assignments are allowed, and any other line fails.
``file NAME``
    The block (of any language, e.g. ``toml``) is written to ``NAME`` in the working
    directory before the next blocks run: an options file an example then reads.
``extra rl``
    The block needs the optional extra ``rl``: it runs as usual where the extra is
    installed (as CI installs it), and is only parsed (a python block skipped) where it
    is not, so that a plain install's test run passes.
``site-build``
    The block is the command that builds this site; :func:`test_site_builds_warning_free`
    runs exactly that command (with its own output folder), and checks that it is there.

A single command may instead end in ``# exit N``: that command must exit N. A marker with
any other text fails the test (a typo must not turn a check off).

The Quick start's two set-up commands (a fresh venv, ``pip install`` and a first run or
the test suite) are matched verbatim and not run here: they are what CI itself runs
(``.ci/run``), and :func:`test_quick_start_is_what_ci_runs` checks that they still are.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import ROOT

from gpuplan.cli import build_parser
from gpuplan.rl import missing

#: Whether the optional extra ``rl`` is missing (its examples are then only parsed).
RL_MISSING = bool(missing())

BIN = Path(sys.executable).parent
DOCS = ROOT / "docs"
#: Pages whose examples run: README.md and the site's pages, not the benchmark results.
PAGES = [ROOT / "README.md", *sorted(
    page for page in DOCS.rglob("*.md")
    if page.relative_to(DOCS).parts[0] not in ("results", "_build"))]
#: The Quick start's set-up commands, verbatim; CI runs the second (``.ci/run``).
QUICK_START = (
    "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/gpuplan solve "
    "instances/quickstart.json -o schedule.json",
    "python3 -m venv .venv && .venv/bin/pip install -e '.[test,rl]' && .venv/bin/python -m "
    "pytest -rs",
)
SHELL = {"bash", "sh", "shell", "console"}
PYTHON = {"python"}
MARKER = re.compile(r"^\s*<!--\s*example:\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([^\s`]*)")
EXIT = re.compile(r"\s+#\s*exit\s+(\d+)\s*$")
#: Seconds any one command may take; examples are meant to take a few.
COMMAND_TIMEOUT_S = 120


@dataclass
class Block:
    """One fenced block of a page: where, its language, its lines and its markers."""

    page: Path
    line: int
    language: str
    lines: list[str]
    markers: list[str] = field(default_factory=list)

    def where(self) -> str:
        """``page:line`` of the fence, for messages."""
        return f"{self.page.relative_to(ROOT)}:{self.line}"


@dataclass
class Command:
    """A command of a shell block, with the exit code and output it must show."""

    text: str
    exit_code: int = 0
    output: list[str] = field(default_factory=list)


def blocks(page: Path) -> list[Block]:
    """Every fenced block of ``page`` with the example markers just above it."""
    found: list[Block] = []
    lines = page.read_text().splitlines()
    k = 0
    while k < len(lines):
        match = FENCE.match(lines[k])
        if not match:
            k += 1
            continue
        indent, fence, language = match.groups()
        markers: list[str] = []
        above = k - 1
        while above >= 0 and (MARKER.match(lines[above]) or not lines[above].strip()):
            marker = MARKER.match(lines[above])
            if marker:
                markers.insert(0, marker.group(1))
            above -= 1
        body: list[str] = []
        start = k + 1
        k += 1
        while k < len(lines) and not (lines[k].strip().startswith(fence[0] * len(fence))
                                      and not lines[k].strip().strip(fence[0])):
            body.append(lines[k][len(indent):] if lines[k].startswith(indent) else lines[k])
            k += 1
        found.append(Block(page, start, language.lower(), body, markers))
        k += 1
    return found


def logical_lines(lines: list[str]) -> Iterator[str]:
    r"""Lines with ``\`` continuations joined."""
    pending = ""
    for line in lines:
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        yield pending + line
        pending = ""
    if pending:
        yield pending


def commands(block: Block, exit_code: int) -> list[Command]:
    """The commands of a shell block, each with its exit code and shown output."""
    found: list[Command] = []
    if block.language != "console":
        for line in logical_lines(block.lines):
            if line.strip() and not line.lstrip().startswith("#"):
                found.append(Command(line.strip(), exit_code))
    else:
        k = 0
        while k < len(block.lines):
            line = block.lines[k]
            if line.startswith("$ "):
                parts = [line[2:]]
                while parts[-1].rstrip().endswith("\\") and k + 1 < len(block.lines):
                    k += 1
                    parts.append(block.lines[k].removeprefix("> "))
                found.append(Command(" ".join(next(logical_lines(parts)).split()), exit_code))
            elif line.strip():
                assert found, f"{block.where()}: output shown before any `$ ` command"
                found[-1].output.append(line)
            k += 1
    for command in found:
        marked = EXIT.search(command.text)
        if marked:
            command.exit_code = int(marked.group(1))
    return found


def squeezed(text: str) -> str:
    """``text`` with every run of whitespace one space."""
    return " ".join(text.split())


def markers_of(block: Block) -> tuple[int, bool, str | None, bool]:
    """A block's exit code, parse-only, file name and site-build markers."""
    exit_code, parse_only, file_name, site_build = 0, False, None, False
    for marker in block.markers:
        words = marker.split()
        if len(words) == 2 and words[0] == "exit" and words[1].isdigit():
            exit_code = int(words[1])
        elif words == ["parse-only"]:
            parse_only = True
        elif len(words) == 2 and words[0] == "file" and ".." not in words[1]:
            file_name = words[1]
        elif words == ["site-build"]:
            site_build = True
        elif words == ["extra", "rl"]:
            parse_only = parse_only or RL_MISSING
        else:
            pytest.fail(f"{block.where()}: unknown example marker {marker!r}")
    return exit_code, parse_only, file_name, site_build


def workdir(tmp_path: Path) -> Path:
    """A working directory with the repository's example folders linked in."""
    for name in ("instances", "tests", "scripts", "docs", "policies"):
        (tmp_path / name).symlink_to(ROOT / name, target_is_directory=True)
    return tmp_path


def environment() -> dict[str, str]:
    """The environment of an example: the venv's bin/ first, no display for plots."""
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            "MPLBACKEND": "Agg", "PYTHONDONTWRITEBYTECODE": "1"}


def run_command(command: Command, block: Block, cwd: Path) -> None:
    """Run one shell command; check its exit code and the output the page shows."""
    result = subprocess.run(["bash", "-c", command.text], cwd=cwd, env=environment(),
                            capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)
    said = result.stdout + result.stderr
    assert result.returncode == command.exit_code, (
        f"{block.where()}: `{command.text}` exited {result.returncode}, the page says "
        f"{command.exit_code}:\n{said[-3000:]}")
    for line in command.output:
        assert squeezed(line) in squeezed(said), (
            f"{block.where()}: `{command.text}` did not print the line the page shows:\n"
            f"{line}\nit printed:\n{said[-3000:]}")


def script_help(script: str) -> str:
    """``python scripts/NAME.py --help``, once per script."""
    if script not in _HELP:
        result = subprocess.run([sys.executable, script, "--help"], cwd=ROOT, env=environment(),
                                capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)
        assert result.returncode == 0, f"{script} --help failed:\n{result.stderr}"
        _HELP[script] = result.stdout
    return _HELP[script]


_HELP: dict[str, str] = {}


def parse_line(text: str, block: Block) -> None:
    """Check a line of a parse-only block without running it (module docstring)."""
    text = re.sub(r"\s+#.*$", "", text.strip())
    if re.fullmatch(r"[A-Za-z_]\w*=\S*", text):
        return
    words = shlex.split(text)
    if words[0] == "gpuplan":
        errors = io.StringIO()
        with contextlib.redirect_stderr(errors), contextlib.redirect_stdout(io.StringIO()):
            try:
                build_parser().parse_args(words[1:])
            except SystemExit as exc:
                pytest.fail(f"{block.where()}: gpuplan's parser refuses `{text}` "
                            f"(exit {exc.code}):\n{errors.getvalue()}")
        return
    if words[0] == "python" and len(words) > 1 and words[1].startswith("scripts/"):
        shown = script_help(words[1])
        for word in words[2:]:
            flag = re.match(r"^(--?[A-Za-z][\w-]*)", word)
            if flag:
                assert re.search(rf"(?<![\w-]){re.escape(flag.group(1))}(?![\w-])", shown), (
                    f"{block.where()}: {words[1]} has no flag {flag.group(1)} "
                    f"(not in its --help)")
        return
    pytest.fail(f"{block.where()}: a parse-only line must be a gpuplan or a `python "
                f"scripts/NAME.py` command or an assignment, not `{text}`")


def site_build_command(out: Path) -> list[str]:
    """The command that builds the site into ``out``, as README shows it."""
    return [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html", "docs",
            str(out)]


@dataclass
class SiteBuild:
    """The site's build running in the background, and the file its output goes to."""

    process: subprocess.Popen[str]
    log: Path


@pytest.fixture(scope="module")
def site_build(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SiteBuild]:
    """The site's build, started in the background when this module's first test begins.

    It runs while the examples run (2 cores: one for each), and
    :func:`test_site_builds_warning_free` waits for it; a build still running when the
    module ends (its test deselected) is stopped.
    """
    out = tmp_path_factory.mktemp("site")
    log = out / "sphinx.log"
    with log.open("w") as stream:
        process = subprocess.Popen(site_build_command(out / "html"), cwd=ROOT,
                                   env=environment(), stdout=stream,
                                   stderr=subprocess.STDOUT, text=True)
        yield SiteBuild(process, log)
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_examples_run(page: Path, tmp_path: Path, site_build: SiteBuild) -> None:
    """Every example on the page runs as shown, or at least parses (module docstring).

    A user who copies a command from the page into a fresh clone would otherwise get an
    unknown flag, a missing file, another exit code or another message than the page says.
    """
    cwd = workdir(tmp_path)
    for block in blocks(page):
        exit_code, parse_only, file_name, site_build_marked = markers_of(block)
        if file_name is not None:
            (cwd / file_name).write_text("\n".join(block.lines) + "\n")
            continue
        if block.language in PYTHON:
            if RL_MISSING and "extra rl" in block.markers:
                continue
            assert not parse_only, f"{block.where()}: python examples always run"
            result = subprocess.run([sys.executable, "-"], input="\n".join(block.lines),
                                    cwd=cwd, env=environment(), capture_output=True,
                                    text=True, timeout=COMMAND_TIMEOUT_S)
            assert result.returncode == exit_code, (
                f"{block.where()}: the python example exited {result.returncode}:\n"
                f"{result.stderr[-3000:]}")
            continue
        if block.language not in SHELL:
            continue
        for command in commands(block, exit_code):
            if command.text in QUICK_START:
                continue  # what CI runs: test_quick_start_is_what_ci_runs
            if site_build_marked:
                assert command.text.split()[-1].startswith("/tmp/"), (
                    f"{block.where()}: the site must be built outside the repository")
                continue  # test_site_builds_warning_free runs it
            if parse_only:
                parse_line(command.text, block)
            else:
                run_command(command, block, cwd)


def test_site_builds_warning_free(site_build: SiteBuild) -> None:
    """The site (Sphinx + MyST, API reference, generated tables) builds with no warning.

    A warning means a broken link, a page outside the navigation, a docstring that renders
    wrong or a table that no longer generates; the site would show it to readers. This is
    the command README gives for building the site.
    """
    readme = (ROOT / "README.md").read_text()
    shown = " ".join(site_build_command(Path("X"))[1:-1])
    assert re.search(rf"python {re.escape(shown)} /tmp/\S+", readme), (
        f"README no longer shows the site's build command `python {shown} /tmp/...`")
    code = site_build.process.wait(timeout=600)
    log = site_build.log.read_text()
    assert code == 0 and "WARNING:" not in log and "ERROR:" not in log, log[-6000:]


def test_quick_start_is_what_ci_runs() -> None:
    """README's Quick start keeps its two set-up commands, and CI runs the test one verbatim.

    If they drifted apart, a user following the Quick start would run something CI never
    checks.
    """
    readme = (ROOT / "README.md").read_text()
    for command in QUICK_START:
        assert f"```bash\n{command}\n```" in readme, f"README lost `{command}`"
    assert QUICK_START[1] in (ROOT / ".ci" / "run").read_text().splitlines()


def test_readme_is_a_front_door() -> None:
    """README stays short (at most 300 lines) and links into the site's pages.

    The full manual lives on the site; a README that grows again hides the quick start.
    """
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 300
    for link in re.findall(r"\]\((docs/[^)#\s]+)", readme):
        assert (ROOT / link).exists(), f"README links to {link}, which does not exist"
