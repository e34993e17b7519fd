"""``gpuplan simulate``: play a workload out under a cluster policy; the verified run log.

The policy's parts come from the registries of :mod:`gpuplan.simulate.policies`, read when
the parser is built, so a part registered there is offered here with its description. The
flags of a run (:func:`run_parser`) are shared with ``gpuplan sweep``.

With ``--write-instance FILE`` the instance document simulated is written too (deadlines as
due dates, a static objective as weighted completion: what the run log is checked on), so
that ``gpuplan check FILE RUN.json`` accepts the log.

Exit codes: 0 the run log is verified (and written with ``-o``); 1 the verifier rejected
the run, or the run got stuck (:class:`~gpuplan.simulate.engine.SimulationError`: a bug of
the engine or a policy, never of the input), nothing written; 2 bad input or flags,
nothing written; 130 Ctrl-C, nothing written.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import secrets
import shutil
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from gpuplan.cli.common import (
    Commands,
    ExitCode,
    add_settings,
    bounded,
    console,
    default_of,
    positive,
    progress_display,
    settings,
    simulation_bug,
    summary_table,
)
from gpuplan.cli.simulate_elastic import (
    add_elastic_flags,
    check_flags,
    elastic_options,
    run_elastic,
)
from gpuplan.core.errors import InputError
from gpuplan.core.files import (
    HOST_TAG,
    check_output,
    check_output_folder,
    missing_folder,
    remove_made,
    write_text_atomic,
)
from gpuplan.core.instance import MAX_GPUS, MAX_TIME_S, Instance
from gpuplan.core.schedule import ResultSchedule
from gpuplan.exporters.plot import write_figure
from gpuplan.readers import load_data
from gpuplan.readers.changes import read_actuals, read_failures
from gpuplan.readers.instance_file import instance_from_data
from gpuplan.readers.swf import is_swf
from gpuplan.simulate import Mode, RunSpec, SimulationConfig, SimulationError, simulate_run
from gpuplan.simulate.elastic.policies import ELASTIC_POLICIES
from gpuplan.simulate.engine import Failures
from gpuplan.simulate.engine import Progress as ProgressCallback
from gpuplan.simulate.metrics import job_stats, window_jobs
from gpuplan.simulate.plots import jct_cdf_figure, timeline_figure
from gpuplan.simulate.policies import ADMISSIONS, PLACEMENTS, SCHEDULERS, option_takers
from gpuplan.simulate.run import check_simulable
from gpuplan.simulate.workload import gavel_trace_document, parse_cluster, run_document

#: Settings a preset gives; a flag given beside it wins.
PRESETS: dict[str, dict[str, Any]] = {
    # Gavel's simulator: 360 s rounds, and it charges nothing for a resume or a move.
    "gavel": {"mode": Mode.ROUND, "round_s": 360.0, "restart_overhead_s": 0.0,
              "migration_overhead_s": 0.0},
}

#: The SimulationConfig fields a flag sets, for presets and the flags given.
_CONFIG = ("mode", "round_s", "restart_overhead_s", "migration_overhead_s")

_SECONDS = bounded(float, 0, MAX_TIME_S)


def _window(text: str) -> tuple[int, int]:
    """``A:B`` as the job positions ``[A, B)`` (checked against the workload later)."""
    first, sep, last = text.partition(":")
    try:
        if not sep:
            raise ValueError
        return int(first), int(last)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected A:B (job positions, half-open), got "
                                         f"{text!r}") from None


def _escaped(text: str) -> str:
    """Help text as argparse reads it: a description saying "5%" must not break --help."""
    return text.replace("%", "%%")


def _names(registry: Mapping[str, Any]) -> str:
    return _escaped("; ".join(f"{name}: {cls.description}" for name, cls in registry.items()))


def run_parser() -> argparse.ArgumentParser:
    """The flags of a run besides its policy and workload: parts, mode, costs, settings."""
    parser = argparse.ArgumentParser(add_help=False)
    unset = argparse.SUPPRESS
    defaults = RunSpec()
    parser.add_argument("--placement", choices=list(PLACEMENTS), default=defaults.placement,
                        help=f"how a job's GPUs are picked (default: {defaults.placement}); "
                        + _names(PLACEMENTS))
    parser.add_argument("--admission", choices=list(ADMISSIONS), default=defaults.admission,
                        help=f"when an arrived job is let in (default: {defaults.admission}); "
                        + _names(ADMISSIONS))
    config = SimulationConfig()
    parser.add_argument("--preset", choices=list(PRESETS), default=unset,
                        help="gavel: Gavel's simulator (--mode round --round 360 "
                        "--restart-overhead 0 --migration-overhead 0); flags given win")
    parser.add_argument("--mode", choices=[m.value for m in Mode], default=unset,
                        help="event: decide at every arrival and completion; round: at "
                        f"every round boundary (default: {config.mode.value})")
    parser.add_argument("--round", dest="round_s", type=positive(MAX_TIME_S, "seconds"),
                        metavar="S",
                        default=unset, help=f"round length in seconds, round mode (default: "
                        f"{config.round_s:g}, Gavel's)")
    parser.add_argument("--restart-overhead", dest="restart_overhead_s", type=_SECONDS,
                        metavar="S", default=unset, help="checkpoint/restore seconds every "
                        f"resume pays (default: {config.restart_overhead_s:g})")
    parser.add_argument("--migration-overhead", dest="migration_overhead_s", type=_SECONDS,
                        metavar="S", default=unset, help="further seconds a resume on other "
                        f"GPUs pays (default: {config.migration_overhead_s:g})")
    parser.add_argument("--window", type=_window, metavar="A:B", default=unset,
                        help="measure the jobs at positions [A, B) in arrival order, as "
                        "Gavel measures steady state (default: all)")
    add_settings(parser, "time_limit_s")
    # The parts' own options, from their declarations: given as text, each is parsed and
    # checked by the part that takes it, so API, CLI and sweep refuse the same values.
    for flag, (f, takers) in option_takers().items():
        parser.add_argument(flag, dest=f.name, metavar=f.metadata["metavar"], default=unset,
                            help=_escaped(f"{f.metadata['help']} (taken by: "
                                          f"{', '.join(takers)})"))
    return parser


def workload_parser() -> argparse.ArgumentParser:
    """The flags of a Gavel workload: its cluster, servers and throughputs."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--cluster", metavar="V:P:K", default=argparse.SUPPRESS,
                        help="GPUs of each type as Gavel gives them, v100:p100:k80 (e.g. "
                        "36:36:36)")
    default = default_of(gavel_trace_document, "gpus_per_node")
    parser.add_argument("--gpus-per-node", type=bounded(int, 1, MAX_GPUS), metavar="N",
                        default=default, help="GPUs per server, Gavel's "
                        f"--num_gpus_per_server; a gang stays on one (default: {default})")
    parser.add_argument("--throughputs", metavar="FILE", default=argparse.SUPPRESS,
                        help="Gavel's simulation_throughputs.json: each job's speed per type")
    return parser


