"""Serve a trained PPO policy over HTTP with Ray Serve, then play CartPole by asking it for actions.

    python examples/ray_serve_cartpole.py                                   # train, serve on :8000, play 2 episodes
    python examples/ray_serve_cartpole.py --checkpoint runs/cartpole/checkpoint --port 12345

Needs the `serve` extra (`pip install "flywheel[serve]"`). Each Serve replica restores the policy
from the algorithm checkpoint with `load_policy` (module, observation filter statistics, action
sampling), so a served action is exactly what `load_policy(path).compute_single_action(obs)` gives.

Requests are JSON, POSTed to http://127.0.0.1:<port>/flywheel-policy while the episodes play:
`{"observation": [...]}` -> `{"action": ...}`, or a batch
`{"observations": [[...], ...]}` -> `{"actions": [...]}`; `"explore": true` samples instead of
acting greedily. A request that does not fit gets HTTP 400 and `{"error": "<what was expected>"}`.
"""

import argparse
import json
import socket
import tempfile
import time
from typing import Any

import gymnasium as gym
import numpy as np
import requests
from ray import serve
from ray.serve.schema import LoggingConfig
from starlette.requests import Request
from starlette.responses import JSONResponse

from flywheel import PPOConfig
from flywheel.connectors.env_to_module import MeanStdFilter
from flywheel.errors import InferenceError
from flywheel.inference import load_policy

ROUTE = "/flywheel-policy"


@serve.deployment(logging_config=LoggingConfig(log_level="WARN"))
class ServePolicy:
    """One replica: the checkpoint's policy, answering JSON requests for actions."""

    def __init__(self, checkpoint: str, module_id: str = "default_policy") -> None:
        self.policy = load_policy(checkpoint, module_id)

    async def __call__(self, request: Request) -> JSONResponse:
        try:
            body = json.loads(await request.body())
            return JSONResponse(self.act(body))
        except (json.JSONDecodeError, InferenceError) as error:
            return JSONResponse({"error": str(error)}, status_code=400)

    def act(self, body: Any) -> dict:
        if not isinstance(body, dict) or len({"observation", "observations"} & body.keys()) != 1:
            got = sorted(body) if isinstance(body, dict) else type(body).__name__
            raise InferenceError(
                f"Expected a JSON object with one of the keys 'observation' (one observation) or "
                f"'observations' (a list of them), and optionally 'explore'; got {got}. "
                'Fix: send e.g. {"observation": [0.0, 0.0, 0.0, 0.0]}.'
            )
        explore = body.get("explore", False)
        if "observation" in body:
            action = self.policy.compute_single_action(body["observation"], explore=explore)
            return {"action": np.asarray(action).tolist()}
        return {"actions": self.policy.compute_actions(body["observations"], explore=explore).tolist()}


def free_port() -> int:
    """A TCP port on localhost that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_serving(checkpoint: str, port: int) -> str:
    """Starts Serve on localhost:`port` with one replica of the checkpoint's policy; returns its URL.
    Returns once the replica has restored the policy and answers."""
    serve.start(http_options={"host": "127.0.0.1", "port": port})
    serve.run(ServePolicy.bind(checkpoint), name="flywheel_policy", route_prefix=ROUTE)
    return f"http://127.0.0.1:{port}{ROUTE}"


def train_and_save(stop_iters: int, smoke: bool, folder: str) -> str:
    """Trains PPO on CartPole for `stop_iters` iterations, saves it in `folder` and returns the checkpoint
    directory."""
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(
            num_envs_per_env_runner=4, env_to_module_connector=lambda env, spaces, device: MeanStdFilter()
        )
        .training(
            clip_param=0.2,
            use_kl_loss=False,
            lambda_=0.95,
            lr=1e-3,
            train_batch_size_per_learner=1000,
            minibatch_size=250,
            num_epochs=6,
        )
        .rl_module(model_config={"fcnet_hiddens": [32]})
        .debugging(seed=0)
    )
    if smoke:
        config.training(train_batch_size_per_learner=256, minibatch_size=64, num_epochs=1)
    algo = config.build_algo()
    for _ in range(stop_iters):
        result = algo.train()
    print(
        f"iteration {result['training_iteration']}: mean return {result['env_runners']['episode_return_mean']:.1f}"
    )
    path = algo.save_to_path(folder)
    algo.stop()
    print(f"checkpoint: {path}")
    return path


def play_over_http(url: str, episodes: int) -> list[float]:
    """Greedy CartPole episodes whose every action comes from the server; returns their returns."""
    env = gym.make("CartPole-v1")
    returns, start = [], time.perf_counter()
    with requests.Session() as session:
        for seed in range(episodes):
            obs, _ = env.reset(seed=seed)
            done, total = False, 0.0
            while not done:
                response = session.post(url, json={"observation": obs.tolist()}, timeout=30)
                response.raise_for_status()
                obs, reward, terminated, truncated, _ = env.step(response.json()["action"])
                total += float(reward)
                done = terminated or truncated
            returns.append(total)
            print(f"Episode R={total}")
    env.close()
    steps = int(sum(returns))  # CartPole pays 1 per step: one request per step
    print(f"{steps} requests, {1000 * (time.perf_counter() - start) / steps:.1f} ms each (env step included)")
    return returns


def main(argv: list[str] | None = None) -> list[float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", help="serve this algorithm checkpoint instead of training one")
    parser.add_argument("--stop-iters", type=int, default=10, help="training iterations before saving")
    parser.add_argument("--episodes", type=int, default=2, help="episodes to play through the server")
    parser.add_argument("--port", type=int, default=8000, help="HTTP port on localhost (0: any free one)")
    parser.add_argument("--smoke", action="store_true", help="one tiny iteration (what CI runs)")
    args = parser.parse_args(argv)
    if args.smoke:
        args.stop_iters, args.episodes, args.port = 1, 1, 0

    with tempfile.TemporaryDirectory(
        prefix="cartpole_"
    ) as folder:  # a checkpoint trained here: deleted at the end
        path = args.checkpoint or train_and_save(args.stop_iters, args.smoke, folder)
        url = start_serving(path, args.port or free_port())
        print(f"serving {path} at {url}")
        try:
            returns = play_over_http(url, args.episodes)
        finally:
            serve.shutdown()
    print(f"returns over HTTP: {returns} (mean {np.mean(returns):.1f})")
    return returns


if __name__ == "__main__":
    main()
