"""MultiAgentEnvRunner: exact episodes on the scripted multi-agent envs, step counting, chunks, metrics, state."""

from collections import defaultdict

import gymnasium as gym
import numpy as np
import pytest
import torch
import tree

from flywheel import Columns, MultiAgentEnvRunner, MultiAgentEpisode, PPOConfig, RLModuleSpec
from flywheel.algorithms.ppo.rl_module import DefaultPPOTorchRLModule
from flywheel.env.multi_agent_env import MultiAgentEnv
from flywheel.testing.multi_agent_envs import JoinLeaveEnv, MultiCartPole, TurnBasedEnv


def ma_config(env=TurnBasedEnv, *, policies=("p0", "p1"), mapping=None, num_envs=1, env_config=None, **kw):
    """A PPO config on a multi-agent env; by default agent "p0"/"p1" -> module of the same name."""
    return (
        PPOConfig()
        .environment(env, env_config=env_config or {})
        .multi_agent(
            policies=set(policies), policy_mapping_fn=mapping or (lambda agent_id, episode, **k: agent_id)
        )
        .env_runners(num_envs_per_env_runner=num_envs, **kw)
        .debugging(seed=0)
    )


def shared(agent_id, episode, **kwargs):
    return "shared"


class RecordingModule(DefaultPPOTorchRLModule):
    """PPO's default module that keeps every batch it acts on (`seen`) and tags each row's outputs with
    the forward pass (`"forward"`, an index into `seen`) and the row (`"row"`) they came from; the
    runner stores both tags in the episode of the agent the row belonged to."""

    def setup(self):
        super().setup()
        self.seen = []

    def _forward(self, batch, **kwargs):
        obs = batch[Columns.OBS]
        recorded = {column: batch[column] for column in (Columns.OBS, Columns.STATE_IN) if column in batch}
        self.seen.append(tree.map_structure(torch.clone, recorded))
        out = super()._forward(batch, **kwargs)
        rows = torch.arange(len(obs)).reshape(-1, *[1] * (obs.dim() - 2)).expand(obs.shape[:-1])
        out["forward"], out["row"] = torch.full_like(rows, len(self.seen) - 1), rows
        return out


def recording(config):
    """`config` with the shared module recording (see `RecordingModule`); returns it and the dict
    the runner fills with each episode's sub-env index."""
    sub_env_of = {}
    config.rl_module(rl_module_spec=RLModuleSpec(module_class=RecordingModule)).callbacks(
        on_episode_created=lambda episode, env_index, **kw: sub_env_of.__setitem__(episode.id_, env_index)
    )
    return config, sub_env_of


def rows_by_forward(chunks, sub_env_of):
    """Per forward pass, its rows in order as `(sub-env index, agent id, observation the agent's
    episode holds for that step)`, rebuilt from the tags the recording module put in the chunks."""
    forwards = defaultdict(dict)
    for chunk in chunks:
        for agent_id, agent_episode in chunk.agent_episodes.items():
            num_actions = len(agent_episode.get_actions())
            if num_actions == 0:
                continue
            tags = zip(
                agent_episode.get_extra_model_outputs("forward"),
                agent_episode.get_extra_model_outputs("row"),
                agent_episode.get_observations()[:num_actions],
            )
            for forward, row, obs in tags:
                forwards[int(forward)][int(row)] = (sub_env_of[chunk.id_], agent_id, obs.ravel().tolist())
    return {forward: [rows[r] for r in sorted(rows)] for forward, rows in forwards.items()}


@pytest.fixture
def make_runner():
    runners = []

    def make(config):
        runner = MultiAgentEnvRunner(config=config)
        runners.append(runner)
        return runner

    yield make
    for runner in runners:
        runner.stop()


