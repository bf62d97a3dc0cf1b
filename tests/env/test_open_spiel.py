"""OpenSpielEnv: an OpenSpiel game as a MultiAgentEnv with RLlib's conventions (turns, spaces, rewards)."""

import gymnasium as gym
import numpy as np
import pytest

from flywheel.env import check_multi_agent_env
from flywheel.env.open_spiel import (
    ILLEGAL_ACTION_PENALTY,
    OpenSpielEnv,
    try_import_open_spiel,
    try_import_pyspiel,
)

pyspiel = pytest.importorskip("pyspiel")


def test_try_imports_return_the_modules():
    assert try_import_pyspiel() is pyspiel
    assert try_import_open_spiel(error=True).__name__ == "open_spiel"


def test_players_spaces_and_the_turn_based_observations_of_connect_four():
    env = OpenSpielEnv(pyspiel.load_game("connect_four"))
    check_multi_agent_env(env)
    assert env.possible_agents == [0, 1]
    assert env.observation_spaces[1] == gym.spaces.Box(-np.inf, np.inf, (126,), np.float32)
    assert env.action_spaces[0] == gym.spaces.Discrete(7)
    obs, infos = env.reset(seed=0)
    assert list(obs) == [0] and obs[0].dtype == np.float32 and obs[0].shape == (126,) and infos == {}
    obs, rewards, terminateds, truncateds, _ = env.step({0: 3})
    assert list(obs) == [1] and rewards == {0: 0.0, 1: 0.0}
    assert terminateds == {0: False, 1: False, "__all__": False} == truncateds


def test_a_win_ends_the_game_for_both_with_the_returns_as_rewards():
    env = OpenSpielEnv(pyspiel.load_game("connect_four"))
    env.reset()
    moves = [0, 1, 0, 1, 0, 1, 0]  # player 0 stacks four in column 0
    for turn, column in enumerate(moves):
        obs, rewards, terminateds, _, _ = env.step({turn % 2: column})
    assert obs == {} and rewards == {0: 1.0, 1: -1.0} and terminateds["__all__"]


def test_an_illegal_move_is_replaced_by_a_legal_one_and_costs_its_player():
    env = OpenSpielEnv(pyspiel.load_game("tic_tac_toe"))
    env.reset(seed=3)
    env.step({0: 4})
    obs, rewards, _, _, _ = env.step({1: 4})  # the centre is taken
    assert rewards == {0: 0.0, 1: ILLEGAL_ACTION_PENALTY} and list(obs) == [0]
    assert str(env.state).count("o") == 1  # player 1's mark went to a free cell


def test_chance_nodes_are_resolved_reproducibly_with_the_reset_seed():
    env = OpenSpielEnv(pyspiel.load_game("kuhn_poker"))
    first, _ = env.reset(seed=7)
    again, _ = env.reset(seed=7)
    assert list(first) == [0] and first[0].tolist() == again[0].tolist()
    deals = {tuple(env.reset(seed=seed)[0][0]) for seed in range(20)}
    assert len(deals) == 3  # player 0 holds one of three cards


def test_a_simultaneous_game_observes_and_steps_every_player():
    env = OpenSpielEnv(pyspiel.load_game("matrix_rps"))
    obs, _ = env.reset()
    assert sorted(obs) == [0, 1]
    obs, rewards, terminateds, _, _ = env.step({0: 1, 1: 0})  # paper beats rock
    assert obs == {} and rewards == {0: 1.0, 1: -1.0} and terminateds["__all__"]