def check_solver_flags(args: argparse.Namespace, policies: Sequence[str]) -> None:
    """Refuse --time-limit and --threads when no chosen scheduler calls a solver.

    Raises
    ------
    InputError
        Naming the flag and the schedulers that do call one.
    """
    if any(part.calls_solver for name, part in SCHEDULERS.items() if name in policies):
        return
    solvers = ", ".join(name for name, part in SCHEDULERS.items() if part.calls_solver)
    for name, flag in (("time_limit_s", "--time-limit"), ("threads", "--threads")):
        if hasattr(args, name):
            raise InputError(flag, "", f"{', '.join(policies)} call(s) no solver, so "
                             f"{flag} would do nothing; schedulers that do: {solvers}")


def reality(args: argparse.Namespace, instance: Instance, seed: int) -> dict[str, Any]:
    """What the run meets that the policy does not plan for: failures, actual durations.

    Failures and log-normal durations are drawn with ``seed`` (the run's ``--seed``).

    Raises
    ------
    InputError
        Naming the flag or the file: --fail-for or --checkpoint without failures, a bad
        noise model, or a bad entry of a file.
    """
    drawn = args.fail_per_day is not None
    if args.failures is None and not drawn:
        for flag, value in (("--fail-for", args.fail_for), ("--checkpoint", args.checkpoint)):
            if value is not None:
                raise InputError(flag, "", "it sets what failures do: give --failures or "
                                 "--fail-per-day")
    listed = () if args.failures is None else read_failures(args.failures, instance)
    failures = Failures(listed, args.fail_per_day or 0.0,
                        args.fail_for or Failures().down_s, args.checkpoint, seed)
    scale = None
    if args.actual is not None:
        model, _, sigma = args.actual.partition(":")
        if model == "lognormal":
            try:
                spread = float(sigma)
            except ValueError:
                spread = -1.0
            if not 0 < spread <= 5:
                raise InputError("--actual", "", f"lognormal:{sigma} needs a sigma in (0, 5]")
            scale = np.random.default_rng(seed).lognormal(0.0, spread, instance.n_jobs)
        else:
            scale = read_actuals(args.actual, instance)
    return {"failures": failures, "duration_scale": scale}


