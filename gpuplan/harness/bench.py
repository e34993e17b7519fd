"""Methods side by side on a suite of instances (``gpuplan bench``).

A suite is a folder of instance files, or a named set of ``../shared/benchmarks/`` with its
known values (:data:`NAMED`). A folder's :data:`BEST_KNOWN` table (as in
``instances/library/``) gives its files' best known values, which
:func:`improve_best_known` raises only to strictly better verified plans and tighter
bounds. Every (instance, method) pair is planned with the same time
limit through :func:`~gpuplan.planning.plan`, so every plan is verified, and becomes a row:
objective, reference (the best known value, or else the tightest bound any method proved),
gap to it, bound, solve seconds, seconds with the checks around the solve (infeasibility
reasons, verification), verified. A method is given as ``NAME[@WARM][:KEY=VALUE]...``
(:func:`parse_method`), so that variants of one method (a warm start, another backend, a
policy, another objective) run side by side. The benchmark scripts in
``scripts/`` are suites and method lists for this harness.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import logging
import re
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from gpuplan.core.errors import InputError, setting
from gpuplan.core.files import read_text, write_text_atomic
from gpuplan.core.instance import Instance
from gpuplan.core.objectives import ObjectiveKind
from gpuplan.core.options import part_options, takes
from gpuplan.core.settings import RunSettings
from gpuplan.harness.batch import expand_inputs
from gpuplan.methods import METHODS
from gpuplan.planning import plan
from gpuplan.readers import read_instance

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Problem:
    """One instance of a suite: how to read it, its best known value if any, its group.

    ``group`` gathers problems for the summary (a GAP type, or the folder). ``objective``
    is the objective ``best`` is a value of; None: the file's.
    """

    name: str
    load: Callable[[], Instance]
    best: float | None
    group: str = ""
    objective: ObjectiveKind | None = None

    def loaded(self) -> Problem:
        """The same problem, read now: every later load returns that one instance."""
        instance = self.load()
        return dataclasses.replace(self, load=lambda: instance)


def _gap_set(root: Path, family: str, sense: Literal["min", "max"] = "min") -> list[Problem]:
    """GAP problems of ``known_values.csv`` whose file is in ``family``, in one sense."""
    table = root / "gap" / "known_values.csv"
    problems = []
    for row in csv.DictReader(io.StringIO(read_text(table), newline="")):
        file = row["file"]
        kind = ("gap1-12" if file[9:].split(".")[0].isdigit() and file.startswith("orlib/")
                else "chu-beasley" if file.startswith("orlib/") else "yagiura")
        if kind != family:
            continue
        spec = f"{root / 'gap' / file}#{row['index_in_file']}"
        known = row["opt_max"] if sense == "max" else row["best_known_min"]
        group = (f"{family} {sense}" if family == "gap1-12"
                 else f"{family} {row['instance'][0].upper()}")
        problems.append(Problem(row["instance"], _reader(spec, "orlib-gap", sense),
                                float(known) if known else None, group))
    return problems


def _reader(spec: str, file_format: str,
            sense: Literal["min", "max"] = "min") -> Callable[[], Instance]:
    def load() -> Instance:
        return read_instance(spec, file_format=file_format, sense=sense)
    return load


#: Named suites and the folder under the benchmarks root they come from.
NAMED: dict[str, Callable[[Path], list[Problem]]] = {
    "gap1-12": lambda root: _gap_set(root, "gap1-12"),
    "gap1-12-max": lambda root: _gap_set(root, "gap1-12", "max"),
    "chu-beasley": lambda root: _gap_set(root, "chu-beasley"),
    "yagiura": lambda root: _gap_set(root, "yagiura"),
}


def load_suite(suite: str, benchmarks: Path, only: Sequence[str] = ()) -> list[Problem]:
    """The problems of a named suite or of a folder (or glob) of instance files.

    Raises
    ------
    InputError
        If the suite is neither a known name nor a path with instance files.
    """
    if suite in NAMED:
        if not (benchmarks / "gap" / "known_values.csv").exists():
            raise InputError(setting("benchmarks"), "", f"suite {suite!r} needs the shared "
                             f"benchmarks, not found under {benchmarks}")
        problems = NAMED[suite](benchmarks)
    else:
        paths = [p for p in expand_inputs([suite]) if p.exists()]
        if not paths:
            raise InputError(suite, "", f"not a suite ({', '.join(NAMED)}) nor a folder or "
                             "pattern with instance files")
        problems = []
        tables: dict[Path, dict[str, Record]] = {}
        for path in paths:
            if path.parent not in tables:
                tables[path.parent] = read_best_known(path.parent / BEST_KNOWN)
            record = tables[path.parent].get(path.stem)
            problems.append(Problem(
                path.stem, _reader(str(path), "gpuplan"),
                None if record is None else record.value, path.parent.name,
                None if record is None else record.objective))
    if only:
        problems = [p for p in problems if p.name in set(only)]
    return problems


#: The table of a suite folder with its files' best known values and bounds.
BEST_KNOWN = "best_known.csv"
#: Its columns.
BEST_KNOWN_FIELDS = ("instance", "objective", "best_known", "best_method", "bound",
                     "bound_method")


@dataclass(frozen=True)
class Record:
    """An instance's best known value and best proven bound, and the methods that found them.

    Attributes
    ----------
    objective
        The objective both are values of.
    value, method
        The best objective of a verified plan, and the method spec that planned it; None
        and ``""`` without one.
    bound, bound_method
        The tightest proven bound (lower when minimising), and the method spec that
        proved it; None and ``""`` without one.
    """

    objective: ObjectiveKind
    value: float | None = None
    method: str = ""
    bound: float | None = None
    bound_method: str = ""


def read_best_known(path: Path) -> dict[str, Record]:
    """The records of a :data:`BEST_KNOWN` table by instance name; none if there is no file.

    Raises
    ------
    InputError
        Naming the file: one that is not a regular file (a pipe, a device) or cannot be
        read, and the line of a row whose objective or numbers do not read.
    """
    if not path.exists():
        return {}
    records = {}
    rows = csv.DictReader(io.StringIO(read_text(path), newline=""))
    for line, row in enumerate(rows, start=2):
        try:
            records[row["instance"]] = Record(
                ObjectiveKind(row["objective"]),
                float(row["best_known"]) if row["best_known"] else None, row["best_method"],
                float(row["bound"]) if row["bound"] else None, row["bound_method"])
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(str(path), f"line {line}", f"not a best-known row: {exc}"
                             ) from None
    return records


def write_best_known(path: Path, records: Mapping[str, Record]) -> None:
    """Write the records as a :data:`BEST_KNOWN` table, by instance name, atomically."""
    lines = [",".join(BEST_KNOWN_FIELDS)]
    for name in sorted(records):
        record = records[name]
        lines.append(",".join([name, record.objective.value,
                               "" if record.value is None else repr(record.value), record.method,
                               "" if record.bound is None else repr(record.bound),
                               record.bound_method]))
    write_text_atomic(path, "\n".join(lines) + "\n")


def _better(new: float, old: float | None, sense: str) -> bool:
    """Whether ``new`` is strictly better than ``old`` in ``sense``, beyond float noise.

    A bound is better in the opposite sense of its objective (larger when minimising).
    """
    if old is None:
        return True
    tolerance = 1e-9 * max(abs(old), 1.0)
    return new < old - tolerance if sense == "min" else new > old + tolerance


def improve_best_known(records: Mapping[str, Record], rows: Sequence[dict[str, Any]]
                       ) -> tuple[dict[str, Record], list[str]]:
    """The records raised by bench rows where these are strictly better; never worsened.

    A row counts for its instance's record when it planned the record's objective (a
    new instance gets a record of the first objective its rows planned): its verified
    plan's objective when strictly better than the best known value, its bound when
    strictly tighter than the best bound. A bound that a verified plan beats is not a
    valid bound: it is refused and logged as a bug, never recorded.

    Returns
    -------
    tuple
        The new records, and one line per change (instance, what, old, new, method).
    """
    updated = dict(records)
    changes: list[str] = []
    for row in rows:
        if row.get("status") in (None, "error") or not row.get("objective_kind"):
            continue
        name, kind = row["instance"], ObjectiveKind(row["objective_kind"])
        record = updated.get(name, Record(kind))
        if record.objective is not kind:
            continue
        sense, tighter = kind.sense, "max" if kind.sense == "min" else "min"
        value, bound = row.get("objective"), row.get("bound")
        if value is not None and row.get("verified") and _better(value, record.value, sense):
            changes.append(f"{name}: best known {record.value} -> {value:g} ({row['method']})")
            record = dataclasses.replace(record, value=float(value), method=row["method"])
        if bound is not None and _better(bound, record.bound, tighter):
            if record.value is not None and _better(bound, record.value, tighter):
                logger.error("%s: %s reports bound %g beyond the verified value %g: not a "
                             "valid bound, not recorded", name, row["method"], bound,
                             record.value)
            else:
                changes.append(f"{name}: bound {record.bound} -> {bound:g} ({row['method']})")
                record = dataclasses.replace(record, bound=float(bound),
                                             bound_method=row["method"])
        updated[name] = record
    return updated, changes


@dataclass(frozen=True)
class MethodSpec:
    """A method as a bench runs it: ``NAME[@WARM][:KEY=VALUE]...``.

    Attributes
    ----------
    label
        The spec as written; the row's method.
    name
        A registered method (:data:`~gpuplan.methods.METHODS`).
    warm
        The heuristic that warm-starts it, or None.
    settings
        The method's own options it sets, by name or flag, as text (``backend=cpsat``);
        checked against the method when the spec is read.
    objective
        The objective to plan for instead of the file's (``objective=min-gpus``), or None.
    """

    label: str
    name: str
    warm: str | None
    settings: Mapping[str, str]
    objective: ObjectiveKind | None = None


def split_specs(text: str) -> list[str]:
    """The method specs of ``--methods``, split at the commas that start a new method.

    A comma inside a value (``sa:moves=shift,swap``) continues the spec: a piece that does
    not start with a registered method's name belongs to the one before it.
    """
    specs: list[str] = []
    for piece in text.split(","):
        head = re.split(r"[@:]", piece, maxsplit=1)[0]
        if specs and head not in METHODS:
            specs[-1] += "," + piece
        elif piece:
            specs.append(piece)
    return specs


def parse_method(spec: str) -> MethodSpec:
    """Read ``NAME[@WARM][:KEY=VALUE]...``, e.g. ``milp@sa`` or ``milp:backend=cpsat``.

    ``KEY`` is ``objective`` (plan the instance for another objective, as ``gpuplan solve
    --objective`` does) or an option of the method (:func:`~gpuplan.core.options.option`),
    by name or flag, such as ``backend`` or ``solver``, ``policy``, ``partitions`` or
    ``crossover``; its value is read as the flag's would be.

    Raises
    ------
    InputError
        Naming ``--methods`` or the spec and what is wrong with it: an unknown method, a
        warm start it does not take, a pair that is not ``KEY=VALUE``, an unknown
        objective, an option the method does not take (with those it does) or a value
        it refuses.
    """
    head, *pairs = spec.split(":")
    name, _, warm = head.partition("@")
    if name not in METHODS:
        raise InputError(setting("methods"), "", f"unknown method {name!r} in {spec!r}; "
                         f"choose from {', '.join(METHODS)}")
    method = METHODS[name]
    if warm:
        # As planning takes them: a method that declares warm starts, from a heuristic
        # that has none of its own.
        takers = [m.name for m in METHODS.values() if m.warm_starts]
        heuristics = [m.name for m in METHODS.values() if not m.warm_starts]
        if not method.warm_starts or warm not in heuristics:
            raise InputError(setting("methods"), "", f"{spec!r}: a warm start NAME@WARM takes NAME "
                             f"from {', '.join(takers)} and WARM from {', '.join(heuristics)}")
    settings: dict[str, str] = {}
    objective = None
    for pair in pairs:
        key, equals, text = pair.partition("=")
        if not key or not equals:
            raise InputError(setting("methods"), "", f"{spec!r}: {pair!r} is not KEY=VALUE "
                             f"with KEY objective or an option of {name}: "
                             f"{takes(method.options_type, keys=True)}")
        if key == "objective":
            try:
                objective = ObjectiveKind(text)
            except ValueError:
                raise InputError(setting("methods"), "", f"{spec!r}: unknown objective {text!r}; "
                                 f"choose from {', '.join(k.value for k in ObjectiveKind)}"
                                 ) from None
        else:
            settings[key] = text
    if objective is not None and objective not in method.objectives:
        able = [m.name for m in METHODS.values() if objective in m.objectives]
        raise InputError(setting("methods"), "", f"{spec!r}: method {name!r} cannot plan objective "
                         f"{objective.value!r}; methods that can: {', '.join(able)}")
    try:
        part_options(method, "method", settings, source=spec)
    except InputError as exc:
        if exc.source == spec:
            raise
        # A value the option refuses names its flag: say which spec it came from.
        raise InputError(spec, exc.source, exc.message) from None
    return MethodSpec(spec, name, warm or None, settings, objective)


def run_bench(problems: Sequence[Problem], specs: Sequence[MethodSpec], settings: RunSettings,
              on_row: Callable[[dict[str, Any]], None] | None = None) -> list[dict[str, Any]]:
    """Plan every problem with every method (:func:`parse_method` specs); one row each.

    Parameters
    ----------
    problems
        The suite (:func:`load_suite`).
    specs
        The methods, each with its options and warm start.
    settings
        The limits of every solve: one time limit, seed and threads for all.
    on_row
        Called with each row as it is made (progress reporting).

    An instance that cannot be read or planned is a row with status ``error``; so is a
    method that fails with an exception (a bug, logged with its traceback), and the run
    goes on with the next.
    """
    rows = []
    for problem in problems:
        try:
            instance = problem.load()
        except InputError as exc:
            rows.append({"instance": problem.name, "group": problem.group, "method": "-",
                         "status": "error", "error": str(exc)})
            continue
        # A recorded value of another objective than the file's is stale: none then.
        known = problem.best if problem.objective in (None, instance.objective) else None
        for spec in specs:
            row: dict[str, Any]
            began = time.perf_counter()
            try:
                planned = (instance if spec.objective is None
                           else instance.with_objective(spec.objective, setting("methods")))
                schedule = plan(planned, spec.name, spec.settings, settings=settings,
                                warm=spec.warm)
            except InputError as exc:
                row = {"instance": problem.name, "group": problem.group, "method": spec.label,
                       "status": "error", "error": str(exc)}
            except Exception as exc:  # one method's bug must not end the run
                logger.exception("%s on %s failed", spec.label, problem.name)
                row = {"instance": problem.name, "group": problem.group, "method": spec.label,
                       "status": "error", "error": f"failed: {type(exc).__name__}: {exc}"}
            else:
                value = schedule.objective
                best = known if planned.objective is instance.objective else None
                row = {
                    "instance": problem.name, "group": problem.group, "method": spec.label,
                    "status": schedule.status.value, "objective": value, "best_known": best,
                    "gap_pct": gap_pct(value, best),
                    "objective_kind": planned.objective.value,
                    "bound": schedule.bound, "seconds": schedule.wall_time_s,
                    "verified": bool(schedule.verification and schedule.verification.ok
                                     and schedule.status.has_plan),
                    "solver": schedule.solver, "placed": len(schedule.segments),
                    "total_s": time.perf_counter() - began,
                }
            rows.append(row)
            if on_row is not None:
                on_row(row)
        # Without a best known value for the objective planned, measure against bounds,
        # which compare only between runs of one objective.
        mine = rows[len(rows) - len(specs):]
        for kind in {spec.objective or instance.objective for spec in specs}:
            if known is None or kind is not instance.objective:
                _gap_to_best_bound([row for row, spec in zip(mine, specs, strict=True)
                                    if (spec.objective or instance.objective) is kind],
                                   kind.sense)
    return rows


def gap_pct(value: float | None, best: float | None) -> float | None:
    """The gap of a value to the best known, in % of the best known; None without both."""
    if value is None or not best:
        return None
    return 100.0 * abs(value - best) / abs(best)


def _gap_to_best_bound(rows: list[dict[str, Any]], sense: str) -> None:
    """Measure each row against the tightest bound any method proved (in place).

    For instances without a best known value: the gap is then an upper limit on how far
    each plan is from the optimum.
    """
    bounds = [r["bound"] for r in rows if r.get("bound") is not None]
    if not bounds:
        return
    reference = max(bounds) if sense == "min" else min(bounds)
    for row in rows:
        row["reference_is_bound"] = True
        row["best_known"] = reference
        value = row.get("objective")
        if value is not None and reference:
            above = value - reference if sense == "min" else reference - value
            # A plan at the bound may differ from it in the last bits of a float.
            tolerance = 1e-9 * abs(reference)
            row["gap_pct"] = 100.0 * (0.0 if abs(above) <= tolerance else above) / abs(
                reference)


#: Column titles of a bench table.
COLUMNS = ("instance", "method", "status", "objective", "reference", "gap %", "bound",
           "seconds", "with checks s", "verified")


def cells(row: dict[str, Any]) -> list[str]:
    """A row's values as text, in :data:`COLUMNS` order."""
    def text(value: Any, digits: int = 6) -> str:
        if value is None:
            return "-"
        if isinstance(value, bool):
            return "yes" if value else "no"
        if isinstance(value, float):
            return f"{value:.{digits}g}"
        return str(value)

    # An error row says why, in place of a status: what cannot work is refused per
    # instance by plan() (a backend the instance's model needs more of, a space-sharing
    # instance without colocation data).
    status = (f"error: {row['error']}".replace("|", "/") if row.get("error")
              else text(row["status"]))
    return [text(row["instance"]), text(row["method"]), status,
            text(row.get("objective")),
            text(row.get("best_known")) + (" (bound)" if row.get("reference_is_bound") else ""),
            text(row.get("gap_pct"), 3), text(row.get("bound")),
            text(row.get("seconds"), 3), text(row.get("total_s"), 3), text(row.get("verified"))]


