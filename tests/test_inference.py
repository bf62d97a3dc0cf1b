"""`load_policy`: the saved module between its rebuilt pipelines, without ray; TorchScript export."""

import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
import torch

from flywheel import PPOConfig
from flywheel.connectors import learner
from flywheel.connectors.env_to_module import FrameStacking, MeanStdFilter
from flywheel.errors import CheckpointError, InferenceError, ModuleError
from flywheel.inference import load_policy
from flywheel.testing import CountingEnv


def _save(config, tmp_path_factory, iterations=1):
    algo = config.build_algo()
    for _ in range(iterations):
        algo.train()
    path = algo.save_to_path(tmp_path_factory.mktemp("ckpt") / "checkpoint")
    return algo, path


def _small(config):
    return config.training(train_batch_size_per_learner=64, minibatch_size=32, num_epochs=1).debugging(seed=0)


def observations_counted(mean_std_filter):
    """How many observations a MeanStdFilter's statistics hold (shared ones plus its own since the last sync)."""
    state = mean_std_filter.get_state()
    return state["shared"]["count"] + state["delta"]["count"]


@pytest.fixture(scope="module")
def cartpole(tmp_path_factory):
    """A CartPole checkpoint whose env-to-module pipeline holds a MeanStdFilter."""
    config = _small(
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(env_to_module_connector=lambda env, spaces, device: MeanStdFilter(clip=3.0))
        .rl_module(model_config={"fcnet_hiddens": [16]})
    )
    algo, path = _save(config, tmp_path_factory)
    yield algo, path
    algo.stop()


def test_greedy_actions_match_the_algorithm_module(cartpole):
    algo, path = cartpole
    policy = load_policy(path)
    obs = np.random.default_rng(0).normal(size=(6, 4)).astype(np.float32)
    # What the runner's module does with the observations its MeanStdFilter normalized.
    normalized = algo.env_runner.env_to_module[0].normalize(obs)
    logits = algo.get_module().forward_inference({"obs": torch.from_numpy(normalized)})["action_dist_inputs"]
    expected = torch.argmax(logits, dim=-1).numpy()
    actions = policy.compute_actions(obs)
    assert actions.dtype == np.int64 and actions.shape == (6,)
    np.testing.assert_array_equal(actions, expected)
    assert policy.compute_single_action(obs[2]) == expected[2]
    # Statistics are frozen: the same observations give the same actions again.
    np.testing.assert_array_equal(policy.compute_actions(obs), expected)
    assert policy.env_to_module[0].update_stats is False
    assert observations_counted(policy.env_to_module[0]) == observations_counted(
        algo.env_runner.env_to_module[0]
    )
    # Plain Python lists (and float64 rows) act like the env's float32 observations.
    np.testing.assert_array_equal(policy.compute_actions(obs.astype(np.float64).tolist()), expected)
    assert policy.compute_single_action(obs[2].tolist()) == expected[2]


def test_explore_samples_from_the_distribution(cartpole):
    policy = load_policy(cartpole[1])
    obs = np.zeros((400, 4), np.float32)
    torch.manual_seed(0)
    sampled = policy.compute_actions(obs, explore=True)
    greedy = policy.compute_actions(obs)
    assert set(np.unique(greedy)) == {greedy[0]}
    probs = torch.softmax(
        policy.module.forward_inference(
            {"obs": torch.from_numpy(policy.env_to_module[0].normalize(obs[:1]))}
        )["action_dist_inputs"],
        dim=-1,
    )[0]
    assert abs(float((sampled == 1).mean()) - float(probs[1])) < 0.08
    assert 0 < (sampled == 1).sum() < 400


def test_unknown_module_id_and_non_algorithm_paths(cartpole, tmp_path):
    path = cartpole[1]
    with pytest.raises(
        CheckpointError,
        match=r"The checkpoint at .*checkpoint has no module 'p9'; its modules are \['default_policy'\]\. "
        r"Fix: load_policy\(path, module_id=\.\.\.\) with one of them\.",
    ):
        load_policy(path, module_id="p9")
    with pytest.raises(
        CheckpointError,
        match=r"learner_group holds a flywheel\.core\.learner\.learner_group:LearnerGroup, not an algorithm checkpoint "
        r"\(it has no learner_group and env_runner components\)\. Fix: pass the directory algo\.save_to_path\(\) returned\.",
    ):
        load_policy(f"{path}/learner_group")
    with pytest.raises(CheckpointError, match=r"is not a flywheel checkpoint"):
        load_policy(tmp_path)


