"""ConnectorPipelineV2: call order, structural operations, space chaining, errors and states."""

import gymnasium as gym
import numpy as np
import pytest

from flywheel.connectors import ConnectorPipelineV2, ConnectorV2
from flywheel.errors import ConnectorError


class Tag(ConnectorV2):
    """Appends its name to batch["order"]; with `grow`, its output obs space is `grow` entries longer."""

    def __init__(self, input_observation_space=None, input_action_space=None, *, grow=0, **kwargs):
        self.grow = grow
        super().__init__(input_observation_space, input_action_space, **kwargs)

    def recompute_output_observation_space(self, input_observation_space, input_action_space):
        n = input_observation_space.shape[0] + self.grow
        return gym.spaces.Box(-1.0, 1.0, (n,), np.float32)

    def __call__(self, *, rl_module, batch, episodes, explore=None, shared_data=None, metrics=None, **kwargs):
        batch.setdefault("order", []).append(self.name)
        return batch


class A(Tag):
    pass


class B(Tag):
    pass


class C(Tag):
    pass


class D(Tag):
    pass


class Counter(Tag):
    """A stateful piece: counts calls; merging adds the counts."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.count = 0

    def __call__(self, **kwargs):
        self.count += 1
        return super().__call__(**kwargs)

    def get_state(self):
        return {"count": self.count}

    def set_state(self, state):
        self.count = state["count"]

    def merge_states(self, states):
        return {"count": sum(state["count"] for state in states)}

    def reset_state(self):
        self.count = 0


class ReturnsNone(ConnectorV2):
    def __call__(self, *, rl_module, batch, episodes, explore=None, shared_data=None, metrics=None, **kwargs):
        batch["touched"] = True


BOX2 = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)


def names(pipeline):
    return [piece.name for piece in pipeline.connectors]


def run(pipeline, **kwargs):
    return pipeline(rl_module=None, batch={}, episodes=[], **kwargs)


def test_calls_pieces_in_order_and_returns_the_batch():
    pipeline = ConnectorPipelineV2(connectors=[A(), B(), C()])
    assert run(pipeline) == {"order": ["A", "B", "C"]}


def test_forwards_every_keyword_to_every_piece():
    seen = []

    class Spy(ConnectorV2):
        def __call__(
            self, *, rl_module, batch, episodes, explore=None, shared_data=None, metrics=None, **kwargs
        ):
            seen.append((rl_module, episodes, explore, shared_data, metrics, kwargs))
            return batch

    shared = {}
    ConnectorPipelineV2(connectors=[Spy(), Spy()])(
        rl_module="m", batch={}, episodes=["e"], explore=True, shared_data=shared, metrics="log", extra=1
    )
    assert seen == [("m", ["e"], True, shared, "log", {"extra": 1})] * 2
    seen.clear()
    ConnectorPipelineV2(connectors=[Spy()])(rl_module="m", batch={}, episodes=["e"])
    assert seen == [("m", ["e"], None, None, None, {})]


class NoopFor(Tag):
    """A piece that says it does nothing for the module "skip-me"."""

    def is_noop_for(self, rl_module):
        return rl_module == "skip-me"


def test_skips_pieces_that_are_no_ops_for_the_module_and_rechecks_when_module_or_pieces_change():
    pipeline = ConnectorPipelineV2(connectors=[A(), NoopFor(), B()])
    assert pipeline(rl_module="skip-me", batch={}, episodes=[]) == {"order": ["A", "B"]}
    assert pipeline(rl_module="other", batch={}, episodes=[]) == {"order": ["A", "NoopFor", "B"]}
    pipeline.connectors.append(C())  # the public list, changed in place
    assert pipeline(rl_module="other", batch={}, episodes=[]) == {"order": ["A", "NoopFor", "B", "C"]}
    pipeline.connectors[0] = D()
    assert pipeline(rl_module="skip-me", batch={}, episodes=[]) == {"order": ["D", "B", "C"]}


def test_piece_returning_none_raises_naming_the_piece():
    pipeline = ConnectorPipelineV2(connectors=[A(), ReturnsNone(), B()])
    with pytest.raises(
        ConnectorError,
        match=r"Connector piece ReturnsNone returned None, expected the batch \(a dict\)\. "
        r"End its __call__ with `return batch`\.",
    ):
        run(pipeline)


def test_structural_operations_keep_the_order():
    pipeline = ConnectorPipelineV2(connectors=[B()])
    pipeline.append(C())
    assert names(pipeline) == ["B", "C"]
    pipeline.prepend(A())
    assert names(pipeline) == ["A", "B", "C"]
    inserted = D()
    assert pipeline.insert_before("C", inserted) is inserted
    assert names(pipeline) == ["A", "B", "D", "C"]
    pipeline.insert_after(A, Counter())
    assert names(pipeline) == ["A", "Counter", "B", "D", "C"]
    pipeline.remove("D")
    assert names(pipeline) == ["A", "Counter", "B", "C"]
    pipeline.remove(Counter)
    assert names(pipeline) == ["A", "B", "C"]
    pipeline.insert_after("C", D())
    assert names(pipeline) == ["A", "B", "C", "D"]
    assert run(pipeline) == {"order": ["A", "B", "C", "D"]}


def test_class_targets_match_subclasses_and_take_the_first():
    pipeline = ConnectorPipelineV2(connectors=[A(), B()])
    pipeline.remove(Tag)
    assert names(pipeline) == ["B"]


@pytest.mark.parametrize(
    "operation",
    [
        lambda p: p.insert_before("Missing", D()),
        lambda p: p.insert_after(D, D()),
        lambda p: p.remove("Missing"),
        lambda p: p["Missing"],
    ],
)
def test_missing_target_raises_a_value_error_listing_the_pieces(operation):
    pipeline = ConnectorPipelineV2(connectors=[A(), B()])
    with pytest.raises(
        ValueError, match=r"The pipeline has no connector piece '(Missing|D)'; its pieces are \[A, B\]"
    ):
        operation(pipeline)
    assert names(pipeline) == ["A", "B"]


def test_len_and_getitem_by_index_name_and_class():
    a, b = A(), B()
    pipeline = ConnectorPipelineV2(connectors=[a, b])
    assert len(pipeline) == 2
    assert pipeline[0] is a and pipeline[-1] is b
    assert pipeline["B"] is b and pipeline[A] is a


def test_spaces_chain_through_the_pieces():
    a, b, c = A(grow=1), B(grow=10), C(grow=100)
    pipeline = ConnectorPipelineV2(BOX2, gym.spaces.Discrete(3), connectors=[a, b, c])
    assert a.input_observation_space is BOX2
    assert b.input_observation_space.shape == (3,)
    assert c.input_observation_space.shape == (13,)
    assert pipeline.observation_space.shape == (113,)
    assert pipeline.action_space == gym.spaces.Discrete(3)
    assert c.input_action_space == gym.spaces.Discrete(3)


def test_spaces_are_recomputed_after_every_structural_change():
    a, b = A(grow=1), B(grow=10)
    pipeline = ConnectorPipelineV2(BOX2, gym.spaces.Discrete(3), connectors=[b])
    assert pipeline.observation_space.shape == (12,)
    pipeline.prepend(a)
    assert b.input_observation_space.shape == (3,)
    assert pipeline.observation_space.shape == (13,)
    pipeline.append(C(grow=100))
    assert pipeline.observation_space.shape == (113,)
    pipeline.insert_after("A", D(grow=1000))
    assert b.input_observation_space.shape == (1003,)
    assert pipeline.observation_space.shape == (1113,)
    pipeline.remove("A")
    assert pipeline["D"].input_observation_space is BOX2
    assert pipeline.observation_space.shape == (1112,)
    pipeline.insert_before("D", A(grow=1))
    assert pipeline.observation_space.shape == (1113,)


def test_setting_the_pipeline_input_space_rechains():
    pipeline = ConnectorPipelineV2(connectors=[A(grow=1), B(grow=2)])
    assert pipeline.observation_space is None
    pipeline.input_observation_space = BOX2
    assert pipeline["B"].input_observation_space.shape == (3,)
    assert pipeline.observation_space.shape == (5,)


def test_empty_pipeline_passes_spaces_and_batch_through():
    pipeline = ConnectorPipelineV2(BOX2, gym.spaces.Discrete(3))
    assert pipeline.observation_space is BOX2
    assert pipeline(rl_module=None, batch={"x": 1}, episodes=[]) == {"x": 1}


def test_nested_pipeline_is_a_piece():
    inner = ConnectorPipelineV2(connectors=[B(grow=10), C(grow=100)])
    outer = ConnectorPipelineV2(BOX2, connectors=[A(grow=1), inner, D()])
    assert run(outer) == {"order": ["A", "B", "C", "D"]}
    assert inner.observation_space.shape == (113,)
    assert outer.observation_space.shape == (113,)


def test_state_holds_stateful_pieces_under_index_and_name():
    pipeline = ConnectorPipelineV2(connectors=[A(), Counter(), B(), Counter()])
    run(pipeline)
    run(pipeline)
    assert pipeline.get_state() == {"1_Counter": {"count": 2}, "3_Counter": {"count": 2}}
    pipeline.set_state({"1_Counter": {"count": 7}})
    assert pipeline[1].count == 7 and pipeline[3].count == 2
    pipeline.reset_state()
    assert pipeline.get_state() == {"1_Counter": {"count": 0}, "3_Counter": {"count": 0}}


def test_set_state_rejects_keys_of_other_pipelines():
    pipeline = ConnectorPipelineV2(connectors=[A(), Counter()])
    with pytest.raises(
        ConnectorError,
        match=r"Connector state has keys \['0_Counter'\] that match no piece; expected keys among "
        r"\['0_A', '1_Counter'\]",
    ):
        pipeline.set_state({"0_Counter": {"count": 1}})


def test_merge_states_piece_by_piece():
    pipeline = ConnectorPipelineV2(connectors=[Counter(), A(), Counter()])
    states = [
        {"0_Counter": {"count": 1}, "2_Counter": {"count": 10}},
        {"0_Counter": {"count": 2}, "2_Counter": {"count": 20}},
        {"0_Counter": {"count": 3}},
    ]
    assert pipeline.merge_states(states) == {"0_Counter": {"count": 6}, "2_Counter": {"count": 30}}


def test_repr_lists_the_pieces():
    assert repr(ConnectorPipelineV2(connectors=[A(), B()])) == "ConnectorPipelineV2([A, B])"


def test_batching_piece_is_skipped_only_where_it_has_nothing_to_stack():
    """`BatchIndividualItems` is a no-op after pieces that add whole columns, in calls that begin
    with an empty batch (`is_noop_after`); after any other piece, or on a batch given with items, it
    stacks as ever."""
    from flywheel.connectors.env_to_module import AddObservationsFromEpisodesToBatch, BatchIndividualItems

    calls = []

    class CountingBatch(BatchIndividualItems):
        def __call__(self, **kwargs):
            calls.append(sorted(kwargs["batch"]))
            return super().__call__(**kwargs)

    class WholeColumn(ConnectorV2):
        adds_whole_columns = True

        def __call__(self, *, rl_module, batch, episodes, **kwargs):
            batch["whole"] = np.zeros((2, 3))
            return batch

    class RowItems(ConnectorV2):
        def __call__(self, *, rl_module, batch, episodes, **kwargs):
            batch["rows"] = [np.ones(3), np.zeros(3)]
            return batch

    assert AddObservationsFromEpisodesToBatch.adds_whole_columns
    out = ConnectorPipelineV2(connectors=[WholeColumn(), CountingBatch()])(
        rl_module=None, batch={}, episodes=[]
    )
    assert calls == [] and out["whole"].shape == (2, 3)
    out = ConnectorPipelineV2(connectors=[WholeColumn(), RowItems(), CountingBatch()])(
        rl_module=None, batch={}, episodes=[]
    )
    assert calls == [["rows", "whole"]] and out["rows"].shape == (2, 3)
    out = ConnectorPipelineV2(connectors=[WholeColumn(), CountingBatch()])(
        rl_module=None, batch={"given": [1.0, 2.0]}, episodes=[]
    )
    assert calls[-1] == ["given", "whole"] and out["given"].tolist() == [1.0, 2.0]
