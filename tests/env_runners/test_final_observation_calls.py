"""The env-to-module call on finished episodes (so pieces see final observations) is skipped only
when every piece the pipeline calls only builds the batch (`ConnectorV2.only_builds_batch`)."""

import pytest

from flywheel import ConnectorV2, MultiAgentEnvRunner, PPOConfig
from flywheel.connectors.env_to_module import (
    AddObservationsFromEpisodesToBatch,
    BatchIndividualItems,
    NumpyToTensor,
)
from flywheel.connectors.pipeline import ConnectorPipelineV2
from flywheel.env import make_multi_agent


class CountFinished(ConnectorV2):
    """Counts the calls it gets and the finished episodes among them."""

    def __init__(self, *args, batch_only=False, **kwargs):
        super().__init__(*args, **kwargs)
        self.only_builds_batch = batch_only
        self.calls = self.finished = 0

    def __call__(self, *, rl_module, batch, episodes, **kwargs):
        self.calls += 1
        self.finished += sum(e.is_done for e in episodes)
        return batch


def counting_config(config, batch_only):
    """`config` with a `CountFinished` piece in front of the default env-to-module pieces, and the
    list the runner's piece lands in."""
    pieces = []

    def connector(env, spaces=None, device=None):
        pieces.append(CountFinished(batch_only=batch_only))
        return pieces[-1]

    return config.env_runners(env_to_module_connector=connector).debugging(seed=0), pieces


def test_a_pipeline_of_default_pieces_only_builds_batches_and_a_custom_piece_ends_that():
    module = None  # (none of these pieces depends on the module)
    pipeline = ConnectorPipelineV2(
        connectors=[AddObservationsFromEpisodesToBatch(), BatchIndividualItems(), NumpyToTensor()]
    )
    assert pipeline.builds_only_batches(module) is True
    pipeline.connectors.insert(1, CountFinished())
    assert pipeline.builds_only_batches(module) is False
    pipeline.connectors[1] = CountFinished(batch_only=True)
    assert pipeline.builds_only_batches(module) is True
    assert pipeline.only_builds_batch is False  # a pipeline as a piece of another one: called


@pytest.mark.parametrize(("batch_only", "calls_on_finished"), [(False, True), (True, False)])
def test_the_runner_calls_the_pipeline_on_finished_episodes_unless_it_only_builds_batches(
    make_runner, batch_only, calls_on_finished
):
    config, pieces = counting_config(
        PPOConfig().environment("CartPole-v1").env_runners(num_envs_per_env_runner=2), batch_only
    )
    runner = make_runner(config)
    episodes = runner.sample(num_timesteps=400)
    finished = sum(e.is_done for e in episodes)
    [piece] = pieces
    assert finished > 0
    # One call per vector step (200) and one after the reset; plus one per step in which episodes ended.
    steps_with_ends = piece.calls - 201
    assert (steps_with_ends > 0) is calls_on_finished
    assert piece.finished == (finished if calls_on_finished else 0)


@pytest.mark.parametrize("batch_only", [False, True])
def test_the_multi_agent_runner_skips_the_call_likewise(batch_only):
    config, pieces = counting_config(
        PPOConfig()
        .environment(make_multi_agent("CartPole-v1"), env_config={"num_agents": 2})
        .multi_agent(policies={"p0"}, policy_mapping_fn=lambda agent_id, episode, **kw: "p0"),
        batch_only,
    )
    runner = MultiAgentEnvRunner(config=config)
    episodes = runner.sample(num_episodes=3)
    runner.stop()
    assert len(episodes) == 3
    assert (pieces[0].finished > 0) is not batch_only
