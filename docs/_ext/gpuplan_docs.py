"""Sphinx directives that generate gpuplan's reference tables and schemas from the code.

Every table here is built at documentation build time from the registries and the option
fields themselves, so the site can never drift from what the code offers:

``gpuplan-schema``
    The JSON Schema ``gpuplan schema instance|schedule`` prints (the same function is
    called), or one of its definitions (``:definition: RunRecord``).
``gpuplan-methods``
    :data:`gpuplan.methods.METHODS`: what each method declares, and its options.
``gpuplan-backends``
    :data:`gpuplan.backends.BACKENDS` and their declared capabilities.
``gpuplan-simulator-parts``
    The simulator's schedulers, placements and admissions, and their options.
``gpuplan-run-flags``
    The flags of a simulated run (``gpuplan simulate`` and ``gpuplan sweep``).
``gpuplan-sharing-policies``
    :data:`gpuplan.sharing.policies.POLICIES` and their options.
``gpuplan-usage``
    The usage line of every command, from gpuplan's own argument parser.
``gpuplan-automodules``
    ``automodule`` for a package and every public module under it, one section each.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib
import io
import json
import os
import pkgutil
import types
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

Cell = str | nodes.Node | Sequence[nodes.Node]


# --- small builders ---------------------------------------------------------------------

def lit(text: str) -> nodes.literal:
    """Inline code."""
    return nodes.literal(text, text)


def lits(items: Iterable[str], sep: str = ", ") -> list[nodes.Node]:
    """Inline code for each item, separated by ``sep``."""
    out: list[nodes.Node] = []
    for k, item in enumerate(items):
        if k:
            out.append(nodes.Text(sep))
        out.append(lit(item))
    return out


def table(headers: Sequence[str], rows: Sequence[Sequence[Cell]],
          widths: Sequence[int] | None = None, title: str | None = None) -> nodes.table:
    """A docutils table of ``headers`` and ``rows`` (text, a node or a list of nodes)."""
    widths = widths or [1] * len(headers)
    tbl = nodes.table(classes=["gpuplan-generated"])
    if title:
        tbl += nodes.title(title, title)
    group = nodes.tgroup(cols=len(headers))
    tbl += group
    for width in widths:
        group += nodes.colspec(colwidth=width)

    def row_of(cells: Sequence[Cell]) -> nodes.row:
        row = nodes.row()
        for cell in cells:
            entry = nodes.entry()
            para = nodes.paragraph()
            if isinstance(cell, str):
                para += nodes.Text(cell)
            elif isinstance(cell, nodes.Node):
                para += cell
            else:
                para.extend(cell)
            entry += para
            row += entry
        return row

    head = nodes.thead()
    head += row_of(headers)
    group += head
    body = nodes.tbody()
    for cells in rows:
        body += row_of(cells)
    group += body
    return tbl


def help_text(text: str) -> str:
    """Help as a user reads it: argparse's ``%%`` escapes undone."""
    return text.replace("%%", "%")


def shown_default(value: Any) -> Cell:
    """A field default as the table shows it."""
    if value is None:
        return "see help"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, tuple):
        return lit(",".join(f"{v:g}" if isinstance(v, float) else str(v) for v in value))
    if isinstance(value, float):
        return lit(f"{value:g}")
    return lit(str(value))


def shown_values(f: dataclasses.Field[Any]) -> Cell:
    """The values an option takes: its choices, its metavar, or a switch."""
    choices = f.metadata.get("choices")
    if choices:
        return lits(choices)
    if isinstance(f.default, bool):
        return "a switch"
    metavar = f.metadata.get("metavar")
    return lit(metavar) if metavar else "text"


def option_rows(owner: str, options_type: type[Any]) -> list[list[Cell]]:
    """One row per :func:`~gpuplan.core.options.option` field of a part."""
    from gpuplan.core.options import option_fields

    rows: list[list[Cell]] = []
    for f in option_fields(options_type):
        rows.append([lit(owner), lit(f.metadata["flag"]), lit(f.name), shown_values(f),
                     shown_default(f.default), help_text(f.metadata["help"])])
    return rows


