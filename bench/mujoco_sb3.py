"""Stable-Baselines3 PPO on a MuJoCo env with CleanRL's `ppo_continuous_action` recipe.

VecNormalize (observations and rewards, both clipped to +-10) over one Monitor-wrapped env, whose
raw returns are what is recorded; 64x64 tanh actor and critic (SB3's orthogonal init, log std 0);
SB3's value clipping (`clip_range_vf`) is its closest to CleanRL's (SB3 takes the clipped error,
CleanRL the larger of the two). One torch thread. Usage:
`bench/.venv/bin/python bench/mujoco_sb3.py --env HalfCheetah-v5 --seed 0`.
"""

from __future__ import annotations

import torch
from mujoco_recipe import EVAL_EPISODES, FINAL_EPISODES, RECIPE, Recorder, parse_args


def main() -> None:
    args = parse_args(__doc__)
    torch.set_num_threads(1)
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecNormalize

    r = RECIPE
    recorder = Recorder("sb3" + args.tag, args)

    class Record(BaseCallback):
        """After each rollout: the mean raw (Monitor) return of the last 10 finished episodes."""

        def _on_step(self) -> bool:
            return True

        def _on_rollout_end(self) -> None:
            last = [info["r"] for info in list(self.model.ep_info_buffer)[-FINAL_EPISODES:]]
            recorder.point(self.num_timesteps, sum(last) / len(last) if last else None)

    env = make_vec_env(args.env, n_envs=r["num_envs"], seed=args.seed)
    env = VecNormalize(env, gamma=r["gamma"], clip_obs=r["obs_clip"], clip_reward=r["reward_clip"])
    model = PPO(
        "MlpPolicy",
        env,
        n_steps=r["num_steps"],
        batch_size=r["minibatch_size"],
        n_epochs=r["update_epochs"],
        learning_rate=lambda remaining: remaining * r["learning_rate"],
        gamma=r["gamma"],
        gae_lambda=r["gae_lambda"],
        clip_range=r["clip_coef"],
        clip_range_vf=r["clip_vloss"],
        ent_coef=r["ent_coef"],
        vf_coef=r["vf_coef"],
        max_grad_norm=r["max_grad_norm"],
        policy_kwargs={
            "net_arch": {"pi": r["hiddens"], "vf": r["hiddens"]},
            "activation_fn": torch.nn.Tanh,
            "log_std_init": 0.0,
            "optimizer_kwargs": {"eps": r["adam_eps"]},
        },
        seed=args.seed,
        device="cpu",
    )
    recorder.start_training()
    model.learn(total_timesteps=args.steps, callback=Record())
    recorder.stop_training()
    recorder.finish(model.num_timesteps, evaluate(model, env, args))


def evaluate(model, train_env, args) -> list[float]:
    """Deterministic episodes on a fresh env with the training run's (frozen) observation stats."""
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecNormalize

    env = VecNormalize(
        make_vec_env(args.env, n_envs=1, seed=args.seed + 1000), training=False, norm_reward=False
    )
    env.obs_rms = train_env.obs_rms
    returns, obs = [], env.reset()
    while len(returns) < EVAL_EPISODES:
        action, _ = model.predict(obs, deterministic=True)
        obs, _, dones, infos = env.step(action)
        if dones[0]:
            returns.append(float(infos[0]["episode"]["r"]))
    return returns


if __name__ == "__main__":
    main()
