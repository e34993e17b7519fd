"""HiGHS through highspy: the default backend for MILPs and LPs.

HiGHS never writes to the terminal here: its banner, printed when a process makes its
first Highs object, goes to the debug log (:func:`quiet_banner`), and every Highs object
has its output switched off before anything else is done with it.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import math
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

import highspy
import numpy as np

from gpuplan.backends.base import ProgramSolution
from gpuplan.instance import FloatArray, IntArray
from gpuplan.models.linear import LinearProgram
from gpuplan.solvers.base import SolveOptions, seconds_left
from gpuplan.status import Status

logger = logging.getLogger(__name__)

_MS = highspy.HighsModelStatus
#: HiGHS model status -> gpuplan status when no solution is at hand; with a feasible
#: solution every "stopped early" status becomes ``feasible``.
STATUS_TABLE: dict[object, Status] = {
    _MS.kOptimal: Status.OPTIMAL,
    _MS.kModelEmpty: Status.OPTIMAL,
    _MS.kInfeasible: Status.INFEASIBLE,
    # Our programs are bounded (every column has finite bounds but z, which is bounded
    # below by the loads), so "unbounded or infeasible" can only be infeasible.
    _MS.kUnboundedOrInfeasible: Status.INFEASIBLE,
    _MS.kTimeLimit: Status.NO_SOLUTION,
    _MS.kIterationLimit: Status.NO_SOLUTION,
    _MS.kSolutionLimit: Status.NO_SOLUTION,
    _MS.kObjectiveBound: Status.NO_SOLUTION,
    _MS.kObjectiveTarget: Status.NO_SOLUTION,
    _MS.kInterrupt: Status.NO_SOLUTION,
    _MS.kMemoryLimit: Status.NO_SOLUTION,
    _MS.kUnknown: Status.NO_SOLUTION,
}


#: Seconds per nonzero (and column) that HiGHS may run past its time limit: it reads its
#: clock between presolve passes and search steps, and on the assignment model of 2,000
#: jobs on 256 GPUs (1.9 million nonzeros) those are up to 2 s apart on a loaded 2-core
#: machine (0.4 s on the 0.26 million of Yagiura's e801600). HiGHS is given its time
#: limit less this reserve (:func:`reserve_s`), and not started with less time left.
SECONDS_PER_NONZERO = 8e-7

#: The version string of every solution.
VERSION = (f"highs {highspy.HIGHS_VERSION_MAJOR}.{highspy.HIGHS_VERSION_MINOR}."
           f"{highspy.HIGHS_VERSION_PATCH}")


#: How long past its deadline a HiGHS solve is waited for (a share of the time limit plus
#: seconds) before it is left to finish on its own: on the 521,002 columns of a 2,000-job
#: max-weight model, the set-up of branch-and-cut after presolve (a clique partition of
#: the objective) ran for minutes without reading the clock.
GRACE_SHARE, GRACE_S = 0.05, 0.25

#: Solves left running past their deadline, on daemon threads (they end at HiGHS's next
#: reading of its clock). While one runs, the thread pool is not resized.
_left_running: list[threading.Thread] = []


def reserve_s(program: LinearProgram) -> float:
    """Seconds HiGHS may run past its time limit on the program (kept out of the limit)."""
    return SECONDS_PER_NONZERO * float(program.value.size + program.n_cols)


def not_started(program: LinearProgram, left: float) -> ProgramSolution:
    """The answer of a solve that was not started: too little time was left for it."""
    logger.debug("HiGHS not started: %.3f s left, %.3f s kept for %d nonzeros",
                 left, reserve_s(program), program.value.size)
    return ProgramSolution(Status.NO_SOLUTION, None, None, None,
                           f"{VERSION} (not started: {max(left, 0.0):.2f} s left)")


def pass_program(highs: highspy.Highs, program: LinearProgram) -> None:
    """Load a program into HiGHS: the LP, and the diagonal Hessian of a QP.

    The arrays go to HiGHS as they are (no per-column Python objects), which on a model of
    half a million columns takes a third of the time of filling a ``HighsLp``.
    """
    sense = highspy.ObjSense.kMaximize if program.sense == "max" else highspy.ObjSense.kMinimize
    highs.passModel(
        program.n_cols, program.n_rows, int(program.value.size),
        int(highspy.MatrixFormat.kRowwise), int(sense), 0.0,
        np.ascontiguousarray(program.cost, dtype=np.float64),
        np.ascontiguousarray(program.col_lower, dtype=np.float64),
        np.ascontiguousarray(program.col_upper, dtype=np.float64),
        np.ascontiguousarray(program.row_lower, dtype=np.float64),
        np.ascontiguousarray(program.row_upper, dtype=np.float64),
        program.row_start.astype(np.int32), program.col_index.astype(np.int32),
        np.ascontiguousarray(program.value, dtype=np.float64),
        program.integer.astype(np.int32),
    )
    if program.hessian is not None:
        hessian = highspy.HighsHessian()
        hessian.dim_ = program.n_cols
        hessian.format_ = highspy.HessianFormat.kTriangular
        nonzero = np.flatnonzero(program.hessian)
        # Column-wise lower triangle: column k holds only its diagonal entry, if any.
        hessian.start_ = np.searchsorted(nonzero, np.arange(program.n_cols + 1))
        hessian.index_ = nonzero
        hessian.value_ = program.hessian[nonzero]
        highs.passHessian(hessian)


#: HiGHS runs one thread pool per process, sized by the first run; a later run asking for
#: another size fails unless the pool is reset, so the size in use is remembered here.
_pool_threads: list[int] = []


#: Whether this process has made its first Highs object (and so printed the banner).
_banner_shown: list[bool] = []
_banner_lock = threading.Lock()


def _flush_c_streams() -> None:
    """Flush the C library's output buffers (HiGHS writes through them)."""
    with contextlib.suppress(OSError, AttributeError, TypeError):
        ctypes.CDLL(None).fflush(None)