def markdown(rows: Sequence[dict[str, Any]]) -> str:
    """The rows as a Markdown table."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|---|---|---|---:|---:|---:|---:|---:|---:|---|"]
    lines += ["| " + " | ".join(cells(r)) + " |" for r in rows]
    return "\n".join(lines) + "\n"


#: Column titles of a bench summary.
SUMMARY_COLUMNS = ("group", "method", "problems", "verified plans", "mean gap %",
                   "max gap %", "optimal", "mean seconds")


def summary(rows: Sequence[dict[str, Any]]) -> list[list[str]]:
    """Per (group, method), in the order first met: counts, gaps to best known, time."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row.get("group", ""), row["method"]), []).append(row)
    table = []
    for (group, method), items in groups.items():
        gaps = [r["gap_pct"] for r in items if r.get("gap_pct") is not None]
        seconds = [r["seconds"] for r in items if r.get("seconds") is not None]
        table.append([group or "-", method, str(len(items)),
                      str(sum(bool(r.get("verified")) for r in items)),
                      f"{statistics.mean(gaps):.3g}" if gaps else "-",
                      f"{max(gaps):.3g}" if gaps else "-",
                      str(sum(r["status"] == "optimal" for r in items)),
                      f"{statistics.mean(seconds):.3g}" if seconds else "-"])
    return table


