"""AddStatesFromEpisodesToBatch: initial state at the first step, then the last STATE_OUT."""

import numpy as np
import pytest
import torch

from flywheel.columns import Columns
from flywheel.connectors.env_to_module import AddStatesFromEpisodesToBatch
from flywheel.episodes import SingleAgentEpisode

from ..conftest import StubModule

OBS = np.zeros(2, np.float32)


def state(value):
    return {"h": np.full(3, value, np.float32)}


def stepped(n_steps):
    episode = SingleAgentEpisode()
    episode.add_env_reset(OBS)
    for t in range(n_steps):
        episode.add_env_step(OBS, 0, 1.0, extra_model_outputs={Columns.STATE_OUT: state(10 + t)})
    return episode


@pytest.fixture
def module():
    return StubModule(initial_state={"h": torch.full((3,), -1.0)})


def test_stateless_module_adds_nothing():
    batch = AddStatesFromEpisodesToBatch()(rl_module=StubModule(), batch={}, episodes=[stepped(0)])
    assert batch == {}


def test_initial_state_at_start_then_last_state_out(module):
    batch = AddStatesFromEpisodesToBatch()(rl_module=module, batch={}, episodes=[stepped(0), stepped(3)])
    first, second = batch[Columns.STATE_IN]
    assert isinstance(first["h"], np.ndarray)
    np.testing.assert_array_equal(first["h"], [-1.0, -1.0, -1.0])
    np.testing.assert_array_equal(second["h"], [12.0, 12.0, 12.0])


def test_cut_chunk_takes_the_state_from_its_lookback(module):
    chunk = stepped(3).cut(len_lookback_buffer=1)
    assert len(chunk) == 0 and chunk.t_started == 3
    batch = AddStatesFromEpisodesToBatch()(rl_module=module, batch={}, episodes=[chunk])
    np.testing.assert_array_equal(batch[Columns.STATE_IN][0]["h"], [12.0, 12.0, 12.0])


def test_skips_when_state_in_is_already_set(module):
    batch = AddStatesFromEpisodesToBatch()(
        rl_module=module, batch={Columns.STATE_IN: "mine"}, episodes=[stepped(1)]
    )
    assert batch == {Columns.STATE_IN: "mine"}
