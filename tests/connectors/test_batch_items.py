"""RLlib's ConnectorV2 batch helpers (add_batch_item, add_n_batch_items, foreach_batch_item_change_in_place,
single_agent_episode_iterator, switch_batch_from_column_to_module_ids), and how their items reach the
batches of flywheel's env-to-module and learner pipelines."""

import gymnasium as gym
import numpy as np
import pytest
import torch

from flywheel import Columns, ConnectorV2, MultiAgentEpisode, PPOConfig, SingleAgentEpisode
from flywheel.connectors.env_to_module import default_env_to_module_connectors
from flywheel.connectors.learner import default_learner_connectors
from flywheel.connectors.pipeline import ConnectorPipelineV2
from flywheel.errors import ConnectorError


def sa_episode(id_="SA-EPS0", n=3):
    return SingleAgentEpisode(
        id_=id_, observations=list(range(n + 1)), actions=list(range(1, n + 1)),
        rewards=[float(r) for r in range(1, n + 1)], len_lookback_buffer=0,
    )  # fmt: skip


def ma_episode():
    return MultiAgentEpisode(
        id_="MA-EPS1",
        observations=[{"ag0": 0, "ag1": 1}, {"ag0": 2, "ag1": 4}],
        actions=[{"ag0": 0, "ag1": 1}],
        rewards=[{"ag0": -0.1, "ag1": -0.2}],
        agent_to_module_mapping_fn=lambda aid, eps: f"mod{aid[2:]}",
    )


def test_add_batch_item_three_cases_as_in_rllib():
    batch = {}
    ConnectorV2.add_batch_item(batch, "test_col", item_to_add=5)
    ConnectorV2.add_batch_item(batch, "test_col", item_to_add=6)
    ConnectorV2.add_batch_item(batch, "test_col_2", item_to_add=-10)
    assert batch == {"test_col": [5, 6], "test_col_2": [-10]}

    batch, episode = {}, sa_episode()
    ConnectorV2.add_batch_item(batch, "test_col", 5, episode)
    ConnectorV2.add_batch_item(batch, "test_col", 6, episode)
    ConnectorV2.add_batch_item(batch, "test_col_2", -10, episode)
    assert batch == {"test_col": {("SA-EPS0",): [5, 6]}, "test_col_2": {("SA-EPS0",): [-10]}}

    batch, multi = {}, ma_episode()
    ConnectorV2.add_batch_item(
        batch, "test_col", item_to_add=5, single_agent_episode=multi.agent_episodes["ag0"]
    )
    ConnectorV2.add_batch_item(
        batch, "test_col", item_to_add=6, single_agent_episode=multi.agent_episodes["ag0"]
    )
    ConnectorV2.add_batch_item(
        batch, "test_col_2", item_to_add=10, single_agent_episode=multi.agent_episodes["ag1"]
    )
    assert batch == {
        "test_col": {("MA-EPS1", "ag0", "mod0"): [5, 6]},
        "test_col_2": {("MA-EPS1", "ag1", "mod1"): [10]},
    }


def test_add_batch_item_on_a_module_keyed_batch_is_an_error():
    multi = ma_episode()
    with pytest.raises(ConnectorError, match=r"already keyed by module id \('mod0' holds its columns\)"):
        ConnectorV2.add_batch_item({"mod0": {"obs": [1]}}, "x", 1, multi.agent_episodes["ag0"])


def test_add_n_batch_items_adds_a_list_item_by_item_or_an_array_at_once():
    batch, episode = {}, sa_episode()
    ConnectorV2.add_n_batch_items(batch, "a", [1, 2, 3], num_items=3, single_agent_episode=episode)
    assert batch == {"a": {("SA-EPS0",): [1, 2, 3]}}
    ConnectorV2.add_n_batch_items(batch, "b", np.zeros((3, 2)), num_items=3, single_agent_episode=episode)
    (item,) = batch["b"][("SA-EPS0",)]
    assert item.num_items == 3 and item.data.shape == (3, 2)
    with pytest.raises(ConnectorError, match=r"add_n_batch_items\(num_items=2\) got a list of 3 items"):
        ConnectorV2.add_n_batch_items(batch, "a", [1, 2, 3], num_items=2)
    with pytest.raises(ConnectorError, match=r"got data with 3 rows \(leading dimension\) for column 'c'"):
        ConnectorV2.add_n_batch_items(batch, "c", {"x": np.zeros((3,))}, num_items=4)


