"""gpuplan simulate: the run log it writes, its flags, and what it refuses."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import DATA, GAVEL, Gpuplan, run_cli

from gpuplan.core.options import option_fields
from gpuplan.core.schedule import RunSummary, Schedule
from gpuplan.simulate.policies import ADMISSIONS, PLACEMENTS, SCHEDULERS

SMALL = DATA / "valid_small.json"
TRACE = GAVEL / "traces" / "physical_cluster" / "small_test.trace"
THROUGHPUTS = GAVEL / "simulation_throughputs.json"


def test_the_run_log_is_verified_and_check_accepts_it(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """A run log written by simulate passes gpuplan check, and carries its summary."""
    out = tmp_path / "run.json"
    ran = gpuplan("simulate", SMALL, "--policy", "srtf", "-o", out)
    assert ran.code == 0, ran.err
    assert "mean" in ran.err and "makespan" in ran.err
    run = Schedule.read(out).run
    assert run is not None and run.scheduler == "srtf" and "mean_jct_h" in run.metrics
    assert gpuplan("check", SMALL, out).code == 0


def test_metrics_only_writes_the_summary_of_the_same_verified_run(
        gpuplan: Gpuplan, tmp_path: Path) -> None:
    """--metrics-only writes the run's record and verification, the full log's very metrics.

    Broken, a user measuring many runs without their logs would get other numbers than
    the logs give, or an unverified run.
    """
    full, summary = tmp_path / "run.json", tmp_path / "summary.json"
    for out, more in ((full, []), (summary, ["--metrics-only"])):
        assert gpuplan("simulate", SMALL, "--policy", "las", "-o", out, *more).code == 0
    run = Schedule.read(full).run
    written = RunSummary.read(summary)
    assert written.verification.ok and "segments" not in json.loads(summary.read_text())
    assert run is not None and written.run.metrics == run.metrics
    checked = gpuplan("check", SMALL, summary)
    assert checked.code == 2 and "run summary" in checked.err


@pytest.mark.parametrize(("field", "value", "named"), [
    ("metrics", {"mean_jct_h": 0.001}, "run.metrics.mean_jct_h"),
    ("restart_overhead_s", 0.0, "but the run charges 0 s"),
])
def test_check_refuses_a_run_record_its_segments_do_not_give(
        gpuplan: Gpuplan, tmp_path: Path, field: str, value: Any, named: str) -> None:
    """A run log whose record claims other metrics or other overheads fails gpuplan check.

    Tiresias' LAS with low thresholds preempts and moves the trace's jobs, each resume
    paying 10 s.
    """
    out, simulated = tmp_path / "run.json", tmp_path / "simulated.json"
    assert gpuplan("simulate", TRACE, "--cluster", "2:2:2", "--throughputs", THROUGHPUTS,
                   "--policy", "las", "--thresholds", "0.01,0.1", "--restart-overhead", "10",
                   "-o", out, "--write-instance", simulated).code == 0
    assert gpuplan("check", simulated, out).code == 0
    document = json.loads(out.read_text())
    if field == "metrics":
        document["run"]["metrics"].update(value)
    else:
        document["run"][field] = value
    out.write_text(json.dumps(document))
    checked = gpuplan("check", simulated, out)
    assert checked.code == 1
    assert named in " ".join((checked.out + checked.err).split())


def test_gavel_preset_is_round_mode_without_overheads(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """--preset gavel runs 360 s rounds at no restart or migration cost; a flag given wins."""
    out = tmp_path / "run.json"
    assert gpuplan("simulate", SMALL, "--preset", "gavel", "-o", out).code == 0
    run = Schedule.read(out).run
    assert run is not None
    assert (run.mode, run.round_s, run.restart_overhead_s, run.migration_overhead_s) == (
        "round", 360.0, 0.0, 0.0)
    assert gpuplan("simulate", SMALL, "--preset", "gavel", "--round", "60", "-o", out).code == 0
    run = Schedule.read(out).run
    assert run is not None and run.round_s == 60.0 and run.restart_overhead_s == 0.0


def test_a_gavel_trace_runs_on_a_cluster_string(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """A Gavel trace with --cluster and --throughputs is simulated like an instance file."""
    out = tmp_path / "run.json"
    ran = gpuplan("simulate", TRACE, "--cluster", "4:4:4", "--throughputs", THROUGHPUTS,
                  "--policy", "las", "--window", "5:15", "-o", out)
    assert ran.code == 0, ran.err
    run = Schedule.read(out).run
    assert run is not None and run.window == [5, 15] and run.metrics["jobs"] == 10


def test_a_flag_no_chosen_part_takes_is_refused(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """--thresholds belongs to las: with fifo it is exit 2 naming the flag, nothing written."""
    out = tmp_path / "run.json"
    ran = gpuplan("simulate", SMALL, "--policy", "fifo", "--thresholds", "1,2", "-o", out)
    assert ran.code == 2 and "--thresholds" in ran.err
    assert not out.exists()


def test_an_unknown_policy_lists_the_choices(gpuplan: Gpuplan) -> None:
    """A misspelt policy is exit 2 and the message lists the registered ones."""
    ran = gpuplan("simulate", SMALL, "--policy", "lass")
    assert ran.code == 2 and "unknown scheduler 'lass'" in ran.err
    assert "fifo, sjf, srtf, las," in ran.err


@pytest.mark.parametrize("args, named", [
    (["--window", "3:99"], "--window"),
    (["--window", "3-4"], "--window"),
    ([], "--cluster"),
    (["--cluster", "4:4", "--throughputs", str(THROUGHPUTS)], "--cluster"),
    (["--round", "60"], "--round"),
    (["--time-limit", "5"], "--time-limit"),
    (["--threads", "1"], "--threads"),
    (["--plot", str(SMALL)], "--plot"),
], ids=["window-range", "window-form", "trace-without-cluster", "cluster-string",
        "round-in-event-mode", "plot-at-a-file", "time-limit-without-solver",
        "threads-without-solver"])
def test_bad_flags_are_exit_2_and_nothing_written(gpuplan: Gpuplan, tmp_path: Path,
                                                  args: list[str], named: str) -> None:
    """A bad flag is exit 2, one error naming it, and no file written.

    A bad window, a missing or malformed cluster, --round in event mode, --time-limit or
    --threads for fifo, which calls no solver (each would do nothing), a --plot folder
    that is a file (checked before the run log is written).
    """
    out = tmp_path / "run.json"
    source = TRACE if "--cluster" in args or not args else SMALL
    ran = gpuplan("simulate", source, *args, "-o", out)
    assert ran.code == 2 and named in ran.err and "error" in ran.err
    assert not out.exists()


def test_a_missing_file_or_output_over_input_is_exit_2(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """A missing input is named; -o at its own input never overwrites it."""
    missing = gpuplan("simulate", tmp_path / "nope.json", "-o", tmp_path / "run.json")
    assert missing.code == 2 and "nope.json" in missing.err
    assert not (tmp_path / "run.json").exists()
    own = tmp_path / "own.json"
    own.write_text(SMALL.read_text())
    before = own.read_text()
    ran = gpuplan("simulate", own, "-o", own)
    assert ran.code == 2 and "input" in ran.err and own.read_text() == before


def test_a_trace_row_that_is_bad_names_its_line(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """A trace with a negative arrival time: exit 2 naming the file and the line."""
    rows = TRACE.read_text().splitlines()
    fields = rows[2].split("\t")
    fields[-1] = "-5"
    rows[2] = "\t".join(fields)
    bad = tmp_path / "bad.trace"
    bad.write_text("\n".join(rows) + "\n")
    ran = gpuplan("simulate", bad, "--cluster", "4:4:4", "--throughputs", THROUGHPUTS,
                  "-o", tmp_path / "run.json")
    assert ran.code == 2 and "bad.trace" in ran.err and "line 3" in ran.err
    assert not (tmp_path / "run.json").exists()


def test_plot_writes_the_runs_pictures(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """--plot DIR writes the JCT distribution and the timeline as PNG files."""
    ran = gpuplan("simulate", SMALL, "--plot", tmp_path / "pics")
    assert ran.code == 0, ran.err
    for name in ("jct_cdf.png", "timeline.png"):
        assert (tmp_path / "pics" / name).read_bytes()[:4] == b"\x89PNG"


def test_the_help_lists_policies_with_descriptions(gpuplan: Gpuplan) -> None:
    """--help names each scheduler with what it does, and which parts take each option."""
    shown = gpuplan("simulate", "--help")
    assert shown.code == 0
    text = " ".join(shown.out.split())
    assert "fifo:" in text and "las:" in text and "taken by: las" in text
    # argparse may wrap a hyphenated name at its hyphen.
    compact = "".join(shown.out.split())
    assert all(f"{name}:" in compact for name in SCHEDULERS)


def test_every_part_option_has_its_flag(gpuplan: Gpuplan) -> None:
    """Each option a registered part declares is a flag of simulate, with its help."""
    declared = {f.metadata["flag"] for registry in (SCHEDULERS, PLACEMENTS, ADMISSIONS)
                for part in registry.values() for f in option_fields(part.options_type)}
    assert {"--thresholds", "--starvation", "--partitions", "--replan-method",
            "--replan-every"} <= declared
    shown = " ".join(gpuplan("simulate", "--help").out.split())
    assert all(flag in shown for flag in declared)


def test_a_part_option_is_passed_to_the_part(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """The las policy takes --thresholds; a value it refuses is exit 2 naming the flag."""
    assert gpuplan("simulate", SMALL, "--policy", "las", "--thresholds", "0.5,2").code == 0
    bad = gpuplan("simulate", SMALL, "--policy", "las", "--thresholds", "2,1")
    assert bad.code == 2 and "--thresholds" in bad.err


def test_run_log_json_holds_the_window_metrics(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """The output JSON carries the summary (mean JCT, makespan, utilisation)."""
    out = tmp_path / "run.json"
    assert gpuplan("simulate", SMALL, "-o", out).code == 0
    metrics = json.loads(out.read_text())["run"]["metrics"]
    assert {"mean_jct_h", "makespan_h", "utilisation_share"} <= set(metrics)


#: Two one-GPU jobs due by 150 s on one GPU: the run cannot meet both hard deadlines.
DEADLINES: dict[str, Any] = {
    "name": "deadlines", "gpu_types": [{"id": "a", "capacity": {"memory_gib": 16}}],
    "nodes": [{"id": "n0", "gpus": {"a": 1}}],
    "jobs": [{"id": "j0", "duration_s": 100, "deadline_s": 150, "weight": 2},
             {"id": "j1", "duration_s": 100, "deadline_s": 150, "due_s": 120}],
    "objective": "max-weight"}


def test_the_written_instance_checks_the_run_log(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """--write-instance writes what was simulated; gpuplan check accepts it with the log.

    The file's hard deadlines cannot both be met and its max-weight objective has no
    time: checked against the file as given, the run log fails. The written instance
    holds them as due dates (the earlier of due date and deadline) and weighted
    completion, as simulated, and check exits 0 on it. The same holds for a Gavel trace.
    """
    given = tmp_path / "deadlines.json"
    given.write_text(json.dumps(DEADLINES))
    out, written = tmp_path / "run.json", tmp_path / "simulated.json"
    ran = gpuplan("simulate", given, "-o", out, "--write-instance", written)
    assert ran.code == 0, ran.err
    document = json.loads(written.read_text())
    assert [job.get("due_s") for job in document["jobs"]] == [150, 120]
    assert not any("deadline_s" in job for job in document["jobs"])
    assert document["objective"] == "weighted-completion"
    checked = run_cli("check", written, out)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert run_cli("check", given, out).returncode == 1
    trace_out, trace_written = tmp_path / "trace_run.json", tmp_path / "trace.json"
    ran = gpuplan("simulate", TRACE, "--cluster", "4:4:4", "--throughputs", THROUGHPUTS,
                  "--policy", "las", "-o", trace_out, "--write-instance", trace_written)
    assert ran.code == 0, ran.err
    checked = run_cli("check", trace_written, trace_out)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_written_instance_never_replaces_an_input_or_the_log(gpuplan: Gpuplan,
                                                                 tmp_path: Path) -> None:
    """--write-instance at the input or at -o's file is exit 2; nothing is written."""
    given = tmp_path / "deadlines.json"
    given.write_text(json.dumps(DEADLINES))
    before = given.read_text()
    over_input = gpuplan("simulate", given, "--write-instance", given)
    assert over_input.code == 2 and "--write-instance" in over_input.err
    assert given.read_text() == before
    out = tmp_path / "run.json"
    over_log = gpuplan("simulate", given, "-o", out, "--write-instance", out)
    assert over_log.code == 2 and "-o" in over_log.err and not out.exists()


