"""learner.FrameStacking (RLlib's FrameStackingLearner): the env-to-module piece's stacks, one row per step."""

import gymnasium as gym
import numpy as np

from flywheel.columns import Columns
from flywheel.connectors import common, env_to_module, learner
from flywheel.typing import DEFAULT_MODULE_ID

from ..conftest import episode_from

IMAGE = gym.spaces.Box(0, 255, (2, 3, 1), np.uint8)


def frame(t):
    """A 2x3 one-channel uint8 image whose pixels are t, t + 1, ... t + 5."""
    return (np.arange(6, dtype=np.uint8) + t).reshape(2, 3, 1)


def test_it_is_the_learner_pipelines_own_class_and_rllibs_learner_frame_stacking():
    piece = learner.FrameStacking(IMAGE, num_frames=4)
    assert not isinstance(piece, env_to_module.FrameStacking) and isinstance(piece, common.FrameStacking)
    assert piece.num_frames == 4 and piece.required_episode_lookback == 3
    assert piece.observation_space == gym.spaces.Box(0, 255, (2, 3, 4), np.uint8)
    rllib = common.FrameStacking(IMAGE, num_frames=4, as_learner_connector=True)
    assert type(rllib) is learner.FrameStacking and rllib.get_ctor_args_and_kwargs() == (
        (IMAGE,),
        {"num_frames": 4},
    )


def test_rows_match_what_the_env_to_module_piece_gave_the_module_at_each_step():
    observations = [frame(10 * t) for t in range(6)]
    acting = env_to_module.FrameStacking(IMAGE, num_frames=3)
    seen = []
    episode = episode_from(observations[:1], observation_space=IMAGE)
    for obs in observations[1:]:
        seen.append(acting(rl_module=None, batch={}, episodes=[episode])[Columns.OBS][0])
        episode.add_env_step(obs, 0, 0.0)
    rows = learner.FrameStacking(IMAGE, num_frames=3)(
        rl_module=None, batch={}, episodes=[episode.to_numpy()], shared_data={}
    )[DEFAULT_MODULE_ID][Columns.OBS]
    assert rows.shape == (5, 2, 3, 3) and rows.dtype == np.uint8
    np.testing.assert_array_equal(rows, np.stack(seen))
    # Oldest frame first along the channel axis; before the start the first frame is repeated.
    assert rows[:, 0, 0, :].tolist() == [[0, 0, 0], [0, 0, 10], [0, 10, 20], [10, 20, 30], [20, 30, 40]]
    assert rows[4, 1, 2, :].tolist() == [25, 35, 45]