def first_line(doc: str | None) -> str:
    """The summary line of a docstring."""
    return (doc or "").strip().splitlines()[0] if doc and doc.strip() else ""


# --- directives -------------------------------------------------------------------------

class SchemaDirective(SphinxDirective):
    """The JSON Schema ``gpuplan schema KIND`` prints, generated by the same function."""

    required_arguments = 1
    option_spec = {"definition": directives.unchanged}  # noqa: RUF012

    def run(self) -> list[nodes.Node]:
        """The directive's nodes."""
        from gpuplan.cli.schema import schema

        which = self.arguments[0]
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            schema(argparse.Namespace(which=which))
        text = buffer.getvalue()
        definition = self.options.get("definition")
        if definition:
            document = json.loads(text)
            text = json.dumps(document["$defs"][definition], indent=2) + "\n"
        block = nodes.literal_block(text, text)
        block["language"] = "json"
        return [block]


def features_cell(method: Any, feature: Any, kind: Any) -> Cell:
    """The parts of the cluster model a method plans, static and time-based if they differ."""
    def named(objectives: list[Any]) -> str:
        found = set.intersection(*(set(method.features(k)) for k in objectives))
        return ", ".join(f.value for f in feature if f in found) or "none"

    static = [k for k in kind if k.is_static and k in method.objectives]
    timed = [k for k in kind if not k.is_static and k in method.objectives]
    if static and timed and named(static) != named(timed):
        return f"static: {named(static)}; over time: {named(timed)}"
    return named(static or timed)


def objectives_cell(objectives: frozenset[Any]) -> Cell:
    """A method's objectives: all, static, time-based, or each by name.

    Then the admission objectives it plans (``deadlines-met``), which no set holds.
    """
    from gpuplan.core.objectives import (
        ALL_OBJECTIVES,
        STATIC_OBJECTIVES,
        TIME_OBJECTIVES,
        ObjectiveKind,
    )

    general = objectives & ALL_OBJECTIVES
    admission = [k.value for k in ObjectiveKind if k in objectives - ALL_OBJECTIVES]
    if not general or general not in (ALL_OBJECTIVES, STATIC_OBJECTIVES, TIME_OBJECTIVES):
        return lits(k.value for k in ObjectiveKind if k in objectives)
    named = [k.value for k in ObjectiveKind if k in general]
    text = ("all" if general == ALL_OBJECTIVES else
            f"static ({', '.join(named)})" if general == STATIC_OBJECTIVES else
            f"time-based ({', '.join(named)})")
    if not admission:
        return text
    return [nodes.Text(text + ", and "), *lits(admission)]


class MethodsDirective(SphinxDirective):
    """What each registered method declares, and every option of every method.

    ``:table: methods`` or ``:table: options`` gives one of the two tables; both without.
    """

    option_spec = {"table": lambda text: directives.choice(text, ("methods", "options"))}  # noqa: RUF012

    def run(self) -> list[nodes.Node]:
        """The directive's nodes."""
        from gpuplan.core.instance import Feature
        from gpuplan.core.objectives import ObjectiveKind
        from gpuplan.core.settings import WarmStart
        from gpuplan.methods import DEFAULT_METHOD, METHODS

        wanted = self.options.get("table")
        out: list[nodes.Node] = []
        if wanted in (None, "methods"):
            warm_text = {WarmStart.PLAN: "a plan (a schedule file's, or a heuristic's run "
                         "first)", WarmStart.LANE: "a heuristic beside it on a second lane"}
            rows: list[list[Cell]] = []
            for name, method in METHODS.items():
                warm = "; ".join(warm_text.get(w, w.value) for w in WarmStart
                                 if w in method.warm_starts) or "-"
                label = [lit(name)] + ([nodes.Text(" (default)")] if name == DEFAULT_METHOD
                                       else [])
                rows.append([label, help_text(method.description),
                             objectives_cell(method.objectives),
                             lits(method.backends) if method.backends else "-",
                             warm, "yes" if method.iterative else "-",
                             features_cell(method, Feature, ObjectiveKind)])
            out.append(table(["method", "description", "objectives",
                              "backends (default first)", "warm starts", "iterations",
                              "cluster model"],
                             rows, [8, 30, 16, 10, 14, 6, 16]))
        if wanted in (None, "options"):
            out.append(table(
                ["method", "flag", "key", "values", "default", "help"],
                [row for name, method in METHODS.items()
                 for row in option_rows(name, method.options_type)],
                [8, 10, 10, 18, 10, 40]))
            bare = [name for name, method in METHODS.items()
                    if not option_rows(name, method.options_type)]
            note = nodes.paragraph()
            note += nodes.Text("Methods that take no options of their own: ")
            note.extend(lits(bare))
            note += nodes.Text(".")
            out.append(note)
        return out


