import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

from flywheel import Columns, RLModuleSpec, ValueFunctionAPI
from flywheel.algorithms.ppo.rl_module import DefaultPPOTorchRLModule
from flywheel.core.models import CNNEncoder, LSTMEncoder, OneHotMLPEncoder
from flywheel.errors import ModuleError

CARTPOLE_OBS = gym.spaces.Box(-np.inf, np.inf, (4,), np.float32)
DISCRETE2 = gym.spaces.Discrete(2)


def build(obs=CARTPOLE_OBS, act=DISCRETE2, inference_only=False, seed=0, **model_config):
    torch.manual_seed(seed)
    return RLModuleSpec(DefaultPPOTorchRLModule, obs, act, inference_only, model_config).build()


def obs_batch(space, *lead):
    return torch.as_tensor(
        np.stack([space.sample() for _ in range(int(np.prod(lead)))]).reshape(*lead, *space.shape)
    )


@pytest.mark.parametrize(
    ("action_space", "dim"),
    [
        (gym.spaces.Discrete(3), 3),
        (gym.spaces.MultiDiscrete([2, 3]), 5),
        (gym.spaces.Box(-1, 1, (2,)), 4),
        (gym.spaces.Dict({"fire": gym.spaces.Discrete(2), "move": gym.spaces.Box(-1, 1, (1,))}), 4),
        (gym.spaces.Tuple((gym.spaces.Discrete(2), gym.spaces.MultiDiscrete([2, 2]))), 6),
    ],
)
def test_action_dist_inputs_per_action_space(action_space, dim):
    module = build(act=action_space, fcnet_hiddens=[16])
    out = module.forward_exploration({Columns.OBS: torch.zeros(8, 4)})
    assert list(out) == [Columns.ACTION_DIST_INPUTS] and out[Columns.ACTION_DIST_INPUTS].shape == (8, dim)
    dist = module.get_exploration_action_dist_cls().from_logits(out[Columns.ACTION_DIST_INPUTS])
    assert dist.logp(dist.sample()).shape == (8,)


def test_default_architecture_and_initialization():
    module = build()
    assert isinstance(module, ValueFunctionAPI)
    encoder_layers = [type(m) for m in module.encoder.actor_encoder]
    assert encoder_layers == [nn.Linear, nn.Tanh, nn.Linear, nn.Tanh]
    assert [m.out_features for m in module.encoder.actor_encoder if isinstance(m, nn.Linear)] == [256, 256]
    assert module.pi.out_features == 2 and module.vf.out_features == 1
    # Heads keep torch's default Linear init, as RLlib's: uniform within ±1/sqrt(fan_in) = ±1/16.
    for head in (module.pi, module.vf):
        assert 0.9 / 16 < head.weight.abs().max() <= 1 / 16 and 0 < head.bias.abs().max() <= 1 / 16
    assert module.model_config["max_seq_len"] == 20 and not module.is_stateful()


def test_model_config_hiddens_and_activation():
    module = build(fcnet_hiddens=[32, 16, 8], fcnet_activation="relu", head_fcnet_hiddens=[4])
    assert [m.out_features for m in module.encoder.actor_encoder if isinstance(m, nn.Linear)] == [32, 16, 8]
    assert all(type(m) is nn.ReLU for m in list(module.encoder.actor_encoder)[1::2])
    assert [m.out_features for m in module.pi if isinstance(m, nn.Linear)] == [4, 2]
    assert [m.out_features for m in module.encoder.critic_encoder if isinstance(m, nn.Linear)] == [32, 16, 8]