def run_spec(args: argparse.Namespace, policy: str, **fixed: Any) -> RunSpec:
    """The run the flags of :func:`run_parser` describe, for ``policy``.

    ``fixed`` are run settings the command sets itself (a sweep's seed and threads).

    Raises
    ------
    InputError
        Naming a setting out of range.
    """
    preset = PRESETS.get(getattr(args, "preset", ""), {})
    chosen = {**preset, **{name: getattr(args, name) for name in _CONFIG if hasattr(args, name)}}
    if "mode" in chosen:
        chosen["mode"] = Mode(chosen["mode"])
    config = SimulationConfig(**chosen)
    if hasattr(args, "round_s") and config.mode is not Mode.ROUND:
        raise InputError("--round", "", "rounds are a setting of --mode round (or --preset "
                         "gavel); in event mode the scheduler decides at every event")
    run = settings(args, **fixed)
    options = {f.name: getattr(args, f.name) for f, _ in option_takers().values()
               if hasattr(args, f.name)}
    return RunSpec(scheduler=policy, placement=args.placement, admission=args.admission,
                   config=config, seed=run.seed, settings=run,
                   window=getattr(args, "window", None), options=options)


def register(commands: Commands) -> None:
    """Add ``simulate``, its choices and part flags from the policy registries."""
    parser = commands.add_parser(
        "simulate", help="simulate a workload under a cluster policy; the verified run log",
        parents=[run_parser(), workload_parser()],
        description="Play a workload out over time under a cluster policy (admission, "
        "scheduler, placement) with preemption, migration and their overheads; the run log "
        "(a v2 schedule with the run's metrics) is verified before it is written. INPUT is "
        "a gpuplan instance file (its release_s are arrival times), or a Gavel trace (*.trace, "
        "with --cluster and --throughputs); SWF traces run under gpuplan hpc. Exit codes: 0 "
        "ok; 1 the "
        "verifier rejected the run (a bug, nothing written); 2 bad input; 130 Ctrl-C.",
    )
    parser.add_argument("input", metavar="INPUT", help="instance file (.json, .yaml) or "
                        "Gavel trace (.trace)")
    add_settings(parser, "seed", "threads")
    default = RunSpec().scheduler
    parser.add_argument("--policy", dest="scheduler", default=default, metavar="NAME",
                        help=f"the scheduler (default: {default}); " + _names(SCHEDULERS)
                        + "; elastic jobs with deadlines: " + _names(ELASTIC_POLICIES))
    add_elastic_flags(parser, set(option_takers()))
    parser.add_argument("-o", "--output", metavar="RUN.json",
                        help="write the verified run log here (with --metrics-only, its "
                        "summary)")
    parser.add_argument("--metrics-only", action="store_true",
                        help="keep no run log: -o writes the run's summary (its record, "
                        "metrics and verification) instead of every segment and event; the "
                        "run is verified all the same")
    parser.add_argument("--failures", metavar="FILE.yaml", help="GPUs that fail during the "
                        "run: failures: [{node, gpus?, at_s, for_s?}] (for_s absent: for good)")
    parser.add_argument("--fail-per-day", type=positive(1e6, "failures per day"), metavar="X",
                        help="draw node failures, X per simulated day on average (seeded by "
                        "--seed), each node down for --fail-for seconds")
    parser.add_argument("--fail-for", type=positive(MAX_TIME_S, "seconds"), metavar="S",
                        help=f"how long a drawn failure keeps its node down (default: "
                        f"{Failures().down_s:g})")
    parser.add_argument("--checkpoint", type=positive(MAX_TIME_S, "seconds"), metavar="S",
                        help="jobs checkpoint every S seconds of work; a failure loses the "
                        "work since the last one (default: only when preempted)")
    parser.add_argument("--actual", metavar="lognormal:SIGMA|FILE",
                        help="run actual durations, the policy seeing the instance's as "
                        "estimates: log-normal factors of median 1 and this sigma (seeded by "
                        "--seed), or a file of job id: actual seconds on its fastest type")
    parser.add_argument("--write-instance", metavar="FILE", help="write the instance "
                        "document simulated here (deadlines as due dates, a static "
                        "objective as weighted-completion): gpuplan check FILE RUN.json "
                        "checks the run log")
    parser.add_argument("--plot", metavar="DIR", help="write the run's pictures here "
                        "(jct_cdf.png, timeline.png)")
    parser.add_argument("--progress", action="store_true",
                        help="show the progress bar even when stderr is not a terminal")
    parser.set_defaults(run=run_simulate)