class WideActionEnv(CountingEnv):
    """Counting env with `Box(0, 10, (1,))` actions: the module acts in [-1, 1], the env gets [0, 10]."""

    def __init__(self, config=None):
        super().__init__(config)
        self.action_space = gym.spaces.Box(0.0, 10.0, (1,), np.float32)


def test_box_actions_are_unsquashed_to_the_env_bounds(tmp_path_factory):
    config = _small(PPOConfig().environment(WideActionEnv).rl_module(model_config={"fcnet_hiddens": [8]}))
    algo, path = _save(config, tmp_path_factory)
    algo.stop()
    policy = load_policy(path)
    obs = np.arange(5, dtype=np.float32)[:, None]
    mean = policy.module.forward_inference({"obs": torch.from_numpy(obs)})["action_dist_inputs"][:, :1]
    actions = policy.compute_actions(obs)
    assert actions.dtype == np.float32 and actions.shape == (5, 1)
    np.testing.assert_allclose(actions, np.clip(5.0 + 5.0 * mean.numpy(), 0.0, 10.0), rtol=1e-6)
    assert policy.compute_single_action(obs[0]).shape == (1,)


def test_works_where_importing_ray_fails(cartpole):
    code = f"""
import sys

class _BlockRay:
    def find_spec(self, name, path=None, target=None):
        if name == "ray" or name.startswith("ray."):
            raise ImportError("importing ray is blocked in this process")

sys.meta_path.insert(0, _BlockRay())
import numpy as np
from flywheel.inference import load_policy

policy = load_policy({cartpole[1]!r})
print(policy.compute_actions(np.zeros((3, 4), np.float32)).tolist())
print(sorted(name for name in sys.modules if name.split(".")[0] in ("ray", "cloudpickle")))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    actions, imported = done.stdout.strip().splitlines()
    assert actions == str(load_policy(cartpole[1]).compute_actions(np.zeros((3, 4), np.float32)).tolist())
    assert imported == "[]"


@pytest.mark.filterwarnings("ignore:`torch.jit.load` is deprecated:DeprecationWarning")
def test_torchscript_export_matches_eager_outputs(cartpole, tmp_path):
    policy = load_policy(cartpole[1])
    path = policy.export_torchscript(tmp_path / "policy.pt")
    graph = torch.jit.load(path)
    obs = torch.randn(32, 4)
    eager = policy.module.forward_inference({"obs": obs})["action_dist_inputs"]
    torch.testing.assert_close(graph(obs), eager)
    assert graph(obs[:1]).shape == (1, 2)


def test_recurrent_modules_are_not_exported(tmp_path_factory):
    config = _small(
        PPOConfig()
        .environment("CartPole-v1")
        .rl_module(model_config={"use_lstm": True, "lstm_cell_size": 8, "max_seq_len": 4})
    )
    algo, path = _save(config, tmp_path_factory)
    algo.stop()
    policy = load_policy(path)
    assert policy.compute_actions(np.zeros((2, 4), np.float32)).shape == (2,)
    with pytest.raises(
        ModuleError, match=r"DefaultPPOTorchRLModule is recurrent; export_torchscript\(\) exports"
    ):
        policy.export_torchscript(tmp_path_factory.mktemp("ts") / "p.pt")


@pytest.mark.parametrize(
    "call, obs, message",
    [
        (
            "single",
            None,
            r"compute_single_action\(obs\) got None; expected one observation of shape \(4,\)\.$",
        ),
        ("batch", None, r"compute_actions\(obs_batch\) got None; expected a batch of shape \(B, 4\)\.$"),
        (
            "single",
            np.zeros((2, 4)),
            r"compute_single_action\(obs\) takes one observation of shape \(4,\), got a batch of 2 \(shape \(2, 4\)\)\. "
            r"Fix: compute_actions\(obs_batch\) acts on batches",
        ),
        (
            "batch",
            np.zeros(4),
            r"compute_actions\(obs_batch\) takes a batch of shape \(B, 4\), got one observation of shape \(4,\)\. "
            r"Fix: compute_single_action\(obs\), or compute_actions\(\[obs\]\)\.$",
        ),
        ("single", np.zeros(3), r"expected one observation of shape \(4,\), got shape \(3,\)\."),
        (
            "single",
            [[0.0] * 4],
            r"takes one observation of shape \(4,\), got a batch of 1 \(shape \(1, 4\)\)",
        ),
        (
            "batch",
            np.zeros((2, 2, 4)),
            r"expected a batch of shape \(B, 4\) \(rank 2\), got shape \(2, 2, 4\) \(rank 3\)\.",
        ),
        (
            "batch",
            np.zeros((0, 4)),
            r"got an empty batch \(shape \(0, 4\)\); expected at least one observation",
        ),
        (
            "batch",
            [[0.0, 0, 0, 0], [0.0, np.nan, 0, 0]],
            r"got a non-finite value \(NaN or inf\) in observation 1: \[0\.0, nan, 0\.0, 0\.0\]",
        ),
        ("single", [0.0, np.inf, 0, 0], r"got a non-finite value \(NaN or inf\) in observation 0"),
        ("single", ["a", "b", "c", "d"], r"got list data of dtype <U1; expected numbers for Box"),
        ("batch", [[0.0] * 4, [0.0] * 3], r"cannot read its input as an array"),
    ],
)
def test_bad_observations_are_named(cartpole, call, obs, message):
    policy = load_policy(cartpole[1])
    act = policy.compute_single_action if call == "single" else policy.compute_actions
    with pytest.raises(InferenceError, match=message):
        act(obs)


@pytest.mark.parametrize("explore", ["False", 1, None, np.array([True])])
def test_explore_must_be_a_bool(cartpole, explore):
    policy = load_policy(cartpole[1])
    with pytest.raises(
        InferenceError, match=rf"explore must be True or False, got .*\({type(explore).__name__}\)"
    ):
        policy.compute_actions(np.zeros((1, 4), np.float32), explore=explore)
    assert policy.compute_single_action(np.zeros(4), explore=np.bool_(False)) in (0, 1)


def test_discrete_observations_are_checked_too(tmp_path_factory):
    config = _small(PPOConfig().environment("FrozenLake-v1").rl_module(model_config={"fcnet_hiddens": [8]}))
    algo, path = _save(config, tmp_path_factory)
    algo.stop()
    policy = load_policy(path)
    assert policy.compute_actions([0, 5, 15]).shape == (3,)
    assert 0 <= policy.compute_single_action(np.int64(3)) < 4
    with pytest.raises(
        InferenceError, match=r"takes one observation of shape \(\), got a batch of 2 \(shape \(2,\)\)"
    ):
        policy.compute_single_action([1, 2])
    with pytest.raises(
        InferenceError, match=r"takes a batch of shape \(B,\), got one observation of shape \(\)"
    ):
        policy.compute_actions(3)
    with pytest.raises(
        InferenceError, match=r"got fractional values for Discrete\(16\), which holds integers"
    ):
        policy.compute_actions([1.5])


def test_forward_inference_takes_raw_observations_and_modules_take_numpy(cartpole):
    algo, path = cartpole
    policy = load_policy(path)
    obs = np.random.default_rng(1).normal(size=(3, 4))  # float64, as numpy makes them
    logits = policy.forward_inference(obs)["action_dist_inputs"]
    normalized = torch.from_numpy(policy.env_to_module[0].normalize(obs).astype(np.float32))
    torch.testing.assert_close(
        logits, policy.module.forward_inference({"obs": normalized})["action_dist_inputs"]
    )
    np.testing.assert_array_equal(torch.argmax(logits, -1).numpy(), policy.compute_actions(obs))
    # The module itself: numpy in, the same outputs as tensors in (float64 becomes float32).
    module = algo.get_module()
    numpy_out = module.forward_inference({"obs": normalized.numpy().astype(np.float64)})["action_dist_inputs"]
    torch.testing.assert_close(numpy_out, module.forward_inference({"obs": normalized})["action_dist_inputs"])
    assert module.forward_exploration({"obs": np.zeros((2, 4), np.float32)})["action_dist_inputs"].shape == (
        2,
        2,
    )


class PaintedCountingEnv(CountingEnv):
    """CountingEnv whose frame after step t is an 84x84 RGB picture filled with 10 t."""

    render_mode = "rgb_array"

    def render(self):
        return np.full((84, 84, 3), 10 * self.t, np.uint8)


class SpyStacking(FrameStacking):
    """FrameStacking that records the first stacked row of every call."""

    seen: list = []

    def __call__(self, *, batch, episodes, **kwargs):
        batch = super().__call__(batch=batch, episodes=episodes, **kwargs)
        self.seen.append(batch["obs"][0].tolist())
        return batch


def test_record_video_plays_one_episode_with_its_history_and_saves_it(tmp_path_factory, tmp_path):
    import imageio.v2 as imageio

    from flywheel import register_env

    seen = SpyStacking.seen
    register_env("painted", lambda cfg: PaintedCountingEnv(cfg))
    config = _small(
        PPOConfig()
        .environment("painted", env_config={"episode_len": 4})
        .env_runners(env_to_module_connector=lambda env, spaces, device: SpyStacking(num_frames=2))
        .training(learner_connector=lambda obs, act: learner.FrameStacking(num_frames=2))
    )
    algo, path = _save(config, tmp_path_factory)
    algo.stop()
    policy = load_policy(path, classes=[SpyStacking])
    seen.clear()
    out = policy.record_video("painted", tmp_path / "ep.mp4", env_config={"episode_len": 4}, seed=0)
    assert out == {"path": str(tmp_path / "ep.mp4"), "episode_return": 10.0, "episode_len": 4}
    assert seen == [[0.0, 0.0], [0.0, 1.0], [1.0, 2.0], [2.0, 3.0]]  # the stacks see the episode so far
    frames = imageio.mimread(out["path"])
    assert [int(round(f.mean())) for f in frames] == pytest.approx([0, 10, 20, 30, 40], abs=2)
    short = policy.record_video("painted", tmp_path / "short.mp4", env_config={"episode_len": 4}, max_steps=2)
    assert short["episode_len"] == 2 and len(imageio.mimread(short["path"])) == 3


def test_export_torchscript_of_a_module_without_observation_space_names_it(tmp_path):
    from flywheel.connectors.pipeline import ConnectorPipelineV2
    from flywheel.core.rl_module.torch_rl_module import TorchRLModule
    from flywheel.inference import Policy

    class Spaceless(TorchRLModule):
        def _forward(self, batch, **kwargs):
            return {}

    policy = Policy(Spaceless(), ConnectorPipelineV2(), ConnectorPipelineV2())
    with pytest.raises(
        ModuleError, match=r"Spaceless has none\. Fix: build the module with its observation_space"
    ):
        policy.export_torchscript(tmp_path / "p.pt")


def test_record_video_takes_an_env_instance_and_leaves_it_open(cartpole, tmp_path):
    import imageio.v2 as imageio

    policy = load_policy(cartpole[1])
    env = gym.make("CartPole-v1", render_mode="rgb_array")
    out = policy.record_video(env, tmp_path / "given.mp4", seed=0, max_steps=5)
    assert out["path"] == str(tmp_path / "given.mp4") and out["episode_len"] == 5
    assert len(imageio.mimread(out["path"])) == 6  # the reset frame and one per step
    assert env.reset(seed=1)[0].shape == (4,)  # still open: the caller's env
    env.close()


def test_record_video_with_an_instance_that_cannot_render_or_an_env_config_says_the_fix(cartpole, tmp_path):
    policy = load_policy(cartpole[1])
    with pytest.raises(InferenceError) as raised:
        policy.record_video(gym.make("CartPole-v1"), tmp_path / "x.mp4")
    assert str(raised.value) == (
        "record_video needs frames, but the env it got renders with render_mode=None. Fix: make it with "
        'render_mode="rgb_array", e.g. gym.make("CartPole-v1", render_mode="rgb_array").'
    )
    with pytest.raises(
        InferenceError, match=r"^record_video got an env instance \(TimeLimit\) and env_config="
    ):
        policy.record_video(
            gym.make("CartPole-v1", render_mode="rgb_array"), tmp_path / "x.mp4", env_config={}
        )
    assert not (tmp_path / "x.mp4").exists()
