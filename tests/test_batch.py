"""gpuplan batch (local and Dask) and gpuplan generate."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from conftest import DATA, INSTANCES, ROOT, run_cli

from gpuplan import Schedule
from gpuplan.batch import expand_inputs, make_tasks, run_batch
from gpuplan.bench import QUOTE, quote_tables, refresh_quotes
from gpuplan.errors import InputError
from gpuplan.generate import generate_document
from gpuplan.readers.instance_file import build_instance, parse_document
from gpuplan.solvers import SolveOptions


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
    # A touched instance is planned again.
    source = inputs / "g001.json"
    os.utime(source, ns=(source.stat().st_atime_ns, planned[out / "g001.json"] + 10**9))
    run_cli("batch", inputs, "-o", out, "--workers", "1")
    again = {row["instance"]: row for row in json.loads((out / "summary.json").read_text())}
    assert not again["g001"]["resumed"] and again["g000"]["resumed"]


def test_batch_leaves_no_partial_files(tmp_path: Path) -> None:
    """Every file in the output folder is a whole, verified schedule or the summary."""
    inputs = tmp_path / "in"
    generated(inputs, 4)
    out = tmp_path / "out"
    run_cli("batch", str(inputs / "*.json"), "-o", out, "--method", "sa", "--time-limit",
            "0.2")
    for path in out.iterdir():
        assert not path.name.startswith("."), f"temporary file left: {path.name}"
        if path.name.startswith("g"):
            schedule = Schedule.read(path)
            assert schedule.verification is not None and schedule.verification.ok


def test_expand_inputs_files_folders_globs(tmp_path: Path) -> None:
    """Folders give their instance files, globs expand, duplicates count once."""
    paths = generated(tmp_path, 3)
    found = expand_inputs([str(tmp_path), str(tmp_path / "g00*.json"), str(paths[0])])
    assert found == sorted(paths)


def test_dask_local_cluster_gives_identical_outputs(tmp_path: Path) -> None:
    """The same batch through a 2-worker LocalCluster on loopback equals the local run."""
    distributed = pytest.importorskip("distributed")
    sources = generated(tmp_path / "in", 6)
    local = make_tasks(sources, tmp_path / "local", "greedy", SolveOptions())
    remote = make_tasks(sources, tmp_path / "dask", "greedy", SolveOptions())
    (tmp_path / "local").mkdir()
    (tmp_path / "dask").mkdir()
    local_rows = run_batch(local, workers=2)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None) as cluster:
        dask_rows = run_batch(remote, workers=2, scheduler=cluster.scheduler_address)
    assert [r["objective"] for r in local_rows] == [r["objective"] for r in dask_rows]
    for a, b in zip(local, remote, strict=True):
        assert Schedule.read(a.target).placements == Schedule.read(b.target).placements


def test_batch_bad_scheduler_is_an_input_error(tmp_path: Path) -> None:
    """An unreachable scheduler: exit 2 naming --scheduler."""
    generated(tmp_path / "in", 1)
    result = run_cli("batch", tmp_path / "in", "-o", tmp_path / "out", "--scheduler",
                     "tcp://127.0.0.1:9")
    assert result.returncode == 2 and "--scheduler" in result.stderr


def test_quickstart_through_batch(tmp_path: Path) -> None:
    """The example instances plan through batch like through solve."""
    result = run_cli("batch", INSTANCES / "quickstart.json", "-o", tmp_path)
    assert result.returncode == 0, result.stderr
    assert Schedule.read(tmp_path / "quickstart.json").verification is not None


def test_bench_folder_suite_writes_the_table(tmp_path: Path) -> None:
    """Gpuplan bench on a folder: one verified row per (instance, method), written as Markdown."""
    generated(tmp_path / "suite", 2)
    out = tmp_path / "bench.md"
    result = run_cli("bench", tmp_path / "suite", "--methods", "greedy,sa", "--time-limit",
                     "0.3", "-o", out)
    assert result.returncode == 0, result.stderr
    rows = [line for line in out.read_text().splitlines() if line.startswith("| g0")]
    assert len(rows) == 4 and all(line.endswith("| yes |") for line in rows)


@pytest.mark.skipif(not (DATA.parents[2] / "shared" / "benchmarks").exists(),
                    reason="../shared/benchmarks not present")
def test_bench_named_suite_reports_the_gap_to_best_known(tmp_path: Path) -> None:
    """The named gap1-12 set carries best known values: milp reaches 261 on c515-1, gap 0."""
    out = tmp_path / "bench.md"
    result = run_cli("bench", "gap1-12", "--only", "c515-1", "--methods", "milp",
                     "--benchmarks", DATA.parents[2] / "shared" / "benchmarks", "-o", out)
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
    methods = "milp,milp@sa,milp:backend=cpsat,sa:crossover=two-point:iterations=5"
    result = run_cli("bench", source, "--methods", methods, "--time-limit", "1", "-o", out)
    assert result.returncode == 0, result.stderr
    rows = [line for line in out.read_text().splitlines() if line.startswith("| quickstart")]
    assert [row.split(" | ")[1] for row in rows] == methods.split(",")
    assert all(row.endswith("| yes |") for row in rows)
    assert out.read_text().count("| suite | ") == 4  # one summary line per method


@pytest.mark.parametrize(("spec", "says"), [
    ("magic", "greedy"),
    ("greedy@sa", "warm start"),
    ("milp:colour=red", "backend"),
    ("sa:iterations=many", "int"),
    ("balance:space_sharing=maybe", "bool"),
])
def test_bench_bad_method_spec_is_an_input_error(spec: str, says: str) -> None:
    """A malformed --methods spec stops before anything runs: exit 2, saying what is wrong."""
    result = run_cli("bench", INSTANCES, "--methods", spec)
    assert result.returncode == 2 and says in result.stderr


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
