"""DreamerV3Config: RLlib 2.60's names and defaults, the keywords training() takes, and every problem
validate() names (tests/porting/test_rllib_defaults.py compares all defaults with RLlib's own)."""

import pytest

from flywheel.algorithms.dreamerv3.config import DreamerV3Config
from flywheel.errors import ConfigError, ConfigKeyError

DREAMER_DEFAULTS = {
    "model_size": "XS",
    "training_ratio": 1024,
    "replay_buffer_config": {"type": "EpisodeReplayBuffer", "capacity": 1_000_000},
    "world_model_lr": 1e-4,
    "actor_lr": 3e-5,
    "critic_lr": 3e-5,
    "batch_size_B": 16,
    "batch_length_T": 64,
    "horizon_H": 15,
    "gae_lambda": 0.95,
    "entropy_scale": 3e-4,
    "return_normalization_decay": 0.99,
    "train_critic": True,
    "train_actor": True,
    "intrinsic_rewards_scale": 0.1,
    "world_model_grad_clip_by_global_norm": 1000.0,
    "critic_grad_clip_by_global_norm": 100.0,
    "actor_grad_clip_by_global_norm": 100.0,
    "symlog_obs": "auto",
    "use_float16": False,
    "metrics_num_episodes_for_smoothing": 1,
    "report_individual_batch_item_stats": False,
    "report_dream_data": False,
    "report_images_and_videos": False,
    "lr": None,
    "gamma": 0.997,
    "train_batch_size": None,
    "num_env_runners": 0,
    "rollout_fragment_length": 1,
}


def test_defaults_and_a_valid_cartpole_config():
    config = DreamerV3Config()
    assert {name: getattr(config, name) for name in DREAMER_DEFAULTS} == DREAMER_DEFAULTS
    DreamerV3Config().environment("CartPole-v1").validate()
    DreamerV3Config().environment("Pendulum-v1").validate()


def test_training_takes_dreamer_keywords():
    config = DreamerV3Config().training(
        model_size="nano",
        training_ratio=512,
        batch_size_B=4,
        batch_length_T=8,
        horizon_H=5,
        world_model_lr=[[0, 1e-3], [1000, 1e-4]],
        symlog_obs=False,
        use_float16=True,
    )
    assert (config.model_size, config.training_ratio, config.batch_size_B, config.batch_length_T) == (
        "nano",
        512,
        4,
        8,
    )
    assert (config.horizon_H, config.symlog_obs, config.use_float16) == (5, False, True)
    assert config.world_model_lr == [[0, 1e-3], [1000, 1e-4]]
    with pytest.raises(ConfigKeyError, match="Did you mean 'horizon_H'"):
        DreamerV3Config().training(horizon_h=5)


def test_batch_size_per_learner():
    config = DreamerV3Config().learners(num_learners=4).training(batch_size_B=16)
    assert config.batch_size_B_per_learner == 4
    assert DreamerV3Config().batch_size_B_per_learner == 16


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"model_size": "XXL"}, r"model_size='XXL' is not one of \['nano', 'micro'"),
        ({"training_ratio": 0}, "training_ratio=0 must be a number > 0"),
        ({"batch_length_T": 0}, "batch_length_T=0 must be an int >= 1"),
        ({"horizon_H": 2.5}, "horizon_H=2.5 must be an int >= 1"),
        ({"gae_lambda": 1.5}, r"gae_lambda=1.5 must be a number in \[0, 1\]"),
        ({"return_normalization_decay": 1.0}, r"return_normalization_decay=1.0 must be a number in \[0, 1\)"),
        ({"actor_lr": 0.0}, "actor_lr=0.0 must be a number > 0"),
        (
            {"critic_grad_clip_by_global_norm": -1.0},
            "critic_grad_clip_by_global_norm=-1.0 must be a number > 0",
        ),
        ({"symlog_obs": "yes"}, "symlog_obs='yes' must be 'auto', True or False"),
        ({"use_float16": 1}, "use_float16=1 must be True or False"),
        ({"use_float16": True}, "mixed-precision training is not in flywheel's DreamerV3 yet"),
        ({"lr": 1e-3}, "lr=0.001: DreamerV3 does not use lr"),
        ({"train_batch_size": 1024}, r"train_batch_size=1024: DreamerV3 does not use it; .* 16 x 64"),
        ({"train_actor": True, "train_critic": False}, "the actor learns from the critic's values"),
        (
            {"replay_buffer_config": {"type": "PrioritizedEpisodeReplayBuffer"}},
            "from an 'EpisodeReplayBuffer' only",
        ),
        (
            {"replay_buffer_config": {"capacity": 0}},
            r"replay_buffer_config\['capacity'\]=0 must be an int >= 1",
        ),
        ({"replay_buffer_config": {"capacty": 10}}, "unknown key 'capacty'"),
    ],
)
def test_training_problems(settings, message):
    config = DreamerV3Config().environment("CartPole-v1").training(**settings)
    with pytest.raises(ConfigError, match=message):
        config.validate()


def test_runner_and_learner_problems():
    auto = DreamerV3Config().environment("CartPole-v1").env_runners(rollout_fragment_length="auto")
    with pytest.raises(
        ConfigError, match="rollout_fragment_length='auto' sizes samples from train_batch_size"
    ):
        auto.validate()
    split = DreamerV3Config().environment("CartPole-v1").learners(num_learners=3).training(batch_size_B=16)
    with pytest.raises(ConfigError, match="batch_size_B=16 does not split evenly across num_learners=3"):
        split.validate()
    multi = DreamerV3Config().environment("CartPole-v1").multi_agent(policies=["a", "b"])
    with pytest.raises(ConfigError, match="DreamerV3 is single-agent"):
        multi.validate()


def test_partial_replay_config_keeps_the_other_key():
    config = DreamerV3Config().environment("CartPole-v1").training(replay_buffer_config={"capacity": 5000})
    config.validate()