def test_separate_value_encoder_and_embeddings():
    module = build(fcnet_hiddens=[16])
    batch = {Columns.OBS: obs_batch(gym.spaces.Box(-1, 1, (4,), np.float32), 6)}
    calls = []
    module.encoder.critic_encoder.register_forward_hook(lambda *args: calls.append(1))
    out = module.forward_train(batch)
    # The critic encoder runs only when a loss asks for values: BC's forward skips it.
    assert sorted(out) == [Columns.ACTION_DIST_INPUTS] and calls == []
    values = module.compute_values(batch, out.get(Columns.EMBEDDINGS))
    assert values.shape == (6,) and values.requires_grad and calls == [1]
    expected = module.vf(module.encoder.critic_encoder(batch[Columns.OBS])).squeeze(-1)
    assert torch.equal(values, expected)
    # The value loss does not reach the policy encoder.
    values.sum().backward()
    assert (
        module.encoder.actor_encoder[0].weight.grad is None
        and module.encoder.critic_encoder[0].weight.grad is not None
    )


def test_vf_share_layers():
    module = build(fcnet_hiddens=[16], vf_share_layers=True)
    assert not hasattr(module.encoder, "actor_encoder")  # one encoder for both branches
    batch = {Columns.OBS: torch.randn(5, 4)}
    out = module.forward_train(batch)
    assert torch.equal(out[Columns.EMBEDDINGS], module.encoder(batch[Columns.OBS]))
    assert torch.allclose(module.compute_values(batch), module.compute_values(batch, out[Columns.EMBEDDINGS]))


def test_inference_only_has_no_value_branch():
    full, runner = build(fcnet_hiddens=[16]), build(fcnet_hiddens=[16], inference_only=True, seed=1)
    assert not hasattr(runner, "vf") and not hasattr(runner.encoder, "critic_encoder")
    assert sorted(runner.get_state()) == sorted(full.get_state(inference_only=True))
    assert sorted(runner.get_state()) == [
        "encoder.actor_encoder.0.bias",
        "encoder.actor_encoder.0.weight",
        "pi.bias",
        "pi.weight",
    ]
    runner.set_state(full.get_state())  # a full state is accepted; the value branch is skipped
    obs = {Columns.OBS: torch.randn(3, 4)}
    assert torch.equal(
        runner.forward_inference(obs)[Columns.ACTION_DIST_INPUTS],
        full.forward_inference(obs)[Columns.ACTION_DIST_INPUTS],
    )
    assert Columns.EMBEDDINGS not in runner.forward_train(obs)
    with pytest.raises(ModuleError, match="built with inference_only=True and has no value branch"):
        runner.compute_values(obs)


def test_state_round_trip_is_exact():
    source, target = build(fcnet_hiddens=[16], seed=0), build(fcnet_hiddens=[16], seed=1)
    state = source.get_state()
    target.set_state(state)
    assert sorted(target.get_state()) == sorted(state)
    assert all(np.array_equal(target.get_state()[k], v) for k, v in state.items())
    obs = {Columns.OBS: torch.randn(4, 4)}
    assert torch.equal(
        target.forward_train(obs)[Columns.ACTION_DIST_INPUTS],
        source.forward_train(obs)[Columns.ACTION_DIST_INPUTS],
    )
    assert torch.equal(target.compute_values(obs), source.compute_values(obs))


def test_free_log_std_for_box_actions():
    module = build(act=gym.spaces.Box(-1, 1, (3,)), fcnet_hiddens=[8], free_log_std=True)
    out = module.forward_inference({Columns.OBS: torch.randn(2, 4)})[Columns.ACTION_DIST_INPUTS]
    assert out.shape == (2, 6) and torch.equal(out[:, 3:], torch.zeros(2, 3))
    assert "pi.log_std" in module.get_state()


def test_discrete_observations_are_one_hot_encoded():
    module = build(obs=gym.spaces.Discrete(5), fcnet_hiddens=[8])
    assert isinstance(module.encoder.actor_encoder, OneHotMLPEncoder)
    out = module.forward_exploration({Columns.OBS: torch.tensor([0, 4, 2])})
    assert out[Columns.ACTION_DIST_INPUTS].shape == (3, 2)
    assert module.compute_values({Columns.OBS: torch.tensor([1, 3])}).shape == (2,)


