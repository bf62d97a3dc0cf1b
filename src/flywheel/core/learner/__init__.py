"""Learners: gradient updates of RLModules from sampled episodes."""

from flywheel.core.learner.learner import Learner
from flywheel.core.learner.learner_group import LearnerGroup
from flywheel.core.learner.schedules import Scheduler
from flywheel.core.learner.torch_learner import TorchLearner

__all__ = ["Learner", "LearnerGroup", "Scheduler", "TorchLearner"]
