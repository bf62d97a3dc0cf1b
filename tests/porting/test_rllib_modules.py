"""RLlib 2.60's own example RLModules (`ray/rllib/examples/rl_modules/classes/`), ported by `flywheel port`
with no edit, run in the role their example gives them (the algorithm, env and settings of the example
script that uses them, with small budgets), asserting what each example is about.

The files are read from the installed wheel and ported into a temporary folder (`ported_example`);
nothing of RLlib's is copied into the repository. A class that cannot run names the missing capability,
and `flywheel port` reports the line that needs it.
"""

import ast
import random
import warnings

import gymnasium as gym
import numpy as np
import pytest
import torch

from flywheel import Columns, MultiRLModuleSpec, PPOConfig, RLlibCallback, RLModuleSpec, register_env
from flywheel.porting import port_source
from flywheel.typing import DEFAULT_MODULE_ID

from .conftest import docstring_testcode

RUNS = {
    # file: {class: the role it runs in (the test that runs it)}
    "rl_modules/classes/lstm_containing_rlm.py": {
        "LSTMContainingRLModule": "PPO on StatelessCartPole (custom_lstm_rl_module.py)",
        "LSTMContainingRLModuleWithTargetNetwork": "APPO on CartPole, as its docstring configures it",
    },
    "rl_modules/classes/action_masking_rlm.py": {
        "ActionMaskingRLModule": "base of ActionMaskingTorchRLModule",
        "ActionMaskingTorchRLModule": "PPO on ActionMaskEnv with evaluation (action_masking_rl_module.py)",
    },
    "rl_modules/classes/autoregressive_actions_rlm.py": {
        "AutoregressiveActionsRLM": "PPO on CorrelatedActionsEnv (Tuple actions)",
    },
    "rl_modules/classes/custom_action_distribution_rlm.py": {
        "CustomActionDistributionRLModule": "PPO on CartPole with a temperature distribution",
    },
    "rl_modules/classes/tiny_atari_cnn_rlm.py": {
        "TinyAtariCNN": "PPO on FastImageEnv (no Atari yet) (custom_cnn_rl_module.py)",
    },
    "rl_modules/classes/random_rlm.py": {
        "RandomRLModule": "random untrained opponent (custom_heuristic_policy.py, the OpenSpiel self-play scripts)",
        "StatefulRandomRLModule": "its initial state (its _random_forward calls a method RandomRLModule lacks, in RLlib too)",
    },
    "rl_modules/classes/rock_paper_scissors_heuristic_rlm.py": {
        "AlwaysSameHeuristicRLM": "untrained policy in multi-agent PPO (rock_paper_scissors_heuristic_vs_learned.py)",
        "BeatLastHeuristicRLM": "untrained policy in multi-agent PPO (rock_paper_scissors_heuristic_vs_learned.py)",
    },
}

SKIPPED = {
    # file: (the missing capability, a part of the line `flywheel port` reports for it)
    "rl_modules/classes/mobilenet_rlm.py": (
        "RLlib's model catalog (ModelConfig, Encoder, ActorCriticEncoderConfig, MLPHeadConfig) and "
        "torchvision's pretrained MobileNet weights, downloaded at import",
        "ray.rllib.core.models.configs.ActorCriticEncoderConfig: RLlib's model catalog",
    ),
    "rl_modules/classes/modelv2_to_rlm.py": (
        "the old API stack's ModelV2 and TorchPolicyV2 (a bridge from ModelV2 to RLModule)",
        "ray.rllib.policy.torch_policy_v2.TorchPolicyV2: RLlib's old API stack",
    ),
}

OTHER_TESTS = {
    # Example RLModules the connector/learner example tests run (with their learners and algorithms).
    "rl_modules/classes/vpg_torch_rlm.py",
    "rl_modules/classes/vpg_using_shared_encoder_rlm.py",
    "rl_modules/classes/intrinsic_curiosity_model_rlm.py",
}


def classes_in(path):
    return {node.name for node in ast.parse(path.read_text()).body if isinstance(node, ast.ClassDef)}


def test_every_example_rl_module_is_listed_with_its_role_or_reason(rllib_examples):
    files = {
        path.relative_to(rllib_examples).as_posix()
        for path in (rllib_examples / "rl_modules" / "classes").glob("*.py")
        if path.name != "__init__.py"
    }
    assert files == set(RUNS) | set(SKIPPED) | OTHER_TESTS
    for name, roles in RUNS.items():
        assert classes_in(rllib_examples / name) == set(roles)


