"""What the commands share: exit codes, the console, reading flags and printing.

The library logs; only the CLI prints, always on :data:`console` (stderr), so that ``-o -``
leaves stdout pure JSON.
"""

from __future__ import annotations

import argparse
import inspect
import re
import tomllib
from collections.abc import Callable, Mapping, Sequence
from enum import IntEnum
from pathlib import Path
from typing import Any, TypeAlias, TypeVar

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

from gpuplan.core.errors import InputError
from gpuplan.core.files import parse_yaml, read_text
from gpuplan.core.instance import Instance
from gpuplan.core.objectives import ObjectiveKind
from gpuplan.core.options import option_fields, parse_number, part_options
from gpuplan.core.schedule import Schedule, Verification, ViolationKind
from gpuplan.core.settings import CORES, MAX_SEED, RunSettings
from gpuplan.harness.batch import Row
from gpuplan.methods import METHODS, Method
from gpuplan.readers import FORMATS, read_instance
from gpuplan.sharing.policies import policy_option_takers
from gpuplan.simulate.policies import option_takers

#: Human output goes to stderr so that ``-o -`` leaves stdout pure JSON.
console = Console(stderr=True, highlight=False, soft_wrap=True, emoji=False)

#: What :func:`run_with_table` writes the rows into (the table's files, say).
Written = TypeVar("Written")

#: The sub-command table of the ``gpuplan`` parser, where each command adds itself.
Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


class ExitCode(IntEnum):
    """Exit codes of the ``gpuplan`` command, documented in README ("Exit codes")."""

    OK = 0
    #: No feasible schedule was found, or a schedule failed verification.
    FAILED = 1
    #: The input (instance, schedule, options file or command line) is invalid.
    BAD_INPUT = 2
    #: Ctrl-C: the shell's code for a process ended by SIGINT (128 + 2).
    INTERRUPTED = 130


def default_of(function: Callable[..., Any], parameter: str) -> Any:
    """The default of a library function's parameter, to show in ``--help``.

    Flags whose default lives in the library leave it unset (``argparse.SUPPRESS``) and
    pass only what was given, so the default is written once, where it is used.
    """
    return inspect.signature(function).parameters[parameter].default


def given(args: argparse.Namespace, *names: str) -> dict[str, Any]:
    """The flags among ``names`` that the user gave (the others are left unset)."""
    return {name: getattr(args, name) for name in names if hasattr(args, name)}


def objective(value: str) -> ObjectiveKind:
    """An ``--objective`` name as an objective kind."""
    try:
        return ObjectiveKind(value)
    except ValueError:
        known = ", ".join(k.value for k in ObjectiveKind)
        raise argparse.ArgumentTypeError(
            f"unknown objective {value!r}; choose from {known}"
        ) from None


