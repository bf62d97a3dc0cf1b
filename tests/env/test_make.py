import base64
import pickle
import re
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest

from flywheel.env import EnvContext, make_env_creator, make_vector_env, register_env, seed_for
from flywheel.env import make as make_module
from flywheel.errors import EnvError
from flywheel.testing import CountingEnv

HOW_TO_PASS = (
    "Pass a gymnasium id, a name given to flywheel.register_env(name, creator), "
    "an Env subclass or a callable."
)


@pytest.fixture(autouse=True)
def empty_registry(monkeypatch):
    """Each test sees an empty flywheel registry, whatever other tests registered."""
    monkeypatch.setattr(make_module, "_REGISTRY", {})


def counting_by_vector_index(env_config):
    """Module-level (so picklable) creator: sub-env i ends its episodes after 2 + i steps."""
    return CountingEnv(
        env_config.copy_with_overrides(env_config={"episode_len": 2 + env_config.vector_index})
    )


# EnvContext


def test_env_context_is_a_dict_with_attributes():
    ctx = EnvContext({"a": 1}, worker_index=2, num_workers=3, vector_index=1)
    assert ctx == {"a": 1} and isinstance(ctx, dict)
    assert (ctx.worker_index, ctx.num_workers, ctx.vector_index) == (2, 3, 1)
    assert repr(ctx) == "EnvContext({'a': 1}, worker_index=2, num_workers=3, vector_index=1)"
    default = EnvContext()
    assert default == {} and (default.worker_index, default.num_workers, default.vector_index) == (0, 0, 0)


def test_env_context_copies_the_config_it_is_given():
    config = {"a": 1}
    ctx = EnvContext(config)
    ctx["a"] = 2
    assert config == {"a": 1}


def test_copy_with_overrides_keeps_unset_values():
    ctx = EnvContext({"a": 1}, worker_index=2, num_workers=3, vector_index=1)
    copy = ctx.copy_with_overrides(vector_index=4)
    assert repr(copy) == "EnvContext({'a': 1}, worker_index=2, num_workers=3, vector_index=4)"
    copy["a"] = 5
    assert ctx["a"] == 1
    other = ctx.copy_with_overrides(worker_index=0, num_workers=1, env_config={"b": 2})
    assert repr(other) == "EnvContext({'b': 2}, worker_index=0, num_workers=1, vector_index=1)"


def test_env_context_pickles_with_its_attributes():
    ctx = pickle.loads(pickle.dumps(EnvContext({"a": 1}, worker_index=2, num_workers=3, vector_index=1)))
    assert repr(ctx) == "EnvContext({'a': 1}, worker_index=2, num_workers=3, vector_index=1)"


# register_env / make_env_creator


def test_registered_name_resolves_to_its_creator_and_re_registering_replaces():
    def first(cfg):
        return CountingEnv(cfg)

    def second(cfg):
        return CountingEnv({"episode_len": 9})

    register_env("counting", first)
    assert make_env_creator("counting") is first
    register_env("counting", second)
    assert make_env_creator("counting") is second
    assert make_env_creator("counting")(EnvContext()).episode_len == 9


def test_registered_name_shadows_a_gymnasium_id():
    register_env("CartPole-v1", CountingEnv)
    assert make_env_creator("CartPole-v1") is CountingEnv


def test_register_env_takes_ray_tunes_keyword_names():
    register_env(name="counting_by_keyword", env_creator=CountingEnv)
    assert make_env_creator("counting_by_keyword") is CountingEnv


def test_register_env_rejects_a_non_callable_creator():
    with pytest.raises(
        EnvError, match=re.escape("register_env expects a str name and a callable env_creator")
    ):
        register_env("x", CountingEnv())


def test_gymnasium_id_makes_the_env_and_pickles():
    creator = pickle.loads(pickle.dumps(make_env_creator("CartPole-v1")))
    env = creator(EnvContext(worker_index=1))
    assert env.spec.id == "CartPole-v1"
    assert env.observation_space.shape == (4,) and env.action_space.n == 2
    env.close()


