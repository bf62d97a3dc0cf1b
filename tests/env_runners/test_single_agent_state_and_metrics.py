"""SingleAgentEnvRunner: get_state/set_state with weights_seq_no, get_metrics() values, callbacks."""

import numpy as np
import pytest

from flywheel import Columns, RLlibCallback
from flywheel.env.make import EnvContext
from flywheel.metrics import MetricsLogger

from .conftest import VaryingLengthEnv, counting_config


def filled(weights, value):
    return {name: np.full_like(array, value) for name, array in weights.items()}


def assert_weights(runner, value):
    for name, array in runner.module.get_state().items():
        assert np.all(array == value), name


# ------------------------------------------------------------------------- state


def test_get_state_components(make_runner):
    runner = make_runner(counting_config())
    state = runner.get_state()
    assert sorted(state) == [
        "env_to_module_connector",
        "module_to_env_connector",
        "rl_module",
        "weights_seq_no",
    ]
    assert state["weights_seq_no"] == 0
    assert sorted(state["rl_module"]) == sorted(runner.module.get_state(inference_only=True))
    assert sorted(runner.get_state(components=["rl_module"])) == ["rl_module", "weights_seq_no"]
    assert "rl_module" not in runner.get_state(not_components=["rl_module"])


def test_newer_weights_are_set_stale_ones_ignored_and_zero_forces(make_runner):
    runner = make_runner(counting_config())
    weights = runner.get_state()["rl_module"]

    runner.set_state({"rl_module": filled(weights, 0.0), "weights_seq_no": 3})
    assert runner.weights_seq_no == 3
    assert_weights(runner, 0.0)
    runner.set_state({"rl_module": filled(weights, 1.0), "weights_seq_no": 2})  # stale: ignored
    assert runner.weights_seq_no == 3
    assert_weights(runner, 0.0)
    runner.set_state({"rl_module": filled(weights, 2.0), "weights_seq_no": 4})
    assert (runner.weights_seq_no, runner.get_state()["weights_seq_no"]) == (4, 4)
    assert_weights(runner, 2.0)
    runner.set_state({"rl_module": filled(weights, 1.0), "weights_seq_no": 0})  # 0 forces
    assert runner.weights_seq_no == 0
    assert_weights(runner, 1.0)


def test_weights_seq_no_is_recorded_on_every_step(make_runner):
    runner = make_runner(counting_config(episode_len=10))
    weights = runner.get_state()["rl_module"]
    runner.set_state({"rl_module": weights, "weights_seq_no": 3})
    (first,) = runner.sample(num_timesteps=3)
    runner.set_state({"rl_module": weights, "weights_seq_no": 5})
    (second,) = runner.sample(num_timesteps=2, random_actions=True)

    assert first.get_extra_model_outputs(Columns.WEIGHTS_SEQ_NO).tolist() == [3, 3, 3]
    assert second.get_extra_model_outputs(Columns.WEIGHTS_SEQ_NO).tolist() == [5, 5]
    assert second.get_extra_model_outputs(Columns.WEIGHTS_SEQ_NO, -1, neg_index_as_lookback=True) == 3
    assert runner.get_metrics()["weights_seq_no"] == 5


def test_connector_states_round_trip(make_runner):
    from flywheel.connectors.env_to_module import MeanStdFilter

    config = counting_config(env_to_module_connector=lambda env, spaces, device: MeanStdFilter())
    runner = make_runner(config)
    runner.sample(num_timesteps=4, random_actions=True)
    state = runner.get_state(components=["env_to_module_connector"])["env_to_module_connector"]
    fresh = make_runner(config)
    fresh.set_state({"env_to_module_connector": state})
    assert sorted(state) == ["0_MeanStdFilter"]
    restored = fresh.get_state()["env_to_module_connector"]["0_MeanStdFilter"]
    merged = fresh.env_to_module.merge_states([{"0_MeanStdFilter": restored}])["0_MeanStdFilter"]
    assert merged["shared"]["count"] == 5  # the reset observation and 4 steps


# ----------------------------------------------------------------------- metrics