@pytest.mark.parametrize(("gpus", "ran"), [(0, False), (1, True)])
def test_cpu_only_jobs_are_exit_2_node_resources_are_simulated(
        gpuplan: Gpuplan, tmp_path: Path, gpus: int, ran: bool) -> None:
    """A CPU-only job (every ``convert openb`` file has some) is refused clearly.

    A job on a GPU that draws on its node's CPUs runs, and its run log verifies. If this
    broke, simulate would end in an internal IndexError, or refuse node resources it keeps.
    """
    job: dict[str, Any] = {"id": "a", "gpus": gpus, "demand": {"m": 1},
                           "duration_s": {"A": 100}, "node_demand": {"cpu": 1}}
    node: dict[str, Any] = {"id": "n1", "gpus": {"A": 2}, "resources": {"cpu": 8}}
    path = tmp_path / "w.json"
    path.write_text(json.dumps({"gpu_types": [{"id": "A", "capacity": {"m": 16}}],
                                "nodes": [node], "jobs": [job], "objective": "makespan"}))
    done = gpuplan("simulate", path, "-o", tmp_path / "run.json")
    assert "Traceback" not in done.err
    if ran:
        assert done.code == 0, done.err
        return
    assert done.code == 2 and f"{path}: jobs[0].gpus: job 'a' is CPU-only" in done.err
    assert not (tmp_path / "run.json").exists()


