import numpy as np
import torch

from flywheel.core.models import LSTMEncoder, MLPEncoder


def make():
    torch.manual_seed(0)
    return LSTMEncoder(MLPEncoder(3, [8], "tanh"), cell_size=5)


def test_initial_state_is_numpy_zeros_without_batch_dim():
    state = make().get_initial_state()
    assert sorted(state) == ["c", "h"]
    assert state["h"].shape == (5,) and state["h"].dtype == np.float32 and not state["c"].any()


def test_step_and_sequence_shapes():
    enc = make()
    zeros = {"h": torch.zeros(4, 5), "c": torch.zeros(4, 5)}
    out, state = enc(torch.zeros(4, 1, 3), zeros)  # acting: one timestep (RLlib's [B, 1, ...])
    assert out.shape == (4, 1, 5) and state["h"].shape == (4, 5) and state["c"].shape == (4, 5)
    out, state = enc(torch.zeros(4, 7, 3), zeros)
    assert out.shape == (4, 7, 5) and state["h"].shape == (4, 5)


def test_stepping_equals_one_sequence_pass():
    enc = make()
    obs = torch.randn(2, 6, 3)
    state = {"h": torch.randn(2, 5), "c": torch.randn(2, 5)}
    seq_out, seq_state = enc(obs, state)
    step_state = state
    for t in range(6):
        step_out, step_state = enc(obs[:, t : t + 1], step_state)
        assert torch.allclose(step_out[:, 0], seq_out[:, t], atol=1e-6)
    assert torch.allclose(step_state["h"], seq_state["h"], atol=1e-6)
    assert torch.allclose(step_state["c"], seq_state["c"], atol=1e-6)
    # The last output of an LSTM is its final hidden state.
    assert torch.allclose(seq_out[:, -1], seq_state["h"], atol=1e-6)