#: Wall seconds between two progress lines when stderr is not a terminal.
PROGRESS_LINE_S = 10.0


@contextmanager
def progress_bar(show: bool, label: str) -> Iterator[ProgressCallback | None]:
    """A progress bar on stderr fed by the engine's callback; None when not shown.

    When stderr is not a terminal (``--progress`` into a log file) the progress is written
    as lines instead, at most every :data:`PROGRESS_LINE_S` seconds and when done: a bar
    redrawn in place would leave nothing readable there.
    """
    if not show:
        yield None
        return
    if not console.is_terminal:
        last = [-math.inf]

        def line(now: float, done: int, total: int) -> None:
            clock = time.perf_counter()
            if clock - last[0] >= PROGRESS_LINE_S or done == total:
                last[0] = clock
                console.print(f"{label}: {done} of {total} jobs done, {now / 3600:.1f} h "
                              "simulated", markup=False, highlight=False)
        yield line
        return
    with progress_display("jobs, simulated {task.fields[simulated]}", transient=True) as bar:
        task = bar.add_task(label, total=None, simulated="0 h")

        def report(now: float, done: int, total: int) -> None:
            bar.update(task, completed=done, total=total, simulated=f"{now / 3600:.1f} h")
        yield report


def _summary(instance: Instance, schedule: ResultSchedule, seconds: float,
             written: str) -> list[tuple[str, str]]:
    run = schedule.run
    assert run is not None  # simulate() always records the run
    metrics, (first, last) = run.metrics, run.window
    jobs = int(metrics["jobs"])
    mode = f"round ({run.round_s:g} s)" if run.round_s is not None else run.mode
    return [
        ("policy", f"{run.scheduler} (placement {run.placement}, admission {run.admission})"),
        ("mode", f"{mode}, restart {run.restart_overhead_s:g} s, migration "
         f"{run.migration_overhead_s:g} s"),
        ("measured", f"jobs {first}:{last} ({jobs} of {instance.n_jobs})"),
        ("JCT mean / median", f"{metrics['mean_jct_h']:.4g} h / {metrics['median_jct_h']:.4g} h"),
        ("JCT p95 / p99", f"{metrics['p95_jct_h']:.4g} h / {metrics['p99_jct_h']:.4g} h"),
        ("makespan", f"{metrics['makespan_h']:.4g} h"),
        ("utilisation", f"{metrics['utilisation_share']:.1%} ("
         + ", ".join(f"{t} {share:.0%}" for t, share in run.utilisation_by_type.items())
         + ")"),
        ("preemptions", f"{metrics['preemptions_per_job']:.3g} per job "
         f"({round(metrics['preemptions_per_job'] * jobs)} in all)"),
        ("migrations", f"{metrics['migrations_per_job']:.3g} per job "
         f"({round(metrics['migrations_per_job'] * jobs)} in all)"),
        *_failure_rows(instance, schedule),
        ("wall time", f"{seconds:.3f} s"),
        ("written to", written),
    ]


