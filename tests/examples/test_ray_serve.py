"""examples/ray_serve_cartpole.py: a checkpoint served by Ray Serve answers real HTTP requests on
localhost with exactly the actions `load_policy` computes in this process."""

import runpy
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import requests

from flywheel.errors import InferenceError
from flywheel.inference import load_policy

EXAMPLE = Path(__file__).parents[2] / "examples" / "ray_serve_cartpole.py"

pytestmark = pytest.mark.ray


def cartpole_observations(n: int) -> np.ndarray:
    """`n` observations of seeded CartPole episodes under random actions (resetting when one ends)."""
    env = gym.make("CartPole-v1")
    env.action_space.seed(0)
    obs, _ = env.reset(seed=0)
    rows = []
    for _ in range(n):
        rows.append(obs)
        obs, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            obs, _ = env.reset()
    env.close()
    return np.stack(rows)


def serve_actors(ray) -> list[str]:
    return [a["name"] for a in ray.util.list_named_actors(all_namespaces=True) if a["namespace"] == "serve"]


def test_served_actions_equal_load_policy_and_serve_shuts_down(ray_session, tmp_path):
    from ray import serve

    example = runpy.run_path(str(EXAMPLE), run_name="example")
    path = example["train_and_save"](
        1, smoke=True, folder=str(tmp_path / "checkpoint")
    )  # trained once, so the MeanStdFilter has statistics
    policy = load_policy(path)
    observations = cartpole_observations(40)
    port = example["free_port"]()
    url = example["start_serving"](path, port)
    assert url == f"http://127.0.0.1:{port}/flywheel-policy"
    try:
        with requests.Session() as http:
            served = [
                http.post(url, json={"observation": obs.tolist()}, timeout=30).json() for obs in observations
            ]
            local = [policy.compute_single_action(obs) for obs in observations]
            assert served == [{"action": int(a)} for a in local]
            assert {s["action"] for s in served} == {0, 1}  # both actions occur: the comparison can fail

            batch = http.post(url, json={"observations": observations.tolist()}, timeout=30)
            assert batch.json() == {"actions": policy.compute_actions(observations).tolist()}
            assert batch.json()["actions"] == [s["action"] for s in served]

            sampled = [
                http.post(url, json={"observation": obs.tolist(), "explore": True}, timeout=30).json()
                for obs in observations[:10]
            ]
            assert {s["action"] for s in sampled} <= {0, 1} and all(len(s) == 1 for s in sampled)

            # Bad requests: HTTP 400 with the error the policy raises locally.
            bad_explore = http.post(url, json={"observation": [0.0] * 4, "explore": "yes"}, timeout=30)
            assert (bad_explore.status_code, bad_explore.json()) == (
                400,
                {
                    "error": "explore must be True or False, got 'yes' (str). Fix: explore=True samples from "
                    "the action distribution, explore=False acts greedily."
                },
            )
            wrong_shape = http.post(url, json={"observation": [0.0, 0.0, 0.0]}, timeout=30)
            with pytest.raises(InferenceError) as local_error:
                policy.compute_single_action([0.0, 0.0, 0.0])
            assert (wrong_shape.status_code, wrong_shape.json()) == (400, {"error": str(local_error.value)})
            assert wrong_shape.json()["error"].startswith(
                "compute_single_action(obs) expected one observation of shape (4,), got shape (3,)."
            )
            wrong_key = http.post(url, json={"obs": [0.0, 0.0, 0.0, 0.0]}, timeout=30)
            assert wrong_key.status_code == 400
            assert wrong_key.json()["error"] == (
                "Expected a JSON object with one of the keys 'observation' (one observation) or "
                "'observations' (a list of them), and optionally 'explore'; got ['obs']. "
                'Fix: send e.g. {"observation": [0.0, 0.0, 0.0, 0.0]}.'
            )
            not_json = http.post(url, data=b"[0.0, 0.0", timeout=30)
            assert not_json.status_code == 400
            assert not_json.json()["error"].startswith("Expecting ")
    finally:
        serve.shutdown()

    assert serve_actors(ray_session) == []
    with pytest.raises(requests.ConnectionError):
        requests.post(url, json={"observation": observations[0].tolist()}, timeout=5)