def test_gymnasium_id_with_module_prefix_imports_the_module():
    env = make_env_creator("gymnasium.envs.classic_control:CartPole-v1")(EnvContext())
    assert env.spec.id == "CartPole-v1"


def test_gymnasium_id_with_unimportable_module():
    with pytest.raises(
        EnvError,
        match=re.escape(
            "env 'nomodule:CartPole-v1' names module 'nomodule' to import before making 'CartPole-v1', but "
            "importing it failed (No module named 'nomodule'). Fix: install the package"
        ),
    ):
        make_env_creator("nomodule:CartPole-v1")


def test_gymnasium_id_passes_env_config_to_gymnasium_make_as_keywords():
    context = EnvContext({"max_episode_steps": 7, "render_mode": "rgb_array"}, worker_index=1, vector_index=2)
    env = make_env_creator("CartPole-v1", dict(context))(context)
    assert (env.spec.max_episode_steps, env.render_mode) == (7, "rgb_array")
    vector = make_vector_env("CartPole-v1", {"max_episode_steps": 3}, num_envs=2)
    vector.reset(seed=0)
    truncated = [vector.step(np.zeros(2, np.int64))[3] for _ in range(3)]
    assert [t.tolist() for t in truncated] == [[False, False], [False, False], [True, True]]
    vector.close()


def test_gymnasium_id_with_a_keyword_it_does_not_take():
    creator = make_env_creator("CartPole-v1", {"bogus": 1})
    with pytest.raises(
        EnvError,
        match=re.escape(
            "gymnasium.make('CartPole-v1', **env_config) with env_config={'bogus': 1} raised TypeError: "
        )
        + ".*"
        + re.escape(
            "flywheel passes every env_config key to gymnasium.make as a keyword argument. Fix: keep"
        ),
    ):
        creator(EnvContext({"bogus": 1}))


def test_namespaced_ids_register_their_package_envs():
    minatar = make_env_creator("MinAtar/Breakout-v1")(EnvContext())
    assert (minatar.observation_space.shape, minatar.observation_space.dtype) == ((10, 10, 4), np.bool_)
    assert isinstance(make_env_creator("ALE/Pong-v5"), make_module._GymMake)
    with pytest.raises(EnvError, match=r"Unknown env 'MinAtar/Nonsense-v0'\."):
        make_env_creator("MinAtar/Nonsense-v0")


