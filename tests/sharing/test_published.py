"""FGD's published curves, reproduced point for point from the real openb trace.

The trace and the per-seed curves of FGD's artifact are copied into tests/data/benchmarks
(see its SOURCES.md), so this known-answer test runs in a plain clone.
"""

from __future__ import annotations

import csv

import numpy as np
import pytest
from conftest import DATA

from gpuplan.core.instance import Instance
from gpuplan.harness.replay import PUBLISHED
from gpuplan.readers.openb import read_openb
from gpuplan.sharing.replay import replay

ALIBABA = DATA / "benchmarks" / "gpu-traces" / "alibaba-gpu-v2023"

#: FGD's directory names of the policies (experiments/run_scripts) and gpuplan's.
NAMES = {"01-Random": "random", "02-DotProd": "dot-product",
         "03-GpuClustering": "gpu-clustering", "04-GpuPacking": "gpu-packing",
         "05-BestFit": "best-fit", "06-FGD": "fgd"}


def _published() -> dict[tuple[str, int], np.ndarray]:
    with (ALIBABA / "fgd_expected_allocation_default.csv").open() as f:
        return {(NAMES[row["sc_policy"]], int(row["seed"])):
                np.array([float(row[str(a)]) for a in range(131)])
                for row in csv.DictReader(f)}


@pytest.fixture(scope="module")
def trace() -> Instance:
    """The default pod list on the 1,213 GPU nodes."""
    return read_openb(ALIBABA / "openb_node_list_gpu_node.csv",
                      ALIBABA / "openb_pod_list_default.csv")


@pytest.mark.parametrize("policy", ["dot-product", "gpu-clustering", "gpu-packing",
                                    "best-fit", "fgd"])
def test_deterministic_policies_match_the_published_curve(trace: Instance, policy: str) -> None:
    """Seed 42's allocation curve equals FGD's own at every arrived percent 0..130."""
    curve = replay(trace, policy, 42).curves()["allocated"]
    assert np.array_equal(curve, _published()[(policy, 42)])


def test_published_table_is_the_mean_of_the_artifact_curves() -> None:
    """The table gpuplan prints beside its numbers is the artifact's ten-seed mean."""
    curves = _published()
    for policy, (at_100, at_130) in PUBLISHED["openb_pod_list_default"].items():
        runs = [curves[(policy, seed)] for seed in range(42, 52)]
        assert round(float(np.mean([c[100] for c in runs])), 2) == at_100
        assert round(float(np.mean([c[130] for c in runs])), 2) == at_130