def quiet_banner() -> None:
    """Make the process's first Highs object with its banner sent to the debug log.

    HiGHS prints a banner (version and copyright) to standard output when the first Highs
    object of a process is made, whoever makes it (Pyomo too), before any option can
    switch it off; on a terminal it is noise, and it would corrupt ``gpuplan solve -o -``.
    Standard output is pointed at a temporary file while that object is made, the C
    library's buffers are flushed into it, and what HiGHS printed is logged at debug level.
    """
    with _banner_lock:
        if _banner_shown:
            return
        sys.stdout.flush()
        with tempfile.TemporaryFile() as sink:
            saved = os.dup(1)
            try:
                os.dup2(sink.fileno(), 1)
                highspy.Highs()
                _flush_c_streams()
            finally:
                os.dup2(saved, 1)
                os.close(saved)
            sink.seek(0)
            printed = sink.read().decode(errors="replace").strip()
        if printed:
            logger.debug("HiGHS: %s", printed)
        _banner_shown.append(True)


def new_highs(options: SolveOptions) -> highspy.Highs:
    """A configured, silent Highs object."""
    quiet_banner()
    highs = highspy.Highs()
    configure(highs, options)
    return highs


def configure(highs: highspy.Highs, options: SolveOptions) -> None:
    """Apply time limit, threads, seed and gap tolerance, with all output off."""
    highs.setOptionValue("output_flag", False)
    highs.setOptionValue("log_to_console", False)
    threads = max(1, int(options.threads))
    _left_running[:] = [thread for thread in _left_running if thread.is_alive()]
    if _pool_threads and _pool_threads[0] != threads and _left_running:
        # Resizing the pool under a running solve is unsafe: keep its size.
        threads = _pool_threads[0]
    if _pool_threads and _pool_threads[0] != threads:
        highspy.Highs.resetGlobalScheduler(True)
        _pool_threads.clear()
    if not _pool_threads:
        _pool_threads.append(threads)
    highs.setOptionValue("random_seed", int(options.seed))
    highs.setOptionValue("mip_rel_gap", float(options.gap_tolerance))
    highs.setOptionValue("threads", threads)
    if options.time_limit_s is not None:
        highs.setOptionValue("time_limit", float(max(options.time_limit_s, 0.01)))


def read_solution(highs: highspy.Highs, program: LinearProgram) -> ProgramSolution:
    """Translate the state of a Highs object after ``run()``."""
    model_status = highs.getModelStatus()
    info = highs.getInfo()
    has_solution = info.primal_solution_status == highspy.SolutionStatus.kSolutionStatusFeasible
    status = STATUS_TABLE.get(model_status, Status.NO_SOLUTION)
    if status is Status.NO_SOLUTION and has_solution:
        status = Status.FEASIBLE
    values = np.asarray(highs.getSolution().col_value) if has_solution else None
    objective = float(info.objective_function_value) if has_solution else None
    bound: float | None
    if program.integer.any():
        dual = float(info.mip_dual_bound)
        bound = dual if np.isfinite(dual) else None
    else:
        bound = objective if status is Status.OPTIMAL else None
    logger.debug("HiGHS %s: objective %s, bound %s", model_status, objective, bound)
    return ProgramSolution(status, values, objective, bound, VERSION)


