"""gpuplan batch (local and Dask) and gpuplan generate."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import BENCHMARKS, DATA, INSTANCES, ROOT, run_cli

from gpuplan import Schedule, cli, read_instance
from gpuplan.core.errors import InputError
from gpuplan.core.files import HOST_TAG
from gpuplan.core.objectives import ObjectiveKind
from gpuplan.core.settings import CORES, DEFAULT_THREADS, RunSettings
from gpuplan.harness import batch
from gpuplan.harness.batch import KEYS, batch_plan, expand_inputs, make_tasks, run_batch
from gpuplan.harness.bench import QUOTE, parse_method, quote_tables, refresh_quotes
from gpuplan.readers.generate import generate_document
from gpuplan.readers.instance_file import build_instance, parse_document
from gpuplan.verify import verify_schedule


def generated(folder: Path, count: int, jobs: int = 12) -> list[Path]:
    """``count`` small generated instances in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for seed in range(count):
        path = folder / f"g{seed:03d}.json"
        path.write_text(json.dumps(generate_document(jobs, 4, seed=seed, dependencies=0.2,
                                                     deadlines=0.2)))
        paths.append(path)
    return paths


def test_generate_is_seeded_and_valid() -> None:
    """Same arguments, same document; it loads; gangs fit the nodes; types as asked."""
    first = generate_document(50, 6, ("v100", "k80"), seed=3, dependencies=0.3,
                              arrival_window_s=100.0, deadlines=0.5)
    assert first == generate_document(50, 6, ("v100", "k80"), seed=3, dependencies=0.3,
                                      arrival_window_s=100.0, deadlines=0.5)
    instance = build_instance(parse_document(first, "<gen>"), "<gen>")
    assert instance.type_ids == ("v100", "k80") and instance.n_jobs == 50
    assert instance.eligible.any(axis=1).all()
    assert any(instance.predecessors) and (instance.deadline < float("inf")).any()
    # Gavel's speed-ups: a V100 is faster than a K80 for every job.
    assert (instance.duration[:, 0] < instance.duration[:, 1]).all()


def test_generate_keeps_its_instance_for_a_seed() -> None:
    """A seed gives the document it always gave (SHA-256 of its JSON, keys sorted).

    Tests and published results use generated instances by seed: the job mix's draws
    may not move.
    """
    document = generate_document(50, 6, ("v100", "k80"), seed=3, dependencies=0.3,
                                 arrival_window_s=100.0, deadlines=0.5)
    digest = hashlib.sha256(json.dumps(document, sort_keys=True).encode()).hexdigest()
    assert digest == "f22729b2a85dcefcaeda76fe487a7bee70ab4e9a5fa092fd90de7e0ae55fc900"


def test_generate_cli_writes_a_valid_file(tmp_path: Path) -> None:
    """Gpuplan generate writes a file that validates; an unknown type is exit 2."""
    out = tmp_path / "g.json"
    assert run_cli("generate", "--jobs", "30", "--nodes", "3", "--seed", "1", "-o",
                   out).returncode == 0
    assert run_cli("validate", out).returncode == 0
    bad = run_cli("generate", "--jobs", "3", "--nodes", "1", "--types", "tpu", "-o", out)
    assert bad.returncode == 2 and "tpu" in bad.stderr