def test_turn_based_episode_records_each_agents_steps_and_waiting_rewards(make_runner):
    runner = make_runner(ma_config())
    (episode,) = runner.sample(num_episodes=1)
    assert isinstance(episode, MultiAgentEpisode) and episode.is_terminated and len(episode) == 6
    p0, p1 = episode.agent_episodes["p0"], episode.agent_episodes["p1"]
    assert p0.get_observations().ravel().tolist() == [0.0, 2.0, 4.0, 6.0]
    assert p1.get_observations().ravel().tolist() == [1.0, 3.0, 5.0, 6.0]
    # A mover's reward t plus the -1 it gets while it waits for its next observation.
    assert p0.get_rewards().tolist() == [0.0, 2.0, 4.0]
    assert p1.get_rewards().tolist() == [1.0, 3.0, 6.0]
    assert p0.module_id == "p0" and p1.module_id == "p1"
    extras = p0.get_extra_model_outputs(Columns.ACTION_LOGP)
    assert extras.shape == (3,) and np.all(extras <= 0.0)
    assert p1.get_extra_model_outputs(Columns.WEIGHTS_SEQ_NO).tolist() == [0, 0, 0]


def test_metrics_per_agent_per_module_and_step_counts(make_runner):
    runner = make_runner(ma_config())
    runner.sample(num_episodes=2)
    m = runner.get_metrics()
    assert m["episode_return_mean"] == 16.0 and m["episode_len_mean"] == 6.0 and m["num_episodes"] == 2
    assert m["agent_episode_returns_mean"] == {"p0": 6.0, "p1": 10.0}
    assert m["module_episode_returns_mean"] == {"p0": 6.0, "p1": 10.0}
    assert m["num_env_steps_sampled"] == 12 and m["num_agent_steps_sampled"] == 12
    assert m["num_module_steps_sampled"] == {"p0": 6, "p1": 6}


def test_shared_module_gets_one_row_per_acting_agent_in_episode_then_agent_order(make_runner):
    config, sub_env_of = recording(ma_config(JoinLeaveEnv, policies=("shared",), mapping=shared, num_envs=2))
    runner = make_runner(config)
    runner.sample(num_timesteps=7)  # 4 vector steps: "b" is gone, "c" joined in both sub-envs
    chunks = runner.sample(num_timesteps=3)
    # The 5th forward pass (at t=4): rows in sub-env order, then in the order the agents joined.
    rows = rows_by_forward(chunks, sub_env_of)[4]
    assert rows == [(0, "a", [4.0]), (0, "c", [24.0]), (1, "a", [4.0]), (1, "c", [24.0])]
    assert runner.module["shared"].seen[4][Columns.OBS].ravel().tolist() == [4.0, 24.0, 4.0, 24.0]
    m = runner.get_metrics()
    # a: 1+..+5, b: 11+12 (done at t=2), c: joins at t=3, acts at t=4, 5.
    assert m["agent_episode_returns_mean"] == {"a": 15.0, "b": 23.0, "c": 49.0}
    assert m["module_episode_returns_mean"] == {"shared": 87.0}


def test_num_timesteps_counts_env_steps_and_chunks_continue(make_runner):
    runner = make_runner(ma_config(JoinLeaveEnv, policies=("shared",), mapping=shared, num_envs=2))
    first = runner.sample(num_timesteps=7)
    assert [(len(e), e.env_t_started, e.is_done) for e in first] == [(4, 0, False), (4, 0, False)]
    assert all(e.is_numpy for e in first)
    second = runner.sample(num_timesteps=3)
    assert [(len(e), e.env_t_started, e.is_done) for e in second] == [
        (1, 4, True), (1, 4, True), (1, 0, False), (1, 0, False),
    ]  # fmt: skip
    assert [e.id_ for e in second[:2]] == [e.id_ for e in first]
    # The successor chunks carry the lookback: "a"'s first observation in them is its last one.
    assert second[0].agent_episodes["a"].get_observations().ravel().tolist() == [4.0, 5.0]


def test_count_steps_by_agent_steps(make_runner):
    runner = make_runner(ma_config(MultiCartPole, policies=("shared",), mapping=shared, num_envs=2,
                                   ).multi_agent(count_steps_by="agent_steps"))  # fmt: skip
    episodes = runner.sample(num_timesteps=20)
    agent_steps = sum(e.agent_steps() for e in episodes)
    assert 20 <= agent_steps < 20 + 2 * 2
    assert sum(len(e) for e in episodes) == agent_steps // 2


