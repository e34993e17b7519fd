"""Fixtures of the exporter tests: the emulated Slurm clusters, and plans running on them."""

from __future__ import annotations

import pytest

from tests.exporters.live_slurm import LiveRuns, cluster_folder, submit_live_plans


@pytest.fixture(scope="session", autouse=True)
def live_runs(tmp_path_factory: pytest.TempPathFactory) -> LiveRuns:
    """The live test's plans of sleep jobs, submitted as the first exporter test starts.

    They run while the other exporter tests go on (about 20 s), and the live test reads
    them back. None without clusters; a failure to submit is kept for that test to report.
    """
    folder, _ = cluster_folder()
    if folder is None:
        return None
    try:
        return submit_live_plans(folder, tmp_path_factory.mktemp("live"))
    except Exception as exc:  # reported by the live test, not by every exporter test
        return exc
