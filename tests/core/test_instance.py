"""Instance views: a part of the batch (``take``) and the online view of a run."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from conftest import DATA

from gpuplan import InputError, Instance, ObjectiveKind, read_instance


def test_take_keeps_the_jobs_in_order_and_renumbers_their_dependencies(small: Instance) -> None:
    """Taking eval, train and sweep-a keeps eval -> train, drops train's link to prep."""
    part = small.take(np.array([2, 1, 3]))
    assert part.job_ids == ("eval", "train", "sweep-a")
    assert part.predecessors == ((1,), (), ())
    assert part.gang.tolist() == [1, 4, 2]
    np.testing.assert_array_equal(part.duration, small.duration[[2, 1, 3]])
    assert part.n_gpus == small.n_gpus


def test_take_repeats_jobs_under_new_ids_when_nothing_depends() -> None:
    """A job taken twice is two jobs (the sharing replays inflate traces so)."""
    free = dataclasses.replace(read_instance(DATA / "valid_small.json"),
                               predecessors=((),) * 5)
    part = free.take(np.array([4, 4, 0]), ["b#0", "b#1", "prep"])
    assert part.job_ids == ("b#0", "b#1", "prep")
    assert part.weight.shape == (3,)


def test_take_refuses_repeats_with_dependencies(small: Instance) -> None:
    """Which copy a dependent job would wait for is ambiguous: refused."""
    with pytest.raises(ValueError, match="more than once"):
        small.take(np.array([1, 1]))
    with pytest.raises(ValueError, match="job ids"):
        small.take(np.array([0, 1]), ["only-one"])


def test_online_view_turns_deadlines_into_due_dates(small: Instance) -> None:
    """Online no deadline is hard: train's deadline 2000 becomes its due date."""
    online = small.with_objective(ObjectiveKind.MAX_WEIGHT).online()
    assert online.objective is ObjectiveKind.WEIGHTED_COMPLETION
    assert np.isinf(online.deadline).all()
    assert online.due[1] == 2000
    assert online.due[2] == 1200


def test_online_view_names_a_job_that_can_run_nowhere(small: Instance) -> None:
    """A job eligible for no type is an input error naming it."""
    eligible = small.eligible.copy()
    eligible[3] = False
    with pytest.raises(InputError, match=r"jobs\[3\].*'sweep-a' can run on no GPU type"):
        dataclasses.replace(small, eligible=eligible).online()


def test_take_keeps_each_jobs_partition_and_limits() -> None:
    """A part of quotas.json keeps each job's partition and account: re-plans honour them."""
    quotas = read_instance(DATA / "quotas.json")
    part = quotas.take(np.array([7, 0]))
    assert [part.partition_ids[p] for p in part.job_partition] == ["mixed", "train"]
    assert [part.account_ids[a] for a in part.job_account] == ["ops", "nlp"]
    assert [str(limit) for limit in part.gpu_limits] == ["account 'nlp'", "QOS 'urgent'"]
    assert part.job_limits == ((1,), (0,))


def test_online_view_refuses_partitions_and_gpu_limits() -> None:
    """The simulator plays neither out: exit-2 input naming them, not a run that breaks them."""
    with pytest.raises(InputError, match="account/QOS GPU limits and partitions, which the "
                       "simulator does not play out"):
        read_instance(DATA / "quotas.json").online()
