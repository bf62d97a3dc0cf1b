"""ProgressBar and describe_result: what the live bar shows."""

import io
import logging
import warnings

from flywheel.reporting import ProgressBar, describe_result


def result(iteration, steps_per_iter=400, seconds=0.5, ret=41.2):
    runners = {"num_env_steps_sampled": steps_per_iter}
    if ret is not None:
        runners["episode_return_mean"] = ret
    return {
        "env_runners": runners,
        "training_iteration": iteration,
        "num_env_steps_sampled_lifetime": iteration * steps_per_iter,
        "time_this_iter_s": seconds,
    }


def test_describe_result_shows_iteration_env_steps_return_and_rate():
    assert describe_result(result(3)) == "iter=3 env_steps=1200 return=41.20 steps/s=800"


def test_describe_result_before_any_episode_and_without_time():
    assert describe_result(result(1, ret=None, seconds=0.0)) == "iter=1 env_steps=400 return=nan steps/s=nan"


def test_bar_counts_iterations_and_shows_the_newest_result():
    out = io.StringIO()
    with ProgressBar(total_iters=5, desc="PPO CartPole-v1", file=out) as bar:
        bar.update(result(1))
        bar.update(result(2, ret=50.0))
    final = out.getvalue().split("\r")[-1]
    assert final.startswith("PPO CartPole-v1:  40%|")
    assert " 2/5 [" in final
    assert final.rstrip().endswith("iter=2 env_steps=800 return=50.00 steps/s=800]")


def test_bar_counts_env_steps_when_given_a_timestep_total():
    out = io.StringIO()
    with ProgressBar(total_iters=100, total_timesteps=2000, file=out) as bar:
        bar.update(result(2))
    final = out.getvalue().split("\r")[-1]
    assert " 800/2000 [" in final and final.startswith(" 40%|")


def test_bar_follows_a_restored_run_that_starts_at_a_later_iteration():
    out = io.StringIO()
    with ProgressBar(file=out) as bar:
        bar.update(result(7))
        bar.update(result(8))
    assert out.getvalue().split("\r")[-1].startswith("8iter [")


def test_disabled_bar_draws_nothing():
    out = io.StringIO()
    with ProgressBar(total_iters=2, file=out, disable=True) as bar:
        bar.update(result(1))
    assert out.getvalue() == ""


def test_log_lines_and_warnings_are_written_above_the_bar_not_onto_its_line(capsys):
    logger = logging.getLogger("flywheel.test_progress")
    handlers, showwarning = list(logging.getLogger().handlers), warnings.showwarning
    with ProgressBar(total_iters=3, desc="PPO") as bar:  # draws on stderr, as in `flywheel train`
        bar.update(result(1))
        logger.warning("a log line")
        warnings.warn("a warning", UserWarning, stacklevel=1)
        bar.update(result(2))
    lines = [line for line in capsys.readouterr().err.replace("\r", "\n").splitlines() if line.strip()]
    assert "a log line" in lines  # a line of its own, not "...steps/s=800]a log line"
    assert [line for line in lines if line.endswith(": UserWarning: a warning")] != []
    bars = [line for line in lines if "PPO:" in line]
    assert all(line.startswith("PPO:") and line.endswith("]") for line in bars)  # no bar shares a line
    assert bars[-1].startswith("PPO:  67%|") and bars[-1].endswith(
        "iter=2 env_steps=800 return=41.20 steps/s=800]"
    )
    # After the bar, logging and warnings print as they did before it.
    assert (logging.getLogger().handlers, warnings.showwarning) == (handlers, showwarning)