class BackendsDirective(SphinxDirective):
    """The registered backends and the capabilities each declares."""

    def run(self) -> list[nodes.Node]:
        """The directive's nodes."""
        from gpuplan.backends import BACKENDS
        from gpuplan.backends.base import Capabilities

        meanings = attribute_docs(Capabilities.__doc__ or "")
        names = list(BACKENDS)
        summary = table(["--solver", "what"],
                        [[lit(name), first_line(cls.__doc__)] for name, cls in BACKENDS.items()],
                        [10, 60], title="Registered backends (gpuplan.backends.BACKENDS)")
        rows: list[list[Cell]] = []
        for f in dataclasses.fields(Capabilities):
            rows.append([lit(f.name), meanings.get(f.name, ""),
                         *("yes" if getattr(BACKENDS[n].capabilities, f.name) else "-"
                           for n in names)])
        matrix = table(["capability", "meaning", *names], rows, [12, 40, *[6] * len(names)],
                       title="Declared capabilities (Backend.capabilities)")
        return [summary, matrix]


def attribute_docs(doc: str) -> dict[str, str]:
    """Name to text of a numpydoc ``Attributes`` section."""
    lines = doc.expandtabs().splitlines()
    out: dict[str, str] = {}
    inside, current = False, None
    indent = None
    for line in lines:
        stripped = line.strip()
        if stripped == "Attributes":
            inside = True
            continue
        if not inside or set(stripped) == {"-"}:
            continue
        this = len(line) - len(line.lstrip())
        if stripped and indent is None:
            indent = this
        if stripped and this == indent:
            current = stripped.split(":")[0].strip()
            out[current] = ""
        elif stripped and current is not None:
            out[current] = (out[current] + " " + stripped).strip()
    return {k: v.replace("(:meth:", "(").replace(":meth:", "").replace(":attr:", "")
            .replace("`", "") for k, v in out.items()}


def parts_tables(registry: Mapping[str, type[Any]], kind: str, flag: str,
                 scheduler: bool = False) -> list[nodes.Node]:
    """The parts of one simulator (or sharing) registry, then their options."""
    rows: list[list[Cell]] = []
    for name, cls in registry.items():
        row: list[Cell] = [lit(name), help_text(cls.description)]
        if scheduler:
            row += [", ".join(sorted(m.value for m in cls.modes)),
                    "yes" if cls.preemptive else "-",
                    "yes" if cls.calls_solver else "-"]
        row.append(lits(f.metadata["flag"] for f in option_fields_of(cls)) or "-")
        rows.append(row)
    headers = [f"{kind} ({flag})", "description"]
    widths = [12, 50]
    if scheduler:
        headers += ["modes", "preemptive", "calls a solver"]
        widths += [8, 6, 6]
    headers.append("options")
    widths.append(12)
    out: list[nodes.Node] = [table(headers, rows, widths)]
    options = [row for name, cls in registry.items()
               for row in option_rows(name, cls.options_type)]
    if options:
        out.append(table(["part", "flag", "key", "values", "default", "help"], options,
                         [12, 10, 10, 12, 10, 40], title=f"Options of the {kind}s"))
    return out


def option_fields_of(cls: type[Any]) -> list[dataclasses.Field[Any]]:
    """The option fields of a part class."""
    from gpuplan.core.options import option_fields

    return option_fields(cls.options_type)


