"""gym_env_vectorize_mode="envpool": EnvPool's batch as a vector env, its seeding, and the errors
that name the fix (unknown id, custom or multi-agent env, envpool not installed)."""

import importlib.util

import gymnasium as gym
import numpy as np
import pytest

from flywheel import PPOConfig, register_env
from flywheel.env.envpool_vector import EnvPoolVectorEnv
from flywheel.env.make import make_vector_env
from flywheel.env_runners.remote_runners import config_for_actors
from flywheel.errors import ConfigError, EnvError


def _config_problems(config):
    with pytest.raises(ConfigError) as info:
        config.validate()
    return str(info.value)


def test_the_batch_has_gymnasium_vector_spaces_and_envpool_kwargs_apply():
    env = make_vector_env("CartPole-v1", {"max_episode_steps": 7}, num_envs=3, vectorize_mode="envpool")
    assert isinstance(env, EnvPoolVectorEnv)
    assert (env.observation_space.shape, env.single_observation_space.shape) == ((3, 4), (4,))
    assert env.action_space == gym.spaces.MultiDiscrete([2, 2, 2])
    env.reset(seed=0)
    for _ in range(7):  # pushing right all the time: CartPole lasts >= 8 steps from any reset state
        _, _, terminated, truncated, infos = env.step(np.ones(3, np.int64))
    assert (truncated.tolist(), terminated.any(), infos["elapsed_step"].tolist()) == (
        [True] * 3,
        False,
        [7] * 3,
    )
    assert set(infos) == {"elapsed_step"}  # EnvPool's routing fields (env_id, players) are dropped
    env.close()


def test_a_seeded_reset_rebuilds_the_pool_so_sub_env_i_gets_seed_plus_i():
    env = EnvPoolVectorEnv("CartPole-v1", num_envs=3)
    first, _ = env.reset(seed=10)
    env.step(np.zeros(3, np.int64))
    again, _ = env.reset(seed=10)
    np.testing.assert_array_equal(first, again)
    single = EnvPoolVectorEnv("CartPole-v1", num_envs=1)
    np.testing.assert_array_equal(single.reset(seed=12)[0][0], first[2])
    unseeded, _ = env.reset()  # resets in place: a new episode, not the seeded start again
    assert not np.array_equal(unseeded, first)
    env.close()
    single.close()


def test_an_id_envpool_does_not_know_points_to_its_list():
    with pytest.raises(
        EnvError, match=r"EnvPool has no env 'CartPol-v1'. Did you mean 'CartPole-v1'.*list_all_envs\(\)"
    ):
        EnvPoolVectorEnv("CartPol-v1")


def test_env_config_keys_are_envpool_keywords():
    with pytest.raises(
        EnvError, match=r"unexpected keyword argument 'render'.*keyword of envpool.make_gymnasium"
    ):
        EnvPoolVectorEnv("CartPole-v1", {"render": True})


def test_without_envpool_installed_the_error_names_the_extra(monkeypatch):
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "envpool" else find_spec(name, *a)
    )
    with pytest.raises(
        EnvError, match=r"envpool package is not installed. Fix: pip install 'flywheel\[envpool\]'"
    ):
        make_vector_env("CartPole-v1", vectorize_mode="envpool")


def test_custom_python_envs_and_python_side_options_are_refused():
    register_env("my_cartpole", lambda cfg: gym.make("CartPole-v1"))
    with pytest.raises(
        EnvError, match="'my_cartpole' is a custom Python env .a registered name.. Fix: pass an id"
    ):
        make_vector_env("my_cartpole", vectorize_mode="envpool")
    with pytest.raises(EnvError, match="so env_wrappers, render_env cannot apply. Fix: drop them"):
        make_vector_env(
            "CartPole-v1", vectorize_mode="envpool", wrappers=[gym.wrappers.ClipAction], render_env=True
        )


def test_config_errors_name_the_fix():
    base = PPOConfig().env_runners(gym_env_vectorize_mode="envpool")
    base.copy().environment("CartPole-v1").validate()
    assert (
        "env=<class 'gymnasium.core.Env'> is a custom Python env. Fix: use gym_env_vectorize_mode='sync'"
        in (_config_problems(base.copy().environment(gym.Env)))
    )
    multi = (
        base.copy()
        .environment("CartPole-v1")
        .multi_agent(policies={"p0", "p1"}, policy_mapping_fn=lambda a, e, **k: "p0")
    )
    assert "steps single-agent EnvPool envs, but this config is multi-agent. Fix:" in _config_problems(multi)
    assert (
        "gym_env_vectorize_mode='envpol' is not one of ['sync', 'async', 'vector_entry_point', 'envpool']"
        in (
            _config_problems(
                PPOConfig().environment("CartPole-v1").env_runners(gym_env_vectorize_mode="envpol")
            )
        )
    )
    # RLlib's gymnasium.VectorizeMode members are valid values too.
    PPOConfig().environment("CartPole-v1").env_runners(
        gym_env_vectorize_mode=gym.VectorizeMode.ASYNC
    ).validate()


def test_remote_runners_get_the_id_and_build_their_own_pool():
    config = PPOConfig().environment("CartPole-v1").env_runners(gym_env_vectorize_mode="envpool")
    assert config_for_actors(config).env == "CartPole-v1"