def test_creators_of_namespaced_ids_register_them_in_a_fresh_process():
    creator = base64.b64encode(pickle.dumps(make_env_creator("MinAtar/Breakout-v1"))).decode()
    code = (
        "import base64, pickle; from flywheel.env import EnvContext; "
        f"print(pickle.loads(base64.b64decode({creator!r}))(EnvContext()).action_space)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "Discrete(3)"


def test_env_class_is_called_with_the_env_context():
    creator = make_env_creator(CountingEnv, {"episode_len": 3})
    env = creator(EnvContext({"episode_len": 3}, worker_index=2, num_workers=4, vector_index=1))
    assert env.episode_len == 3
    assert (env.config.worker_index, env.config.num_workers, env.config.vector_index) == (2, 4, 1)


def test_callable_is_the_creator():
    def creator(cfg):
        return CountingEnv(cfg)

    assert make_env_creator(creator) is creator


def test_unknown_name_suggests_the_closest_gymnasium_id_and_lists_registered_names():
    register_env("my_env", CountingEnv)
    register_env("another", CountingEnv)
    expected = (
        "Unknown env 'CartPol-v1'. Did you mean 'CartPole-v1'? Registered names: ['another', 'my_env']. "
        + HOW_TO_PASS
    )
    with pytest.raises(EnvError, match=f"^{re.escape(expected)}$"):
        make_env_creator("CartPol-v1")


def test_unknown_name_suggests_a_registered_name():
    register_env("counting_env", CountingEnv)
    with pytest.raises(EnvError, match=re.escape("Unknown env 'countng_env'. Did you mean 'counting_env'?")):
        make_env_creator("countng_env")


def test_unknown_name_without_a_close_match_or_registered_names():
    expected = "Unknown env 'zzzzzzzz'. " + HOW_TO_PASS  # no "Registered names: []"
    with pytest.raises(EnvError, match=f"^{re.escape(expected)}$"):
        make_env_creator("zzzzzzzz")


def test_env_instance_is_rejected_with_the_fix():
    with pytest.raises(
        EnvError,
        match=re.escape(
            "Got an env instance (CountingEnv), but each runner and sub-env needs its own env. "
            "Fix: pass its class CountingEnv or a callable that creates one."
        ),
    ):
        make_env_creator(CountingEnv())


def test_other_types_are_rejected_naming_the_type():
    with pytest.raises(EnvError, match=re.escape("Cannot make an env from 42 (type int). " + HOW_TO_PASS)):
        make_env_creator(42)


# make_vector_env


def test_sync_vector_env_gives_each_sub_env_its_vector_index():
    env = make_vector_env(
        CountingEnv, {"episode_len": 4}, num_envs=3, vectorize_mode="sync", worker_index=2, num_workers=5
    )
    assert isinstance(env, gym.vector.SyncVectorEnv)
    assert env.metadata["autoreset_mode"] == gym.vector.AutoresetMode.SAME_STEP
    obs, infos = env.reset(seed=0)
    assert obs.shape == (3, 1) and obs.dtype == np.float32 and infos == {}
    obs, rewards, terminated, truncated, _ = env.step(np.array([0, 1, 0]))
    np.testing.assert_array_equal(obs, [[1.0], [1.0], [1.0]])
    np.testing.assert_array_equal(rewards, [1.0, 1.0, 1.0])
    assert terminated.shape == (3,) and truncated.shape == (3,)
    contexts = env.get_attr("config")
    assert [c.vector_index for c in contexts] == [0, 1, 2]
    assert {(c.worker_index, c.num_workers, c["episode_len"]) for c in contexts} == {(2, 5, 4)}
    env.close()


def test_async_vector_env_with_a_registered_creator():
    register_env("counting_by_index", counting_by_vector_index)
    env = make_vector_env("counting_by_index", num_envs=3, vectorize_mode="async", worker_index=1)
    try:
        assert isinstance(env, gym.vector.AsyncVectorEnv)
        assert env.metadata["autoreset_mode"] == gym.vector.AutoresetMode.SAME_STEP
        obs, _ = env.reset(seed=0)
        assert obs.shape == (3, 1)
        assert [c.vector_index for c in env.get_attr("config")] == [0, 1, 2]
        assert [c.worker_index for c in env.get_attr("config")] == [1, 1, 1]
        assert env.get_attr("episode_len") == (2, 3, 4)
    finally:
        env.close()


def test_vectorize_mode_accepts_gymnasium_enum():
    env = make_vector_env(CountingEnv, num_envs=2, vectorize_mode=gym.VectorizeMode.SYNC)
    assert isinstance(env, gym.vector.SyncVectorEnv) and env.num_envs == 2
    env.close()


def test_vector_entry_point_for_a_gymnasium_id_with_one():
    env = make_vector_env("CartPole-v1", num_envs=3, vectorize_mode="vector_entry_point")
    obs, _ = env.reset(seed=0)
    assert obs.shape == (3, 4) and env.num_envs == 3
    assert env.metadata["autoreset_mode"] == gym.vector.AutoresetMode.NEXT_STEP
    env.close()


@pytest.mark.parametrize("env", ["Pendulum-v1", CountingEnv, "registered"])
def test_vector_entry_point_for_envs_without_one_says_which_modes_work(env):
    register_env("registered", CountingEnv)
    with pytest.raises(
        EnvError,
        match=re.escape(
            "gym_env_vectorize_mode='vector_entry_point' needs a gymnasium id whose spec has a "
            f"vector_entry_point, but env {env!r} has none. Modes that work for it: ['sync', 'async']."
        ),
    ):
        make_vector_env(env, num_envs=2, vectorize_mode="vector_entry_point")


def test_unknown_vectorize_mode_lists_the_valid_ones():
    with pytest.raises(
        EnvError,
        match=re.escape(
            "Unknown gym_env_vectorize_mode 'parallel'. Valid modes: ['sync', 'async', 'vector_entry_point', 'envpool']"
        ),
    ):
        make_vector_env(CountingEnv, vectorize_mode="parallel")


def test_num_envs_must_be_positive():
    with pytest.raises(EnvError, match=re.escape("num_envs must be an int >= 1, got 0.")):
        make_vector_env(CountingEnv, num_envs=0)


def test_unknown_env_fails_before_any_sub_env_is_built():
    with pytest.raises(EnvError, match=re.escape("Unknown env 'CartPol-v1'. Did you mean 'CartPole-v1'?")):
        make_vector_env("CartPol-v1", num_envs=2)


def test_creator_returning_a_non_env_is_named():
    def not_an_env(cfg):
        return "env"

    with pytest.raises(
        EnvError,
        match=re.escape(
            "The env creator test_creator_returning_a_non_env_is_named.<locals>.not_an_env returned str, "
            "expected a gymnasium.Env."
        ),
    ):
        make_vector_env(not_an_env, num_envs=1)


def test_creator_exception_is_wrapped_with_the_sub_env_it_was_building():
    def broken(cfg):
        raise ValueError("no such map.")

    with pytest.raises(EnvError, match=re.escape("Creating sub-env 0 on worker 3 with")) as info:
        make_vector_env(broken, {"map": "x"}, num_envs=1, worker_index=3)
    assert "raised ValueError: no such map. Fix the creator" in str(info.value)
    assert isinstance(info.value.__cause__, ValueError)


def test_same_step_autoreset_puts_the_final_observation_in_infos():
    env = make_vector_env(counting_by_vector_index, num_envs=3)
    env.reset(seed=0)
    actions = np.zeros(3, np.int64)
    env.step(actions)
    obs, rewards, terminated, truncated, infos = env.step(actions)
    # Sub-env 0 (episode_len 2) ended and was reset in the same step; 1 and 2 go on.
    np.testing.assert_array_equal(obs, [[0.0], [2.0], [2.0]])
    np.testing.assert_array_equal(rewards, [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(terminated, [True, False, False])
    np.testing.assert_array_equal(truncated, [False, False, False])
    np.testing.assert_array_equal(infos["_final_obs"], [True, False, False])
    np.testing.assert_array_equal(infos["final_obs"][0], [2.0])
    obs, _, terminated, _, infos = env.step(actions)
    np.testing.assert_array_equal(obs, [[1.0], [0.0], [3.0]])
    np.testing.assert_array_equal(terminated, [False, True, False])
    np.testing.assert_array_equal(infos["final_obs"][1], [3.0])
    env.close()


# seed_for


def test_seed_for_is_distinct_per_worker_and_sub_env():
    assert seed_for(None, 1, 4, 2) is None
    assert seed_for(10, 0, 4, 0) == 10
    assert seed_for(10, 2, 4, 3) == 10 + 2 * 4 + 3
    seeds = {seed_for(0, w, 3, i) for w in range(4) for i in range(3)}
    assert seeds == set(range(12))


def test_seed_for_matches_gymnasium_vector_reset_seeding():
    env = make_vector_env("CartPole-v1", num_envs=2)
    obs, _ = env.reset(seed=seed_for(7, worker_index=1, num_envs=2))
    single = gym.make("CartPole-v1")
    expected = [single.reset(seed=seed_for(7, 1, 2, i))[0] for i in range(2)]
    np.testing.assert_array_equal(obs, np.stack(expected))
    env.close()
