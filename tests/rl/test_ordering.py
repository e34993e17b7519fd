"""The ordering environment: Gymnasium's checks, masks, seeds, and a policy that learns."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import BENCHMARKS
from gymnasium.utils.env_checker import check_env

from gpuplan.readers.swf import read_swf
from gpuplan.rl.ordering import LearnedOrder, OrderingConfig, OrderingEnv, protocol_holdout
from gpuplan.rl.policy import FORMAT, PolicyDescription
from gpuplan.rl.train import PpoSettings, train
from gpuplan.simulate.hpc import HpcWorkload, Protocol, play, sequence_metrics

LUBLIN = BENCHMARKS / "hpc-traces" / "lublin_256.swf.gz"


@pytest.fixture(scope="module")
def lublin() -> HpcWorkload:
    """Lublin-1 as RLScheduler reads it."""
    return HpcWorkload.from_trace(read_swf(LUBLIN))


def env_of(workload: HpcWorkload, **config: object) -> OrderingEnv:
    """The environment with the protocol's sequences held out."""
    holdout = protocol_holdout(workload, Protocol())
    return OrderingEnv(workload, OrderingConfig(holdout=holdout, **config))  # type: ignore[arg-type]


def test_passes_gymnasiums_env_checker(lublin: HpcWorkload) -> None:
    """check_env finds nothing to complain about (spaces, seeding, return types)."""
    check_env(env_of(lublin, length=64), skip_render_check=True)


def test_registered_id_makes_the_environment() -> None:
    """gymnasium.make knows gpuplan's ordering environment by its id."""
    import gymnasium

    env = gymnasium.make("gpuplan/HpcOrdering-v0", trace=str(LUBLIN),
                         config=OrderingConfig(length=32))
    obs, _ = env.reset(seed=1)
    assert obs.shape == (128, 9)


def test_masked_rows_are_empty_and_unmasked_rows_are_waiting_jobs(lublin: HpcWorkload) -> None:
    """Every unmasked row holds a waiting job; every masked row is empty, all episode long."""
    env = env_of(lublin, length=128, window=16)
    obs, _ = env.reset(seed=3)
    rng = np.random.default_rng(0)
    done = False
    while not done:
        mask = env.action_masks()
        assert env.sim is not None
        rows = env._rows
        assert mask.sum() == len(rows) == min(len(env.sim.queue), 16) >= 1
        assert all(job in env.sim.queue for job in rows)
        assert (obs[~mask] == 0).all() and (obs[mask, -1] == 1).all()
        obs, _, done, _, info = env.step(int(rng.choice(np.flatnonzero(mask))))
        assert not info["masked"]


def test_same_seed_same_episodes_other_seed_other_ones(lublin: HpcWorkload) -> None:
    """reset(seed) fixes the sequences drawn; they never touch the held-out jobs."""
    env = env_of(lublin)
    firsts = [env.reset(seed=7)[1]["first"] for _ in range(1)]
    firsts += [env.reset()[1]["first"] for _ in range(4)]
    again = [env.reset(seed=7)[1]["first"]] + [env.reset()[1]["first"] for _ in range(4)]
    assert firsts == again
    assert env.reset(seed=8)[1]["first"] != firsts[0]
    for first, length in env.config.holdout:
        assert all(f + 256 <= first or f >= first + length for f in firsts)


def test_returns_add_up_to_the_slowdown_over_the_best_heuristic(lublin: HpcWorkload) -> None:
    """Following SJF, the rewards sum to -sum(wait / max(run, 10)) / (length * best)."""
    from gpuplan.simulate.hpc import QUEUE_POLICIES

    env = env_of(lublin, length=64)
    _, info = env.reset(seed=0)
    first = info["first"]
    sim = play(lublin, first, 64, QUEUE_POLICIES["sjf"], False)
    jobs = np.arange(first, first + 64)
    wait = np.array([sim.started[j] for j in jobs.tolist()]) - lublin.submit[jobs]
    slowdown = float(np.sum(wait / np.maximum(lublin.run[jobs], 10)))
    done, total = False, 0.0
    while not done:
        assert env.sim is not None
        job = QUEUE_POLICIES["sjf"].choose(env.sim)
        _, reward, done, _, info = env.step(env._rows.index(job))
        total += reward
    best = info["baseline_bsld"]
    assert info["bounded_slowdown"] == pytest.approx(sequence_metrics(lublin, sim)[0])
    assert total == pytest.approx(-slowdown / (64 * best))
    assert best <= info["bounded_slowdown"] + 1e-9


def test_bsld_reward_is_rlschedulers_terminal_one(lublin: HpcWorkload) -> None:
    """With reward='bsld' every step gives 0 and the last minus the mean bounded slowdown."""
    env = env_of(lublin, length=32, reward="bsld")
    env.reset(seed=0)
    rewards, done = [], False
    while not done:
        _, reward, done, _, info = env.step(0)
        rewards.append(reward)
    assert all(r == 0 for r in rewards[:-1]) and rewards[-1] == -info["bounded_slowdown"]


@pytest.mark.slow
def test_short_training_beats_random_on_held_out_sequences(lublin: HpcWorkload,
                                                          tmp_path: Path) -> None:
    """An 8,000-step PPO run orders held-out sequences better than a random pick."""
    env = env_of(lublin)
    description = PolicyDescription(format=FORMAT, env="ordering", rows=128,
                                    features=["wait", "request", "area", "processors", "fits",
                                              "until_start", "free_nodes", "queue",
                                              "present"], hidden=[1])
    train(lambda: env_of(lublin), description, 8_000, 0, tmp_path / "p",
          PpoSettings(n_steps=1024))
    learned = LearnedOrder.load(str(tmp_path / "p"), lublin)
    rng = np.random.default_rng(0)

    class Random:
        name = "random"

        def choose(self, sim: object) -> int:
            queue = sim.queue  # type: ignore[attr-defined]
            return int(queue[int(rng.integers(len(queue)))])

    learned_bsld, random_bsld = [], []
    for first, _ in env.config.holdout[:4]:
        for policy, out in ((learned, learned_bsld), (Random(), random_bsld)):
            sim = play(lublin, first, 512, policy, False)
            out.append(sequence_metrics(lublin, sim)[0])
    assert np.mean(learned_bsld) < 0.8 * np.mean(random_bsld)
    assert (tmp_path / "p" / "learning_curve.png").stat().st_size > 0
    assert len((tmp_path / "p" / "curve.csv").read_text().splitlines()) > 10
