"""`Columns`: the only place where batch and episode column names are spelled."""


class Columns:
    """Names of the columns in episodes, connector batches and train batches."""

    # Episode data.
    OBS = "obs"
    NEXT_OBS = "new_obs"
    ACTIONS = "actions"
    ACTIONS_FOR_ENV = "actions_for_env"
    REWARDS = "rewards"
    TERMINATEDS = "terminateds"
    TRUNCATEDS = "truncateds"
    INFOS = "infos"
    T = "t"
    EPS_ID = "eps_id"
    AGENT_ID = "agent_id"
    MODULE_ID = "module_id"

    # Module outputs (stored per step as episode extra_model_outputs).
    ACTION_DIST_INPUTS = "action_dist_inputs"
    ACTION_LOGP = "action_logp"
    ACTION_PROB = "action_prob"
    VF_PREDS = "vf_preds"
    EMBEDDINGS = "embeddings"
    WEIGHTS_SEQ_NO = "weights_seq_no"

    # Recurrent modules.
    STATE_IN = "state_in"
    STATE_OUT = "state_out"
    SEQ_LENS = "seq_lens"

    # Learner-side columns.
    ADVANTAGES = "advantages"
    VALUE_TARGETS = "value_targets"
    VALUES_BOOTSTRAPPED = "values_bootstrapped"
    LOSS_MASK = "loss_mask"
    RETURNS_TO_GO = "returns_to_go"  # discounted reward sums to the chunk's end (ComputeReturnsToGo)
    INTRINSIC_REWARDS = "intrinsic_rewards"  # curiosity bonuses a module computes
    WEIGHTS = "weights"  # importance weights (prioritized replay)
    N_STEP = "n_step"