def summary_markdown(rows: Sequence[dict[str, Any]]) -> str:
    """:func:`summary` as a Markdown table."""
    lines = ["| " + " | ".join(SUMMARY_COLUMNS) + " |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    lines += ["| " + " | ".join(cells) + " |" for cells in summary(rows)]
    return "\n".join(lines) + "\n"


#: A table of a results file quoted on a page. The comment names the file, relative to the
#: page, and the table's number in it (1 is the first); the quote runs to the end marker.
QUOTE = re.compile(r"(?P<open><!-- table (?P<file>\S+) (?P<index>\d+) -->\n)(?P<body>.*?)"
                   r"(?P<close><!-- end table -->)", re.S)


def markdown_tables(text: str) -> list[str]:
    """The Markdown tables of a text in order: each a run of lines that start with ``|``."""
    tables: list[str] = []
    run: list[str] = []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            run.append(line)
        elif run:
            tables.append("\n".join(run) + "\n")
            run = []
    return tables


def quote_tables(page: Path) -> str:
    """The page's text with every quoted table replaced by that table of its results file.

    The results files are what ``gpuplan bench -o`` and the benchmark scripts write, so a
    page refreshed this way shows the harness's numbers and nothing typed by hand.

    Parameters
    ----------
    page
        A Markdown page with ``<!-- table FILE N -->`` ... ``<!-- end table -->`` quotes.

    Raises
    ------
    InputError
        When a quoted file does not exist, cannot be read (a pipe, a device) or has fewer
        than N tables, or the page cannot be read.
    """
    def quote(match: re.Match[str]) -> str:
        source = page.parent / match["file"]
        if not source.exists():
            raise InputError(str(page), match["file"], "the quoted results file does not exist")
        tables = markdown_tables(read_text(source))
        index = int(match["index"])
        if not 1 <= index <= len(tables):
            raise InputError(str(page), match["file"], f"table {index} is quoted, but the file "
                             f"has {len(tables)} tables")
        return match["open"] + tables[index - 1] + match["close"]

    return QUOTE.sub(quote, read_text(page))


def write_results(out: Path, text: str, page: Path | None = None) -> None:
    """Write a results file atomically, then refresh the tables ``page`` quotes (if given).

    Parameters
    ----------
    out
        The results file (Markdown).
    text
        Its contents.
    page
        A page quoting tables of results files, such as ``docs/benchmarks.md``.
    """
    write_text_atomic(out, text)
    if page is not None:
        refresh_quotes(page)


def refresh_quotes(page: Path) -> bool:
    """Rewrite ``page`` with its quoted tables refreshed (:func:`quote_tables`).

    Returns whether the page changed.
    """
    text = quote_tables(page)
    if text == read_text(page):
        return False
    write_text_atomic(page, text)
    return True
