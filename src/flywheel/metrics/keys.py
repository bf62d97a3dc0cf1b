"""The keys of `algo.train()`'s result dict, with RLlib's constant names (`ray.rllib.utils.metrics`).

Read results through them, as RLlib users do::

    from flywheel.metrics.keys import ENV_RUNNER_RESULTS, EPISODE_RETURN_MEAN

    result = algo.train()
    print(result[ENV_RUNNER_RESULTS][EPISODE_RETURN_MEAN])

Only keys flywheel's results really hold are here; the comment above each group says where in
the result it sits. `flywheel.metrics` re-exports every name.
"""

from flywheel.typing import ALL_MODULES  # noqa: F401 (re-exported, as RLlib's metrics module does)

# Top-level groups of the result dict.
ENV_RUNNER_RESULTS = "env_runners"
EVALUATION_RESULTS = "evaluation"  # holds its own ENV_RUNNER_RESULTS group
LEARNER_RESULTS = "learners"  # one group per module id, plus ALL_MODULES
TIMERS = "timers"
FAULT_TOLERANCE_STATS = "fault_tolerance"
REPLAY_BUFFER_RESULTS = "replay_buffer"  # DQN / SAC

# result[ENV_RUNNER_RESULTS][...]: episodes finished (windowed over metrics_num_episodes_for_smoothing).
EPISODE_RETURN_MEAN = "episode_return_mean"
EPISODE_RETURN_MIN = "episode_return_min"
EPISODE_RETURN_MAX = "episode_return_max"
EPISODE_LEN_MEAN = "episode_len_mean"
EPISODE_LEN_MIN = "episode_len_min"
EPISODE_LEN_MAX = "episode_len_max"
EPISODE_AGENT_RETURN_MEAN = "agent_episode_returns_mean"  # multi-agent: {agent_id: mean}
EPISODE_MODULE_RETURN_MEAN = "module_episode_returns_mean"  # multi-agent: {module_id: mean}
NUM_EPISODES = "num_episodes"
NUM_EPISODES_LIFETIME = "num_episodes_lifetime"

# result[ENV_RUNNER_RESULTS][...]: steps sampled (this iteration / ever).
NUM_ENV_STEPS_SAMPLED = "num_env_steps_sampled"
NUM_ENV_STEPS_SAMPLED_LIFETIME = "num_env_steps_sampled_lifetime"  # also at the result's top level
NUM_AGENT_STEPS_SAMPLED = "num_agent_steps_sampled"  # multi-agent
NUM_AGENT_STEPS_SAMPLED_LIFETIME = "num_agent_steps_sampled_lifetime"
NUM_MODULE_STEPS_SAMPLED = "num_module_steps_sampled"  # multi-agent: {module_id: steps}
NUM_MODULE_STEPS_SAMPLED_LIFETIME = "num_module_steps_sampled_lifetime"
WEIGHTS_SEQ_NO = "weights_seq_no"  # also in result[LEARNER_RESULTS][ALL_MODULES]

# result[LEARNER_RESULTS][ALL_MODULES][...] and result[LEARNER_RESULTS][module_id][...].
NUM_ENV_STEPS_TRAINED = "num_env_steps_trained"
NUM_ENV_STEPS_TRAINED_LIFETIME = "num_env_steps_trained_lifetime"  # learners/__all_modules__ (and top level)
NUM_MODULE_STEPS_TRAINED = "num_module_steps_trained"  # per module
NUM_TARGET_UPDATES = "num_target_updates"  # DQN / SAC; APPO per module
TD_ERROR_KEY = (
    "td_error"  # DQN / SAC: per-row TD errors (lists) in the learners' update results, not in train()
)
LAST_TARGET_UPDATE_TS = "last_target_update_ts"  # DQN / SAC learner state; APPO per module

# result[LEARNER_RESULTS][ALL_MODULES][...]: IMPALA / APPO, logged by the algorithm.
WEIGHTS_LAG_MEAN = "weights_lag_mean"  # learner's weights_seq_no minus the runner's at each trained step
WEIGHTS_LAG_MAX = "weights_lag_max"
LEARNER_QUEUE_SIZE = "learner_queue_size"  # train batches waiting in the queue after an update (mean)
NUM_ENV_STEPS_DROPPED = "num_env_steps_dropped"  # evicted from a full queue, never trained on
NUM_ENV_STEPS_DROPPED_LIFETIME = "num_env_steps_dropped_lifetime"

# result[REPLAY_BUFFER_RESULTS][...].
NUM_ENV_STEPS_STORED = "num_env_steps_stored"

# result[TIMERS][...] (seconds).
ENV_RUNNER_SAMPLING_TIMER = "env_runner_sampling_timer"
TRAINING_ITERATION_TIMER = "training_iteration"  # the iteration's training_step() calls, evaluation aside
LEARNER_UPDATE_TIMER = "learner_update_timer"
SYNCH_WORKER_WEIGHTS_TIMER = "synch_weights"
REPLAY_BUFFER_ADD_DATA_TIMER = "replay_buffer_add_data_timer"
REPLAY_BUFFER_SAMPLE_TIMER = "replay_buffer_sampling_timer"
SAMPLE_TIMER = "sample"  # result[ENV_RUNNER_RESULTS][TIMERS][SAMPLE_TIMER]

__all__ = [name for name in dir() if name.isupper()]
