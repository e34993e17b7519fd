"""What every backend shares: the limits it takes, the capabilities it declares, the protocol.

A backend solves a :class:`~gpuplan.models.linear.LinearProgram` (the canonical form every
model is built in) within :class:`Limits`. Like cvxpy's solver interfaces, each declares
its :class:`Capabilities`, so that a method asking for what a backend lacks is refused
before anything is solved (:func:`check_capabilities`), and maps its own status codes to
:class:`~gpuplan.core.status.Status`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import ClassVar, NoReturn, Protocol

from gpuplan.core.budget import Budget, Limits
from gpuplan.core.errors import InputError, setting
from gpuplan.core.instance import FloatArray, IntArray
from gpuplan.core.status import Status
from gpuplan.models.linear import LinearProgram


@dataclass(frozen=True)
class Capabilities:
    """What a backend can do (cvxpy's solver capability flags, for gpuplan's programs).

    Attributes
    ----------
    integer
        Integer columns (MILPs).
    continuous
        Continuous columns (LPs, and MILPs that mix them).
    quadratic
        A convex quadratic objective over continuous columns.
    integer_quadratic
        A convex quadratic objective with integer columns too (MIQP).
    warm_start
        Starts from given column values (a MIP start or a hint).
    time_limit
        Honours the budget's time limit inside its solve.
    threads
        Uses more than one thread.
    incremental
        Holds a program open, adds columns and re-solves (:meth:`Backend.open`), with
        row duals (column generation).
    relaxation
        Solves the LP relaxation with column values and reduced costs
        (:meth:`Backend.relax`).
    explain
        Names an irreducible infeasible subsystem (:meth:`Backend.explain_infeasible`).
    incumbents
        Takes better solutions found elsewhere during its search (:attr:`Backend.offer`),
        and can be cancelled from another thread (:meth:`Backend.cancel`).
    duals
        Returns the row duals of an LP it solves (:attr:`ProgramSolution.duals`), also
        of a run stopped early where it has them, and reads :attr:`Limits.presolve` and
        :attr:`Limits.algorithm`.
    """

    integer: bool = False
    continuous: bool = False
    quadratic: bool = False
    integer_quadratic: bool = False
    warm_start: bool = False
    time_limit: bool = False
    threads: bool = False
    incremental: bool = False
    relaxation: bool = False
    explain: bool = False
    incumbents: bool = False
    duals: bool = False

    def missing(self, needed: Capabilities) -> list[str]:
        """The capabilities ``needed`` asks for and this one lacks, by name."""
        return [f.name for f in fields(self) if getattr(needed, f.name)
                and not getattr(self, f.name)]


@dataclass(frozen=True)
class ProgramSolution:
    """What a backend returns for a :class:`~gpuplan.models.linear.LinearProgram`.

    Attributes
    ----------
    status
        Translated through the backend's status table.
    values
        Column values of the best solution found, or None.
    objective
        Its objective value, or None.
    bound
        The proven bound on the optimum (the optimum itself for a solved LP), or None.
    solver
        Backend name and version.
    duals
        With capability ``duals``, for a program without integer columns: the row duals
        of the last solution, optimal or not (any non-negative prices of a maximisation's
        ``<=`` rows bound its optimum from above); None otherwise.
    """

    status: Status
    values: FloatArray | None
    objective: float | None
    bound: float | None
    solver: str
    duals: FloatArray | None = None


@dataclass(frozen=True)
class Relaxation:
    """The LP relaxation of a program, solved.

    Attributes
    ----------
    status
        ``optimal``, ``infeasible``, or ``no_solution`` when the budget ran out.
    objective
        The relaxation's optimum, or None.
    values
        Its column values, or None.
    reduced_costs
        Its reduced costs, or None.
    """

    status: Status
    objective: float | None
    values: FloatArray | None
    reduced_costs: FloatArray | None


class Session(Protocol):
    """A program held open by an incremental backend: add columns, re-solve."""

    def solve(self, budget: Budget) -> ProgramSolution:
        """Solve within the budget: all columns so far, with the row duals when optimal."""
        ...

    def add_columns(self, cost: FloatArray, upper: FloatArray, start: IntArray,
                    index: IntArray, value: FloatArray) -> None:
        """Append columns with lower bound 0, given column-wise (CSC ``start``, ``index``)."""
        ...


class Backend(Protocol):
    """A solver for canonical linear programs.

    Operations beyond :meth:`solve_program` are offered only by backends that declare the
    capability; :func:`check_capabilities` refuses the others before any solve.
    """

    #: Registry name, as given to ``gpuplan solve --solver``.
    name: str
    #: What the backend can do.
    capabilities: ClassVar[Capabilities]
    #: With capability ``incumbents``: called during the search with the incumbent's
    #: objective, it may return the column values of a better solution found elsewhere.
    offer: Callable[[float], FloatArray | None] | None

    def solve_program(self, program: LinearProgram, limits: Limits,
                      start: FloatArray | None = None) -> ProgramSolution:
        """Solve within the limits, from an optional start (a warm start or hint).

        Parameters
        ----------
        program
            The model in canonical form.
        limits
            Budget, threads, seed and gap.
        start
            Column values of a known (possibly partial) solution.
        """
        ...

    def relax(self, program: LinearProgram, limits: Limits) -> Relaxation:
        """Solve the LP relaxation (capability ``relaxation``)."""
        ...

    def open(self, program: LinearProgram, limits: Limits) -> Session:
        """Hold the program open for column generation (capability ``incremental``)."""
        ...

    def explain_infeasible(self, program: LinearProgram, limits: Limits) -> str:
        """Name the rows of an irreducible infeasible subsystem (capability ``explain``)."""
        ...

    def cancel(self) -> None:
        """End the running solve from another thread (capability ``incumbents``).

        The solve returns its best so far, and solves started later return at once.
        """
        ...


def check_capabilities(backend: Capabilities, name: str, needed: Capabilities,
                       what: str) -> None:
    """Refuse a backend that lacks what a method needs, before anything is solved.

    Parameters
    ----------
    backend
        The backend's capabilities.
    name
        The backend's registry name.
    needed
        What the method needs for this instance and these options.
    what
        The method and objective, for the message (``"milp for min-max-load"``).

    Raises
    ------
    InputError
        Naming ``--solver``, the backend, the method and what is missing.
    """
    missing = backend.missing(needed)
    if missing:
        raise InputError(setting("backend"), "", f"{what} needs {', '.join(missing)}, which the "
                         f"{name} backend does not have")


def program_needs(program: LinearProgram) -> Capabilities:
    """What a backend must be able to do to solve a program."""
    integer = bool(program.integer.any())
    return Capabilities(integer=integer, continuous=not program.integer.all(),
                        quadratic=program.hessian is not None and not integer,
                        integer_quadratic=program.hessian is not None and integer)


def check_program(backend: Backend, program: LinearProgram) -> None:
    """Refuse a program the backend cannot solve.

    Planning refuses such a combination before anything is built
    (:func:`check_capabilities` with the method's needs); this guards the backends' own
    entry points for callers that skip it.

    Raises
    ------
    InputError
        Naming ``--solver``, the backend and what the program needs.
    """
    check_capabilities(backend.capabilities, backend.name, program_needs(program),
                       "the method's model")



def lacks(backend: str, capability: str) -> NoReturn:
    """Refuse an operation the backend does not declare: reaching it is a bug.

    Planning refuses a method that needs the capability on this backend before solving
    (:func:`check_capabilities`).

    Raises
    ------
    NotImplementedError
        Naming the backend and the capability.
    """
    raise NotImplementedError(f"the {backend} backend has no capability {capability!r}")


class SolveOnly:
    """What a backend that only solves programs offers beyond :meth:`Backend.solve_program`.

    It declares no ``relaxation``, ``incremental``, ``explain`` or ``incumbents``, so these
    refuse (planning never calls them for it) and there is nothing to cancel.
    """

    name: str

    def relax(self, program: LinearProgram, limits: Limits) -> Relaxation:
        """Not offered (capability ``relaxation``)."""
        lacks(self.name, "relaxation")

    def open(self, program: LinearProgram, limits: Limits) -> Session:
        """Not offered (capability ``incremental``)."""
        lacks(self.name, "incremental")

    def explain_infeasible(self, program: LinearProgram, limits: Limits) -> str:
        """Not offered (capability ``explain``)."""
        lacks(self.name, "explain")

    def cancel(self) -> None:
        """Nothing: the solve takes no incumbents and ends at its time limit."""