def test_foreach_batch_item_change_in_place_on_lists_and_episode_keys():
    batch = {"col1": [0, 1, 2, 3], "col2": [0, -1, -2, -3]}
    ConnectorV2.foreach_batch_item_change_in_place(
        batch=batch, column="col1", func=lambda item, *args: item + 1
    )
    assert batch["col1"] == [1, 2, 3, 4]
    ConnectorV2.foreach_batch_item_change_in_place(
        batch=batch, column=["col1", "col2"], func=lambda items, *args: (items[0] + 1, -items[1])
    )
    assert batch == {"col1": [2, 3, 4, 5], "col2": [0, 1, 2, 3]}

    batch = {"col1": {("eps1",): [0, 1, 2, 3], ("eps2",): [400, 500, 600]}}
    ConnectorV2.foreach_batch_item_change_in_place(
        batch=batch,
        column="col1",
        func=lambda item, eps_id, *args: item + 1 if eps_id == "eps1" else item / 100,
    )
    assert batch["col1"] == {("eps1",): [1, 2, 3, 4], ("eps2",): [4, 5, 6]}

    batch = {
        "col1": {
            ("eps1", "ag1", "mod1"): [1, 2, 3, 4],
            ("eps2", "ag1", "mod2"): [400, 500, 600],
            ("eps2", "ag2", "mod3"): [-1, -2, -3, -4, -5],
        }
    }
    ConnectorV2.foreach_batch_item_change_in_place(
        batch=batch,
        column="col1",
        func=lambda item, eps_id, ag_id, mod_id: (
            item - 1 if eps_id == "eps1" else item / 100 if mod_id == "mod2" else -item
        ),
    )
    assert batch["col1"] == {
        ("eps1", "ag1", "mod1"): [0, 1, 2, 3],
        ("eps2", "ag1", "mod2"): [4, 5, 6],
        ("eps2", "ag2", "mod3"): [1, 2, 3, 4, 5],
    }


def test_foreach_batch_item_change_in_place_on_flywheels_batched_layouts():
    batch = {Columns.ACTIONS: np.array([0, 1, 2])}
    ConnectorV2.foreach_batch_item_change_in_place(batch, Columns.ACTIONS, lambda action, *ids: action * 10)
    np.testing.assert_array_equal(batch[Columns.ACTIONS], [0, 10, 20])
    seen = []
    batch = {"p0": {Columns.ACTIONS: torch.tensor([1.0, 2.0])}, "p1": {Columns.ACTIONS: torch.tensor([3.0])}}
    ConnectorV2.foreach_batch_item_change_in_place(
        batch, Columns.ACTIONS, lambda action, eps_id, agent_id, module_id: seen.append(module_id) or -action
    )
    assert seen == ["p0", "p0", "p1"] and batch["p0"][Columns.ACTIONS].tolist() == [-1.0, -2.0]
    with pytest.raises(ConnectorError, match=r"column\(s\) \['missing'\] not in the batch"):
        ConnectorV2.foreach_batch_item_change_in_place(batch, "missing", lambda item, *ids: item)


def test_switch_batch_from_column_to_module_ids():
    batch = {"obs": {"module_0": [1, 2, 3]}, "actions": {"module_0": [4, 5, 6], "module_1": [7]}}
    assert ConnectorV2.switch_batch_from_column_to_module_ids(batch) == {
        "module_0": {"obs": [1, 2, 3], "actions": [4, 5, 6]},
        "module_1": {"actions": [7]},
    }


def test_single_agent_episode_iterator():
    first, second = sa_episode("a"), sa_episode("b")
    assert list(ConnectorV2.single_agent_episode_iterator([first, second])) == [first, second]
    assert list(
        ConnectorV2.single_agent_episode_iterator([first, second], zip_with_batch_column=[10, 20])
    ) == [
        (first, 10),
        (second, 20),
    ]
    keyed = {("a",): ["x"], ("b",): ["y"]}
    assert [
        row
        for _, row in ConnectorV2.single_agent_episode_iterator([first, second], zip_with_batch_column=keyed)
    ] == ["x", "y"]
    multi = ma_episode()
    assert [e.agent_id for e in ConnectorV2.single_agent_episode_iterator([multi])] == ["ag0", "ag1"]
    with pytest.raises(ConnectorError, match="zip_with_batch_column has 1 rows for 2 episodes"):
        list(ConnectorV2.single_agent_episode_iterator([first, second], zip_with_batch_column=[1]))