class SimulatorPartsDirective(SphinxDirective):
    """The simulator's registered schedulers, placements and admissions, with options."""

    option_spec = {"kind": directives.unchanged}  # noqa: RUF012

    def run(self) -> list[nodes.Node]:
        """The directive's nodes."""
        from gpuplan.simulate.elastic.policies import ELASTIC_POLICIES
        from gpuplan.simulate.policies import ADMISSIONS, PLACEMENTS, SCHEDULERS

        kinds = {"scheduler": (SCHEDULERS, "--policy", True),
                 "placement": (PLACEMENTS, "--placement", False),
                 "admission": (ADMISSIONS, "--admission", False),
                 "elastic policy": (ELASTIC_POLICIES, "--policy", False)}
        wanted = self.options.get("kind")
        out: list[nodes.Node] = []
        for kind, (registry, flag, is_scheduler) in kinds.items():
            if wanted and kind != wanted:
                continue
            out += parts_tables(registry, kind, flag, scheduler=is_scheduler)
        return out


class RunFlagsDirective(SphinxDirective):
    """The flags of a simulated run besides its parts' options, from the CLI's parser."""

    def run(self) -> list[nodes.Node]:
        """The directive's nodes."""
        from gpuplan.cli.simulate import run_parser, workload_parser
        from gpuplan.simulate.policies import option_takers

        part_flags = set(option_takers())
        rows: list[list[Cell]] = []
        actions = [*run_parser()._actions, *workload_parser()._actions]
        for action in actions:
            flags = [s for s in action.option_strings if s.startswith("--")]
            if not flags or flags[0] in part_flags:
                continue
            values: Cell = (lits(str(c) for c in action.choices) if action.choices
                            else lit(action.metavar) if action.metavar else "a switch")
            rows.append([lit(flags[0]), values, help_text(action.help or "")])
        return [table(["flag", "values", "help"], rows, [12, 14, 50])]


class SharingPoliciesDirective(SphinxDirective):
    """The registered GPU-sharing placement policies, with their options."""

    def run(self) -> list[nodes.Node]:
        """The directive's nodes."""
        from gpuplan.sharing.policies import POLICIES

        return parts_tables(POLICIES, "policy", "--policy")


class UsageDirective(SphinxDirective):
    """The usage line of every command (or of those named), from gpuplan's own parser."""

    optional_arguments = 20

    def run(self) -> list[nodes.Node]:
        """The directive's nodes."""
        from gpuplan.cli import build_parser

        wanted = set(self.arguments)
        saved = os.environ.get("COLUMNS")
        os.environ["COLUMNS"] = "92"
        try:
            text = "\n\n".join(usage_lines(build_parser(), wanted))
        finally:
            if saved is None:
                del os.environ["COLUMNS"]
            else:
                os.environ["COLUMNS"] = saved
        block = nodes.literal_block(text, text)
        block["language"] = "text"
        return [block]


def usage_lines(parser: argparse.ArgumentParser, wanted: set[str]) -> list[str]:
    """``usage:`` of each sub-command (and sub-sub-command), without the word ``usage:``."""
    lines = []
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        for name, sub in action.choices.items():
            if wanted and name not in wanted:
                continue
            nested = [a for a in sub._actions if isinstance(a, argparse._SubParsersAction)]
            if nested:
                lines += usage_lines(sub, set())
            else:
                usage = sub.format_usage().removeprefix("usage: ").rstrip().splitlines()
                # Continuation lines are aligned after "usage: ", which is dropped.
                lines.append("\n".join([usage[0], *(line[len("usage: "):] for line in
                                                     usage[1:])]))
    return lines


class AutomodulesDirective(SphinxDirective):
    """``automodule`` for a package (or module) and every public module below it."""

    required_arguments = 1
    option_spec = {"top-only": directives.flag}  # noqa: RUF012

    def run(self) -> list[nodes.Node]:
        """The directive's nodes."""
        name = self.arguments[0]
        modules = [name] if "top-only" in self.options else public_modules(name)
        out: list[nodes.Node] = []
        for module in modules:
            section = nodes.section(ids=[nodes.make_id(f"module-page-{module}")])
            section += nodes.title(module, "", lit(module))
            self.state.document.note_implicit_target(section)
            # autodoc writes reStructuredText, which MyST parses only inside eval-rst. Each
            # object is documented once, where it is defined (ignore-module-all): a package's
            # re-exports are listed as links to it, so that no reference is ambiguous.
            lines = ["```{eval-rst}", f".. automodule:: {module}", "   :ignore-module-all:",
                     "```", ""]
            again = reexports(module)
            if again:
                lines.append("Re-exported here (import them from this package): "
                             + ", ".join(f"{{py:obj}}`{name} <{target}>`"
                                         for name, target in again) + ".")
            self.state.nested_parse(StringList(lines, source=f"<gpuplan-automodules {name}>"),
                                    self.content_offset, section)
            out.append(section)
        return out


