"""Try gpuplan as a careful user and a tester would, and tabulate how each try ended.

Usage:
    python scripts/bench_robustness.py [--out docs/results/robustness.md]

1. Bad inputs, each through the installed ``gpuplan`` command as a user runs it: every
   file in ``tests/data/bad/``, cases built here (100,000-deep nesting, a 5,000-digit
   integer, files that are not text, not JSON objects or not there), bad numbers and
   flags, and outputs that must not be written (the input itself, a pipe, a folder, a
   missing folder). Expected: exit 2, one ``error:`` line naming the file or option, no
   traceback, no output file.
2. Tampered schedules: every case of ``tests/test_check.py`` through ``gpuplan check``.
   Expected: exit 1 and a violation.
3. Interrupted batches: ``gpuplan batch`` of sa runs stopped by SIGINT, and by SIGKILL of
   the main process. Expected: every schedule written is whole and listed in the summary;
   no worker outlives the main process.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psutil

from gpuplan.harness.bench import write_results
from gpuplan.readers.generate import generate_document

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "benchmarks.md"
GPUPLAN = str(Path(sys.executable).parent / "gpuplan")
DATA = ROOT / "tests" / "data"
SMALL = DATA / "valid_small.json"


@dataclass
class Try:
    """One command, what it should end with, and how it ended."""

    group: str
    case: str
    args: list[str]
    expected: int
    output: Path | None = None
    code: int = -1
    message: str = ""
    traceback: bool = False
    left_output: bool = False

    @property
    def held(self) -> bool:
        """Whether it ended as expected: the exit code, no traceback, no stray output."""
        return self.code == self.expected and not self.traceback and not self.left_output


def run(attempt: Try) -> Try:
    """Run the command and record how it ended."""
    done = subprocess.run([GPUPLAN, *attempt.args], capture_output=True, text=True,
                          timeout=300, check=False)
    attempt.code = done.returncode
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith(("error:", "gpuplan: error:"))]
    attempt.message = (errors or lines or [""])[-1][:150]
    attempt.traceback = "Traceback" in done.stderr
    attempt.left_output = attempt.output is not None and attempt.output.exists()
    return attempt


def built_inputs(folder: Path) -> list[tuple[str, Path]]:
    """Bad instance files that are built rather than kept in tests/data/bad/."""
    small = json.loads(SMALL.read_text())
    cases: dict[str, str | bytes] = {
        "100,000-deep JSON": '{"jobs": ' + "[" * 100_000 + "]" * 100_000 + "}",
        "100,000-deep YAML": "jobs: " + "[" * 100_000 + "]" * 100_000 + "\n",
        "5,000-digit integer": json.dumps(small).replace('"gpus": 4', '"gpus": ' + "9" * 5000),
        "integer 10**30 as a gang": json.dumps(small).replace('"gpus": 4', f'"gpus": {10**30}'),
        "duration 1e308": json.dumps(small).replace('"A100": 1000', '"A100": 1e308'),
        "release 1e16": json.dumps(small).replace('"release_s": 50', '"release_s": 1e16'),
        "weight 1e308": json.dumps(small).replace('"weight": 3', '"weight": 1e308'),
        "node with 10**8 GPUs": json.dumps(small).replace('"A100": 4}', f'"A100": {10**8}}}'),
        "Infinity duration": json.dumps(small).replace('"A100": 1000', '"A100": Infinity'),
        "not UTF-8": b"\xff\xfe{\x00",
        "empty file": "",
        "a JSON list": "[1, 2, 3]",
        "a JSON string": '"jobs"',
        "duplicate key": json.dumps(small).replace('"weight": 3', '"weight": 3, "weight": 4'),
    }
    written = []
    for k, (name, content) in enumerate(cases.items()):
        path = folder / f"built{k}{'.yaml' if 'YAML' in name else '.json'}"
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
        written.append((name, path))
    return written


def bad_input_tries(folder: Path) -> list[Try]:
    """Every bad input, as a solve that must end in exit 2 and write nothing."""
    out = folder / "out.json"
    tries = [Try("bad instance file", f"tests/data/bad/{p.name}",
                 ["solve", str(p), "-o", str(out)], 2, out)
             for p in sorted((DATA / "bad").iterdir())]
    tries += [Try("built bad file", name, ["solve", str(path), "-o", str(out)], 2, out)
              for name, path in built_inputs(folder)]
    tries += [Try("built bad file", "a folder as the instance", ["solve", str(folder)], 2),
              Try("built bad file", "a missing file", ["solve", str(folder / "none.json")], 2)]
    # A method that takes the flag, so that its range check (not "does not take") answers.
    numbers = {"--seed -1": ["--seed", "-1"], "--seed 2**70": ["--seed", str(2**70)],
               "--threads 0": ["--threads", "0"], "--threads -1": ["--threads", "-1"],
               "--threads 1000": ["--threads", "1000"],
               "--tick 0": ["--method", "cp", "--tick", "0"],
               "--tick nan": ["--method", "cp", "--tick", "nan"],
               "--time-limit inf": ["--time-limit", "inf"],
               "--time-limit -3": ["--time-limit", "-3"],
               "--round 0": ["--method", "balance", "--round", "0"],
               "--iterations 0": ["--iterations", "0"],
               "--partitions 10**5000": ["--method", "balance", "--partitions", "1" + "0" * 5000],
               "--objective fastest": ["--objective", "fastest"],
               "--method magic": ["--method", "magic"],
               "--warm-start missing file": ["--method", "cp", "--warm-start", "none.json"],
               "--warm-start an instance": ["--method", "milp", "--objective", "assign-cost",
                                            "--warm-start", str(SMALL)]}
    tries += [Try("bad command line", name, ["solve", str(SMALL), *args, "-o", str(out)], 2,
                  out) for name, args in numbers.items()]
    tries.append(Try("bad command line", "batch --scheduler notaurl",
                     ["batch", str(SMALL), "-o", str(folder / "batch"), "--scheduler",
                      "notaurl"], 2))
    own = folder / "own.json"
    own.write_bytes(SMALL.read_bytes())
    pipe = folder / "pipe"
    os.mkfifo(pipe)
    (folder / "a-folder").mkdir()
    tries += [Try("bad output", "-o the instance itself", ["solve", str(own), "-o", str(own)],
                  2),
              Try("bad output", "-o a pipe", ["solve", str(SMALL), "-o", str(pipe)], 2),
              Try("bad output", "-o a folder", ["solve", str(SMALL), "-o",
                                                str(folder / "a-folder")], 2),
              Try("bad output", "-o in a missing folder",
                  ["solve", str(SMALL), "--method", "sa", "--time-limit", "30", "-o",
                   str(folder / "none" / "s.json")], 2),
              Try("bad output", "generate -o a pipe",
                  ["generate", "--jobs", "3", "--nodes", "1", "-o", str(pipe)], 2)]
    return tries


def tampered_tries(folder: Path) -> list[Try]:
    """Every tampered schedule of tests/test_check.py, through ``gpuplan check``."""
    sys.path.insert(0, str(ROOT / "tests"))
    from test_check import TAMPERED

    verified = folder / "verified.json"
    subprocess.run([GPUPLAN, "solve", str(SMALL), "-o", str(verified)], check=True,
                   capture_output=True)
    tries = []
    for k, (name, (change, _)) in enumerate(sorted(TAMPERED.items())):
        document = json.loads(verified.read_text())
        change(document)
        path = folder / f"tampered{k}.json"
        path.write_text(json.dumps(document))
        tries.append(Try("tampered schedule", name, ["check", str(SMALL), str(path)], 1))
    return tries


def _instances(folder: Path, count: int) -> Path:
    folder.mkdir()
    for seed in range(count):
        document = generate_document(60, 4, ("v100", "p100", "k80"), seed, 8, 0.0, 0.0, 0.0,
                                     "makespan")
        (folder / f"g{seed:02d}.json").write_text(json.dumps(document))
    return folder


def _wait_for(test: Callable[[], bool], limit_s: float) -> bool:
    began = time.monotonic()
    while time.monotonic() - began < limit_s:
        if test():
            return True
        time.sleep(0.05)
    return False


def _schedules(out: Path) -> list[Path]:
    return [p for p in out.glob("*.json") if p.name != "summary.json"]


def interrupted_batches(folder: Path) -> list[str]:
    """Rows of the batch table: SIGINT and SIGKILL in the middle of a batch."""
    inputs = _instances(folder / "instances", 16)
    rows = []
    for signal_name, number in (("SIGINT", signal.SIGINT), ("SIGKILL", signal.SIGKILL)):
        out = folder / f"out-{signal_name}"
        process = subprocess.Popen([GPUPLAN, "batch", str(inputs), "-o", str(out), "--method",
                                    "sa", "--time-limit", "1", "--workers", "2"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _wait_for(lambda out=out: len(_schedules(out)) >= 3, 120)
        workers = psutil.Process(process.pid).children(recursive=True)
        process.send_signal(number)
        process.wait(timeout=60)
        _wait_for(lambda workers=workers: not any(w.is_running() for w in workers), 10)
        alive = sum(w.is_running() and w.status() != psutil.STATUS_ZOMBIE for w in workers)
        written = _schedules(out)
        whole = sum(_is_json(p) for p in written)
        summary = out / "summary.json"
        listed = ({Path(r["file"]).stem for r in json.loads(summary.read_text())}
                  if summary.exists() else set())
        unlisted = sum(p.stem not in listed for p in written)
        temporaries = len(list(out.rglob(".gpuplan-*.tmp")))
        rows.append(f"| {signal_name} after {len(written)} schedules | {len(written)} | "
                    f"{whole} | {'-' if not summary.exists() else unlisted} | "
                    f"{len(workers)} | {alive} | {temporaries} |")
    return rows


def _shown(message: str, folder: Path) -> str:
    """A message for a Markdown cell, with this run's paths made short."""
    return (message.replace("|", "/").replace(str(folder), "…")
            .replace(f"{ROOT}/", ""))


