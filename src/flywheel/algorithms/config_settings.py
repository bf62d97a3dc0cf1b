"""`AlgorithmSettings`: every setting of an `AlgorithmConfig`, its default, and why it exists.

Each field is a plain attribute of the config (``config.num_envs_per_env_runner``) and belongs to the
section method that sets it (``config.env_runners(num_envs_per_env_runner=8)``), named in the field's
metadata. Algorithm configs add their own training settings the same way (see `PPOConfig`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, ClassVar

from flywheel.callbacks import RLlibCallback
from flywheel.typing import DEFAULT_MODULE_ID

Schedule = list[list[float]]
"""Piecewise-linear schedule over sampled env steps: ``[[0, 3e-4], [100_000, 1e-5]]`` (first step 0)."""


def setting(section: str | None, default: object = None, *, factory: Callable[[], Any] | None = None) -> Any:
    """A config field set by the section method `section` (None: set only by code, not by a section)."""
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata={"section": section})
    return dataclasses.field(default=default, metadata={"section": section})


@dataclasses.dataclass(init=False, repr=False, eq=True)
class AlgorithmSettings:
    """The settings shared by every algorithm, grouped by section method."""

    # environment()
    env: Any = setting("environment")
    """Gymnasium id, name given to `register_env`, Env/MultiAgentEnv subclass, or creator(env_config)."""
    env_config: dict = setting("environment", factory=dict)
    """Passed to the env creator/class (with worker_index, num_workers, vector_index attributes)."""
    observation_space: Any = setting("environment")
    """Overrides the env's observation space for the module (None: ask the env)."""
    action_space: Any = setting("environment")
    """Overrides the env's action space for the module (None: ask the env)."""
    clip_rewards: bool | float | None = setting("environment")
    """None/False: raw rewards; True: sign of the reward; a float c: clip to [-c, c] (tames reward scale)."""
    normalize_actions: bool = setting("environment", True)
    """Box actions: the module acts in [-1, 1] and actions are unsquashed to the env's bounds."""
    clip_actions: bool = setting("environment", False)
    """Box actions: clip to the env's bounds (used when normalize_actions is False)."""
    render_env: bool = setting("environment", False)
    """Record the episodes of each runner's first sub-env as videos (`episode_videos` in the runners'
    metrics: GIFs in TensorBoard, mp4 files in a run dir); meant for evaluation:
    `config.evaluation(evaluation_config={"render_env": True})`. Gymnasium ids render with
    `render_mode="rgb_array"`; a creator or env class must set that itself. Single-agent envs only."""
    env_wrappers: list = setting("environment", factory=list)
    """Gymnasium wrappers (classes, or callables ``wrapper(env) -> env``) put around every sub-env on every
    runner, first one innermost, e.g. ``[gymnasium.wrappers.ClipAction, lambda env: TimeLimit(env, 500)]``:
    a standard recipe needs no `register_env`. Single-agent envs; not with "vector_entry_point"."""
    disable_env_checking: bool = setting("environment", False)
    """Skip flywheel's env checks: the contract check at runner build and the observation check while
    sampling (every 16th step; for envs that are slow to step, or to save its ~1 us a step)."""

    # env_runners()
    num_env_runners: int = setting("env_runners", 0)
    """Remote (Ray) runners; 0 samples in the calling process and never starts Ray."""
    num_envs_per_env_runner: int = setting("env_runners", 1)
    """Sub-envs per runner, stepped as one vector env with one forward pass (the main speed knob)."""
    gym_env_vectorize_mode: str = setting("env_runners", "sync")
    """"sync" (one process), "async" (one process per sub-env) or "vector_entry_point" (the env's own)."""
    rollout_fragment_length: int | str = setting("env_runners", "auto")
    """Env steps per sub-env per sample() call; "auto" splits the train batch over all sub-envs."""
    batch_mode: str = setting("env_runners", "truncate_episodes")
    """"truncate_episodes" cuts ongoing episodes into chunks; "complete_episodes" samples whole ones."""
    explore: bool = setting("env_runners", True)
    """Sample actions from the exploration distribution (False: deterministic inference actions)."""
    env_to_module_connector: Callable | None = setting("env_runners")
    """``(env, spaces, device) -> piece | [pieces] | pipeline``: custom pieces run before the defaults."""
    module_to_env_connector: Callable | None = setting("env_runners")
    """``(env, spaces) -> piece | [pieces] | pipeline``: custom pieces run after the defaults."""
    add_default_connectors_to_env_to_module_pipeline: bool = setting("env_runners", True)
    """False: the env-to-module pipeline holds only your pieces (they must batch and tensorize)."""
    add_default_connectors_to_module_to_env_pipeline: bool = setting("env_runners", True)
    """False: the module-to-env pipeline holds only your pieces (they must produce actions)."""
    episode_lookback_horizon: int = setting("env_runners", 1)
    """Steps of history carried into each cut chunk; runners carry more when an env-to-module piece
    reads more (`FrameStacking(num_frames=4)` reads 3: see `ConnectorV2.required_episode_lookback`)."""
    sample_timeout_s: float | None = setting("env_runners", 60.0)
    """Seconds to wait for remote runners' samples before treating a runner as failed."""
    max_requests_in_flight_per_env_runner: int = setting("env_runners", 1)
    """`sample()` calls each remote runner has in flight while sampling asynchronously (IMPALA, APPO;
    RLlib's default 1): with 1 a runner idles from the end of a call until the driver took its result
    and sent the next; with more, the next calls wait in its queue and it samples on."""
    num_cpus_per_env_runner: float = setting("env_runners", 1)
    """CPUs Ray reserves for each remote runner."""
    normalize_rewards: bool = setting("env_runners", False)
    """Train on rewards divided by the running std of the discounted return (with `gamma`), clipped to
    [-10, 10], as SB3's VecNormalize and CleanRL do: an env-to-module `NormalizeRewards` piece after your
    own pieces. Reported returns stay the env's raw ones. Single-agent only."""
    env_runner_cls: type | None = setting("env_runners")
    """A SingleAgentEnvRunner / MultiAgentEnvRunner subclass to sample with (None: the one the env needs)."""
    num_gpus_per_env_runner: float = setting("env_runners", 0)
    """Must be 0: runners act on the CPU (RLlib's setting, accepted at its default)."""
    create_env_on_local_worker: bool = setting("env_runners", False)
    """Accepted for RLlib code; flywheel's local runner always builds its env (it holds the spaces and
    the inference module the algorithm's get_module() returns)."""
    episodes_to_numpy: bool = setting("env_runners", True)
    """RLlib's switch for numpy'izing the episodes `sample()` returns. flywheel's runners always return
    numpy'ized episodes (they are built from the vector env's arrays); False is accepted with a warning."""

    # learners()
    num_learners: int = setting("learners", 0)
    """Remote learners (data-parallel, gradients averaged); 0 updates in the calling process."""
    num_cpus_per_learner: float = setting("learners", 1)
    """CPUs Ray reserves for each remote learner; every learner (the local one too) updates on that
    many torch threads (at least one)."""
    num_gpus_per_learner: float = setting("learners", 0)
    """GPUs per learner; above 0 the learner trains on cuda."""
    learner_class: type | None = setting("learners")
    """Learner subclass to use (None: the algorithm's default learner, e.g. PPOTorchLearner)."""
    learner_connector: Callable | None = setting("learners")
    """``(input_observation_space, input_action_space) -> piece | [pieces] | pipeline``: runs before the defaults."""
    add_default_connectors_to_learner_pipeline: bool = setting("learners", True)
    """False: the learner pipeline holds only your pieces (they must build the train batch)."""
    learner_config_dict: dict = setting("learners", factory=dict)
    """Free-form settings for custom learners (`self.config.learner_config_dict["my_coeff"]`)."""
    num_aggregator_actors_per_learner: int = setting("learners", 0)
    """RLlib's actors that turn episodes into train batches for a learner. flywheel's learners run
    their learner pipeline themselves: above 0 is accepted with a warning and starts no actors."""

    # training()
    gamma: float = setting("training", 0.99)
    """Discount factor: how much future rewards count."""
    lr: float | Schedule = setting("training", 1e-3)
    """Learning rate, or a piecewise-linear schedule over sampled env steps."""
    adam_epsilon: float = setting("training", 1e-8)
    """Adam's epsilon (torch's default 1e-8; CleanRL and SB3 use 1e-5 for PPO): added to the root of the
    second moment, it bounds the step size of parameters whose gradients are tiny."""
    grad_clip: float | None = setting("training")
    """Gradient clipping threshold (None: no clipping)."""
    grad_clip_by: str = setting("training", "global_norm")
    """"value" clips each entry, "norm" each tensor's norm, "global_norm" all gradients' joint norm."""
    train_batch_size: int = setting("training", 4000)
    """Env steps trained on per iteration over all learners (split evenly among them), RLlib's
    meaning; used when train_batch_size_per_learner is None."""
    train_batch_size_per_learner: int | None = setting("training")
    """Env steps each learner trains on per iteration (None: train_batch_size / num_learners);
    sampling stops once all learners have theirs."""
    minibatch_size: int | None = setting("training", 128)
    """Rows per gradient step; must not exceed the batch each learner trains on (None: one step on each
    learner's whole train batch, RLlib's meaning)."""
    num_epochs: int = setting("training", 1)
    """Passes over each train batch."""
    shuffle_batch_per_epoch: bool = setting("training", True)
    """Shuffle rows (whole sequences for recurrent modules) before each epoch's minibatches. As in
    RLlib, only with `num_epochs > 1`: a single pass takes its minibatches in the sampled order."""

    # multi_agent()
    policies: set | dict = setting("multi_agent", factory=lambda: {DEFAULT_MODULE_ID})
    """Module ids (set/list), or dict module id -> RLModuleSpec or None."""
    policy_mapping_fn: Callable | None = setting("multi_agent")
    """``(agent_id, episode, **kw) -> module_id``: which module acts for which agent."""
    policies_to_train: Any = setting("multi_agent")
    """Module ids the learners update (None: all of them)."""
    count_steps_by: str = setting("multi_agent", "env_steps")
    """"env_steps" or "agent_steps": what train batch sizes and rollout lengths count."""

    # rl_module()
    rl_module_spec: Any = setting("rl_module")
    """RLModuleSpec (or MultiRLModuleSpec); its fields that are not None override the algorithm's default."""
    model_config: dict = setting("rl_module", factory=dict)
    """Default-model options (fcnet_hiddens, use_lstm, ...); the module's own defaults fill the rest."""

    # offline_data()
    input_: Any = setting("offline_data")
    """Offline data to train on: a Parquet file or folder (or a list of them) recorded with `output`
    (None: the algorithm samples its env)."""
    input_read_episodes: bool = setting("offline_data", False)
    """The input holds whole episodes (one row per episode chunk, `output_write_episodes=True`) rather
    than one row per step. flywheel reads the layout from each file's metadata and checks it agrees."""
    input_read_method_kwargs: dict = setting("offline_data", factory=dict)
    """Options of the reader: with a local learner `batch_size` (rows per Arrow record batch read at a
    time; memory bound) and `shuffle` (file order per pass, default True); with `num_learners >= 1`
    keywords of `ray.data.read_parquet`."""
    input_ignore_corrupt_files: bool = setting("offline_data", False)
    """Skip input files pyarrow cannot read (truncated, corrupt, deleted while read) with a warning
    naming each; False (the default) raises `OfflineDataError` naming the file. Rows a damaged file
    gave before the damage was found stay read (docs/concepts/offline.md, "Faults")."""
    iter_batches_kwargs: dict = setting("offline_data", factory=dict)
    """How rows are handed to the learners, with both readers: `local_shuffle_buffer_size` (rows that
    stream through a shuffle buffer, handed out in random order; None: stored order) and
    `local_shuffle_seed` (None: the config's seed), Ray Data's names; with `num_learners >= 1` every
    key goes to Ray Data's `iter_batches`. Updates the algorithm's defaults key by key (CQL:
    `{"local_shuffle_buffer_size": 10_000}`; others: none)."""
    default_iter_batches_kwargs: ClassVar[dict[str, Any]] = {}
    """The algorithm's own `iter_batches_kwargs` defaults (a class attribute, not a setting)."""
    dataset_num_iters_per_learner: int | None = setting("offline_data")
    """Updates per training iteration, each on `train_batch_size_per_learner` rows per learner (None: 1)."""
    actions_in_input_normalized: bool = setting("offline_data", False)
    """The input's Box actions are already in [-1, 1] (the module's space with `normalize_actions`);
    False: they are in the env's bounds and are normalized on read. flywheel's own recordings say in
    their metadata which space they hold, and that wins."""
    output: str | None = setting("offline_data")
    """Folder every env runner (local and remote, evaluation runners too, as in RLlib) writes what it
    samples to, as Parquet files (None: no recording; a `local://` prefix is dropped)."""
    output_write_episodes: bool = setting("offline_data", True)
    """True: one row per episode chunk (list columns); False: one row per agent step."""
    output_max_rows_per_file: int | None = setting("offline_data")
    """Rows per Parquet file (the last file of a runner may hold fewer); None: one file per sample() call."""
    output_compress_columns: list = setting("offline_data", factory=lambda: ["obs", "new_obs"])
    """Columns written with zstd compression (smaller files, slower reads); the others use snappy."""
    output_write_remaining_data: bool = setting("offline_data", True)
    """With `output_max_rows_per_file`: write the rows still buffered (fewer than a file) when the runner
    stops. False drops them, as RLlib's default does; flywheel's default True keeps every sampled row."""
    map_batches_kwargs: dict = setting("offline_data", factory=dict)
    """RLlib's keywords for Ray Data's `map_batches` stage. flywheel's learners turn rows into episodes
    themselves (no `map_batches` stage), so a non-empty dict is accepted with a warning."""
    prelearner_class: type | None = setting("offline_data")
    """RLlib's `OfflinePreLearner` subclass: must be None (flywheel has no pre-learner; transform the
    data in a learner connector piece instead)."""

    # evaluation()
    evaluation_interval: int | None = setting("evaluation")
    """Evaluate every n training iterations (None: only when algo.evaluate() is called)."""
    evaluation_duration: int | str = setting("evaluation", 10)
    """How much to evaluate per round, in evaluation_duration_unit; "auto" (with
    evaluation_parallel_to_training): env steps for as long as the iteration's training takes."""
    evaluation_auto_duration_min_env_steps_per_sample: int = setting("evaluation", 100)
    """With evaluation_duration="auto": the fewest env steps each evaluation runner samples per call."""
    evaluation_auto_duration_max_env_steps_per_sample: int = setting("evaluation", 2000)
    """With evaluation_duration="auto": the most env steps each evaluation runner samples per call."""
    evaluation_duration_unit: str = setting("evaluation", "episodes")
    """"episodes" or "timesteps"."""
    evaluation_num_env_runners: int = setting("evaluation", 0)
    """Remote evaluation runners (0: evaluate on a local runner)."""
    evaluation_config: dict | None = setting("evaluation")
    """Setting overrides for evaluation, e.g. AlgorithmConfig.overrides(explore=False)."""
    custom_evaluation_function: Callable | None = setting("evaluation")
    """`fn(algorithm, eval_env_runner_group) -> (results, env_steps, agent_steps)` runs each round
    instead of the sampling; what it logs into `algorithm.metrics` under "evaluation" is the round's
    result (its `results` dict when it logs nothing there)."""
    evaluation_force_reset_envs_before_iteration: bool = setting("evaluation", True)
    """Reset the evaluation envs when a round starts, so no episode of the round began with older
    weights (with the "timesteps" unit; "episodes" always start new ones). False: continue them."""
    evaluation_parallel_to_training: bool = setting("evaluation", False)
    """Evaluate while the iteration trains (on remote evaluation runners), on the weights from
    before the iteration: the results' evaluation lags one iteration behind."""

    # fault_tolerance()
    restart_failed_env_runners: bool = setting("fault_tolerance", True)
    """Replace remote runners that crashed instead of failing the iteration."""
    ignore_env_runner_failures: bool = setting("fault_tolerance", False)
    """Keep training on the healthy runners' samples when some fail (without restarting them)."""
    max_num_env_runner_restarts: int = setting("fault_tolerance", 1000)
    """Give up (raise) after this many runner restarts."""
    delay_between_env_runner_restarts_s: float = setting("fault_tolerance", 60.0)
    """Seconds to wait before restarting a failed runner (lets flaky resources recover)."""
    restart_failed_sub_environments: bool = setting("fault_tolerance", False)
    """Recreate a sub-env that raised instead of failing the whole runner."""

    # callbacks()
    callbacks_class: Callable[[], RLlibCallback] | None = setting("callbacks")
    """RLlibCallback subclass, or a callable making one (`functools.partial(MyCallback, arg=1)`, as RLlib
    takes); None: only the function hooks below run."""
    on_algorithm_init: Callable | list | None = setting("callbacks")
    """Function hook(s), called after the class's method with the same keywords."""
    on_train_result: Callable | list | None = setting("callbacks")
    """Function hook(s) for each training result."""
    on_episode_created: Callable | list | None = setting("callbacks")
    """Function hook(s) for each new episode object."""
    on_episode_start: Callable | list | None = setting("callbacks")
    """Function hook(s) after each episode's reset."""
    on_episode_step: Callable | list | None = setting("callbacks")
    """Function hook(s) after every env step (hot path)."""
    on_episode_end: Callable | list | None = setting("callbacks")
    """Function hook(s) for each finished episode."""
    on_sample_end: Callable | list | None = setting("callbacks")
    """Function hook(s) at the end of each runner.sample()."""
    on_environment_created: Callable | list | None = setting("callbacks")
    """Function hook(s) after a runner created its env."""
    on_evaluate_start: Callable | list | None = setting("callbacks")
    """Function hook(s) before each evaluation round."""
    on_evaluate_end: Callable | list | None = setting("callbacks")
    """Function hook(s) after each evaluation round."""
    on_checkpoint_loaded: Callable | list | None = setting("callbacks")
    """Function hook(s) after an algorithm restored a checkpoint."""

    # reporting()
    metrics_num_episodes_for_smoothing: int = setting("reporting", 100)
    """Episode metrics (return, length) are means over this many most recent episodes."""
    min_time_s_per_iteration: float = setting("reporting", 0)
    """train() repeats training steps until at least this many seconds passed."""
    min_sample_timesteps_per_iteration: int = setting("reporting", 0)
    """train() repeats training steps until at least this many env steps were sampled."""
    log_gradients: bool = setting("reporting", False)
    """Log each optimizer's pre-clip gradient norm as learners/<module>/gradients_<optimizer>_global_norm
    (it is logged anyway when gradients are clipped by global norm, as RLlib does)."""

    # resources()
    num_cpus_for_main_process: float = setting("resources", 1)
    """CPUs (> 0) of the process that runs `algo.train()` when Ray Tune runs the algorithm as a trial (it
    also samples and learns when there are no remote runners and learners)."""
    placement_strategy: str = setting("resources", "PACK")
    """How Ray Tune places a trial's bundles (main process, runners, learners) on the cluster's nodes:
    "PACK" (few nodes), "SPREAD", "STRICT_PACK" (one node) or "STRICT_SPREAD"."""

    # debugging()
    seed: int | None = setting("debugging")
    """Seeds torch, numpy and the envs (per runner and sub-env) for reproducible runs."""
    log_level: str = setting("debugging", "WARN")
    """Level of flywheel's loggers: DEBUG, INFO, WARN, ERROR."""
    log_sys_usage: bool = setting("debugging", True)
    """Accepted for RLlib code; flywheel logs no CPU/memory usage."""

    # experimental()
    _torch_lr_scheduler_classes: list | dict | None = setting("experimental")
    """torch lr schedulers (classes or `functools.partial`s taking the optimizer), or `{module_id: [...]}`:
    built over each optimizer of the module(s) and stepped, in order, once after every learner update
    (RLlib's TorchLearner's rule); they then own the learning rate (`lr` sets its start)."""

    # Set by code, not by a section method.
    in_evaluation: bool = setting(None, False)
    """True on the copy `get_evaluation_config_object()` makes for evaluation runners."""
