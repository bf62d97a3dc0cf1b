"""DQNConfig / OffPolicyConfig: defaults, keywords, validation problems, replay ratio, buffer building,
the learner pipeline."""

import subprocess
import sys

import pytest

from flywheel import AlgorithmConfig, ConnectorV2, DQNConfig, PPOConfig
from flywheel.algorithms.dqn import DQNConfig as DQNConfigFromPackage
from flywheel.algorithms.off_policy import OffPolicyConfig
from flywheel.errors import ConfigError
from flywheel.replay import (
    EpisodeReplayBuffer,
    MultiAgentEpisodeReplayBuffer,
    MultiAgentPrioritizedEpisodeReplayBuffer,
    PrioritizedEpisodeReplayBuffer,
)

DQN_DEFAULTS = {
    "lr": 5e-4,
    "grad_clip": 40.0,
    "train_batch_size": 32,
    "train_batch_size_per_learner": None,
    "minibatch_size": None,
    "shuffle_batch_per_epoch": False,
    "rollout_fragment_length": 4,
    "min_sample_timesteps_per_iteration": 1000,
    "replay_buffer_config": {
        "type": "EpisodeReplayBuffer",
        "capacity": 50_000,
        "alpha": 0.6,
        "beta": 0.4,
        "store_in_checkpoints": False,
    },
    "training_intensity": None,
    "num_steps_sampled_before_learning_starts": 1000,
    "target_network_update_freq": 500,
    "tau": 1.0,
    "n_step": 1,
    "epsilon": [[0, 1.0], [10_000, 0.05]],
    "double_q": True,
    "dueling": True,
    "td_error_loss_fn": "huber",
    "evaluation_config": {"explore": False},
}


def valid():
    return DQNConfig().environment("CartPole-v1")


def problems_of(config):
    with pytest.raises(ConfigError) as info:
        config.validate()
    return str(info.value)


def test_defaults():
    config = DQNConfig()
    assert {name: getattr(config, name) for name in DQN_DEFAULTS} == DQN_DEFAULTS
    assert isinstance(config, OffPolicyConfig) and isinstance(config, AlgorithmConfig)
    assert DQNConfigFromPackage is DQNConfig
    valid().validate()


def test_training_takes_dqn_and_off_policy_keywords():
    config = valid().training(
        epsilon=0.1,
        double_q=False,
        dueling=False,
        td_error_loss_fn="mse",
        n_step=[1, 3],
        tau=0.01,
        target_network_update_freq=0,
        training_intensity=8,
        num_steps_sampled_before_learning_starts=0,
        replay_buffer_config={"type": "PrioritizedEpisodeReplayBuffer", "capacity": 1000},
    )
    assert (config.epsilon, config.double_q, config.dueling, config.td_error_loss_fn) == (
        0.1,
        False,
        False,
        "mse",
    )
    assert (config.n_step, config.tau, config.target_network_update_freq, config.training_intensity) == (
        [1, 3],
        0.01,
        0,
        8,
    )
    config.validate()
    assert config.replay_buffer_settings() == {
        "type": "PrioritizedEpisodeReplayBuffer",
        "capacity": 1000,
        "alpha": 0.6,
        "beta": 0.4,
        "store_in_checkpoints": False,
    }
    with pytest.raises(
        TypeError,
        match=r"DQNConfig.training\(\) got an unexpected keyword 'dueeling'. Did you mean 'dueling'",
    ):
        config.training(dueeling=True)
    with pytest.raises(TypeError, match="unexpected keyword 'epsilon'"):
        PPOConfig().training(epsilon=0.1)


def test_a_config_that_can_never_learn_is_one_error_listing_every_problem():
    config = valid().training(
        training_intensity=0,
        minibatch_size=16,
        replay_buffer_config={"capacity": 8, "typ": "x", "beta": -1},
        epsilon=[[0, 1.5], [100, 0.1]],
        tau=0.0,
        n_step=[3, 1],
    )
    message = problems_of(config)
    assert message.startswith("Invalid DQNConfig (8 problems):\n")
    assert (
        "- training_intensity=0 would never train (it is the number of replayed env steps per sampled env step). "
        "Fix: pass a number > 0, or None for one update per training step, to config.training(training_intensity=...)."
    ) in message
    assert (
        "- replay_buffer_config['capacity']=8 is smaller than the train batch (32): the buffer can never "
        "hold one train batch. Fix: raise the capacity or lower the batch size."
    ) in message
    assert "- minibatch_size=16, but DQNConfig takes one gradient step per replayed batch." in message
    assert "- replay_buffer_config has an unknown key 'typ'. Did you mean 'type'?" in message
    assert "- replay_buffer_config['beta']=-1 must be a number >= 0." in message
    assert "- epsilon=[[0, 1.5], [100, 0.1]] has a probability above 1 (1.5)." in message
    assert "- tau=0.0 must be a number in (0, 1] (1.0 copies the weights)." in message
    assert "- n_step=[3, 1] must be an int >= 1 or a range [lo, hi] with 1 <= lo <= hi." in message