def _limit_run(highs: highspy.Highs, program: LinearProgram, options: SolveOptions,
               began: float) -> float | None:
    """Limit the run to what is left less the reserve; None if nothing would be left."""
    left = seconds_left(options, began)
    reserve = reserve_s(program)
    if left < reserve:
        return None
    if math.isfinite(left):
        highs.setOptionValue("time_limit", max(float(left - reserve), 1e-3))
    return left


def solve_relaxation(
    program: LinearProgram, options: SolveOptions
) -> tuple[Status, float | None, FloatArray | None, FloatArray | None]:
    """Solve the continuous relaxation; return status, value, solution and reduced costs.

    The time limit covers loading the program too; when too little of it is left for
    HiGHS to start, the status is ``no_solution`` and nothing else is returned.
    """
    began = time.perf_counter()
    relaxed = program.relaxed().equilibrated()
    if seconds_left(options, began) < reserve_s(relaxed):
        return Status.NO_SOLUTION, None, None, None
    highs = new_highs(options)
    highs.setOptionValue("solver", "ipm")
    pass_program(highs, relaxed)
    if _limit_run(highs, relaxed, options, began) is None:
        return Status.NO_SOLUTION, None, None, None
    highs.run()
    if highs.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        status = STATUS_TABLE.get(highs.getModelStatus(), Status.NO_SOLUTION)
        return status, None, None, None
    solution = highs.getSolution()
    return (
        Status.OPTIMAL,
        float(highs.getInfo().objective_function_value),
        np.asarray(solution.col_value),
        np.asarray(solution.col_dual),
    )


class HighsMaster:
    """An LP held open in HiGHS: columns are added and the LP re-solved from the last basis.

    The master problem of column generation. The first solve runs the interior point
    method (with crossover, so a basis exists); later ones restart dual/primal simplex from
    the basis, which after a few new columns takes a fraction of a cold solve.
    """

    def __init__(self, program: LinearProgram, options: SolveOptions) -> None:
        self._highs = new_highs(options)
        self._highs.setOptionValue("solver", "ipm")
        pass_program(self._highs, program)
        self._program = program
        self._solved = False

    def solve(self) -> tuple[ProgramSolution, FloatArray | None]:
        """Solve; return the solution (all columns so far) and the row duals, if optimal."""
        if self._solved:
            self._highs.setOptionValue("solver", "simplex")
        self._highs.run()
        self._solved = True
        solution = read_solution(self._highs, self._program)
        duals = (np.asarray(self._highs.getSolution().row_dual)
                 if solution.status is Status.OPTIMAL else None)
        return solution, duals

    def add_columns(self, cost: FloatArray, upper: FloatArray, start: IntArray,
                    index: IntArray, value: FloatArray) -> None:
        """Append columns with lower bound 0, given column-wise (CSC ``start``, ``index``)."""
        n = int(cost.size)
        self._highs.addCols(n, np.asarray(cost, dtype=float), np.zeros(n),
                            np.asarray(upper, dtype=float), int(index.size),
                            np.asarray(start[:-1], dtype=np.int32),
                            np.asarray(index, dtype=np.int32), np.asarray(value, dtype=float))

    def set_time_limit(self, seconds: float) -> None:
        """Limit the next solve."""
        self._highs.setOptionValue("time_limit", float(max(seconds, 0.01)))


def explain_infeasible(program: LinearProgram, time_limit_s: float | None = None) -> str:
    """Name the constraints of an irreducible infeasible subsystem of the LP relaxation.

    Parameters
    ----------
    program
        A program the solver proved infeasible.
    time_limit_s
        Seconds the relaxation may take; without them (or without an answer in them) the
        sentence says what was proved and names no constraint.
    """
    unnamed = "the solver proved that no plan satisfies every constraint"
    began = time.perf_counter()
    relaxed = program.relaxed().equilibrated()
    options = SolveOptions(time_limit_s=time_limit_s)
    if seconds_left(options, began) < reserve_s(relaxed):
        return unnamed
    highs = new_highs(options)
    pass_program(highs, relaxed)
    if _limit_run(highs, relaxed, options, began) is None:
        return unnamed
    highs.run()
    status = highs.getModelStatus()
    if status == highspy.HighsModelStatus.kTimeLimit:
        return unnamed
    if status != highspy.HighsModelStatus.kInfeasible:
        return (
            f"{unnamed}; the continuous "
            "relaxation is feasible, so the conflict lies in packing whole jobs onto GPUs"
        )
    _, iis = highs.getIis()
    rows = [program.row_names[i] for i in iis.row_index_][:12]
    return "infeasible: these constraints conflict: " + ", ".join(rows)


