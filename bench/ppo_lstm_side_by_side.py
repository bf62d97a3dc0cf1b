"""PPO + LSTM on one batch, side by side: RLlib 2.60's learner pipeline and loss against flywheel's.

RLlib's `stateless_cartpole_ppo_with_lstm` settings (lr 5e-4, one epoch, vf_loss_coeff 0.05,
entropy_coeff 0.005, lambda 0.95, MeanStdFilter, shared LSTM, max_seq_len 20), 0 runners x 16 envs:

1. a child process builds RLlib's PPO, samples ~4000 env steps, runs its learner pipeline and loss on
   them, then two `update()`s in sampled order (one epoch, minibatch 128), and saves everything;
2. this process builds flywheel's learner at the same settings, loads RLlib's initial weights, turns
   RLlib's episodes into flywheel episodes and does the same.

It prints, for the valid (unmasked) rows, the largest differences of the batch columns, the loss, every
parameter's gradient norm on both sides, and how far the weights are apart after each update (next to how
far RLlib's moved). Run from the repository root: `python bench/ppo_lstm_side_by_side.py [--seed 0]`.
"""

from __future__ import annotations

import argparse
import copy
import pickle
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

SETTINGS = dict(lr=0.0005, num_epochs=1, vf_loss_coeff=0.05, entropy_coeff=0.005, lambda_=0.95)
MODEL = dict(vf_share_layers=True, use_lstm=True, max_seq_len=20)
UPDATE = dict(num_epochs=1, minibatch_size=128, shuffle_batch_per_epoch=False)
ROWS = ["obs", "actions", "rewards", "action_logp", "advantages", "value_targets"]
RENAME = {  # flywheel's parameter name -> RLlib's
    "encoder.base.0.weight": "encoder.encoder.tokenizer.net.mlp.0.weight",
    "encoder.base.0.bias": "encoder.encoder.tokenizer.net.mlp.0.bias",
    "encoder.base.2.weight": "encoder.encoder.tokenizer.net.mlp.2.weight",
    "encoder.base.2.bias": "encoder.encoder.tokenizer.net.mlp.2.bias",
    **{
        f"encoder.lstm.{n}": f"encoder.encoder.lstm.{n}"
        for n in ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0")
    },
    "pi.weight": "pi.net.mlp.0.weight",
    "pi.bias": "pi.net.mlp.0.bias",
    "vf.weight": "vf.net.mlp.0.weight",
    "vf.bias": "vf.net.mlp.0.bias",
}


def numpy_tree(x):
    import torch

    if isinstance(x, dict):
        return {k: numpy_tree(v) for k, v in x.items()}
    return x.detach().cpu().numpy().copy() if isinstance(x, torch.Tensor) else np.asarray(x)


def tensor_tree(x):
    import torch

    return {k: tensor_tree(v) for k, v in x.items()} if isinstance(x, dict) else torch.as_tensor(x)


def rllib_side(seed: int, out: str) -> None:
    import ray
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.connectors.env_to_module import MeanStdFilter
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
    from ray.rllib.examples.envs.classes.stateless_cartpole import StatelessCartPole

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    config = (
        PPOConfig()
        .environment(StatelessCartPole)
        .env_runners(
            num_env_runners=0,
            num_envs_per_env_runner=16,
            env_to_module_connector=lambda env, spaces, device: MeanStdFilter(),
        )
        .training(**SETTINGS)
        .rl_module(model_config=DefaultModelConfig(**MODEL))
        .debugging(seed=seed)
    )
    algo = config.build_algo()
    learner = algo.learner_group._learner  # the local learner (num_learners=0)
    module = learner.module["default_policy"]
    saved = {"weights": numpy_tree(module.state_dict())}
    episodes = algo.env_runner.sample(num_timesteps=4000, random_actions=False)
    saved["episodes"] = [
        dict(
            id=e.id_, t_started=e.t_started, obs=np.array(e.get_observations(slice(0, len(e) + 1))),
            actions=np.array(e.get_actions()), rewards=np.array(e.get_rewards()),
            extra={k: e.get_extra_model_outputs(k) for k in e.extra_model_outputs},
            terminated=e.is_terminated, truncated=e.is_truncated,
        )
        for e in episodes
    ]  # fmt: skip
    batch = learner._learner_connector(
        rl_module=learner.module,
        episodes=copy.deepcopy(episodes),
        batch={},
        shared_data={},
        metrics=learner.metrics,
    )["default_policy"]
    saved["batch"] = numpy_tree(batch)
    tensors = tensor_tree(saved["batch"])
    loss = learner.compute_loss_for_module(
        module_id="default_policy",
        config=learner.config,
        batch=tensors,
        fwd_out=module.forward_train(tensors),
    )
    module.zero_grad()
    loss.backward()
    saved["loss"] = float(loss.detach())
    saved["grads"] = {k: p.grad.numpy().copy() for k, p in module.named_parameters()}
    for k in range(2):
        learner.update(
            episodes=copy.deepcopy(episodes),
            timesteps={"num_env_steps_sampled_lifetime": 4000 * (k + 1)},
            **UPDATE,
        )
        saved[f"weights_{k}"] = numpy_tree(module.state_dict())
        saved[f"kl_coeff_{k}"] = float(learner.curr_kl_coeffs_per_module["default_policy"])
    Path(out).write_bytes(pickle.dumps(saved))


