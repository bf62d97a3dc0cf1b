"""Single-file PPO's `train()` speed: env steps per second of whole iterations (rollout + update).

The iterations of `train_loop.py` (4 envs x 128 steps, 4 epochs x 4 minibatches of 128, separate
64-64 tanh actor and critic, one torch thread) timed like `sample()` in the sampling benchmarks:
one warm-up call, then calls of `--num-timesteps` env steps (whole iterations of 512) until at
least `--calls` calls and `--min-seconds` are timed, alone or in turns with `train_speed_flywheel.py`
(`--turns-dir`). `--num-envs` is ignored (the loop's own 4). Prints one JSON line.
"""

import math

from benchlib import run_guarded, sampling_args, time_sampling_args
from train_loop import NUM_ENVS, NUM_STEPS, TOTAL_TIMESTEPS, LoopPPO


def main() -> None:
    args = sampling_args(__doc__)

    def body() -> dict:
        ppo = LoopPPO(args.seed, lambda ret: None)
        iterations, done = TOTAL_TIMESTEPS // (NUM_ENVS * NUM_STEPS), 0

        def train(n: int) -> int:
            nonlocal done
            steps = 0
            for _ in range(math.ceil(n / (NUM_ENVS * NUM_STEPS))):
                steps += ppo.iterate(done % iterations, iterations)
                done += 1
            return steps

        result = time_sampling_args(train, args)
        ppo.envs.close()
        return result

    run_guarded({"bench": "train_speed", "framework": "loop"}, body)


if __name__ == "__main__":
    main()
