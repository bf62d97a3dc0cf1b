"""The code blocks of docs/concepts/learners.md run as written."""

import gymnasium as gym
import numpy as np


def test_docs_code_blocks_run(run_doc_blocks):
    namespace = run_doc_blocks("docs/concepts/learners.md", blocks=3)
    # The custom learner from the page trains with its own loss and optimizer.
    from flywheel import PPOConfig

    config = (
        PPOConfig().learners(learner_class=namespace["BehaviorCloningLearner"]).training(minibatch_size=4)
    )
    group_cls = namespace["LearnerGroup"]
    group = group_cls(
        config=config, spaces=(gym.spaces.Box(-1.0, 1.0, (3,), np.float32), gym.spaces.Discrete(2))
    )
    learner = group.foreach_learner(lambda learner: learner)[0]
    assert type(learner.get_optimizer("default_policy")).__name__ == "SGD"
    (results,) = group.update(episodes=[namespace["episode"]])
    assert set(results["default_policy"]) >= {"bc_logp", "total_loss"}
