"""Typical pods and the fragmentation measure follow FGD's definitions, checked by hand."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gpuplan.sharing.cluster import ClusterState
from gpuplan.sharing.frag import (
    NA,
    Q2,
    Q3,
    XL,
    NodeFrag,
    TypicalPods,
    frag_amount,
    frag_parts,
    pod_specs,
    typical_pods,
)
from sharing import Pod, openb_instance

NODES = [("n0", 64000, 262144, 2, "P100"), ("n1", 96000, 393216, 8, "T4")]


def _pods(shapes: list[tuple[int, int, int, int, str]]) -> list[Pod]:
    """``count`` pods of each ``(count, cpu, gpus, milli, spec)`` shape, memory varying."""
    return [(f"p{len(shapes)}-{i}-{k}", cpu, 1024 * (k + 1), gpus, milli, spec)
            for i, (count, cpu, gpus, milli, spec) in enumerate(shapes) for k in range(count)]


def test_typical_pods_cover_95_percent_by_count_then_shape(tmp_path: Path) -> None:
    """Shapes are taken by count (ties: larger shape first) until 95% of pods, renormalised.

    20 pods: 10 of A, 5 of B, 3 of C, one each of D and E; 95% is 19 pods, reached after D,
    which beats E on the tie because its CPU is larger. Memory is not part of a shape.
    """
    shapes = [(10, 4000, 1, 500, ""), (5, 8000, 0, 0, ""), (3, 2000, 1, 1000, "T4"),
              (1, 9000, 2, 1000, ""), (1, 1000, 8, 1000, "")]
    typical = typical_pods(openb_instance(tmp_path, NODES, _pods(shapes)))
    assert list(zip(typical.cpu.tolist(), typical.milli.tolist(), typical.gang.tolist(),
                    typical.spec, strict=True)) == [
        (4000, 500, 1, ""), (8000, 0, 0, ""), (2000, 1000, 1, "T4"), (9000, 1000, 2, "")]
    assert typical.count.tolist() == [10, 5, 3, 1]
    assert typical.prob == pytest.approx([10 / 19, 5 / 19, 3 / 19, 1 / 19], abs=1e-15)
    assert typical.coverage == pytest.approx(0.95)
    assert typical.allowed.tolist() == [[True, True], [True, True], [False, True],
                                        [True, True]]


def test_specs_are_rebuilt_from_eligibility(tmp_path: Path) -> None:
    """An unconstrained pod has spec ``""`` even where its gang fits only some models."""
    instance = openb_instance(tmp_path, NODES, _pods([(1, 1000, 8, 1000, ""),
                                                      (1, 1000, 1, 200, "T4"),
                                                      (1, 1000, 0, 0, "")]))
    assert pod_specs(instance) == ("", "T4", "")


def _hand_typical() -> TypicalPods:
    """Half share pods (4 CPUs, 500 milli), half CPU-only pods (2 CPUs), one model of two."""
    return TypicalPods(cpu=np.array([4000, 2000]), milli=np.array([500, 0]),
                       gang=np.array([1, 0]), spec=("", ""),
                       allowed=np.array([[True, True], [True, True]]),
                       count=np.array([1, 1]), prob=np.array([0.5, 0.5]), coverage=1.0)


def test_fragment_amounts_by_hand() -> None:
    """A node with GPUs at 1000 and 300 free and enough CPU.

    The share shape fits (on the 1000 GPU): the 300 milli it cannot use is fragment
    (0.5 * 300 in q2), the rest satisfied (0.5 * 1000 in q3); the CPU-only shape fits too but
    uses no GPU, so all 1300 idle milli are fragment for it (0.5 * 1300 in xl): 800 in all.
    With the share shape not allowed on the node's model everything is fragment.
    """
    typical = _hand_typical()
    parts = frag_parts(typical, np.array([8000]), np.array([[1000, 300]]), np.array([0]))
    assert parts[0, [Q2, Q3, XL]].tolist() == [150.0, 500.0, 650.0]
    assert frag_amount(parts).tolist() == [800.0]
    typical.allowed[0, 1] = False
    parts = frag_parts(typical, np.array([8000, 3000]), np.array([[1000, 300], [1000, 300]]),
                       np.array([1, 0]))
    assert parts[0, NA] == 650.0 and frag_amount(parts).tolist() == [1300.0, 1300.0]


def test_many_states_match_one_by_one() -> None:
    """Computing many states at once (equal ones once, GPUs in any order) changes no bit."""
    rng = np.random.default_rng(3)
    gpus = rng.choice([0, 200, 500, 1000], size=(200, 4))
    cpu, types = rng.choice([2000, 8000], size=200), rng.integers(2, size=200)
    typical = _hand_typical()
    together = frag_parts(typical, cpu, gpus, types)
    alone = [frag_parts(typical, cpu[i:i + 1], gpus[i, ::-1][None, :], types[i:i + 1])[0]
             for i in range(200)]
    assert (together == np.array(alone)).all()


def test_node_frag_follows_placements(tmp_path: Path) -> None:
    """After a placement the changed node's fragmentation is recomputed, the others kept."""
    state = ClusterState(openb_instance(tmp_path, NODES, _pods([(1, 60000, 1, 700, "")])))
    frag = NodeFrag(_hand_typical(), state)
    assert frag.amount.tolist() == [1000.0, 4000.0]   # only the CPU-only shape's share
    state.place(0, 0, np.array([1]))
    frag.refresh()
    # n0: 4000 CPU and GPUs at 1000 and 300: the share shape fits (300 is fragment), the
    # CPU-only shape fits: 150 + 650.
    assert frag.amount.tolist() == [800.0, 4000.0]
    assert frag.cluster() == (4800.0, 9300.0)
