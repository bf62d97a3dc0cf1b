"""Helpers the algorithm tests share."""


def train_until(algo, threshold: float, budget: int) -> tuple[float, int]:
    """Trains `algo` until its mean episode return reaches `threshold` or it sampled `budget` env
    steps; stops it; returns that return and the env steps sampled."""
    try:
        while True:
            result = algo.train()
            steps = result["env_runners"]["num_env_steps_sampled_lifetime"]
            ret = result["env_runners"]["episode_return_mean"]
            if ret >= threshold or steps >= budget:
                return ret, steps
    finally:
        algo.stop()
