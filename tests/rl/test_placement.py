"""The placement environment over FGD's replay: checks, masks, and FGD's own choices."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import BENCHMARKS
from gymnasium.utils.env_checker import check_env

from gpuplan.rl.placement import PlacementConfig, PlacementEnv, read_trace

ALIBABA = BENCHMARKS / "gpu-traces" / "alibaba-gpu-v2023"


@pytest.fixture(scope="module")
def env() -> PlacementEnv:
    """The environment on the default openb pod list, episodes up to 30% arrived."""
    instance, typical = read_trace(ALIBABA / "openb_pod_list_default.csv",
                                   ALIBABA / "openb_node_list_gpu_node.csv")
    return PlacementEnv(instance, typical, PlacementConfig(stop_percent=30.0))


def test_passes_gymnasiums_env_checker(env: PlacementEnv) -> None:
    """check_env finds nothing to complain about."""
    check_env(env, skip_render_check=True)


def test_unmasked_rows_are_feasible_nodes_and_masked_rows_empty(env: PlacementEnv) -> None:
    """Every unmasked row is a node the pod fits on now; masked rows hold nothing."""
    obs, _ = env.reset(seed=0)
    rng = np.random.default_rng(1)
    for _ in range(300):
        mask = env.action_masks()
        state = env.state
        assert state is not None and mask.any()
        fits = state.fits(env.pod)
        assert fits[env._nodes].all() and len(env._nodes) == mask.sum()
        assert (obs[~mask] == 0).all() and (obs[mask, -1] == 1).all()
        obs, _, done, _, _ = env.step(int(rng.choice(np.flatnonzero(mask))))
        if done:
            break


def test_following_fgds_score_replays_fgd_exactly(env: PlacementEnv) -> None:
    """Taking the first row of the best FGD score is FGD's choice for every pod (seed 42)."""
    from gpuplan.sharing.replay import replay

    instance = env.instance
    fgd = replay(instance, "fgd", 42, specs=None, ratio=1.3)
    obs, _ = env.reset(options={"replay_seed": 42})
    done, total = False, 0.0
    while not done:
        mask = env.action_masks()
        row = int(np.argmax(np.where(mask, obs[:, 0], -1.0)))
        assert int(env._nodes[row]) == int(fgd.node[env.pod])
        obs, reward, done, _, info = env.step(row)
        total += reward
    assert info["allocated_percent"] == pytest.approx(
        100 * env.state.used_gpu_milli / (1000 * instance.n_gpus))  # type: ignore[union-attr]


def test_same_seed_same_replay(env: PlacementEnv) -> None:
    """reset(seed) draws the same replay seeds; the paper's seeds are never drawn."""
    first = [env.reset(seed=5)[1]["replay_seed"]] + [env.reset()[1]["replay_seed"]
                                                     for _ in range(3)]
    again = [env.reset(seed=5)[1]["replay_seed"]] + [env.reset()[1]["replay_seed"]
                                                     for _ in range(3)]
    assert first == again and not set(first) & set(range(42, 52))