def test_replay_type_and_capacity_problems():
    message = problems_of(valid().training(replay_buffer_config={"type": "PrioritizedReplayBuffer"}))
    assert (
        "replay_buffer_config['type']='PrioritizedReplayBuffer' is not one of ['EpisodeReplayBuffer', "
        "'PrioritizedEpisodeReplayBuffer', 'MultiAgentEpisodeReplayBuffer', "
        "'MultiAgentPrioritizedEpisodeReplayBuffer']. Did you mean 'PrioritizedEpisodeReplayBuffer'?"
    ) in message
    message = problems_of(valid().training(replay_buffer_config={"type": dict}))
    assert "replay_buffer_config['type']=<class 'dict'> is neither a buffer name" in message
    message = problems_of(valid().training(replay_buffer_config={"capacity": 0}))
    assert "replay_buffer_config['capacity']=0 must be an int >= 1 (env steps)." in message
    message = problems_of(valid().training(replay_buffer_config=[("capacity", 10)]))
    assert "replay_buffer_config=[('capacity', 10)] is not a dict." in message
    message = problems_of(
        valid().env_runners(rollout_fragment_length=64).training(replay_buffer_config={"capacity": 40})
    )
    assert "replay_buffer_config['capacity']=40 is smaller than rollout_fragment_length=64" in message
    message = problems_of(valid().training(replay_buffer_config={"store_in_checkpoints": "yes"}))
    assert "replay_buffer_config['store_in_checkpoints']='yes' must be True or False." in message


def test_multi_agent_learner_connectors_and_remote_learners_are_valid():
    config = (
        valid()
        .multi_agent(policies={"p0", "p1"}, policy_mapping_fn=lambda agent_id, episode, **kw: "p0")
        .learners(num_learners=2, learner_connector=lambda obs, act: [])
    )
    config.validate()


def test_other_dqn_problems():
    message = problems_of(
        valid().training(td_error_loss_fn="l2", double_q=1, num_steps_sampled_before_learning_starts=-1)
    )
    assert "td_error_loss_fn='l2' is not one of ['huber', 'mse']" in message
    assert "double_q=1 must be True or False." in message
    assert "num_steps_sampled_before_learning_starts=-1 must be an int >= 0." in message


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ({}, (1, 1)),  # no training_intensity: one sample() call and one update
        ({"training_intensity": 8}, (1, 1)),  # 32 replayed per 4 sampled: the native ratio
        ({"training_intensity": 32}, (1, 4)),
        ({"training_intensity": 2}, (4, 1)),  # sample 4 times (16 steps) per 32 replayed
        ({"training_intensity": 3}, (3, 1)),  # 32 / (3 * 4) = 2.67 -> 3 sample calls
        ({"training_intensity": 100}, (1, 12)),  # 100 * 4 / 32 = 12.5 -> 12 (round half to even)
    ],
)
def test_sample_and_train_rounds(settings, expected):
    assert valid().training(**settings).sample_and_train_rounds() == expected


def test_sample_and_train_rounds_count_every_sub_env():
    config = (
        valid()
        .env_runners(num_envs_per_env_runner=8, rollout_fragment_length=1)
        .training(training_intensity=16)
    )
    assert config.sample_and_train_rounds() == (1, 4)  # 8 sampled * 16 / 32 per batch


def test_build_replay_buffer():
    buffer = valid().training(replay_buffer_config={"capacity": 100}).debugging(seed=3).build_replay_buffer()
    assert type(buffer) is EpisodeReplayBuffer and (buffer.capacity, buffer.batch_size_B) == (100, 32)
    config = valid().training(
        train_batch_size_per_learner=64,
        replay_buffer_config={"type": "PrioritizedEpisodeReplayBuffer", "capacity": 128, "alpha": 0.5},
    )
    buffer = config.build_replay_buffer()
    assert type(buffer) is PrioritizedEpisodeReplayBuffer
    assert (buffer.capacity, buffer.batch_size_B, buffer.alpha) == (128, 64, 0.5)

    class MyBuffer(PrioritizedEpisodeReplayBuffer):
        pass

    config = valid().training(replay_buffer_config={"type": MyBuffer, "alpha": 0.7})
    config.validate()
    buffer = config.build_replay_buffer()
    assert type(buffer) is MyBuffer and buffer.alpha == 0.7