def test_batch_isolates_failures_and_resumes(tmp_path: Path) -> None:
    """A bad and an infeasible file are rows, not crashes; a rerun keeps what is done."""
    inputs = tmp_path / "in"
    generated(inputs, 3)
    shutil.copy(DATA / "bad" / "dependency_cycle.json", inputs / "broken.json")
    out = tmp_path / "out"
    first = run_cli("batch", inputs, "-o", out, "--workers", "2")
    assert first.returncode == 1  # the broken file
    summary = json.loads((out / "summary.json").read_text())
    by_name = {row["instance"]: row for row in summary}
    assert by_name["broken"]["status"] == "error" and by_name["broken"]["error"]
    assert all(by_name[f"g{k:03d}"]["verified"] for k in range(3))
    assert (out / "summary.csv").read_text().startswith("instance,file,status")
    planned = {p: p.stat().st_mtime_ns for p in out.glob("g*.json")}
    second = run_cli("batch", inputs, "-o", out, "--workers", "2")
    assert second.returncode == 1
    rerun = {row["instance"]: row for row in json.loads((out / "summary.json").read_text())}
    assert all(rerun[f"g{k:03d}"]["resumed"] for k in range(3))
    assert {p: p.stat().st_mtime_ns for p in out.glob("g*.json")} == planned
    # A touched instance (same bytes) is kept; an edited one is planned again.
    touched, edited = inputs / "g000.json", inputs / "g001.json"
    os.utime(touched, ns=(touched.stat().st_atime_ns, planned[out / "g000.json"] + 10**9))
    edited.write_text(json.dumps(generate_document(12, 4, seed=99)))
    run_cli("batch", inputs, "-o", out, "--workers", "2")  # the same threads per solve
    again = {row["instance"]: row for row in json.loads((out / "summary.json").read_text())}
    assert not again["g001"]["resumed"] and again["g000"]["resumed"]
    assert verify_schedule(read_instance(edited), Schedule.read(out / "g001.json")).ok


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX named pipes")
def test_a_pipe_among_the_inputs_is_its_row_at_once(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A named pipe given as an instance is an error row saying so; the batch goes on.

    Hashing it for the resume key used to wait for a writer for ever.
    """
    inputs = tmp_path / "in"
    generated(inputs, 1)
    pipe = tmp_path / "pipe.json"
    os.mkfifo(pipe)
    out = tmp_path / "out"
    code = cli.main(["batch", str(inputs / "g000.json"), str(pipe), "-o", str(out),
                     "--workers", "1", "--method", "greedy"])
    assert code == 1, capsys.readouterr().err
    rows = {row["instance"]: row for row in json.loads((out / "summary.json").read_text())}
    assert rows["g000"]["verified"]
    assert rows["pipe"]["error"] == f"{pipe}: not a regular file (it is a pipe)"


def test_a_killed_batchs_temporary_files_go_at_the_next_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """What a batch killed mid-write left (beside the schedules, among the keys) goes.

    SIGKILL leaves the batch no chance to clean up; the temporary files in the key folder
    used to stay for good.
    """
    inputs, out = tmp_path / "in", tmp_path / "out"
    generated(inputs, 2)
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                              capture_output=True, text=True, check=True)
    killed = f".gpuplan-{HOST_TAG}-{finished.stdout.strip()}"
    (out / KEYS).mkdir(parents=True)
    left = [out / f"{killed}-0123abcd.tmp", out / KEYS / f"{killed}-4567cdef.tmp"]
    for path in left:
        path.write_text('{"half": ')
    code = cli.main(["batch", str(inputs), "-o", str(out), "--workers", "1",
                     "--method", "greedy"])
    assert code == 0, capsys.readouterr().err
    assert not [p.name for p in out.rglob("*.tmp")]
    assert sorted(p.name for p in out.glob("g*.json")) == ["g000.json", "g001.json"]


def test_batch_leaves_no_partial_files(tmp_path: Path) -> None:
    """Every file in the output folder is a whole, verified schedule or the summary."""
    inputs = tmp_path / "in"
    generated(inputs, 4)
    out = tmp_path / "out"
    run_cli("batch", str(inputs / "*.json"), "-o", out, "--method", "sa", "--time-limit",
            "0.2")
    assert {p.name for p in out.iterdir() if p.name.startswith(".")} == {KEYS}
    assert sorted(p.name for p in (out / KEYS).iterdir()) == [f"g00{k}.json" for k in range(4)]
    for path in out.iterdir():
        if path.name.startswith("g"):
            schedule = Schedule.read(path)
            assert schedule.verification is not None and schedule.verification.ok
            assert json.loads((out / KEYS / path.name).read_text())["method"] == "sa"


def test_expand_inputs_files_folders_globs(tmp_path: Path) -> None:
    """Folders give their instance files, globs expand, duplicates count once."""
    paths = generated(tmp_path, 3)
    found = expand_inputs([str(tmp_path), str(tmp_path / "g00*.json"), str(paths[0])])
    assert found == sorted(paths)


def test_dask_local_cluster_gives_identical_outputs(tmp_path: Path) -> None:
    """The same batch through a 2-worker LocalCluster on loopback equals the local run."""
    distributed = pytest.importorskip("distributed")
    sources = generated(tmp_path / "in", 6)
    local = make_tasks(sources, tmp_path / "local", "greedy", {}, RunSettings())
    remote = make_tasks(sources, tmp_path / "dask", "greedy", {}, RunSettings())
    (tmp_path / "local").mkdir()
    (tmp_path / "dask").mkdir()
    local_rows = run_batch(local, workers=2)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None) as cluster:
        dask_rows = run_batch(remote, workers=2, scheduler=cluster.scheduler_address)
    assert [r["objective"] for r in local_rows] == [r["objective"] for r in dask_rows]
    for a, b in zip(local, remote, strict=True):
        assert Schedule.read(a.target).segments == Schedule.read(b.target).segments


@pytest.mark.parametrize("address", ["tcp://127.0.0.1:9", "notaurl"])
def test_batch_bad_scheduler_is_an_input_error(tmp_path: Path, address: str) -> None:
    """An unreachable scheduler, or no address at all: exit 2 naming --scheduler."""
    generated(tmp_path / "in", 1)
    result = run_cli("batch", tmp_path / "in", "-o", tmp_path / "out", "--scheduler", address)
    assert result.returncode == 2 and "--scheduler" in result.stderr


def test_quickstart_through_batch(tmp_path: Path) -> None:
    """The example instances plan through batch like through solve."""
    result = run_cli("batch", INSTANCES / "quickstart.json", "-o", tmp_path)
    assert result.returncode == 0, result.stderr
    assert Schedule.read(tmp_path / "quickstart.json").verification is not None


# --- isolation: any error in one instance is that instance's row -------------------------


def test_any_exception_in_one_instance_is_its_row(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """Any exception while planning one instance is that instance's row, and is logged.

    RecursionError, MemoryError, OSError or a solver's own error: each is an "internal
    error" row; the instances around them are planned and verified.
    """
    sources = generated(tmp_path / "in", 6)
    raises = {"generated_12x4_1": RecursionError("maximum recursion depth exceeded"),
              "generated_12x4_2": MemoryError(), "generated_12x4_3": OSError(
                  36, "File name too long"),
              "generated_12x4_4": ZeroDivisionError("the solver divided by zero")}
    real_plan = batch.plan

    def plan(instance: Any, method: str, options: Any, settings: RunSettings) -> Schedule:
        if instance.name in raises:
            raise raises[instance.name]
        return real_plan(instance, method, options, settings=settings)

    monkeypatch.setattr(batch, "plan", plan)
    rows = run_batch(make_tasks(sources, tmp_path / "out", "greedy", {}, RunSettings()), 1)
    by_name = {row["instance"]: row for row in rows}
    assert [by_name[f"g00{k}"]["verified"] for k in range(6)] == [True] + [False] * 4 + [True]
    assert by_name["g001"]["error"] == ("internal error: RecursionError: maximum recursion "
                                        "depth exceeded")
    assert by_name["g002"]["error"] == "internal error: MemoryError: "
    assert by_name["g003"]["error"].startswith("internal error: OSError: [Errno 36]")
    assert by_name["g004"]["error"].endswith("ZeroDivisionError: the solver divided by zero")
    assert all(by_name[f"g00{k}"]["status"] == "error" for k in range(1, 5))
    logged = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert len(logged) == 4 and all("internal error" in m for m in logged)
    assert sorted(p.name for p in (tmp_path / "out").glob("g*.json")) == ["g000.json",
                                                                          "g005.json"]


def test_a_schedule_that_cannot_be_written_is_its_rows_error(tmp_path: Path) -> None:
    """A folder where a schedule should go: that row names it, the others are written."""
    sources = generated(tmp_path / "in", 3)
    (tmp_path / "out" / "g001.json").mkdir(parents=True)
    rows = run_batch(make_tasks(sources, tmp_path / "out", "greedy", {}, RunSettings()), 1)
    assert [row["verified"] for row in rows] == [True, False, True]
    assert rows[1]["status"] == "error" and "g001.json" in rows[1]["error"]
    assert "internal error" not in rows[1]["error"]
    assert (tmp_path / "out" / "g001.json").is_dir()


@pytest.mark.parametrize("stop", [KeyboardInterrupt, SystemExit])
def test_interrupt_and_exit_still_end_the_batch(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stop: type[BaseException]) -> None:
    """Ctrl-C and SystemExit are no instance's error: they end the batch.

    The rows of what finished before have been reported.
    """
    sources = generated(tmp_path / "in", 3)
    real_plan = batch.plan

    def plan(instance: Any, method: str, options: Any, settings: RunSettings) -> Schedule:
        if instance.name == "generated_12x4_1":
            raise stop()
        return real_plan(instance, method, options, settings=settings)

    monkeypatch.setattr(batch, "plan", plan)
    seen: list[dict[str, Any]] = []
    with pytest.raises(stop):
        run_batch(make_tasks(sources, tmp_path / "out", "greedy", {}, RunSettings()), 1,
                  on_row=seen.append)
    assert [row["instance"] for row in seen] == ["g000"] and seen[0]["verified"]


def test_bad_files_never_stop_the_batch(tmp_path: Path) -> None:
    """A folder of bad files and good ones: every file is a row, the good get plans.

    100,000-deep nesting, 10**30 GPUs and a 5000-digit integer are errors that name the
    file; a valid file with a 250-character name gets a verified plan.
    """
    inputs = tmp_path / "in"
    good = generate_document(6, 2, seed=1)
    inputs.mkdir()
    (inputs / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    text = json.dumps(good)
    assert '"gpus": 1' in text
    (inputs / "huge.json").write_text(text.replace('"gpus": 1', f'"gpus": {10**30}', 1))
    (inputs / "digits.json").write_text(text.replace('"gpus": 1', '"gpus": ' + "7" * 5000, 1))
    long_name = "n" * 245 + ".json"
    (inputs / long_name).write_text(json.dumps(good))
    (inputs / "good.json").write_text(json.dumps(good))
    out = tmp_path / "out"
    result = run_cli("batch", inputs, "-o", out, "--workers", "2")
    assert result.returncode == 1, result.stderr
    rows = {Path(row["file"]).name: row for row in json.loads((out / "summary.json").read_text())}
    assert set(rows) == {"deep.json", "huge.json", "digits.json", long_name, "good.json"}
    for bad in ("deep.json", "huge.json", "digits.json"):
        assert rows[bad]["status"] == "error" and bad in rows[bad]["error"]
    assert rows["good.json"]["verified"] and rows[long_name]["verified"]
    (schedule,) = [p for p in out.glob("n*.json")]
    assert len(schedule.name.encode()) < 255 - 20 and Schedule.read(schedule).segments


def _dies_on_crash(task: batch.BatchTask) -> dict[str, Any]:
    """A task function whose process dies on the file named crash (a solver that segfaults)."""
    if Path(task.source).stem == "crash":
        os._exit(3)
    return batch.plan_file(task)


def test_a_dying_worker_process_is_one_row(tmp_path: Path) -> None:
    """A worker process that dies takes only its own instance down.

    That row says so; the instances that shared its pool are planned and verified.
    """
    sources = generated(tmp_path / "in", 5)
    shutil.copy(sources[0], tmp_path / "in" / "crash.json")
    sources.insert(2, tmp_path / "in" / "crash.json")
    tasks = make_tasks(sources, tmp_path / "out", "greedy", {}, RunSettings())
    rows: dict[int, dict[str, Any]] = {}
    batch._local(tasks, 2, rows.__setitem__, _dies_on_crash)
    assert sorted(rows) == list(range(6))
    assert rows[2]["status"] == "error" and "worker process" in rows[2]["error"]
    assert all(rows[i]["verified"] for i in (0, 1, 3, 4, 5))


# --- resume: the right schedule, or none ---------------------------------------------------


def test_resume_never_takes_the_schedule_of_another_file(tmp_path: Path) -> None:
    """Files a/x.json and b/x.json never get each other's schedule, in either order.

    Each resumes its own once its own is on disk.
    """
    a, b = tmp_path / "a" / "x.json", tmp_path / "b" / "x.json"
    a.parent.mkdir()
    b.parent.mkdir()
    a.write_text(json.dumps(generate_document(12, 4, seed=1, dependencies=0.2)))
    b.write_text(json.dumps(generate_document(12, 4, seed=2, dependencies=0.2)))
    out = tmp_path / "out"

    def check(sources: list[Path], resumed: list[bool]) -> None:
        tasks = make_tasks(sources, out, "greedy", {}, RunSettings())
        rows = run_batch(tasks, 1)
        assert [row["resumed"] for row in rows] == resumed
        assert all(row["verified"] for row in rows)
        for task in tasks:
            schedule = Schedule.read(task.target)
            assert verify_schedule(read_instance(task.source), schedule).ok, task

    check([a], [False])
    check([b], [False])  # out/x.json is a's: b is planned
    check([a, b], [False, False])  # x.json is b's now, x-2.json new
    check([a, b], [True, True])
    check([b, a], [False, False])
    check([b, a], [True, True])


def test_resume_follows_content_method_and_plan_options(tmp_path: Path) -> None:
    """Same bytes (even touched) resume; other content, settings, options or method do not.

    Another thread count plans again (milp's lanes depend on it); an option given by flag,
    or at its default, is the same option.
    """
    (source,) = generated(tmp_path / "in", 1)
    out = tmp_path / "out"

    def resumed(method: str = "sa", options: dict[str, Any] | None = None,
                **settings: Any) -> bool:
        # sa counts iterations, greedy takes none.
        iterations = 50 if method == "sa" else None
        rows = run_batch(make_tasks([source], out, method, options or {}, RunSettings(
            **{"time_limit_s": 0.2, "iterations": iterations, **settings})), 1)
        assert rows[0]["verified"]
        return bool(rows[0]["resumed"])

    assert not resumed()
    assert resumed()
    os.utime(source, (time.time() + 10, time.time() + 10))
    assert resumed()
    if DEFAULT_THREADS > 1:
        assert not resumed(threads=1)
        assert not resumed()  # back at the default thread count: planned again
    assert resumed(options={"moves": "shift,swap"})  # the default, spelled out
    assert not resumed(options={"moves": "swap"})
    assert resumed(options={"--moves": "swap"})
    assert not resumed(seed=1)
    assert not resumed(seed=1, time_limit_s=0.3)
    assert not resumed("greedy", seed=1, time_limit_s=0.3)
    source.write_text(json.dumps(generate_document(12, 4, seed=5)))
    assert not resumed("greedy", seed=1, time_limit_s=0.3)
    assert resumed("greedy", seed=1, time_limit_s=0.3)


def test_a_resumed_schedule_must_verify_again(tmp_path: Path) -> None:
    """A schedule whose key matches but that breaks the instance is planned again.

    (Edited by hand, key updated.) It is not reported as resumed and verified.
    """
    (source,) = generated(tmp_path / "in", 1)
    out = tmp_path / "out"
    tasks = make_tasks([source], out, "greedy", {}, RunSettings())
    run_batch(tasks, 1)
    target = Path(tasks[0].target)
    document = json.loads(target.read_text())
    document["segments"][0]["start_s"] = -1000.0
    target.write_text(json.dumps(document))
    key = json.loads((out / KEYS / target.name).read_text())
    key["schedule_sha256"] = hashlib.sha256(target.read_bytes()).hexdigest()
    (out / KEYS / target.name).write_text(json.dumps(key))
    (row,) = run_batch(tasks, 1)
    assert not row["resumed"] and row["verified"]
    assert verify_schedule(read_instance(source), Schedule.read(target)).ok


def test_output_names_never_collide(tmp_path: Path) -> None:
    """Every source gets its own output file, whatever the names.

    Same stems in several folders, a real x-2.json, case twins, summary.json and a name
    too long for the file system.
    """
    names = ["a/x.json", "b/x.json", "c/x-2.json", "d/X.json", "e/summary.json",
             "f/" + "L" * 250 + ".json"]
    tasks = make_tasks([tmp_path / n for n in names], tmp_path / "out", "greedy", {},
                       RunSettings())
    outputs = [Path(t.target).name for t in tasks]
    assert outputs[:5] == ["x.json", "x-3.json", "x-2.json", "X-4.json", "summary-2.json"]
    assert outputs[5].startswith("L" * 200) and len(outputs[5].encode()) <= 255 - 40
    assert len({o.casefold() for o in outputs}) == len(outputs)


# --- interruption and process lifetime -----------------------------------------------------


def slow_inputs(folder: Path, count: int = 16) -> None:
    """Instances that ``sa`` works on for its whole time limit."""
    folder.mkdir(parents=True)
    for seed in range(count):
        (folder / f"g{seed:03d}.json").write_text(json.dumps(
            generate_document(60, 6, seed=seed, dependencies=0.3, deadlines=0.3)))


def start_batch(inputs: Path, out: Path) -> subprocess.Popen[str]:
    """``gpuplan batch`` on two workers as a user starts it, in its own process group."""
    exe = Path(sys.executable).parent / "gpuplan"
    return subprocess.Popen([str(exe), "batch", str(inputs), "-o", str(out), "--workers",
                             "2", "--method", "sa", "--time-limit", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True,
                            # A suite started in the background of a script inherits Ctrl-C
                            # ignored; the user's batch takes it.
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def wait_for(condition: Callable[[], bool], seconds: float) -> bool:
    """Poll ``condition`` until it holds or ``seconds`` pass; whether it held."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("whole_group", [True, False], ids=["ctrl-c", "main-only"])
def test_interrupted_batch_lists_every_schedule_it_wrote(
        tmp_path: Path, whole_group: bool) -> None:
    """SIGINT once schedules appear: every schedule in the folder is in summary.json.

    Ctrl-C reaches the whole process group; a kill -INT only the main process. Exit 130,
    and every file is whole.
    """
    inputs, out = tmp_path / "in", tmp_path / "out"
    slow_inputs(inputs)
    process = start_batch(inputs, out)
    try:
        assert wait_for(lambda: out.is_dir() and any(out.glob("g*.json")), 60)
        time.sleep(0.3)
        (os.killpg if whole_group else os.kill)(process.pid, signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 130, stderr
    rows = json.loads((out / "summary.json").read_text())
    tasks = make_tasks(expand_inputs([str(inputs)]), out, "sa", {}, RunSettings())
    listed = {Path(t.target).name for t in tasks if t.source in {r["file"] for r in rows}}
    written = {p.name for p in out.glob("g*.json")}
    assert written and written <= listed and len(rows) < len(tasks)
    assert all(row["verified"] for row in rows)
    for path in out.rglob("*"):
        assert not path.name.endswith(".tmp"), f"temporary file left: {path.name}"
        if path.suffix == ".json":
            json.loads(path.read_text())
    assert (out / "summary.csv").read_text().count("\n") == len(rows) + 1


def test_a_schedule_written_before_its_row_is_listed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Interrupted between writing a schedule and returning its row: the row is reported.

    So the summary lists the file; what never ran is not listed.
    """
    sources = generated(tmp_path / "in", 3)
    tasks = make_tasks(sources, tmp_path / "out", "greedy", {}, RunSettings())
    real_write = batch.write_text_atomic

    def write(path: Path, text: str) -> None:
        real_write(path, text)
        if str(path) == tasks[1].target:
            raise KeyboardInterrupt

    monkeypatch.setattr(batch, "write_text_atomic", write)
    seen: list[dict[str, Any]] = []
    with pytest.raises(KeyboardInterrupt):
        run_batch(tasks, 1, on_row=seen.append)
    assert [row["instance"] for row in seen] == ["g000", "g001"]
    assert all(row["verified"] for row in seen)


def children_of(process: subprocess.Popen[str], count: int, seconds: float) -> list[Any]:
    """The process's descendants once there are ``count`` of them (psutil processes)."""
    psutil = pytest.importorskip("psutil")
    parent = psutil.Process(process.pid)
    assert wait_for(lambda: len(parent.children(recursive=True)) >= count, seconds)
    found: list[Any] = parent.children(recursive=True)
    return found


def gone(process: Any) -> bool:
    """Whether a psutil process has ended (a zombie has)."""
    psutil = pytest.importorskip("psutil")
    try:
        return bool(process.status() == psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return True


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_workers_die_with_a_killed_batch(tmp_path: Path) -> None:
    """After SIGKILL of the batch, its worker processes end within seconds.

    (SIGKILL leaves the batch no chance to clean up.) They used to solve on.
    """
    inputs = tmp_path / "in"
    slow_inputs(inputs, 8)
    process = start_batch(inputs, tmp_path / "out")
    workers: list[Any] = []
    try:
        workers = children_of(process, 2, 60)
        os.kill(process.pid, signal.SIGKILL)
        process.communicate(timeout=30)
        assert wait_for(lambda: all(gone(w) for w in workers), 5), workers
    finally:
        process.kill()
        for worker in workers:
            with contextlib.suppress(Exception):
                worker.kill()


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_watch_thread_ends_an_orphaned_worker() -> None:
    """The watch thread ends a worker whose parent was killed.

    It is what ends workers without the kernel's help (on systems other than Linux).
    """
    child = ("import os, threading, time; from gpuplan.harness.batch import _watch_parent; "
             "threading.Thread(target=_watch_parent, args=(os.getppid(),), daemon=True)"
             ".start(); print('watching', flush=True); time.sleep(60)")
    parent = ("import subprocess, sys, time; "
              f"c = subprocess.Popen([sys.executable, '-c', {child!r}]); "
              "print(c.pid, flush=True); time.sleep(60)")
    process = subprocess.Popen([sys.executable, "-c", parent], stdout=subprocess.PIPE,
                               text=True)
    pid = 0
    try:
        assert process.stdout is not None
        pid = int(process.stdout.readline())
        assert process.stdout.readline().strip() == "watching"
        worker = children_of(process, 1, 30)[0]
        assert worker.pid == pid
        process.kill()
        process.wait(timeout=30)
        assert wait_for(lambda: gone(worker), 5)
    finally:
        process.kill()
        if pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("address", ["notaurl", "tcp://", "tcp://127.0.0.1:notaport",
                                     "tcp://h:99999", "tcp://[::1", ""])
def test_a_scheduler_that_is_no_address_is_an_input_error(tmp_path: Path, address: str) -> None:
    """An address Dask cannot parse names --scheduler as the problem (exit 2 in the CLI)."""
    tasks = make_tasks(generated(tmp_path / "in", 1), tmp_path / "out", "greedy", {},
                       RunSettings())
    with pytest.raises(InputError, match=r"`scheduler`.*not a Dask scheduler address"):
        run_batch(tasks, 1, scheduler=address)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("workers", [None, *range(1, CORES + 3)])
def test_batch_threads_times_workers_never_exceed_the_cores(workers: int | None) -> None:
    """Local solves share the cores: threads x workers <= cores, at least one thread each.

    Without --workers there is one per core; on Dask every solve gets one thread.
    """
    chosen, threads = batch_plan(workers, None)
    assert chosen == (workers or CORES) and threads >= 1
    if chosen <= CORES:
        # Within the cores, and using them: one more thread each would not fit.
        assert chosen * threads <= CORES < chosen * (threads + 1)
    else:
        assert threads == 1
    assert batch_plan(workers, "tcp://127.0.0.1:8786") == (chosen, 1)


def test_batch_refuses_no_workers_and_options_the_method_does_not_take(tmp_path: Path) -> None:
    """--workers 0 names --workers; an option of another method stops the batch up front."""
    with pytest.raises(InputError, match="`workers`"):
        batch_plan(0, None)
    with pytest.raises(InputError, match=r"'greedy' does not take `policy`"):
        make_tasks(generated(tmp_path / "in", 1), tmp_path / "out", "greedy",
                   {"policy": "makespan"}, RunSettings())


def test_a_bad_scheduler_leaves_the_last_summary(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """Exit 2 for --scheduler before any work: the earlier run's summary is not emptied."""
    inputs = generated(tmp_path / "in", 1)
    out = tmp_path / "out"
    assert cli.main(["batch", str(inputs[0]), "-o", str(out)]) == 0
    before = (out / "summary.json").read_text()
    assert cli.main(["batch", str(inputs[0]), "-o", str(out), "--scheduler", "notaurl"]) == 2
    assert "--scheduler" in capsys.readouterr().err
    assert (out / "summary.json").read_text() == before


def test_bench_folder_suite_writes_the_table(tmp_path: Path) -> None:
    """Gpuplan bench on a folder: one verified row per (instance, method), written as Markdown."""
    generated(tmp_path / "suite", 2)
    out = tmp_path / "bench.md"
    result = run_cli("bench", tmp_path / "suite", "--methods", "greedy,sa", "--time-limit",
                     "0.3", "-o", out)
    assert result.returncode == 0, result.stderr
    rows = [line for line in out.read_text().splitlines() if line.startswith("| g0")]
    assert len(rows) == 4 and all(line.endswith("| yes |") for line in rows)


def test_bench_named_suite_reports_the_gap_to_best_known(tmp_path: Path) -> None:
    """The named gap1-12 set carries best known values: milp reaches 261 on c515-1, gap 0."""
    out = tmp_path / "bench.md"
    result = run_cli("bench", "gap1-12", "--only", "c515-1", "--methods", "milp",
                     "--benchmarks", BENCHMARKS, "-o", out)
    assert result.returncode == 0, result.stderr
    (row,) = [line for line in out.read_text().splitlines() if line.startswith("| c515-1")]
    assert "| 261 | 261 | 0 |" in row


def test_bench_method_variants_run_side_by_side(tmp_path: Path) -> None:
    """NAME@WARM and NAME:KEY=VALUE specs each give their own verified rows and summary line."""
    out = tmp_path / "bench.md"
    source = tmp_path / "suite"
    source.mkdir()
    document = json.loads((INSTANCES / "quickstart.json").read_text())
    document["objective"] = "max-weight"
    (source / "quickstart.json").write_text(json.dumps(document))
    methods = "milp,milp@sa,milp:backend=cpsat,ga:crossover=two-point"
    result = run_cli("bench", source, "--methods", methods, "--time-limit", "1", "-o", out)
    assert result.returncode == 0, result.stderr
    rows = [line for line in out.read_text().splitlines() if line.startswith("| quickstart")]
    assert [row.split(" | ")[1] for row in rows] == methods.split(",")
    assert all(row.endswith("| yes |") for row in rows)
    assert out.read_text().count("| suite | ") == 4  # one summary line per method


def test_bench_method_spec_reads_name_warm_start_options_and_objective() -> None:
    """``NAME@WARM:KEY=VALUE:objective=KIND`` gives each part; options by name or flag."""
    spec = parse_method("milp@sa:backend=cpsat:objective=min-gpus")
    assert (spec.label, spec.name, spec.warm) == ("milp@sa:backend=cpsat:objective=min-gpus",
                                                  "milp", "sa")
    assert dict(spec.settings) == {"backend": "cpsat"}
    assert spec.objective is ObjectiveKind.MIN_GPUS
    assert dict(parse_method("balance:--policy=makespan:space-sharing=true").settings) == {
        "--policy": "makespan", "space-sharing": "true"}


@pytest.mark.parametrize(("spec", "says"), [
    ("magic", r"unknown method 'magic'.*greedy"),
    ("greedy@sa", "warm start"),
    ("milp@cp", "warm start"),
    ("milp:backend", "not KEY=VALUE"),
    ("milp:objective=fastest", "unknown objective"),
    ("milp:colour=red", r"milp:colour=red: colour: method 'milp' does not take colour; it "
                        r"takes backend"),
    ("greedy:policy=makespan", r"greedy:policy=makespan: policy: method 'greedy' does not "
                               r"take policy"),
    ("ga:moves=teleport", r"ga:moves=teleport: moves: .*teleport"),
    ("balance:partitions=many", r"balance:partitions=many: partitions: expected a number"),
    ("balance:space_sharing=maybe", r"space_sharing: expected true or false"),
])
def test_bench_bad_method_spec_is_an_input_error(spec: str, says: str) -> None:
    """A malformed spec is refused when it is read, saying what is wrong.

    A key the method does not take names the key and the method, and what it takes.
    """
    with pytest.raises(InputError, match=says):
        parse_method(spec)


def test_bench_bad_method_spec_stops_before_anything_runs(tmp_path: Path) -> None:
    """Through the CLI a bad spec among good ones is exit 2, and no table is written."""
    out = tmp_path / "bench.md"
    result = run_cli("bench", INSTANCES, "--methods", "greedy,greedy:policy=makespan", "-o",
                     out)
    assert result.returncode == 2 and "does not take policy" in result.stderr
    assert not out.exists()


def test_bench_without_best_known_measures_against_the_best_bound(tmp_path: Path) -> None:
    """A folder suite has no best known value: gaps are to the tightest proven bound.

    ``objective=NAME`` plans the same file for another objective, with its own reference.
    """
    source = tmp_path / "suite"
    source.mkdir()
    document = json.loads((INSTANCES / "quickstart.json").read_text())
    document["objective"] = "max-weight"
    (source / "quickstart.json").write_text(json.dumps(document))
    out = tmp_path / "bench.md"
    result = run_cli("bench", source, "--methods", "greedy,milp,milp:objective=min-gpus",
                     "-o", out)
    assert result.returncode == 0, result.stderr
    rows = {line.split(" | ")[1]: line.split(" | ")
            for line in out.read_text().splitlines() if line.startswith("| quickstart")}
    optimum = rows["milp"][3]
    assert rows["milp"][2] == "optimal" and rows["milp"][4] == f"{optimum} (bound)"
    assert rows["milp"][5] == "0" and rows["greedy"][4] == f"{optimum} (bound)"
    assert rows["milp:objective=min-gpus"][3] != optimum


def test_benchmarks_page_shows_the_results_files() -> None:
    """Every table docs/benchmarks.md quotes is, cell for cell, the harness's results file.

    The page is refreshed by the benchmark scripts (``refresh_quotes``); a hand edit of a
    quoted number, or a results file rerun without refreshing the page, fails here.
    """
    page = ROOT / "docs" / "benchmarks.md"
    text = page.read_text()
    assert len(QUOTE.findall(text)) >= 10
    assert quote_tables(page) == text


def test_quoted_tables_are_replaced_and_bad_quotes_named(tmp_path: Path) -> None:
    """A quote takes table N of its file; a missing file or table is an InputError."""
    (tmp_path / "r.md").write_text("# r\n\n| a |\n|---|\n| 1 |\n\ntext\n\n| b |\n|---|\n| 2 |\n")
    page = tmp_path / "page.md"
    page.write_text("intro\n<!-- table r.md 2 -->\n| b |\n|---|\n| old |\n<!-- end table -->\n")
    assert refresh_quotes(page) and "| 2 |" in page.read_text() and "old" not in page.read_text()
    assert not refresh_quotes(page)
    for quote, says in (("r.md 3", "has 2 tables"), ("s.md 1", "does not exist")):
        page.write_text(f"<!-- table {quote} -->\n<!-- end table -->\n")
        with pytest.raises(InputError, match=says):
            quote_tables(page)


def test_bench_page_option_refreshes_the_quoted_table(tmp_path: Path) -> None:
    """``gpuplan bench -o R --page P`` writes R, then P's quote of R shows R's rows."""
    page = tmp_path / "page.md"
    page.write_text("# page\n\n<!-- table r.md 2 -->\n<!-- end table -->\n")
    result = run_cli("bench", INSTANCES, "--only", "quickstart", "--methods", "greedy",
                     "-o", tmp_path / "r.md", "--page", page)
    assert result.returncode == 0, result.stderr
    quoted = page.read_text().splitlines()
    assert quoted[3].startswith("| instance | method |")
    assert quoted[5].startswith("| quickstart | greedy | feasible | 27000 |")


@pytest.mark.parametrize(("output", "says"), [(False, "needs -o"), (True, "no such page")])
def test_bench_page_without_output_or_page_is_an_input_error(
        tmp_path: Path, output: bool, says: str) -> None:
    """``--page`` needs ``-o`` and an existing page; both are checked before anything runs."""
    out = tmp_path / "r.md"
    result = run_cli("bench", INSTANCES, "--only", "quickstart", "--page",
                     tmp_path / "missing.md", *(("-o", out) if output else ()))
    assert result.returncode == 2 and says in result.stderr
    assert not out.exists()
