"""One data path, multi-agent: wherever a custom env-to-module piece sits (first, between the default
pieces, last), every forward pass of each module of a MultiAgentEnvRunner sees exactly what the
piece made of the observations its agents' episodes hold.

Two CartPoles per sub-env, agent `agent_i` mapped to module `p_i`; each module records every
observation batch it acts on. From the returned chunks the test rebuilds, per vector step, which
agents of which sub-env acted on which observation (each agent acts every step until its pole falls),
and so what each module must have seen: its agents' rows in sub-env order.
"""

from collections import defaultdict

import numpy as np
import pytest

from flywheel import Columns, ConnectorV2, MultiAgentEnvRunner, PPOConfig, RLModuleSpec
from flywheel.algorithms.ppo.rl_module import DefaultPPOTorchRLModule
from flywheel.connectors.env_to_module import (
    AddObservationsFromEpisodesToBatch,
    BatchIndividualItems,
    NumpyToTensor,
)
from flywheel.testing.multi_agent_envs import MultiCartPole

NUM_ENVS = 3
AGENTS = ("agent_0", "agent_1")


class RecordingModule(DefaultPPOTorchRLModule):
    def setup(self):
        super().setup()
        self.seen = []

    def _forward(self, batch, **kwargs):
        self.seen.append(batch[Columns.OBS].numpy().astype(np.float64))
        return super()._forward(batch, **kwargs)


class AddTenToEpisodes(ConnectorV2):
    """Rewrites the newest observation of each agent that stepped to obs + 10 in the episodes themselves."""

    def __call__(self, *, rl_module, batch, episodes, **kwargs):
        for episode in episodes:
            for agent_id in episode.get_agents_that_stepped():
                agent_episode = episode.agent_episodes[agent_id]
                newest = agent_episode.get_observations(-1)
                agent_episode.set_observations(new_data=newest + 10.0, at_indices=-1)
        return batch


class NegateInPlace(ConnectorV2):
    """Negates each module's OBS column in place, whatever it is at this point (array or tensor)."""

    def __call__(self, *, rl_module, batch, episodes, **kwargs):
        for columns in batch.values():
            columns[Columns.OBS] *= -1
        return batch


def _config(**env_runners):
    return (
        PPOConfig()
        .environment(MultiCartPole)
        .multi_agent(
            policies={"p0", "p1"}, policy_mapping_fn=lambda agent_id, episode, **kw: "p" + agent_id[-1]
        )
        .env_runners(num_envs_per_env_runner=NUM_ENVS, **env_runners)
        .rl_module(rl_module_spec=RLModuleSpec(module_class=RecordingModule))
        .debugging(seed=0)
    )


@pytest.fixture
def make_runner():
    runners = []

    def make(config):
        sub_env_of = {}
        config.callbacks(
            on_episode_created=lambda episode, env_index, **kw: sub_env_of.__setitem__(episode.id_, env_index)
        )
        runners.append(MultiAgentEnvRunner(config=config))
        return runners[-1], sub_env_of

    yield make
    for runner in runners:
        runner.stop()


def _acting_steps(chunks, sub_env_of):
    """Per sub-env, one dict per vector step: agent -> the observation it acted on."""
    steps = defaultdict(list)
    for chunk in chunks:
        acting = {}
        for agent_id, agent_episode in chunk.agent_episodes.items():
            num_actions = len(agent_episode.get_actions())
            acting[agent_id] = agent_episode.get_observations()[:num_actions]
        steps[sub_env_of[chunk.id_]].extend(
            {a: obs[s] for a, obs in acting.items() if s < len(obs)} for s in range(len(chunk))
        )
    return steps


def _sample_and_check(runner, sub_env_of, sign=1.0, calls=3, num_timesteps=60):
    chunks = [chunk for _ in range(calls) for chunk in runner.sample(num_timesteps=num_timesteps)]
    assert sum(chunk.is_done for chunk in chunks) >= 2  # episodes ended (and restarted) along the way
    steps = _acting_steps(chunks, sub_env_of)
    num_forwards = len(steps[0])
    assert num_forwards >= calls * num_timesteps // NUM_ENVS
    assert all(len(steps[i]) == num_forwards for i in range(NUM_ENVS))
    for agent_id, module_id in zip(AGENTS, ("p0", "p1")):
        expected = []
        for k in range(num_forwards):
            rows = [steps[i][k][agent_id] for i in range(NUM_ENVS) if agent_id in steps[i][k]]
            if rows:
                expected.append(sign * np.array(rows, np.float64))
        seen = runner.module[module_id].seen
        assert len(seen) == len(expected)
        for saw, rows in zip(seen, expected):
            np.testing.assert_allclose(saw, rows, rtol=0, atol=1e-6)
    return chunks


def test_the_default_pieces(make_runner):
    _sample_and_check(*make_runner(_config()))


def test_a_first_piece_that_rewrites_episodes(make_runner):
    config = _config(env_to_module_connector=lambda env, spaces, device: AddTenToEpisodes())
    runner, sub_env_of = make_runner(config)
    chunks = _sample_and_check(runner, sub_env_of)
    # Stored rewritten (cart positions lie in [-2.4, 2.4]), the final observations of ended agents too.
    for chunk in chunks:
        for agent_episode in chunk.agent_episodes.values():
            assert (agent_episode.get_observations()[:, 0] > 7.0).all()


@pytest.mark.parametrize(
    "where",
    [AddObservationsFromEpisodesToBatch, BatchIndividualItems, NumpyToTensor],
    ids=lambda c: c.__name__,
)
def test_a_piece_after_a_default_piece_that_changes_the_batch_in_place(make_runner, where):
    runner, sub_env_of = make_runner(_config())
    runner.env_to_module.insert_after(where, NegateInPlace())
    # The module sees the negated observations while the episodes keep the env's (a change that
    # reached the episodes too would show up negated on both sides).
    _sample_and_check(runner, sub_env_of, sign=-1.0)