def test_metrics_exact_values_over_two_calls(make_runner):
    runner = make_runner(counting_config(env=VaryingLengthEnv, num_envs=3))  # lengths 2, 3, 4
    runner.sample(num_timesteps=12, random_actions=True)
    metrics = runner.get_metrics()
    # Finished: lengths 2, 3, 2, 4 with returns 1+2, 1+2+3, 1+2, 1+2+3+4.
    assert metrics["episode_return_mean"] == 22 / 4
    assert (metrics["episode_return_min"], metrics["episode_return_max"]) == (3.0, 10.0)
    assert metrics["episode_len_mean"] == 11 / 4
    assert (metrics["num_episodes"], metrics["num_episodes_lifetime"]) == (4, 4)
    assert (metrics["num_env_steps_sampled"], metrics["num_env_steps_sampled_lifetime"]) == (12, 12)

    # Steps 5-6: env 0 ends a 2-step episode (return 3), env 1 ends the 3-step episode it began at
    # step 4 in the previous call: its return counts the reward of that earlier chunk (1+2+3).
    runner.sample(num_timesteps=6, random_actions=True)
    metrics = runner.get_metrics()
    assert metrics["episode_return_mean"] == (22 + 3 + 6) / 6  # windowed over the last 100 episodes
    assert metrics["episode_len_mean"] == (11 + 2 + 3) / 6
    # A runner's logger is not a root: its lifetime sums hand over what was added since the last call
    # (the algorithm's root logger adds them up), as RLlib's EnvRunners do.
    assert (metrics["num_episodes"], metrics["num_episodes_lifetime"]) == (2, 2)
    assert (metrics["num_env_steps_sampled"], metrics["num_env_steps_sampled_lifetime"]) == (6, 6)
    assert metrics["num_env_steps_sampled_lifetime_throughput"] > 0
    assert metrics["timers"]["sample"] > 0


def test_metrics_window_is_metrics_num_episodes_for_smoothing(make_runner):
    config = counting_config(env=VaryingLengthEnv, num_envs=3).reporting(metrics_num_episodes_for_smoothing=2)
    runner = make_runner(config)
    runner.sample(num_timesteps=12, random_actions=True)
    metrics = runner.get_metrics()
    # The last two finished episodes, both at step 4: env 0 (return 3, length 2), env 2 (10, 4).
    assert (metrics["episode_return_mean"], metrics["episode_len_mean"]) == (6.5, 3.0)
    assert metrics["num_episodes"] == 4


def test_metrics_window_over_two_calls_merges_exactly(make_runner):
    config = counting_config(env=VaryingLengthEnv, num_envs=3).reporting(metrics_num_episodes_for_smoothing=2)
    runner = make_runner(config)
    runner.sample(num_timesteps=12, random_actions=True)  # returns 3, 6, 3, 10 (more than the window)
    runner.sample(num_timesteps=6, random_actions=True)  # returns 3 (length 2), 6 (length 3)
    logger = MetricsLogger()
    logger.aggregate([runner.get_metrics_state()], key="env_runners")
    result = logger.reduce()["env_runners"]
    assert (result["episode_return_mean"], result["episode_return_min"], result["episode_return_max"]) == (
        4.5,
        3.0,
        6.0,
    )
    assert (result["episode_len_mean"], result["episode_len_min"], result["episode_len_max"]) == (2.5, 2, 3)
    assert (result["num_episodes"], result["num_env_steps_sampled"]) == (6, 18)


def test_metrics_use_unclipped_returns_and_state_merges_exactly(make_runner):
    runner = make_runner(counting_config(episode_len=3).environment(clip_rewards=1.0))
    (episode,) = runner.sample(num_timesteps=3, random_actions=True)
    assert episode.get_rewards().tolist() == [1.0, 1.0, 1.0]  # stored clipped
    state = runner.get_metrics_state()
    logger = MetricsLogger()
    logger.aggregate([state], key="env_runners")
    result = logger.reduce()["env_runners"]
    assert (result["episode_return_mean"], result["num_env_steps_sampled"]) == (6.0, 3)
    assert runner.get_metrics().get("num_env_steps_sampled") == 0  # handed over already


@pytest.mark.parametrize(("clip", "expected"), [(True, [1.0] * 5), (2.5, [1.0, 2.0, 2.5, 2.5, 2.5])])
def test_clip_rewards(make_runner, clip, expected):
    runner = make_runner(counting_config(episode_len=5).environment(clip_rewards=clip))
    (episode,) = runner.sample(num_timesteps=5, random_actions=True)
    assert episode.get_rewards().tolist() == expected
    assert runner.get_metrics()["episode_return_mean"] == 15.0