def test_random_actions_only_for_agents_that_act(make_runner):
    runner = make_runner(ma_config())
    (episode,) = runner.sample(num_episodes=1, random_actions=True)
    for agent_id in ("p0", "p1"):
        agent_episode = episode.agent_episodes[agent_id]
        assert len(agent_episode.get_actions()) == 3
        assert set(agent_episode.get_actions().tolist()) <= {0, 1}
    assert runner.get_metrics()["num_agent_steps_sampled"] == 6


def test_inference_is_deterministic_and_has_no_logp(make_runner):
    runner = make_runner(ma_config())
    (a,) = runner.sample(num_episodes=1, explore=False)
    (b,) = runner.sample(num_episodes=1, explore=False)
    assert a.agent_episodes["p0"].get_actions().tolist() == b.agent_episodes["p0"].get_actions().tolist()
    assert Columns.ACTION_LOGP not in a.agent_episodes["p0"].extra_model_outputs


def test_state_is_per_module_and_stale_weights_are_ignored(make_runner):
    runner = make_runner(ma_config())
    state = runner.get_state()
    assert sorted(state["rl_module"]) == ["p0", "p1"] and state["weights_seq_no"] == 0
    zeros = {mid: {k: np.zeros_like(v) for k, v in w.items()} for mid, w in state["rl_module"].items()}
    runner.set_state({"rl_module": zeros, "weights_seq_no": 3})
    assert runner.weights_seq_no == 3
    assert all(float(p.detach().abs().sum()) == 0.0 for p in runner.module["p1"].parameters())
    runner.set_state({"rl_module": state["rl_module"], "weights_seq_no": 2})  # older: ignored
    assert all(float(p.detach().abs().sum()) == 0.0 for p in runner.module["p0"].parameters())
    (episode,) = runner.sample(num_episodes=1)
    assert episode.agent_episodes["p0"].get_extra_model_outputs(Columns.WEIGHTS_SEQ_NO).tolist() == [3, 3, 3]


def test_modules_are_built_for_their_agents_spaces(make_runner):
    runner = make_runner(
        ma_config(MultiCartPole, policies=("p0", "p1"), mapping=lambda a, e, **k: "p" + a[-1])
    )
    assert sorted(runner.module.keys()) == ["p0", "p1"]
    assert runner.module["p0"].observation_space.shape == (4,)
    assert runner.module["p1"].action_space.n == 2
    assert runner.module_spec.rl_module_specs["p0"].inference_only is False


def test_callbacks_see_multi_agent_episodes_in_order(make_runner):
    calls = []

    def hook(name):
        return lambda *, episode, env_index, **kw: calls.append((name, env_index, len(episode)))

    config = ma_config().callbacks(
        on_episode_created=hook("created"), on_episode_start=hook("start"),
        on_episode_step=hook("step"), on_episode_end=hook("end"),
    )  # fmt: skip
    runner = make_runner(config)
    runner.sample(num_episodes=1)
    assert calls[:2] == [("created", 0, 0), ("start", 0, 0)]
    assert [c for c in calls if c[0] == "step"] == [("step", 0, t) for t in range(1, 7)]
    assert calls[8:10] == [("end", 0, 6), ("created", 0, 0)]


def test_every_row_the_module_sees_is_the_observation_its_agents_episode_holds(make_runner):
    # As agents join and leave and episodes restart, each forward pass gets one row per acting agent,
    # and that row is exactly the observation the agent's episode stores for the step.
    config, sub_env_of = recording(ma_config(JoinLeaveEnv, policies=("shared",), mapping=shared, num_envs=2))
    runner = make_runner(config)
    chunks = [chunk for _ in range(7) for chunk in runner.sample(num_timesteps=2)]  # past t=5: new episodes
    seen = [batch[Columns.OBS] for batch in runner.module["shared"].seen]
    rows = rows_by_forward(chunks, sub_env_of)
    assert len(seen) == len(rows) == 7 and all(obs.dtype == torch.float32 for obs in seen)
    for forward, obs in enumerate(seen):
        assert obs.ravel().tolist() == [value for _, _, row_obs in rows[forward] for value in row_obs]
    assert [obs.ravel().tolist() for obs in seen[1:4]] == [
        [1.0, 11.0, 1.0, 11.0],
        [2.0, 2.0],
        [3.0, 23.0, 3.0, 23.0],
    ]
    assert seen[6].ravel().tolist() == [1.0, 11.0, 1.0, 11.0]


