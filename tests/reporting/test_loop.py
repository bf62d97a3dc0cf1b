"""stop_reason and train_with_progress, driven by a scripted stand-in for an algorithm."""

import math

import pytest

from flywheel.reporting import ResultWriter, stop_reason, train_with_progress


class ScriptedAlgo:
    """Returns one result per train() call with the scripted mean returns (100 env steps each)."""

    def __init__(self, returns):
        self.returns = list(returns)
        self.iteration = 0

    def train(self):
        self.iteration += 1
        runners = {"num_env_steps_sampled": 100}
        ret = self.returns[self.iteration - 1]
        if ret is not None:
            runners["episode_return_mean"] = ret
        return {
            "env_runners": runners,
            "training_iteration": self.iteration,
            "num_env_steps_sampled_lifetime": 100 * self.iteration,
            "time_this_iter_s": 0.1,
        }


class ListWriter(ResultWriter):
    def __init__(self):
        self.iterations = []
        self.closed = False

    def write(self, result):
        self.iterations.append(result["training_iteration"])

    def close(self):
        self.closed = True


def make_result(iteration=1, ret=10.0, steps=100):
    return {
        "env_runners": {"episode_return_mean": ret},
        "training_iteration": iteration,
        "num_env_steps_sampled_lifetime": steps,
    }


@pytest.mark.parametrize(
    ("stops", "reason"),
    [
        ({}, None),
        ({"stop_reward": 10.0}, "episode_return_mean 10.00 >= 10"),
        ({"stop_reward": 10.5}, None),
        ({"stop_timesteps": 100}, "num_env_steps_sampled_lifetime 100 >= 100"),
        ({"stop_timesteps": 101}, None),
        ({"stop_iters": 1}, "training_iteration 1 >= 1"),
        ({"stop_iters": 2}, None),
        # The first condition met wins: reward, then timesteps, then iterations.
        ({"stop_iters": 1, "stop_timesteps": 50, "stop_reward": 5}, "episode_return_mean 10.00 >= 5"),
        (
            {"stop_iters": 1, "stop_timesteps": 50, "stop_reward": 50},
            "num_env_steps_sampled_lifetime 100 >= 50",
        ),
    ],
)
def test_stop_reason(stops, reason):
    assert stop_reason(make_result(), **stops) == reason


def test_stop_reward_is_never_met_before_an_episode_finished():
    assert stop_reason(make_result(ret=math.nan), stop_reward=-1e9) is None
    no_return = {"env_runners": {}, "training_iteration": 1, "num_env_steps_sampled_lifetime": 5}
    assert stop_reason(no_return, stop_reward=-1e9) is None


def test_loop_stops_at_the_first_result_meeting_a_condition(capsys):
    algo = ScriptedAlgo([None, 5.0, 20.0, 30.0])
    writer, seen = ListWriter(), []
    result = train_with_progress(
        algo, stop_reward=15.0, stop_iters=10, writers=[writer], progress_bar=False, on_result=seen.append
    )
    assert result["training_iteration"] == 3 and algo.iteration == 3
    assert writer.iterations == [1, 2, 3]
    assert [r["training_iteration"] for r in seen] == [1, 2, 3]
    assert not writer.closed  # the caller owns the writers
    assert capsys.readouterr() == ("", "")  # no bar when progress_bar=False


def test_loop_with_iteration_and_timestep_limits():
    assert (
        train_with_progress(ScriptedAlgo([1.0] * 9), stop_iters=4, progress_bar=False)["training_iteration"]
        == 4
    )
    result = train_with_progress(ScriptedAlgo([1.0] * 9), stop_timesteps=250, progress_bar=False)
    assert result["num_env_steps_sampled_lifetime"] == 300


def test_loop_draws_the_bar_on_stderr(capsys):
    train_with_progress(ScriptedAlgo([1.0, 2.0]), stop_iters=2, desc="fake")
    out, err = capsys.readouterr()
    assert out == ""
    final = err.split("\r")[-1].rstrip()
    assert final.startswith("fake: 100%|") and " 2/2 [" in final
    assert final.endswith("iter=2 env_steps=200 return=2.00 steps/s=1000]")