def test_rounds_too_short_to_finish_are_exit_2(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """--round 1e-6 is refused at once with the least round length that could finish.

    If this broke, the run would go on for billions of rounds.
    """
    ran = gpuplan("simulate", SMALL, "--mode", "round", "--round", "1e-6",
                  "-o", tmp_path / "run.json")
    assert ran.code == 2 and "--round: rounds of 1e-06 s would be at least" in ran.err
    assert "use rounds of at least" in ran.err


def test_a_plot_folder_clashing_with_the_run_log_is_refused_before_the_run(
        gpuplan: Gpuplan, tmp_path: Path) -> None:
    """-o naming a picture --plot would write is exit 2 before anything runs or is written."""
    out = tmp_path / "timeline.png"
    ran = gpuplan("simulate", SMALL, "-o", out, "--plot", tmp_path)
    assert ran.code == 2 and "--plot writes timeline.png there" in ran.err
    assert not out.exists()


def test_a_throughput_file_missing_an_entry_is_blamed(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """A throughput file's own defects are blamed on it, not on the trace.

    A missing entry is named with the trace line that needs it; a throughput that is not
    a number, by its key.
    """
    table = json.loads(THROUGHPUTS.read_text())
    key = "('ResNet-18 (batch size 16)', 1)"
    lacking = {worker: {k: v for k, v in rows.items() if k != key}
               for worker, rows in table.items()}
    path = tmp_path / "tp.json"
    path.write_text(json.dumps(lacking))
    trace = tmp_path / "one.trace"
    trace.write_text("ResNet-18 (batch size 16)\tpython3 train.py\tresnet\t-n\t1\t100\t1\t1\t"
                     "-1.000000\t0\n")
    ran = gpuplan("simulate", trace, "--cluster", "1:1:1", "--throughputs", path,
                  "-o", tmp_path / "run.json")
    assert ran.code == 2, ran.err
    assert (f"{path}: has no throughput of 'ResNet-18 (batch size 16)' at scale factor 1"
            in " ".join(ran.err.split()))
    table["k80"][key]["null"] = "fast"
    path.write_text(json.dumps(table))
    ran = gpuplan("simulate", trace, "--cluster", "1:1:1", "--throughputs", path,
                  "-o", tmp_path / "run.json")
    assert ran.code == 2
    assert f'{path}: k80["{key}"].null: needs a throughput' in " ".join(ran.err.split())



def test_progress_into_a_file_is_written_as_lines(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """--progress with stderr not a terminal writes readable lines, the last one at the end.

    If this broke, a progress bar redrawn in place would leave a log file empty.
    """
    ran = gpuplan("simulate", SMALL, "--progress", "-o", tmp_path / "run.json")
    assert ran.code == 0
    lines = [line for line in ran.err.splitlines() if "jobs done" in line]
    assert lines and lines[-1].startswith("simulating fifo: ")
    total = lines[-1].split(" of ")[1].split()[0]
    assert lines[-1].split(": ")[1].startswith(f"{total} of {total} jobs done")


def test_the_summary_shows_failures_and_the_work_they_lost(gpuplan: Gpuplan,
                                                            tmp_path: Path) -> None:
    """With failures, the summary counts them and the GPU time they undid; without, neither.

    n1 (4 GPUs) fails at 500 s for 300 s while ``train`` (4 GPUs, 1000 s) has run 50 s
    since its last resume, without checkpoints: 50 s on 4 GPUs, 200 GPU-seconds, are lost.
    """
    failures = tmp_path / "failures.yaml"
    failures.write_text("failures:\n  - {node: n1, at_s: 500, for_s: 300}\n")
    ran = gpuplan("simulate", SMALL, "--policy", "srtf", "--failures", failures)
    assert ran.code == 0, ran.err
    assert re.search(r"failures +│ 1 \(4 GPUs down\)", ran.err), ran.err
    assert re.search(r"lost work +│ 0\.05556 GPU-hours \(1 job set back\)", ran.err), ran.err
    ran = gpuplan("simulate", SMALL, "--policy", "srtf")
    assert ran.code == 0 and "failures" not in ran.err and "lost work" not in ran.err