@pytest.mark.parametrize("name", sorted(SKIPPED))
def test_skipped_classes_are_reported_by_flywheel_port(ported_rllib_examples, name):
    out, report = ported_rllib_examples
    messages = [p.message for p in report.problems if p.path == str(out / name)]
    assert any(SKIPPED[name][1] in message for message in messages), messages


def test_runnable_classes_port_with_nothing_to_report(ported_rllib_examples):
    out, report = ported_rllib_examples
    reported = {p.path for p in report.problems}
    assert sorted(str(out / name) for name in RUNS if str(out / name) in reported) == []


def run_testcode(module, cls) -> int:
    """Runs the class's docstring `.. testcode::` blocks (ported like the file) in the module's namespace,
    as RLlib's doctests do; returns how many ran. A block `flywheel port` cannot port fails the test."""
    blocks = docstring_testcode(cls)
    for block in blocks:
        text, problems = port_source(block, f"{cls.__name__}.testcode")
        assert problems == []
        exec(compile(text, f"{cls.__name__}.testcode", "exec"), dict(vars(module)))
    return len(blocks)


def ppo(env, **training):
    return (
        PPOConfig()
        .environment(env)
        .training(**{"train_batch_size_per_learner": 256, "minibatch_size": 64, "num_epochs": 1, **training})
        .debugging(seed=0)
    )


# LSTMContainingRLModule: the LSTM's state flows between steps; learners get sequences.


def test_lstm_module_state_flows_between_steps_and_learners_get_sequences(ported_example):
    lstm = ported_example("rl_modules.classes.lstm_containing_rlm")
    stateless = ported_example("envs.classes.stateless_cartpole")
    acting, training = [], []

    class Recorded(lstm.LSTMContainingRLModule):
        def _forward(self, batch, **kwargs):
            out = super()._forward(batch, **kwargs)
            acting.append((batch[Columns.OBS].shape, batch[Columns.STATE_IN], out[Columns.STATE_OUT], kwargs))
            return out

        def _forward_train(self, batch, **kwargs):
            training.append({k: batch[k] for k in (Columns.OBS, Columns.STATE_IN, Columns.SEQ_LENS)})
            return super()._forward_train(batch, **kwargs)

    model_config = {"lstm_cell_size": 16, "dense_layers": [16], "max_seq_len": 20}
    config = (
        ppo(stateless.StatelessCartPole, lr=0.0009, vf_loss_coeff=0.001, entropy_coeff=0.0)
        .env_runners(num_envs_per_env_runner=2)
        .rl_module(rl_module_spec=RLModuleSpec(module_class=Recorded, model_config=model_config))
    )
    algo = config.build_algo()
    algo.train()
    episodes = algo.env_runner.sample(num_timesteps=40)
    algo.stop()

    # Acting: OBS [B, 1, 2] (RLlib's time axis), STATE_IN [B, cell], `t` passed to forward_exploration.
    assert {shape for shape, *_ in acting} == {(2, 1, 2)}
    assert all(state_in["h"].shape == (2, 16) and "t" in kwargs for _, state_in, _, kwargs in acting)
    ts = [kwargs["t"] for *_, kwargs in acting]
    assert ts == sorted(ts) and ts[-1] > ts[0]
    # STATE_OUT of step t is STATE_IN of step t+1, per sub-env, unless that sub-env's episode restarted
    # (then STATE_IN is the initial zeros).
    carried = restarted = 0
    for (_, _, state_out, _), (_, state_in, _, _) in zip(acting, acting[1:]):
        for row in range(2):
            if torch.equal(state_in["h"][row], state_out["h"][row]):
                carried += 1
                assert torch.equal(state_in["c"][row], state_out["c"][row])
            else:
                restarted += 1
                assert not state_in["h"][row].any() and not state_in["c"][row].any()
    assert carried > 20 * restarted > 0
    # The runner stores each step's STATE_OUT in the episode.
    assert episodes[0].get_extra_model_outputs(Columns.STATE_OUT, 0)["h"].shape == (16,)
    # Learners: sequences of max_seq_len=20 with the state at each sequence start.
    first = training[0]
    num_seqs = first[Columns.OBS].shape[0]
    assert first[Columns.OBS].shape == (num_seqs, 20, 2) and first[Columns.STATE_IN]["h"].shape == (
        num_seqs,
        16,
    )
    assert int(first[Columns.SEQ_LENS].min()) >= 1 and int(first[Columns.SEQ_LENS].max()) == 20


def test_lstm_module_docstring_examples_run(ported_example):
    lstm = ported_example("rl_modules.classes.lstm_containing_rlm")
    import tree

    lstm.tree = tree  # the docstring uses dm-tree without importing it
    assert run_testcode(lstm, lstm.LSTMContainingRLModule) == 1