def _failure_rows(instance: Instance, schedule: ResultSchedule) -> list[tuple[str, str]]:
    """The run's failures and the work they cost, over the whole run; none without failures.

    A segment's lost share of its job's work, at the speed of its GPU type, times its
    GPUs, is the GPU time spent again on work a failure undid.
    """
    run, result = schedule.run, schedule.result
    assert run is not None
    if not run.failures:
        return []
    down = sum(len(failure.gpu_ids) for failure in run.failures)
    for_good = sum(failure.end_s is None for failure in run.failures)
    hit = np.flatnonzero(result.lost_work() > 0)
    # The run's actual durations: what the engine ran, and lost shares of.
    seconds = run.actual(instance).duration[result.job[hit], result.gpu_type[hit]]
    gpus = np.array([result.gpus[s].size for s in hit.tolist()], dtype=np.float64)
    gpu_hours = float(np.sum(result.lost_work()[hit] * seconds * gpus)) / 3600
    jobs = len(set(result.job[hit].tolist()))
    return [
        ("failures", f"{len(run.failures)} ({down} GPUs down"
         + (f"; {for_good} never back" if for_good else "") + ")"),
        ("lost work", f"{gpu_hours:.4g} GPU-hours ({jobs} job{'s' * (jobs > 1)} set back)"
         if jobs else "none (no job was running on the GPUs that failed)"),
    ]


#: The pictures ``--plot`` writes into its folder.
PLOT_FILES = ("jct_cdf.png", "timeline.png")


def write_plots(folder: Path, instance: Instance, schedule: ResultSchedule,
                label: str) -> list[Path]:
    """Write the run's JCT distribution and timeline into ``folder``; the files."""
    run = schedule.run
    assert run is not None
    result = schedule.result
    window = (run.window[0], run.window[1])
    jct = job_stats(instance, result).jct_h[window_jobs(instance, window)]
    files = [folder / name for name in PLOT_FILES]
    write_figure(jct_cdf_figure({label: jct}, title=f"{instance.name}: JCT"), files[0])
    write_figure(timeline_figure(instance, result, window, title=instance.name), files[1])
    return files


def read_workload(args: argparse.Namespace) -> tuple[Instance, dict[str, Any]]:
    """The instance file, or the Gavel trace on ``--cluster`` with ``--throughputs``.

    Returns
    -------
    tuple
        The instance and the document it was built from.

    Raises
    ------
    InputError
        Naming the file, line and field of bad input; ``--cluster`` or ``--throughputs``
        missing for a trace, or given for an instance file (which has its own cluster).
    """
    path = Path(args.input)
    trace = args.input.endswith(".trace")
    gavel = [flag for flag, name in (("--cluster", "cluster"), ("--throughputs", "throughputs"))
             if hasattr(args, name)]
    if not trace:
        if gavel:
            raise InputError(gavel[0], "", f"applies to Gavel traces (*.trace); the instance "
                             f"file {args.input} has its own cluster and run times")
        document = load_data(path)
    else:
        missing = [flag for flag in ("--cluster", "--throughputs") if flag not in gavel]
        if missing:
            raise InputError(missing[0], "", f"a Gavel trace ({args.input}) needs --cluster "
                             "V:P:K and --throughputs FILE")
        document = gavel_trace_document(path, Path(args.throughputs),
                                        parse_cluster(args.cluster),
                                        gpus_per_node=args.gpus_per_node)
    instance = instance_from_data(document, args.input,
                              default_name=path.stem)
    return instance, document


def _write(path: str, what: str, write: Callable[[], None]) -> None:
    """Write an output, a file system error as bad input naming it."""
    try:
        write()
    except OSError as exc:
        raise InputError(path, "", f"cannot write the {what}: {exc}") from None


def run_simulate(args: argparse.Namespace) -> int:
    """Check the outputs, read, simulate (or replay a trace), write and summarise.

    A run that fails (exit 1 or 2, or Ctrl-C) writes nothing: no run log, no instance,
    no picture, and a ``--plot`` folder it made is removed again (one the user had is
    left as it was).
    """
    if is_swf(args.input):
        raise InputError(args.input, "", "an SWF trace runs under RLScheduler's protocol: "
                         "gpuplan hpc TRACE --policy NAME (the GPU simulator takes instance "
                         "files and Gavel traces)")
    if args.scheduler in ELASTIC_POLICIES:
        return _run_elastic(args)
    if args.scheduler not in SCHEDULERS:
        raise InputError("--policy", "", f"unknown scheduler {args.scheduler!r}; choose from "
                         f"{', '.join([*SCHEDULERS, *ELASTIC_POLICIES])} (sharing policies: "
                         "gpuplan replay)")
    rigid = option_takers()
    for flag, (f, takers) in elastic_options().items():
        if flag not in rigid and hasattr(args, f.name):
            raise InputError(flag, "", f"{flag} is an option of the elastic policies "
                             f"({', '.join(takers)}), not of {args.scheduler!r}")
    check_solver_flags(args, [args.scheduler])
    spec = run_spec(args, args.scheduler)
    inputs = [args.input, *([args.throughputs] if hasattr(args, "throughputs") else [])]
    log = None if args.output is None else check_output(args.output, inputs)
    target = None
    if args.write_instance is not None:
        target = check_output(args.write_instance, inputs, "--write-instance")
        if target == log:
            raise InputError(args.write_instance, "", "--write-instance names the run log "
                             f"file {args.output} (-o); choose another file")
    made = None if args.plot is None else missing_folder(args.plot)
    try:
        code = _simulate_and_write(args, spec, inputs, log, target)
    except BaseException:
        remove_made(args.plot, made)
        raise
    if code != ExitCode.OK:
        remove_made(args.plot, made)
    return code