def wait_for(thread: threading.Thread, deadline: float, limit_s: float) -> bool:
    """Wait for a thread running HiGHS until its deadline plus the grace; True if it ended.

    One that has not ended by then is left to finish on its own (it is a daemon thread,
    and HiGHS stops at its next reading of the clock, the deadline being past).
    """
    thread.join(max(0.0, deadline + GRACE_SHARE * limit_s + GRACE_S - time.perf_counter()))
    if thread.is_alive():
        logger.debug("HiGHS still busy %.2f s past its deadline; not waited for",
                     time.perf_counter() - deadline)
        _left_running.append(thread)
        return False
    return True


def abandoned() -> bool:
    """Whether a HiGHS solve left to finish on its own (:func:`wait_for`) still runs.

    A process must not exit normally then: C++ teardown under a running solve aborts it
    (``terminate called without an active exception``); see :func:`gpuplan.cli.main`.
    """
    return any(thread.is_alive() for thread in _left_running)


def still_busy() -> ProgramSolution:
    """The answer of a solve that was not waited for (see :func:`wait_for`)."""
    return ProgramSolution(Status.NO_SOLUTION, None, None, None,
                           f"{VERSION} (still busy at the time limit, not waited for)")


class HighsBackend:
    """HiGHS (simplex for LPs, branch-and-cut for MILPs) with warm starts.

    :meth:`cancel` may be called from another thread to end the running solve early; it
    then returns the best solution found so far.
    """

    name = "highs"

    def __init__(self) -> None:
        self._running: highspy.Highs | None = None
        self._cancelled = False
        #: Called during branch-and-cut with the incumbent's objective; may return a better
        #: solution found elsewhere (another lane), which HiGHS then adopts.
        self.offer: Callable[[float], FloatArray | None] | None = None

    def cancel(self) -> None:
        """Stop the solve in progress (and any started after), keeping its best solution."""
        self._cancelled = True
        running = self._running  # the solving thread may clear it meanwhile
        if running is not None:
            running.cancelSolve()

    def solve_bounded(
        self, program: LinearProgram, options: SolveOptions, start: FloatArray | None = None
    ) -> ProgramSolution:
        """:meth:`solve_program` on a thread of its own, waited for until the time limit.

        HiGHS has steps that do not read the clock; a solve still in one a little past
        its time limit (:func:`wait_for`) is left to finish on its own, and the answer is
        ``no_solution``, so that the caller's limit holds.
        """
        if options.time_limit_s is None:
            return self.solve_program(program, options, start)
        deadline = time.perf_counter() + options.time_limit_s
        answer: list[ProgramSolution | BaseException] = []

        def run() -> None:
            try:
                answer.append(self.solve_program(program, options, start))
            except BaseException as exc:  # re-raised on the caller's thread
                answer.append(exc)

        thread = threading.Thread(target=run, name="gpuplan-highs", daemon=True)
        thread.start()
        if not wait_for(thread, deadline, options.time_limit_s):
            self.cancel()
            return still_busy()
        if isinstance(answer[0], BaseException):
            raise answer[0]
        return answer[0]

    def solve_program(
        self, program: LinearProgram, options: SolveOptions, start: FloatArray | None = None
    ) -> ProgramSolution:
        """Solve with HiGHS; a start vector is offered as a MIP starting solution.

        The time limit covers loading the program: HiGHS is limited to what is left of it
        less the time it may run past its limit on a program of this size
        (:func:`reserve_s`), and not started (status ``no_solution``) when nothing is left.

        Parameters
        ----------
        program
            The model in canonical form.
        options
            Time limit, threads, seed and gap tolerance.
        start
            Column values of a known solution, tried as the first incumbent.
        """
        began = time.perf_counter()
        if seconds_left(options, began) < reserve_s(program):
            return not_started(program, seconds_left(options, began))
        highs = new_highs(options)
        if not program.integer.any() and program.hessian is None:
            # Interior point (with crossover, for a vertex to round) is several times faster
            # than simplex on the large, degenerate assignment LPs measured here.
            highs.setOptionValue("solver", "ipm")
        pass_program(highs, program.equilibrated())
        if start is not None and program.integer.any():
            solution = highspy.HighsSolution()
            solution.col_value = np.asarray(start, dtype=float)
            solution.value_valid = True
            highs.setSolution(solution)
        offer = self.offer
        if offer is not None and program.integer.any():

            def adopt(event: Any) -> None:
                values = offer(float(event.data_out.objective_function_value))
                if values is not None:
                    event.data_in.user_has_solution = True
                    event.data_in.user_solution[:] = values

            highs.cbMipUserSolution.subscribe(adopt)
        if _limit_run(highs, program, options, began) is None:
            return not_started(program, seconds_left(options, began))
        self._running = highs
        if not self._cancelled:
            highs.run()
        self._running = None
        return read_solution(highs, program)