def test_cnn_on_84x84x3_images():
    space = gym.spaces.Box(0, 255, (84, 84, 3), np.uint8)
    module = build(obs=space, act=gym.spaces.Discrete(6))
    assert isinstance(module.encoder.actor_encoder, CNNEncoder) and module.encoder.output_dim == 256
    batch = {Columns.OBS: obs_batch(space, 2)}
    out = module.forward_train(batch)
    assert out[Columns.ACTION_DIST_INPUTS].shape == (2, 6)
    assert module.compute_values(batch).shape == (2,)


def test_lstm_state_shapes_and_carry_over():
    module = build(fcnet_hiddens=[8], use_lstm=True, lstm_cell_size=6, max_seq_len=5)
    assert isinstance(module.encoder, LSTMEncoder) and module.is_stateful()
    assert not hasattr(module, "vf_encoder")  # the value head shares the LSTM
    init = module.get_initial_state()
    assert sorted(init) == ["c", "h"] and init["h"].shape == (6,) and init["h"].dtype == np.float32
    obs = torch.randn(3, 5, 4)
    state = {k: torch.from_numpy(np.stack([v] * 3)) for k, v in init.items()}
    step_logits = []
    for t in range(5):
        # Acting: OBS [B, 1, ...] and STATE_IN [B, ...], as runners give them (RLlib's layout).
        out = module.forward_exploration({Columns.OBS: obs[:, t : t + 1], Columns.STATE_IN: state})
        assert out[Columns.ACTION_DIST_INPUTS].shape == (3, 1, 2) and out[Columns.STATE_OUT]["h"].shape == (
            3,
            6,
        )
        assert not torch.equal(out[Columns.STATE_OUT]["h"], state["h"])
        step_logits.append(out[Columns.ACTION_DIST_INPUTS][:, 0])
        state = out[Columns.STATE_OUT]
    train_batch = {
        Columns.OBS: obs,
        Columns.STATE_IN: {k: torch.from_numpy(np.stack([v] * 3)) for k, v in init.items()},
    }
    train_out = module.forward_train(train_batch)
    assert train_out[Columns.ACTION_DIST_INPUTS].shape == (3, 5, 2)
    assert train_out[Columns.EMBEDDINGS].shape == (3, 5, 6)
    assert torch.allclose(train_out[Columns.ACTION_DIST_INPUTS], torch.stack(step_logits, 1), atol=1e-6)
    assert torch.allclose(train_out[Columns.STATE_OUT]["h"], state["h"], atol=1e-6)
    values = module.compute_values(train_batch)
    assert values.shape == (3, 5)
    assert torch.allclose(values, module.compute_values(train_batch, train_out[Columns.EMBEDDINGS]))


def test_lstm_values_need_state_in():
    module = build(fcnet_hiddens=[8], use_lstm=True, lstm_cell_size=4)
    with pytest.raises(ModuleError, match=r"needs batch\['state_in'\] .*the batch has \['obs'\]"):
        module.compute_values({Columns.OBS: torch.zeros(2, 3, 4)})


def test_dict_observations_without_flattening():
    space = gym.spaces.Dict({"pos": gym.spaces.Box(-1, 1, (2,)), "id": gym.spaces.Discrete(3)})
    with pytest.raises(ModuleError, match="Fix: add flywheel.connectors.env_to_module.FlattenObservations"):
        build(obs=space)


def test_unknown_activation_fails_at_build():
    with pytest.raises(
        ModuleError,
        match=r"model_config\['fcnet_activation'\] must be one of \['tanh', 'relu', 'linear', 'swish', 'silu', 'elu'\], "
        r"got 'sigmoid'",
    ):
        build(fcnet_activation="sigmoid")


def test_unsupported_action_space_fails_at_build():
    with pytest.raises(ModuleError, match=r"No action distribution for action space MultiBinary\(4\)"):
        build(act=gym.spaces.MultiBinary(4))