def _run_elastic(args: argparse.Namespace) -> int:
    """``--policy`` names an elastic policy: its flags, the instance, the run."""
    defaults = RunSpec()
    options = check_flags(args, {"placement": defaults.placement,
                                 "admission": defaults.admission}, option_takers())
    instance, _ = read_workload(args)
    return run_elastic(args, instance, [args.input], options)


def _simulate_and_write(args: argparse.Namespace, spec: RunSpec, inputs: list[str],
                        log: Path | None, target: Path | None) -> int:
    """Simulate and write the outputs of :func:`run_simulate`; its exit code.

    The pictures are drawn into a temporary folder inside ``--plot`` before anything is
    written, and moved in place once the instance and the run log are: a run that fails
    on the way writes neither.
    """
    # Checked (and made) before the run, so a bad folder costs no run.
    folder = None if args.plot is None else check_output_folder(args.plot, inputs, "--plot")
    if folder is not None:
        outputs = {path for path in (log, target) if path}
        for name in PLOT_FILES:
            picture = check_output(folder / name, inputs, "--plot")
            if picture in outputs:
                raise InputError(str(folder / name), "", f"--plot writes {name} there, which "
                                 "-o or --write-instance names too; choose another folder")
    instance, document = read_workload(args)
    if args.write_instance is None:
        # Not needed again: a large file's parsed data is let go before the run.
        document = {}
    instance = instance.online()
    check_simulable(instance, spec.config)
    spec = dataclasses.replace(spec, **reality(args, instance, spec.seed))
    if args.write_instance is not None:
        document = run_document(document, instance)
        # What runs is the file's content, built as gpuplan check will build it: the
        # instance file and the run log cannot disagree.
        instance = instance_from_data(document, args.write_instance).online()
    began = time.perf_counter()
    with progress_bar(args.progress or console.is_terminal,
                      f"simulating {args.scheduler}") as report:
        try:
            schedule = simulate_run(instance, spec, report)
        except SimulationError as exc:
            if args.debug:
                raise
            return simulation_bug(args.scheduler, exc)
    seconds = time.perf_counter() - began
    staging = None if folder is None else folder / (
        f".gpuplan-{HOST_TAG}-{os.getpid()}-{secrets.token_hex(4)}.tmp")
    try:
        if staging is not None:
            staging.mkdir()
            write_plots(staging, instance, schedule, args.scheduler)
        if target is not None:
            text = json.dumps(document, indent=1) + "\n"
            _write(args.write_instance, "instance", lambda: write_text_atomic(target, text))
        if args.output is not None and args.metrics_only:
            summary = schedule.summary()
            _write(args.output, "run summary", lambda: summary.write(args.output))
        elif args.output is not None:
            _write(args.output, "run log", lambda: schedule.write(args.output))
        files = []
        if staging is not None and folder is not None:
            for name in PLOT_FILES:
                os.replace(staging / name, folder / name)
                files.append(folder / name)
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
    written = " and ".join(path for path in (args.output, args.write_instance) if path)
    console.print(summary_table(
        f"{instance.name}: {instance.n_jobs} jobs on {instance.n_gpus} GPUs",
        _summary(instance, schedule, seconds, written or "- (use -o FILE to save)")))
    if files:
        console.print(f"pictures: {', '.join(map(str, files))}", markup=False)
    return ExitCode.OK