# --------------------------------------------------------------------- callbacks


class Recorder(RLlibCallback):
    """Records (hook, kwargs) and what the episode looked like at each episode hook."""

    instances = []  # the runner builds its own instance; tests find it here

    def __init__(self):
        self.calls = []
        Recorder.instances.append(self)

    def _record(self, hook, kwargs):
        episode = kwargs.get("episode")
        seen = None if episode is None else (len(episode.observations), len(episode), episode.is_done)
        self.calls.append((hook, kwargs, seen))

    def on_environment_created(self, **kwargs):
        self._record("on_environment_created", kwargs)

    def on_episode_created(self, **kwargs):
        self._record("on_episode_created", kwargs)

    def on_episode_start(self, **kwargs):
        self._record("on_episode_start", kwargs)

    def on_episode_step(self, **kwargs):
        self._record("on_episode_step", kwargs)

    def on_episode_end(self, **kwargs):
        self._record("on_episode_end", kwargs)

    def on_sample_end(self, **kwargs):
        self._record("on_sample_end", kwargs)


def test_callback_class_hooks_counts_keywords_and_timing(make_runner):
    Recorder.instances.clear()
    runner = make_runner(counting_config(episode_len=3).callbacks(Recorder))
    samples = runner.sample(num_timesteps=7, random_actions=True)
    (recorder,) = Recorder.instances
    calls = recorder.calls

    hooks = [hook for hook, _, _ in calls]
    assert [h.removeprefix("on_") for h in hooks] == (
        ["environment_created", "episode_created", "episode_start"]
        + ["episode_step"] * 3 + ["episode_end", "episode_created", "episode_start"]
        + ["episode_step"] * 3 + ["episode_end", "episode_created", "episode_start"]
        + ["episode_step", "sample_end"]
    )  # fmt: skip
    _, created, _ = calls[0]
    assert sorted(created) == ["env", "env_context", "env_runner", "metrics_logger"]
    assert created["env"] is runner.env and created["env_runner"] is runner
    assert isinstance(created["env_context"], EnvContext) and created["env_context"].worker_index == 0
    # (observations, steps, done) seen by each hook of the first episode.
    assert [seen for _, _, seen in calls[1:9]] == [
        (0, 0, False), (1, 0, False), (2, 1, False), (3, 2, False), (4, 3, True), (4, 3, True),
        (0, 0, False), (1, 0, False),
    ]  # fmt: skip
    assert calls[5][1]["episode"] is calls[6][1]["episode"] is not calls[7][1]["episode"]
    for _hook, kwargs, _ in calls[1:-1]:
        assert sorted(kwargs) == ["env", "env_index", "env_runner", "episode", "metrics_logger", "rl_module"]
        assert kwargs["env_index"] == 0 and kwargs["rl_module"] is runner.module
        assert kwargs["metrics_logger"] is runner.metrics and kwargs["env"] is runner.env
    hook, end, _ = calls[-1]
    assert sorted(end) == ["env_runner", "metrics_logger", "samples"] and end["samples"] is samples


def test_function_hooks_and_class_hooks_both_run(make_runner):
    lengths, starts = [], []
    config = counting_config(env=VaryingLengthEnv, num_envs=3).callbacks(
        Recorder,
        on_episode_start=lambda env_index, **kw: starts.append(env_index),
        on_episode_end=lambda episode, metrics_logger, **kw: (
            lengths.append(len(episode)),
            metrics_logger.log_value("my_len", len(episode), reduce="mean"),
        ),
    )
    Recorder.instances.clear()
    runner = make_runner(config)
    runner.sample(num_timesteps=12, random_actions=True)
    assert lengths == [2, 3, 2, 4]
    assert starts == [0, 1, 2, 0, 1, 0, 2]
    ends = [
        kwargs["env_index"] for hook, kwargs, _ in Recorder.instances[0].calls if hook == "on_episode_end"
    ]
    assert ends == [0, 1, 0, 2]
    assert runner.get_metrics()["my_len"] == 11 / 4