def test_lstm_module_with_target_network_in_appo(ported_example):
    """Its second docstring example: APPO with this module on CartPole. The learner's loss reads the
    module's own target networks (forward_target), which follow the trained ones (tau 1.0 copies)."""
    lstm = ported_example("rl_modules.classes.lstm_containing_rlm")
    cls = lstm.LSTMContainingRLModuleWithTargetNetwork
    _, appo = docstring_testcode(cls)
    namespace = dict(vars(lstm))
    text, problems = port_source(appo, "testcode")
    assert problems == []
    exec(compile(text, "testcode", "exec"), namespace)
    target_batches = []

    class Recorded(cls):
        def forward_target(self, batch, **kwargs):
            target_batches.append(batch[Columns.OBS].shape)
            return super().forward_target(batch, **kwargs)

    config = namespace["config"]
    config.rl_module_spec.module_class = Recorded  # records the docstring's own module's calls
    config = (
        config.env_runners(num_env_runners=0, num_envs_per_env_runner=2, rollout_fragment_length=20)
        .training(train_batch_size_per_learner=80, target_network_update_freq=1)
        .debugging(seed=0)
    )
    algo = config.build_algo()
    (module,) = algo.learner_group.foreach_learner(lambda learner: learner.module[DEFAULT_MODULE_ID])
    pairs = module.get_target_network_pairs()
    before = [p.detach().clone() for _, target in pairs for p in target.parameters()]
    algo.train()
    algo.stop()

    # Sequences of the module's max_seq_len (RLlib's default 20) reach forward_target.
    assert target_batches and {shape[1:] for shape in target_batches} == {(20, 4)}
    after = [p for _, target in pairs for p in target.parameters()]
    # The target networks followed the trained ones (each of the three pairs moved).
    assert len(pairs) == 3 and not any(torch.equal(a, b) for a, b in zip(before, after, strict=True))


def test_lstm_module_with_target_network_docstring_target_networks(ported_example):
    """Its first docstring example (target networks, forward_target); the second configures APPO."""
    lstm = ported_example("rl_modules.classes.lstm_containing_rlm")
    cls = lstm.LSTMContainingRLModuleWithTargetNetwork
    first, appo = docstring_testcode(cls)
    assert "APPOConfig" in appo
    namespace = dict(vars(lstm))
    exec(compile(port_source(first, "testcode")[0], "testcode", "exec"), namespace)
    net = namespace["my_net"]
    target = net.forward_target(namespace["input_dict"])
    assert target[lstm.TARGET_NETWORK_ACTION_DIST_INPUTS].shape == (10, 5, 4)
    assert len(net.get_target_network_pairs()) == 3
    # InferenceOnlyAPI: built for runners, the module drops the parts only learners use.
    runner_net = cls(
        observation_space=net.observation_space, action_space=net.action_space, inference_only=True,
        model_config={"lstm_cell_size": 32},
    )  # fmt: skip
    assert not hasattr(runner_net, "_values") and hasattr(runner_net, "_pi_head")


# ActionMaskingTorchRLModule: no masked action is ever taken, in training and evaluation.


