"""The learning core: RLModules (`core.rl_module`), default models (`core.models`), action
distributions (`core.distributions`) and learners (`core.learner`).

Nothing is imported here, so importing one part (e.g. a runner importing RLModules) does not
pull in the others.
"""

__all__: list[str] = []