def test_observations_an_episode_step_callback_rewrites_are_what_the_module_sees(make_runner):
    def rewrite(*, episode, **kw):
        for agent_episode in episode.agent_episodes.values():
            if not agent_episode.is_done:
                agent_episode.set_observations(new_data=np.array([-7.0], np.float32), at_indices=-1)

    config, _ = recording(ma_config(JoinLeaveEnv, policies=("shared",), mapping=shared))
    runner = make_runner(config.callbacks(on_episode_step=rewrite))
    runner.sample(num_timesteps=4)  # the 4th forward pass, at t=3: "a" and "c" act
    assert runner.module["shared"].seen[3][Columns.OBS].ravel().tolist() == [-7.0, -7.0]


def test_stateful_module_gets_each_agents_last_state_out_as_state_in(make_runner):
    config, sub_env_of = recording(ma_config(JoinLeaveEnv, policies=("shared",), mapping=shared))
    runner = make_runner(config.rl_module(model_config={"use_lstm": True, "lstm_cell_size": 4}))
    (chunk,) = runner.sample(num_timesteps=2)  # "b" is done at t=2: only "a" acts next
    state_out = chunk.agent_episodes["a"].get_extra_model_outputs(Columns.STATE_OUT, -1)
    next_chunks = runner.sample(num_timesteps=1)  # its one forward pass is the 3rd
    state_in = runner.module["shared"].seen[2][Columns.STATE_IN]
    assert [row[:2] for row in rows_by_forward(next_chunks, sub_env_of)[2]] == [(0, "a")]
    assert sorted(state_in) == ["c", "h"]
    for key in ("h", "c"):
        assert state_in[key].shape == (1, 4) and np.array_equal(state_in[key][0].numpy(), state_out[key])
        assert not np.allclose(state_out[key], 0.0)


class EchoActionsEnv(MultiAgentEnv):
    """Agents "a" and "b" act every step with Box(0, 10, (2,)) actions; each observes the action it sent last."""

    def __init__(self, config=None):
        super().__init__()
        self.possible_agents = ["a", "b"]
        self.agents = list(self.possible_agents)
        space = gym.spaces.Box(0.0, 10.0, (2,), np.float32)
        self.observation_spaces = {agent: space for agent in self.agents}
        self.action_spaces = {agent: space for agent in self.agents}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return {agent: np.zeros(2, np.float32) for agent in self.agents}, {}

    def step(self, action_dict):
        obs = {agent: np.asarray(action, np.float32) for agent, action in action_dict.items()}
        rewards = {agent: 0.0 for agent in action_dict}
        return obs, rewards, {"__all__": False}, {"__all__": False}, {}


def test_random_actions_are_stored_in_each_modules_action_space():
    # As single-agent: with normalize_actions, episodes hold random actions in [-1, 1], as the
    # module's own actions, while the env gets them in its bounds.
    runner = MultiAgentEnvRunner(config=ma_config(EchoActionsEnv, policies=("a", "b")))
    (episode,) = runner.sample(num_timesteps=20, random_actions=True)
    runner.stop()
    for agent_id in ("a", "b"):
        agent = episode.agent_episodes[agent_id]
        stored, received = agent.get_actions(), agent.get_observations(slice(1, 21))
        assert stored.shape == received.shape == (20, 2)
        np.testing.assert_allclose(stored, received / 5.0 - 1.0, atol=1e-6)
        assert received.min() < 2.0 and received.max() > 8.0