def test_action_masking_module_never_takes_a_masked_action(ported_example):
    env_module = ported_example("envs.classes.action_mask_env")
    masking = ported_example("rl_modules.classes.action_masking_rlm")
    taken = {True: [], False: []}  # explore -> (mask at the observation, action) per step

    class RecordMasks(RLlibCallback):
        def on_episode_end(self, *, episode, env_runner, **kwargs):
            masks = [obs["action_mask"] for obs in episode.get_observations()[:-1]]
            explore = env_runner.config.explore
            taken[explore].extend(zip(masks, episode.get_actions(), strict=True))

    env_config = {
        "action_space": gym.spaces.Discrete(100),
        "observation_space": gym.spaces.Box(-1.0, 1.0, (5,)),
    }
    model_config = {"head_fcnet_hiddens": [64, 64], "head_fcnet_activation": "relu"}
    config = (
        ppo(env_module.ActionMaskEnv, train_batch_size_per_learner=200, minibatch_size=50)
        .environment(env_config=env_config)
        .rl_module(
            rl_module_spec=RLModuleSpec(
                module_class=masking.ActionMaskingTorchRLModule, model_config=model_config
            )
        )
        .evaluation(evaluation_interval=1, evaluation_duration=5, evaluation_config={"explore": False})
        .callbacks(RecordMasks)
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # RandomEnv's float64 observations for a float32 Box
        algo = config.build_algo()
        results = [algo.train() for _ in range(2)]
    algo.stop()
    assert all(np.isfinite(r["learners"]["default_policy"]["total_loss"]) for r in results)
    for explore in (True, False):
        assert len(taken[explore]) > 20
        assert all(mask[action] == 1.0 for mask, action in taken[explore])


# AutoregressiveActionsRLM: Tuple actions sampled in two dependent steps, trained by PPO.


def test_autoregressive_module_acts_with_tuple_actions_under_ppo(ported_example):
    env_module = ported_example("envs.classes.correlated_actions_env")
    ar = ported_example("rl_modules.classes.autoregressive_actions_rlm")
    config = ppo(env_module.CorrelatedActionsEnv).rl_module(
        rl_module_spec=RLModuleSpec(module_class=ar.AutoregressiveActionsRLM)
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the env's float64 observations for a float32 Box
        algo = config.build_algo()
        result = algo.train()
        episodes = algo.env_runner.sample(num_timesteps=20)
    module = algo.get_module()
    algo.stop()
    assert np.isfinite(result["learners"]["default_policy"]["policy_loss"])
    assert result["env_runners"]["episode_len_mean"] == 1.0
    a1, a2 = episodes[0].get_actions()
    assert a1.shape == (1,) and a1[0] in (0, 1, 2) and a2.shape == (1, 1)
    # The stored log-prob is the module's own (the runner kept ACTIONS and ACTION_LOGP it returned).
    inputs = torch.as_tensor(episodes[0].get_extra_model_outputs(Columns.ACTION_DIST_INPUTS))
    dist = module.get_inference_action_dist_cls().from_logits(inputs)
    logp = dist.logp((torch.as_tensor(a1), torch.as_tensor(a2)))
    np.testing.assert_allclose(
        logp.numpy(), episodes[0].get_extra_model_outputs(Columns.ACTION_LOGP), rtol=1e-5
    )


# CustomActionDistributionRLModule: a temperature sharpens or flattens the exploration distribution.


def test_custom_action_distribution_temperature_under_ppo(ported_example):
    custom = ported_example("rl_modules.classes.custom_action_distribution_rlm")

    def greedy_share(temperature):
        config = ppo("CartPole-v1").rl_module(
            rl_module_spec=RLModuleSpec(
                module_class=custom.CustomActionDistributionRLModule,
                model_config={"action_dist_temperature": temperature},
            )
        )
        algo = config.build_algo()
        result = algo.train()
        (episode, *_) = algo.env_runner.sample(num_episodes=3, explore=True)
        module = algo.get_module()
        algo.stop()
        assert np.isfinite(result["learners"]["default_policy"]["total_loss"])
        obs = torch.as_tensor(episode.get_observations()[:-1])
        greedy = module.forward_inference({Columns.OBS: obs})[Columns.ACTION_DIST_INPUTS].argmax(-1).numpy()
        return float(np.mean(greedy == episode.get_actions()))

    assert greedy_share(1e-4) == 1.0  # near-zero temperature: sampling is argmax
    assert 0.3 < greedy_share(1e4) < 0.75  # huge temperature: near-uniform over 2 actions


def test_custom_action_distribution_docstring_example_runs(ported_example):
    custom = ported_example("rl_modules.classes.custom_action_distribution_rlm")
    assert run_testcode(custom, custom.CustomActionDistributionRLModule) == 1


# TinyAtariCNN: PPO on images. The example trains on Atari frames (42x42x4); flywheel has no Atari env
# yet, so it runs on the examples' own FastImageEnv (84x84x4) with one more conv layer, via model_config.


def test_tiny_atari_cnn_under_ppo_on_an_image_env(ported_example):
    images = ported_example("envs.classes.fast_image_env")
    cnn = ported_example("rl_modules.classes.tiny_atari_cnn_rlm")
    filters = [[16, 4, 2, "same"], [32, 4, 2, "same"], [64, 4, 2, "same"], [256, 11, 1, "valid"]]
    config = ppo(images.FastImageEnv, train_batch_size_per_learner=64, minibatch_size=32).rl_module(
        rl_module_spec=RLModuleSpec(module_class=cnn.TinyAtariCNN, model_config={"conv_filters": filters})
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # FastImageEnv's float64 frames for a float32 Box
        algo = config.build_algo()
        result = algo.train()
    module = algo.get_module()
    algo.stop()
    assert result["env_runners"]["num_env_steps_sampled"] == 64
    assert np.isfinite(result["learners"]["default_policy"]["vf_loss"])
    obs = torch.zeros(3, 84, 84, 4)
    assert module.forward_inference({Columns.OBS: obs})[Columns.ACTION_DIST_INPUTS].shape == (3, 2)
    module.make_target_networks()
    target = module.forward_target({Columns.OBS: obs})[cnn.TARGET_NETWORK_ACTION_DIST_INPUTS]
    assert target.shape == (3, 2)


def test_tiny_atari_cnn_docstring_example_runs(ported_example):
    cnn = ported_example("rl_modules.classes.tiny_atari_cnn_rlm")
    assert run_testcode(cnn, cnn.TinyAtariCNN) == 1


# AlwaysSameHeuristicRLM / BeatLastHeuristicRLM: untrained opponents of a learning PPO policy.


def test_heuristic_modules_play_rock_paper_scissors_untrained(ported_example):
    pettingzoo = pytest.importorskip(
        "pettingzoo.classic", reason="needs the `pettingzoo` extra: pip install flywheel[pettingzoo]"
    )
    from flywheel.connectors.env_to_module import FlattenObservations
    from flywheel.core.rl_module.default_model_config import DefaultModelConfig
    from flywheel.env.pettingzoo import PettingZooEnv

    heuristics = ported_example("rl_modules.classes")
    register_env("pettingzoo_rps", lambda _: PettingZooEnv(pettingzoo.rps_v2.parallel_env()))
    discrete = {"observation_space": gym.spaces.Discrete(4), "action_space": gym.spaces.Discrete(3)}
    config = (
        ppo("pettingzoo_rps", vf_loss_coeff=0.005, train_batch_size_per_learner=300, minibatch_size=100)
        .env_runners(
            env_to_module_connector=lambda env, spaces, device: (
                FlattenObservations(multi_agent=True, agent_ids={"player_0"}),
            ),
        )
        .multi_agent(
            policies={"always_same", "beat_last", "learned"},
            policy_mapping_fn=lambda aid, episode: (
                "learned" if aid == "player_0" else random.choice(["always_same", "beat_last"])
            ),
            policies_to_train=["learned"],
        )
        .rl_module(
            rl_module_spec=MultiRLModuleSpec(
                rl_module_specs={
                    "always_same": RLModuleSpec(module_class=heuristics.AlwaysSameHeuristicRLM, **discrete),
                    "beat_last": RLModuleSpec(module_class=heuristics.BeatLastHeuristicRLM, **discrete),
                    "learned": RLModuleSpec(
                        model_config=DefaultModelConfig(fcnet_hiddens=[32], vf_share_layers=True)
                    ),
                }
            )
        )
    )
    algo = config.build_algo()
    results = [algo.train() for _ in range(2)]
    episodes = algo.env_runner.sample(num_episodes=6)
    algo.stop()
    for result in results:
        # Only the learned module trains (the others get PPO's coefficient bookkeeping, as in RLlib).
        assert "total_loss" in result["learners"]["learned"]
        assert not any("loss" in key for key in result["learners"]["always_same"])
        assert set(result["env_runners"]["module_episode_returns_mean"]) == {
            "learned",
            "always_same",
            "beat_last",
        }
    played = set()
    for episode in episodes:
        module_id = episode.module_for("player_1")
        played.add(module_id)
        mine = episode.get_actions(agent_ids=["player_1"])["player_1"]
        theirs = episode.get_observations(agent_ids=["player_1"])["player_1"][1:-1]  # opponent's last moves
        if module_id == "always_same":
            assert len(set(mine.tolist())) == 1
        else:
            assert mine[1:].tolist() == [(move + 1) % 3 for move in theirs]
    assert played == {"always_same", "beat_last"}


# RandomRLModule: SampleBatch's column names and space_utils.batch, ported to flywheel's.


def test_random_module_acts_in_its_action_space_and_refuses_to_train(ported_example):
    random_rlm = ported_example("rl_modules.classes.random_rlm")
    space = gym.spaces.Box(0, 4, (2,), np.int64)
    module = RLModuleSpec(
        module_class=random_rlm.RandomRLModule,
        observation_space=gym.spaces.Box(-1, 1, (3,)),
        action_space=space,
    ).build()
    out = module.forward_inference({"obs": np.zeros((5, 3), np.float32)})
    assert set(out) == {"actions"} and out["actions"].shape == (5, 2)
    assert all(space.contains(action) for action in out["actions"])
    with pytest.raises(NotImplementedError, match="Should not be trained"):
        module.forward_train({"obs": np.zeros((5, 3), np.float32)})
    stateful = RLModuleSpec(
        module_class=random_rlm.StatefulRandomRLModule,
        observation_space=gym.spaces.Box(-1, 1, (3,)),
        action_space=space,
    ).build()
    assert stateful.get_initial_state()["state"].shape == (1, 1)