def reexports(name: str) -> list[tuple[str, str]]:
    """The names of a module's ``__all__`` defined elsewhere, with where they are defined."""
    module = importlib.import_module(name)
    found = []
    for attr in getattr(module, "__all__", ()):
        obj = getattr(module, attr)
        home = getattr(obj, "__module__", None)
        if isinstance(obj, type | types.FunctionType) and home and home != name:
            found.append((attr, f"{home}.{obj.__qualname__}"))
    return found


def public_modules(name: str) -> list[str]:
    """``name`` and, for a package, every module below it whose path has no ``_`` part."""
    module = importlib.import_module(name)
    found = [name]
    if hasattr(module, "__path__"):
        for info in pkgutil.walk_packages(module.__path__, prefix=f"{name}."):
            if not any(part.startswith("_") for part in info.name.split(".")):
                found.append(info.name)
    return found


def split_attribute_names(app: Sphinx, what: str, name: str, obj: Any, options: Any,
                          lines: list[str]) -> None:
    """Give each name of a numpydoc ``a, b : type`` Attributes entry an entry of its own.

    numpydoc allows several names in one entry (gpuplan's docstrings use it for parallel
    arrays: ``job, gpu_type, start, end``); napoleon splits them in Parameters sections but
    reads an Attributes entry as one name, which renders ``end (job, gpu_type, start,)``:
    a cross-reference to a type called ``start``. Runs before napoleon.
    """
    out: list[str] = []
    k = 0
    inside = False
    while k < len(lines):
        line = lines[k]
        underlined = (k + 1 < len(lines) and line.strip()
                      and set(lines[k + 1].strip()) == {"-"}
                      and len(lines[k + 1].strip()) >= len(line.strip()))
        if underlined:
            inside = line.strip() == "Attributes"
            out += [line, lines[k + 1]]
            k += 2
            continue
        names, _, kind = line.partition(" : ")
        if inside and line and not line[0].isspace() and ", " in names:
            body = []
            k += 1
            while k < len(lines) and (not lines[k] or lines[k][0].isspace()):
                body.append(lines[k])
                k += 1
            for each in names.split(","):
                out.append(each.strip() + (f" : {kind}" if kind else ""))
                out += body
            continue
        out.append(line)
        k += 1
    lines[:] = out


def title_results(app: Sphinx, docname: str, source: list[str]) -> None:
    """Give a results page without a heading its file name as title.

    ``docs/results/*.md`` are the benchmark scripts' output, quoted by the benchmarks page;
    some are a bare table, which the navigation could not name.
    """
    if docname.startswith("results/") and not source[0].lstrip().startswith("# "):
        name = docname.removeprefix("results/")
        source[0] = f"# Results: `{name}`\n\n" + source[0]


def setup(app: Sphinx) -> dict[str, Any]:
    """Register the directives, and the Attributes fix before napoleon reads docstrings."""
    app.connect("autodoc-process-docstring", split_attribute_names, priority=400)
    app.connect("source-read", title_results)
    app.add_directive("gpuplan-schema", SchemaDirective)
    app.add_directive("gpuplan-methods", MethodsDirective)
    app.add_directive("gpuplan-backends", BackendsDirective)
    app.add_directive("gpuplan-simulator-parts", SimulatorPartsDirective)
    app.add_directive("gpuplan-run-flags", RunFlagsDirective)
    app.add_directive("gpuplan-sharing-policies", SharingPoliciesDirective)
    app.add_directive("gpuplan-automodules", AutomodulesDirective)
    app.add_directive("gpuplan-usage", UsageDirective)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