class AddEpisodeLength(ConnectorV2):
    """An RLlib-style custom piece: adds a column per episode, visiting episodes in reverse order."""

    def __call__(self, *, rl_module, batch, episodes, explore=None, shared_data=None, **kwargs):
        for episode in reversed(list(self.single_agent_episode_iterator(episodes))):
            self.add_batch_item(batch, "episode_len", float(len(episode)), episode)
        return batch


def test_env_to_module_pipeline_places_episode_keyed_items_in_episode_order():
    box = gym.spaces.Box(-10.0, 10.0, (1,), np.float32)
    pipeline = ConnectorPipelineV2(
        box, gym.spaces.Discrete(2), connectors=[AddEpisodeLength(), *default_env_to_module_connectors()]
    )
    episodes = []
    for n in (1, 3):
        episode = SingleAgentEpisode(observation_space=box, action_space=gym.spaces.Discrete(2))
        episode.add_env_reset(observation=np.zeros(1, np.float32))
        for _ in range(n):
            episode.add_env_step(np.zeros(1, np.float32), 0, 0.0)
        episodes.append(episode)
    module = PPOConfig().get_rl_module_spec(spaces=(box, gym.spaces.Discrete(2))).build()
    batch = pipeline(rl_module=module, batch={}, episodes=episodes, shared_data={})
    assert batch["episode_len"].tolist() == [1.0, 3.0] and batch[Columns.OBS].shape == (2, 1)


def test_multi_agent_env_to_module_items_land_in_their_modules_rows():
    multi = ma_episode()
    batch = {}
    for agent_episode in ConnectorV2.single_agent_episode_iterator([multi]):
        ConnectorV2.add_batch_item(batch, "tag", agent_episode.agent_id, agent_episode)
    pipeline = ConnectorPipelineV2(connectors=default_env_to_module_connectors()[:3])

    class Stateless:
        def __getitem__(self, module_id):
            return self

        def is_stateful(self):
            return False

    batch = pipeline(rl_module=Stateless(), batch=batch, episodes=[multi], shared_data={})
    assert batch["mod0"]["tag"].tolist() == ["ag0"] and batch["mod1"]["tag"].tolist() == ["ag1"]
    assert "tag" not in batch


class DoubleRewards(ConnectorV2):
    """A learner piece in RLlib's style: writes a whole REWARDS column per chunk with add_n_batch_items."""

    def __call__(self, *, rl_module, batch, episodes, explore=None, shared_data=None, **kwargs):
        for episode in self.single_agent_episode_iterator(episodes, agents_that_stepped_only=False):
            rewards = 2 * np.asarray(episode.get_rewards(), np.float32)
            self.add_n_batch_items(
                batch, Columns.REWARDS, rewards, num_items=len(episode), single_agent_episode=episode
            )
        return batch


def test_learner_pipeline_takes_a_custom_column_per_chunk_in_order():
    box = gym.spaces.Box(-10.0, 10.0, (1,), np.float32)
    episodes = [
        SingleAgentEpisode(
            id_=id_, observations=[np.zeros(1, np.float32)] * (n + 1), actions=[0] * n,
            rewards=[float(i + 1) for i in range(n)], len_lookback_buffer=0,
        ).to_numpy()
        for id_, n in (("a", 2), ("b", 3), ("a", 1))  # two chunks of episode "a"
    ]  # fmt: skip
    pipeline = ConnectorPipelineV2(
        box, gym.spaces.Discrete(2), connectors=[DoubleRewards(), *default_learner_connectors()]
    )
    module = PPOConfig().get_rl_module_spec(spaces=(box, gym.spaces.Discrete(2))).build()
    batch = pipeline(rl_module={"default_policy": module}, batch={}, episodes=episodes, shared_data={})
    assert batch["default_policy"][Columns.REWARDS].tolist() == [2.0, 4.0, 2.0, 4.0, 6.0, 2.0]
    assert batch["default_policy"][Columns.ACTIONS].shape == (6,)


def test_items_for_episodes_the_pipeline_does_not_have_are_an_error():
    batch = {}
    ConnectorV2.add_batch_item(batch, "x", 1.0, sa_episode("stranger"))
    pipeline = ConnectorPipelineV2(connectors=default_learner_connectors())
    with pytest.raises(ConnectorError, match=r"Column 'x' has items for episode keys \[\('stranger',\)\]"):
        pipeline(rl_module=None, batch=batch, episodes=[sa_episode("mine").to_numpy()], shared_data={})