def two_modules(config):
    return config.multi_agent(policies={"p0", "p1"}, policy_mapping_fn=lambda agent_id, episode, **kw: "p0")


@pytest.mark.parametrize(
    ("buffer_type", "per_module"),
    [
        ("EpisodeReplayBuffer", EpisodeReplayBuffer),
        ("MultiAgentEpisodeReplayBuffer", EpisodeReplayBuffer),
        ("PrioritizedEpisodeReplayBuffer", PrioritizedEpisodeReplayBuffer),
        ("MultiAgentPrioritizedEpisodeReplayBuffer", PrioritizedEpisodeReplayBuffer),
    ],
)
def test_multi_agent_configs_replay_per_module(buffer_type, per_module):
    config = two_modules(valid().training(replay_buffer_config={"type": buffer_type, "alpha": 0.5}))
    config.validate()
    buffer = config.build_replay_buffer()
    assert isinstance(buffer, MultiAgentEpisodeReplayBuffer) and buffer.buffer_class is per_module
    prioritized = two_modules(
        valid().training(replay_buffer_config={"type": "MultiAgentPrioritizedEpisodeReplayBuffer"})
    )
    assert type(prioritized.build_replay_buffer()) is MultiAgentPrioritizedEpisodeReplayBuffer


def test_the_learner_pipeline_adds_next_observations_and_tensors():
    pipeline = (
        valid().learners(learner_connector=lambda obs, act: Marker()).build_learner_connector(None, None)
    )
    assert [piece.name for piece in pipeline.connectors] == [
        "Marker",
        "AddObservationsFromEpisodesToBatch",
        "AddNextObservationsFromEpisodesToTrainBatch",
        "AddColumnsFromEpisodesToTrainBatch",
        "AddTimeDimToBatchAndZeroPad",
        "BatchIndividualItems",
        "NumpyToTensor",
    ]
    config = valid().learners(
        learner_connector=lambda obs, act: Marker(), add_default_connectors_to_learner_pipeline=False
    )
    assert [piece.name for piece in config.build_learner_connector(None, None).connectors] == ["Marker"]


class Marker(ConnectorV2):
    def __call__(self, *, batch, **kwargs):
        return batch


def test_module_spec_gets_the_dueling_and_distributional_settings():
    spec = (
        valid()
        .training(dueling=False, num_atoms=11, v_min=-2.0, v_max=3.0)
        .rl_module(model_config={"fcnet_hiddens": [32]})
        .get_rl_module_spec()
    )
    assert spec.module_class.__name__ == "DefaultDQNTorchRLModule"
    assert spec.model_config == {
        "fcnet_hiddens": [32],
        "fcnet_activation": "relu",
        "head_fcnet_hiddens": [256],
        "dueling": False,
        "num_atoms": 11,
        "v_min": -2.0,
        "v_max": 3.0,
    }


def test_distributional_defaults_are_rllibs():
    config = DQNConfig()
    assert (config.num_atoms, config.v_min, config.v_max) == (1, -10.0, 10.0)


@pytest.mark.parametrize(
    ("training", "message"),
    [
        (
            {"num_atoms": 0},
            "num_atoms=0 must be an int >= 1. Fix: pass an int >= 1 to config.training(num_atoms=...).",
        ),
        (
            {"num_atoms": 51, "v_min": 5.0, "v_max": 5.0},
            "v_min=5.0 must be below v_max=5.0: they are the ends of the support of the 51 atoms. Fix: pass "
            "returns that bound the Q-values, e.g. config.training(v_min=0.0, v_max=100.0).",
        ),
        (
            {"v_max": float("inf")},
            "v_min=-10.0, v_max=inf must be finite numbers (the ends of C51's support). "
            "Fix: pass numbers to config.training(v_min=..., v_max=...).",
        ),
    ],
)
def test_bad_distributional_settings_are_named(training, message):
    with pytest.raises(ConfigError) as info:
        valid().training(**training).validate()
    assert message in str(info.value)


def test_dict_round_trip():
    config = valid().training(n_step=3, epsilon=[[0, 1.0], [500, 0.1]])
    assert DQNConfig.from_dict(config.to_dict()) == config


def test_building_and_validating_a_config_imports_neither_ray_nor_torch():
    code = (
        "import sys\n"
        "from flywheel import DQNConfig, SACConfig\n"
        "c = DQNConfig().environment('CartPole-v1').training(n_step=3)\n"
        "c.validate(); c.copy().to_dict(); c.sample_and_train_rounds(); c.build_replay_buffer()\n"
        "SACConfig().environment('Pendulum-v1').validate()\n"
        "print('ray' in sys.modules, 'torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False False"
