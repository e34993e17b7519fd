"""What every planning method declares and receives: the protocol, its options, its context.

A method (``gpuplan solve --method NAME``) declares, PyVRP- and cvxpy-style, what it takes
and what it can do: its own typed options (a frozen dataclass whose fields carry their
command-line flag, :func:`option`), the objectives it plans, the backends it can hand a
program to, the warm starts it uses and whether it counts iterations. The CLI's flags,
``gpuplan bench`` specs (``NAME:KEY=VALUE``), options files and :func:`~gpuplan.planning.plan`
all go through :func:`build_options`, so a setting the method does not take is refused the
same way everywhere.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar, Protocol

import numpy as np

from gpuplan.backends.base import Capabilities, Limits
from gpuplan.budget import Budget
from gpuplan.errors import InputError
from gpuplan.instance import FloatArray, Instance, IntArray, ObjectiveKind
from gpuplan.readers.instance_file import MAX_TIME_S
from gpuplan.solution import Result
from gpuplan.status import OPTIMAL_GAP, Status, relative_gap

#: Seeds every method takes (CP-SAT's and numpy's common range).
MAX_SEED = 2**31 - 1
#: Cores of this machine: the most solver threads a solve may ask for (more only thrash;
#: HiGHS aborted with 1000 under a memory cap).
CORES = max(1, os.cpu_count() or 1)
#: Threads a solve uses unless told otherwise.
DEFAULT_THREADS = min(2, CORES)
#: The most iterations ``--iterations`` takes.
MAX_ITERATIONS = 10**12


class WarmStart(StrEnum):
    """What a method can start from (``gpuplan solve --warm-start``)."""

    #: A plan to start from: a schedule file's, or a heuristic's run first.
    PLAN = "plan"
    #: A heuristic run beside the method on a second lane, its plan taken as an incumbent.
    LANE = "lane"


def option(default: Any, flag: str, help: str, *, parse: Callable[[str], Any] | None = None,
           choices: Sequence[str] | None = None, metavar: str | None = None) -> Any:
    """A method option: a dataclass field that knows its flag, help and parser.

    Parameters
    ----------
    default
        The default, written here once for the API, the CLI and bench specs.
    flag
        The command-line flag (``--policy``).
    help
        One line for ``--help``.
    parse
        Turns the text of a flag or spec value into the value; None: ``choices`` or text.
    choices
        The names the value may take.
    metavar
        How ``--help`` shows the value.
    """
    return field(default=default, metadata={
        "flag": flag, "help": help, "parse": parse,
        "choices": None if choices is None else tuple(choices), "metavar": metavar,
    })


def check_range(name: str, value: float | None, low: float, high: float,
                closed: bool = True) -> None:
    """Refuse ``value`` outside ``[low, high]`` (``(low, high]`` when not ``closed``).

    Raises
    ------
    InputError
        Naming the setting and its range.
    """
    if value is None:
        return
    if (value >= low if closed else value > low) and value <= high:
        return
    shown = f"{high:g}" if isinstance(high, float) else str(high)
    raise InputError(name, "", f"{value!r} is out of range: expected "
                     f"{'from' if closed else 'above'} {low} to {shown}")


@dataclass(frozen=True)
class RunSettings:
    """What every method takes: the limits of one solve.

    Attributes
    ----------
    time_limit_s
        Wall-clock seconds; the method returns the best plan found when they are spent.
    iterations
        Steps of an iterative method (``Method.iterative``); None: until the time limit,
        or the method's default without one.
    seed
        Random seed, for reproducible runs.
    threads
        Threads the method and its backend may use.
    gap
        Relative gap at which a solver may stop and call its plan optimal.
    """

    time_limit_s: float | None = None
    iterations: int | None = None
    seed: int = 0
    threads: int = DEFAULT_THREADS
    gap: float = OPTIMAL_GAP

    def __post_init__(self) -> None:
        """Refuse settings out of range, whoever gives them (CLI, bench specs, the API)."""
        check_range("--time-limit", self.time_limit_s, 0, MAX_TIME_S, closed=False)
        check_range("--iterations", self.iterations, 1, MAX_ITERATIONS)
        check_range("--seed", self.seed, 0, MAX_SEED)
        check_range("--threads", self.threads, 1, CORES)
        check_range("gap", self.gap, 0, 1.0)


@dataclass(frozen=True)
class Context:
    """What a method receives besides its options: the budget and the run's settings.

    Attributes
    ----------
    budget
        The solve's one time budget; every part reads it or a :meth:`~Budget.part` of it.
    seed, threads, gap
        From :class:`RunSettings`.
    start
        A whole plan to start from (a schedule file's), already verified.
    warm
        A heuristic to start from (``--warm-start greedy|ga|sa``): called with a budget, it
        returns its plan. A method runs it first, or beside its own search when it
        declares :attr:`WarmStart.LANE` and can.
    """

    budget: Budget
    seed: int = 0
    threads: int = DEFAULT_THREADS
    gap: float = OPTIMAL_GAP
    start: Result | None = None
    warm: Callable[[Budget], Result] | None = None

    def limits(self, budget: Budget | None = None) -> Limits:
        """The backend limits of this context, for its budget or a part of it."""
        return Limits(budget or self.budget, self.threads, self.seed, self.gap)

    def with_budget(self, budget: Budget) -> Context:
        """The same context for a part of the work with a budget of its own."""
        return dataclasses.replace(self, budget=budget)


class Method(Protocol):
    """A planning method: turns an instance into a :class:`~gpuplan.solution.Result`."""

    #: Registry name, as given to ``gpuplan solve --method``.
    name: ClassVar[str]
    #: One line for ``--help``.
    description: ClassVar[str]
    #: The method's own options: a frozen dataclass of :func:`option` fields.
    options_type: ClassVar[type[Any]]
    #: The objectives it plans.
    objectives: ClassVar[frozenset[ObjectiveKind]]
    #: The backends it can hand its programs to, default first; () if it solves none.
    backends: ClassVar[tuple[str, ...]]
    #: The warm starts it uses.
    warm_starts: ClassVar[frozenset[WarmStart]]
    #: Whether it counts iterations (``--iterations``).
    iterative: ClassVar[bool]

    def check(self, instance: Instance, options: Any) -> None:
        """Refuse what this instance and these options cannot do together, before solving.

        Raises
        ------
        InputError
            Naming the flag and the reason.
        """
        ...

    def needs(self, instance: Instance, options: Any) -> Capabilities:
        """What the chosen backend must be able to do for this instance and options."""
        ...

    def solve(self, instance: Instance, options: Any, context: Context) -> Result:
        """Plan the instance within the context's budget.

        Parameters
        ----------
        instance
            The validated problem.
        options
            The method's own options (an ``options_type``).
        context
            Budget, seed, threads, gap and warm starts.
        """
        ...


def option_fields(options_type: type[Any]) -> list[dataclasses.Field[Any]]:
    """The :func:`option` fields of a method's options type."""
    return [f for f in dataclasses.fields(options_type) if "flag" in f.metadata]


def takes(method: Method) -> str:
    """The flags and keys a method takes, for messages (``--policy (policy), ...``)."""
    listed = [f"{f.metadata['flag']} ({f.name})" for f in option_fields(method.options_type)]
    return ", ".join(listed) if listed else "no options of its own"


def build_options(method: Method, given: Mapping[str, Any], source: str = "--method") -> Any:
    """The method's typed options from settings by key or flag, text or value.

    Parameters
    ----------
    method
        The registered method.
    given
        Setting name (a field name such as ``round_s``, or its flag with or without
        ``--``) to value; a text value is parsed as the flag would parse it.
    source
        Where the settings come from (a bench spec, an options file), for messages.

    Raises
    ------
    InputError
        For a setting the method does not take (naming it, the method and what it does
        take), or a value that does not parse or is out of range.
    """
    by_name: dict[str, dataclasses.Field[Any]] = {}
    for f in option_fields(method.options_type):
        by_name[f.name] = f
        by_name[f.metadata["flag"].lstrip("-")] = f
    found = {key: by_name.get(key.lstrip("-").replace("_", "-")) or by_name.get(key.lstrip("-"))
             for key in given}
    unknown = [key for key, field_ in found.items() if field_ is None]
    if unknown:
        shown = [key if key.startswith("--") or source != "--method" else f"--{key}"
                 for key in unknown]
        # From the command line the flags are the message; a file or spec names the key.
        raise InputError(source, "" if source == "--method" else unknown[0],
                         f"method {method.name!r} does not take "
                         f"{', '.join(shown)}; it takes {takes(method)}")
    values: dict[str, Any] = {}
    for key, value in given.items():
        field_ = found[key]
        assert field_ is not None
        values[field_.name] = _parsed(method, field_, value) if isinstance(value, str) else value
    return method.options_type(**values)


def _parsed(method: Method, f: dataclasses.Field[Any], text: str) -> Any:
    """A setting's text parsed as its flag parses it, or an error naming flag and method."""
    flag = f.metadata["flag"]
    choices = f.metadata["choices"]
    if choices is not None and f.metadata["parse"] is None:
        if text not in choices:
            raise InputError(flag, "", f"unknown value {text!r}; method {method.name!r} "
                             f"takes {flag} {' or '.join(choices)}")
        return text
    parse = f.metadata["parse"]
    if parse is None:
        return text
    try:
        return parse(text)
    except (ValueError, TypeError) as exc:
        raise InputError(flag, "", f"{exc} (method {method.name!r})") from None


def parse_bool(text: str) -> bool:
    """``true``/``false`` (and ``1``/``0``, ``yes``/``no``) as a bool."""
    lowered = text.strip().lower()
    if lowered in ("true", "1", "yes", "on"):
        return True
    if lowered in ("false", "0", "no", "off"):
        return False
    raise ValueError(f"expected true or false, got {text!r}")


def parse_number(convert: Callable[[str], float], low: float, high: float,
                 closed: bool = True) -> Callable[[str], Any]:
    """A parser of numbers from ``low`` to ``high`` (above ``low`` when not ``closed``)."""
    def parse(text: str) -> Any:
        try:
            value = convert(text)
        except ValueError:
            value = float("nan")
        if not ((value >= low if closed else value > low) and value <= high):
            shown = f"{high:g}" if isinstance(high, float) else str(high)
            raise ValueError(f"expected a number {'from' if closed else 'above'} {low} to "
                             f"{shown}, got {text!r}")
        return value
    return parse


#: Seconds up to the instance format's longest time: time limits, ticks, rounds.
parse_seconds = parse_number(float, 0, MAX_TIME_S, closed=False)


def no_plan(instance: Instance, reason: str, solver: str,
            status: Status = Status.NO_SOLUTION, bound: float | None = None) -> Result:
    """A result without a plan, every job unplaced for ``reason``."""
    return Result(status=status, objective=None, bound=bound, solver=solver,
                  unplaced=dict.fromkeys(range(instance.n_jobs), reason))


def infeasible(instance: Instance, reasons: Mapping[int, str], solver: str) -> Result:
    """A proof of infeasibility: nothing placed, each job saying why (``reasons`` by job).

    Jobs without a reason of their own point to the jobs named.
    """
    return Result(status=Status.INFEASIBLE, objective=None, bound=None, solver=solver,
                  unplaced={j: reasons.get(j, "not planned: the instance is infeasible (see "
                            "the jobs named)") for j in range(instance.n_jobs)})


def plan_status(objective: float | None, bound: float | None) -> Status:
    """The status of a heuristic plan: none, feasible, or optimal when it meets the bound.

    A plan meets the bound when their gap is within :data:`~gpuplan.status.OPTIMAL_GAP`,
    the verifier's definition of optimal.
    """
    if objective is None:
        return Status.NO_SOLUTION
    gap = relative_gap(objective, bound)
    return Status.OPTIMAL if gap is not None and gap <= OPTIMAL_GAP else Status.FEASIBLE


def with_bound(instance: Instance, result: Result, bound: float, name: str, note: str) -> Result:
    """A start's result with the method's bound, its status from that bound, and why.

    ``note`` says why CP-SAT's plan is not the one returned; without a plan, each job the
    start left out gives its reason and the note.
    """
    solver = f"{name}; {note}"
    if result.status.has_plan:
        return dataclasses.replace(result, status=plan_status(result.objective, bound),
                                   bound=bound, solver=solver)
    unplaced = ({j: f"{reason}; {note}" for j, reason in result.unplaced.items()}
                or dict.fromkeys(range(instance.n_jobs), f"no plan found; {note}"))
    return dataclasses.replace(result, status=Status.NO_SOLUTION, objective=None, bound=bound,
                               solver=solver, unplaced=unplaced)


def better(instance: Instance, first: Result, second: Result) -> Result:
    """The better plan of two for the instance's objective; ``first`` on a tie.

    A result with a plan beats one without; the better bound of the two is kept.
    """
    if not second.status.has_plan:
        chosen = first
    elif not first.status.has_plan:
        chosen = second
    else:
        assert first.objective is not None and second.objective is not None
        sign = -1.0 if instance.objective.sense == "max" else 1.0
        chosen = second if sign * second.objective < sign * first.objective else first
    bounds = [b for b in (first.bound, second.bound) if b is not None]
    if not bounds or not chosen.status.has_plan:
        return chosen
    bound = max(bounds) if instance.objective.sense == "min" else min(bounds)
    assert chosen.objective is not None
    return dataclasses.replace(chosen, bound=bound,
                               status=plan_status(chosen.objective, bound))


def time_objective(
    instance: Instance, job: IntArray, gpu_type: IntArray, end: FloatArray,
    kind: ObjectiveKind | None = None, work: FloatArray | None = None,
) -> float:
    """The value of a time-based objective (the instance's by default) for a full plan.

    ``job``, ``gpu_type`` and ``end`` are per segment; a preemptible job may have several,
    each doing the share ``work`` of the job (1 by default). A job completes at its last
    segment's end.
    """
    completion = np.full(instance.n_jobs, -np.inf)
    np.maximum.at(completion, job, end)
    done = np.flatnonzero(np.isfinite(completion))
    finish = completion[done]
    match kind or instance.objective:
        case ObjectiveKind.MAKESPAN:
            return float(finish.max(initial=0.0))
        case ObjectiveKind.WEIGHTED_COMPLETION:
            return float((instance.weight[done] * finish).sum())
        case ObjectiveKind.TARDINESS:
            late = np.maximum(0.0, finish - instance.due[done])
            return float((instance.weight[done] * late).sum())
        case ObjectiveKind.COST:
            share = np.ones(job.size) if work is None else work
            return float((instance.cost[job, gpu_type] * share).sum())
    raise AssertionError(f"{kind or instance.objective} is not a time-based objective")


#: Every objective, static and time-based.
ALL_OBJECTIVES = frozenset(ObjectiveKind)
#: The objectives that place the whole batch at once.
STATIC_OBJECTIVES = frozenset(k for k in ObjectiveKind if k.is_static)
#: The objectives with a timeline.
TIME_OBJECTIVES = frozenset(k for k in ObjectiveKind if not k.is_static)
#: What a method that solves no program needs of a backend: nothing.
NO_NEEDS = Capabilities()


def solver_option(backends: Sequence[str], what: str) -> Any:
    """The ``--solver`` option of a method that hands programs to ``backends``."""
    return option(backends[0], "--solver", f"backend for {what} (default: {backends[0]})",
                  choices=backends)


class PlainMethod:
    """Defaults for a method with nothing to refuse beyond its declarations, and no backend."""

    def check(self, instance: Instance, options: Any) -> None:
        """Nothing beyond the declared objectives to refuse."""

    def needs(self, instance: Instance, options: Any) -> Capabilities:
        """Nothing: the method hands no program to a backend."""
        return NO_NEEDS

#: Share of the time limit a heuristic warm start gets when it runs before the method.
WARM_SHARE = 0.3