def _is_json(path: Path) -> bool:
    try:
        json.loads(path.read_text())
    except ValueError:
        return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "robustness.md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        tries = [run(t) for t in bad_input_tries(folder) + tampered_tries(folder)]
        batch_rows = interrupted_batches(folder)
    groups = list(dict.fromkeys(t.group for t in tries))
    summary = ["| group | tried | ended as expected | exit 2 | exit 1 | other | tracebacks | "
               "output left |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for group in groups:
        mine = [t for t in tries if t.group == group]
        summary.append(
            f"| {group} | {len(mine)} | {sum(t.held for t in mine)} | "
            f"{sum(t.code == 2 for t in mine)} | {sum(t.code == 1 for t in mine)} | "
            f"{sum(t.code not in (1, 2) for t in mine)} | {sum(t.traceback for t in mine)} | "
            f"{sum(t.left_output for t in mine)} |")
    detail = ["| group | case | expected | exit | message |", "|---|---|---:|---:|---|"]
    detail += [f"| {t.group} | {t.case} | {t.expected} | {t.code}{'' if t.held else ' ✗'} | "
               f"{_shown(t.message, folder)} |" for t in tries]
    batch = ["| interruption | schedules written | whole | written but not in the summary | "
             "workers | workers alive 10 s later | temporary files left |",
             "|---|---:|---:|---:|---:|---:|---:|", *batch_rows]
    write_results(args.out, "# Robustness: bad inputs, tampered schedules, interrupted "
                  "batches\n\nWritten by `python scripts/bench_robustness.py`.\n\n"
                  + "\n".join(summary) + "\n\n" + "\n".join(batch) + "\n\n"
                  + "\n".join(detail) + "\n", PAGE)
    held = sum(t.held for t in tries)
    print(f"{held} of {len(tries)} tries ended as expected; wrote {args.out}")


if __name__ == "__main__":
    main()
