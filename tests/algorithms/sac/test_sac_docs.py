"""The code blocks of docs/concepts/sac.md (Pendulum, the default module, discrete CartPole) run as
written, one after another."""

import math
import re
from pathlib import Path

PAGE = Path(__file__).parents[3] / "docs" / "concepts" / "sac.md"


def test_docs_code_blocks_run():
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(), re.S)
    assert len(blocks) == 5
    namespace = {}
    for block in blocks:
        exec(compile(block, str(PAGE), "exec"), namespace)
    result = namespace["result"]
    assert result["num_env_steps_sampled_lifetime"] == 400
    assert result["env_runners"]["num_episodes"] == 2  # two 200-step Pendulum episodes
    assert 0.0 < result["learners"]["default_policy"]["alpha_value"] < 1.0  # tuned down from 1.0
    assert namespace["actions"].abs().max() <= 1.0
    assert namespace["fused_q"].shape == (5,)
    assert [layer.out_features for layer in namespace["fused"].qf_encoder.fusion] == [64, 64]
    cartpole = namespace["cartpole"]  # the Discrete actions section
    assert cartpole["num_env_steps_sampled_lifetime"] == 400
    assert 0.0 < cartpole["learners"]["default_policy"]["entropy"] <= math.log(2)
    assert cartpole["learners"]["default_policy"]["alpha_value"] < 1.0  # tuned from 1.0
    assert {"p0", "p1"} <= set(namespace["per_module"])  # the multi-agent section
    greedy = namespace["greedy"]
    assert sum(len(e) for e in greedy) == 10 and {int(a) for e in greedy for a in e.get_actions()} <= {0, 1}
