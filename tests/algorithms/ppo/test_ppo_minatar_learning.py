"""PPO learns MinAtar Breakout from pixels: clearly above a random policy within 40,000 env steps.

The recipe of examples/ppo_minatar.py (a 3x3 CNN on the (10, 10, 4) bool frames, a 256-unit head).
A random policy's mean return is 0.4 (std 0.6 per episode, 100 episodes in the mean). Seeds 0, 1, 2
passed 1.5 after 8,192, 10,240 and 11,264 env steps and reached 3.81, 3.94 and 4.48 at 40,000.
"""

import runpy
from pathlib import Path

import pytest

pytestmark = pytest.mark.learning

EXAMPLE = Path(__file__).parents[3] / "examples" / "ppo_minatar.py"
BUDGET = 40_000
RANDOM_POLICY = 0.4
TARGET = 2.5


@pytest.mark.parametrize("seed", [0])
def test_ppo_breaks_bricks_well_above_random(seed):
    algo = runpy.run_path(str(EXAMPLE), run_name="test")["build_config"](seed).build_algo()
    try:
        steps, best = 0, float("-inf")
        while steps < BUDGET:
            result = algo.train()
            steps = result["num_env_steps_sampled_lifetime"]
            best = max(best, result["env_runners"]["episode_return_mean"])
            if best >= TARGET:
                break
    finally:
        algo.stop()
    assert best >= TARGET > RANDOM_POLICY, f"best mean return {best:.2f} after {steps} env steps"