def flywheel_side(saved: dict, seed: int) -> None:
    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from flywheel.algorithms.ppo import PPOConfig
    from flywheel.columns import Columns
    from flywheel.core.rl_module.default_model_config import DefaultModelConfig
    from flywheel.episodes.single_agent_episode import SingleAgentEpisode
    from flywheel.testing.stateless_cartpole import StatelessCartPole

    config = PPOConfig().environment(StatelessCartPole).training(**SETTINGS).debugging(seed=seed)
    config.rl_module(model_config=DefaultModelConfig(**MODEL))
    env = StatelessCartPole()
    learner = config.build_learner(env=env)
    module = learner.module["default_policy"]
    load = lambda weights: module.load_state_dict({k: torch.as_tensor(weights[v]) for k, v in RENAME.items()})  # noqa: E731

    def episodes() -> list:
        out = []
        for d in saved["episodes"]:
            extra = dict(d["extra"])  # RLlib's states carry a layer axis: [T, 1, cell]
            extra["state_out"] = {k: np.asarray(v)[:, 0] for k, v in extra["state_out"].items()}
            out.append(SingleAgentEpisode(
                d["id"], observations=list(d["obs"]), actions=list(d["actions"]), rewards=list(d["rewards"]),
                observation_space=env.observation_space, action_space=env.action_space, terminated=d["terminated"],
                truncated=d["truncated"], extra_model_outputs=extra, t_started=d["t_started"], len_lookback_buffer=0,
            ))  # fmt: skip
        return out

    load(saved["weights"])
    batch = learner.make_train_batch(None, episodes())["default_policy"]
    ours, theirs = numpy_tree(batch), saved["batch"]
    mask, their_mask = ours[Columns.LOSS_MASK].astype(bool), theirs["loss_mask"].astype(bool)
    print(f"rows {mask.shape} vs {their_mask.shape}; valid {mask.sum()} vs {their_mask.sum()}; masks equal: "
          f"{np.array_equal(mask, their_mask)}")  # fmt: skip
    for column in ROWS:
        print(
            f"  {column:14s} max |diff| {np.abs(ours[column][mask] - theirs[column][their_mask]).max():.3g}"
        )
    fwd = module.forward_train(batch)
    loss = learner.compute_loss_for_module(
        module_id="default_policy", config=config, batch=batch, fwd_out=fwd
    )
    module.zero_grad()
    loss.backward()
    print(f"loss: flywheel {float(loss.detach()):.5f}, RLlib {saved['loss']:.5f}")
    params = dict(module.named_parameters())
    for ours_name, their_name in RENAME.items():
        grad = params[ours_name].grad.numpy()
        print(f"  grad norm {their_name:45s} flywheel {np.linalg.norm(grad):.5g} RLlib "
              f"{np.linalg.norm(saved['grads'][their_name]):.5g}")  # fmt: skip
    load(saved["weights"])
    before = saved["weights"]
    for k in range(2):
        learner.update(
            episodes=episodes(), timesteps={"num_env_steps_sampled_lifetime": 4000 * (k + 1)}, **UPDATE
        )
        after, state = saved[f"weights_{k}"], module.state_dict()
        print(
            f"update {k}: kl_coeff flywheel {learner.curr_kl_coeffs['default_policy']:.3g}, RLlib {saved[f'kl_coeff_{k}']:.3g}"
        )
        for ours_name, their_name in RENAME.items():
            apart = float((state[ours_name] - torch.as_tensor(after[their_name])).abs().max())
            moved = float(np.abs(after[their_name] - before[their_name]).max())
            print(f"  {their_name:45s} apart {apart:.3g} (RLlib moved {moved:.3g})")
        before = after


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rllib-child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rllib_child:
        rllib_side(args.seed, args.rllib_child)
        return
    with tempfile.NamedTemporaryFile(suffix=".pkl") as out:
        command = [sys.executable, __file__, "--seed", str(args.seed), "--rllib-child", out.name]
        subprocess.run(command, check=True, capture_output=True)
        saved = pickle.loads(Path(out.name).read_bytes())
    flywheel_side(saved, args.seed)


if __name__ == "__main__":
    main()