def bounded(convert: Callable[[str], float], low: float, high: float) -> Callable[[str], Any]:
    """An argument type for numbers from ``low`` to ``high``, saying so when one is not."""
    parse = parse_number(convert, low, high)

    def check(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    return check


def positive(high: float, what: str = "a number") -> Callable[[str], float]:
    """An argument type for numbers above 0 and at most ``high``, saying so when one is not."""
    parse = bounded(float, 0, high)

    def check(text: str) -> float:
        value: float = parse(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"expected {what} above 0, got {text!r}")
        return value
    return check


def reading_parser(format_flag: str = "--format") -> argparse.ArgumentParser:
    """The flags of the commands that read instance files: ``--format`` and ``--sense``.

    Parameters
    ----------
    format_flag
        The flag of the instance format, for a command whose ``--format`` is another.
    """
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument(
        format_flag, dest="file_format", choices=FORMATS, default=argparse.SUPPRESS,
        help=f"instance file format (default: {default_of(read_instance, 'file_format')}); "
        "orlib-gap takes FILE#k for problem k",
    )
    parser.add_argument(
        "--sense", choices=["min", "max"], default=argparse.SUPPRESS,
        help="orlib-gap only: minimise cost or maximise profit (default: "
        f"{default_of(read_instance, 'sense')})",
    )
    return parser


def read(args: argparse.Namespace, path: str, objective: ObjectiveKind | None = None) -> Instance:
    """Read an instance as the reading flags say (:func:`reading_parser`)."""
    return read_instance(path, objective, **given(args, "file_format", "sense"))


def file_of(instance: str) -> str:
    """The file an instance argument names (``FILE#k`` picks a problem of an orlib-gap file)."""
    return instance.rpartition("#")[0] if "#" in instance and not Path(instance).exists() \
        else instance


#: The flags of :class:`~gpuplan.core.settings.RunSettings`, by field: flag, type, metavar
#: and help. The types only check "is a number": ranges are RunSettings' own.
_SETTINGS: dict[str, tuple[str, Callable[[str], Any], str, str]] = {
    "time_limit_s": ("--time-limit", float, "S", "wall-clock seconds per solve (default: "
                     "none; each method says what it returns when they are spent)"),
    "iterations": ("--iterations", int, "N", "moves or generations of an iterative method "
                   "(default: until --time-limit, else the method's default)"),
    "seed": ("--seed", int, "N", f"random seed, 0 to {MAX_SEED} (default: "
             f"{RunSettings.seed})"),
    "threads": ("--threads", int, "N", f"solver threads, 1 to {CORES} (this machine's cores; "
                f"default: {RunSettings.threads})"),
}


def add_settings(parser: argparse.ArgumentParser, *names: str) -> None:
    """Add the flags of these :class:`~gpuplan.core.settings.RunSettings` fields, unset."""
    for name in names:
        flag, kind, metavar, text = _SETTINGS[name]
        parser.add_argument(flag, dest=name, type=kind, metavar=metavar,
                            default=argparse.SUPPRESS, help=text)


def settings(args: argparse.Namespace, **fixed: Any) -> RunSettings:
    """The run settings the user gave (the others at their defaults), plus ``fixed``.

    Raises
    ------
    InputError
        Naming the flag of a setting out of range.
    """
    return RunSettings(**given(args, *_SETTINGS), **fixed)


def _flag_text(source: str, key: str, value: Any) -> Any:
    """A setting from an options file as the text its flag takes (``true``, ``a,b``).

    Every source goes through the flags' own parsers this way, so a file is checked like
    the command line.
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float | str):
        return str(value)
    if isinstance(value, list) and all(isinstance(v, int | float | str) for v in value):
        return ",".join(map(str, value))
    raise InputError(source, key, "expected a value or a list of values; a table holds one "
                     f"method's settings and is named after it ({', '.join(METHODS)})")


def options_file(path: str, method: Method) -> dict[str, Any]:
    """The settings of ``method`` in an options file (``--options``), as flag text.

    A TOML or YAML file holds settings by key (a field name or its flag without dashes),
    either flat for the chosen method or in a table per method name (``[milp]``), so that
    one file serves several methods; a method's table overrides the flat keys. Every
    table is checked against its method.

    Raises
    ------
    InputError
        Naming the file and the key, for a key its method does not take or a bad value;
        or the file, if it cannot be read or parsed.
    """
    text = read_text(Path(path))
    suffix = Path(path).suffix.lower()
    if suffix == ".toml":
        try:
            data: Any = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise InputError(path, "", f"malformed TOML: {exc}") from None
    elif suffix in (".yaml", ".yml"):
        data = parse_yaml(text, path)
    else:
        raise InputError(path, "", "--options takes a .toml, .yaml or .yml file")
    if not isinstance(data, dict):
        raise InputError(path, "", "expected a table of settings")
    entries = [(key, key, value) for key, value in data.items()]
    entries += [(f"{name}.{key}", key, value) for name, table in data.items()
                if isinstance(table, dict) for key, value in table.items()]
    for where, key, _ in entries:
        if not isinstance(key, str):
            raise InputError(path, str(where), "expected a setting's name (text)")
    tables = {name: {key: _flag_text(path, f"{name}.{key}", v) for key, v in table.items()}
              for name, table in data.items() if name in METHODS and isinstance(table, dict)}
    flat = {key: _flag_text(path, key, value) for key, value in data.items()
            if key not in tables}
    for name, table in tables.items():
        part_options(METHODS[name], "method", table, path)
    chosen = {**flat, **tables.get(method.name, {})}
    part_options(method, "method", chosen, path)
    return chosen


def simulation_bug(policy: str, error: Exception) -> int:
    """Report a run the verifier rejected or that got stuck: a bug, nothing written."""
    console.print(f"[red bold]simulation bug[/red bold] (gpuplan's engine or policy "
                  f"{policy!r}, not the input; nothing written; please report it with the "
                  "command line):", highlight=False)
    console.print(f"  {error}", markup=False)
    return ExitCode.FAILED


def summary_table(title: str, rows: Sequence[tuple[str, str]]) -> Table:
    """A two-column table of names and values under a title."""
    # Text, not markup: an instance named "[/oops]" is a name, not a style tag.
    table = Table(title=Text(title), show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    for key, value in rows:
        table.add_row(key, Text(value))
    return table


def fmt(value: float | None) -> str:
    """A number for a summary, ``-`` for none."""
    return "-" if value is None else f"{value:.6g}"


def print_unplaced(schedule: Schedule) -> None:
    """List why jobs are unplaced, each distinct reason once."""
    by_reason: dict[str, list[str]] = {}
    for item in schedule.unplaced:
        by_reason.setdefault(item.reason, []).append(item.job)
    for reason, jobs in list(by_reason.items())[:10]:
        more = f" and {len(jobs) - 1} more" if len(jobs) > 1 else ""
        console.print(f"  unplaced {jobs[0]}{more}: {reason}", markup=False)
    if len(by_reason) > 10:
        console.print(f"  ... and {len(by_reason) - 10} more reasons")


def print_verification(verification: Verification, has_plan: bool = True) -> None:
    """Say that every constraint holds, or list the violations; then the topology facts."""
    print_topology(verification)
    if verification.ok:
        console.print("[green]verified[/green]: every constraint holds")
        return
    shown = verification.violations
    if not has_plan:
        # Missing jobs are what "no plan" means; the unplaced list already says why.
        shown = [v for v in shown if v.kind is not ViolationKind.UNPLACED]
        console.print("[yellow]no plan[/yellow]: the placements made are valid; jobs are missing")
    if shown:
        console.print(f"[red]{len(shown)} violation(s):[/red]")
    for violation in shown:
        console.print(f"  {violation}", markup=False)


def print_topology(verification: Verification) -> None:
    """Per topology level, its wholly free domains, and the gangs that span several."""
    facts = verification.topology
    if facts is None:
        return
    for free in facts.free:
        console.print(f"  {free.level}: {free.least} of {free.domains} wholly free at the "
                      f"least, {free.mean:.3g} on average", markup=False)
    spread = [span for span in facts.spans if len(span.domains) > 1]
    for span in spread[:10]:
        console.print(f"  {span.job} spans {len(span.domains)} {span.level}s: "
                      f"{', '.join(span.domains)}", markup=False)
    if len(spread) > 10:
        console.print(f"  ... and {len(spread) - 10} more gangs across domains")


def add_workers(parser: argparse.ArgumentParser, work: str) -> None:
    """Add ``--workers`` and ``--scheduler``: where the tasks of ``work`` run.

    Parameters
    ----------
    parser
        The command's parser.
    work
        What is sent to a Dask scheduler, for the help ("the points").
    """
    parser.add_argument("--workers", type=int, metavar="N",
                        help="local worker processes (default: one per core)")
    parser.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                        help=f"send {work} to this Dask scheduler instead")


def progress_display(counting: str = "", transient: bool = False) -> Progress:
    """Gpuplan's progress bar on stderr: label, bar, done of total, ``counting``, times.

    ``counting`` is a column template after the count (for example ``"jobs, simulated
    {task.fields[simulated]}"``); ``transient`` bars vanish when done.
    """
    extra = (TextColumn(counting),) if counting else ()
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    *extra, TimeElapsedColumn(), TimeRemainingColumn(), console=console,
                    transient=transient)


def run_with_table(label: str, files: Sequence[str],
                   run: Callable[[Callable[[Row], None]], object],
                   write: Callable[[list[Row]], Written]) -> tuple[list[Row], Written]:
    """Run tasks under a progress bar and write their rows, also when interrupted.

    Parameters
    ----------
    label
        The bar's description.
    files
        Each task's ``file`` as its row gives it, in task order: the rows are written in
        that order, whichever finished first.
    run
        Runs the tasks, calling its argument with each finished task's row (the
        ``on_row`` of :func:`gpuplan.harness.batch.run_tasks`).
    write
        Writes the rows (a results table) and returns what it wrote.

    Returns
    -------
    tuple
        The rows in task order and what ``write`` returned.

    Raises
    ------
    InputError
        From ``run`` when the cluster cannot be reached: nothing ran and nothing is
        written, so the tables of an earlier run stay.
    KeyboardInterrupt
        On Ctrl-C, after writing the rows of the tasks that finished.
    """
    rows: list[Row] = []
    with progress_display() as progress:
        bar = progress.add_task(label, total=len(files))

        def advance(row: Row) -> None:
            rows.append(row)
            progress.advance(bar)

        started = True
        try:
            run(advance)
        except InputError:
            # The cluster could not be reached: nothing ran, earlier tables stay.
            started = False
            raise
        finally:
            # Also on Ctrl-C: the table lists what finished, and every file is whole.
            if started:
                order = {file: i for i, file in enumerate(files)}
                rows.sort(key=lambda r: order.get(str(r["file"]), 0))
                written = write(rows)
    return rows, written


#: A setting as library messages name it (:func:`gpuplan.core.errors.setting`).
_SETTING = re.compile(r"`([a-z][a-z0-9_]*)`")


def flag_names(parser: argparse.ArgumentParser) -> dict[str, str]:
    """Each setting a command takes, by its name in the library, and the flag that sets it.

    The options of every registered part (methods, simulator parts, sharing policies)
    by their field names, and the command's own flags by their destinations.
    """
    fields = [f for method in METHODS.values() for f in option_fields(method.options_type)]
    fields += [f for f, _ in (*option_takers().values(), *policy_option_takers().values())]
    # Named by field (round_s) or by flag (round, solver): both are keys of a setting.
    flags = {name: f.metadata["flag"] for f in fields
             for name in (f.metadata["flag"].lstrip("-").replace("-", "_"), f.name)}
    for action in parser._actions:
        long = [s for s in action.option_strings if s.startswith("--")]
        if long:
            flags[action.dest] = long[0]
    return flags


def mark_flags(parser: argparse.ArgumentParser) -> None:
    """Give the parser, and every sub-command of it, the table :func:`shown` reads."""
    parser.set_defaults(flags=flag_names(parser))
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                mark_flags(sub)


def shown(error: InputError, flags: Mapping[str, str]) -> str:
    """An input error as the command line says it: each setting named by its flag.

    A setting the command has no flag for keeps its name.
    """
    return _SETTING.sub(lambda m: flags.get(m[1], m[1]), str(error))
