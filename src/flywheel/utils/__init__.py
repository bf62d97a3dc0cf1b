"""Small helpers RLlib users import from `ray.rllib.utils`, under flywheel names.

- `flywheel.utils.numpy`: `convert_to_numpy`, `one_hot`, `softmax` and RLlib's numeric constants.
- `flywheel.utils.torch_utils`: `FLOAT_MIN` / `FLOAT_MAX`, `one_hot` for Discrete and MultiDiscrete
  spaces, `convert_to_torch_tensor`, `explained_variance`, `huber_loss`, `l2_loss`, `global_norm`,
  `sequence_mask` (importing it imports torch).
- `flywheel.utils.spaces`: `flatten_space` (the leaf spaces of a nested space).
- `flywheel.utils.images`: `resize` and `rgb2gray` (OpenCV's area resize and luma; needs opencv).

Target networks live with the learners: `flywheel.core.learner.utils.make_target_network`.
"""
