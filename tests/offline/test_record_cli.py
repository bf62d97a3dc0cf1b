"""`flywheel record --checkpoint DIR --episodes N --output OUT` records a trained policy."""

import pyarrow.parquet as pq

from flywheel import PPOConfig, cli


def test_record_writes_the_episodes_of_a_checkpoint(tmp_path, capsys):
    config = (
        PPOConfig().environment("CartPole-v1").training(train_batch_size_per_learner=64, minibatch_size=32)
    )
    algo = config.debugging(seed=0).build_algo()
    checkpoint = algo.save_to_path(tmp_path / "checkpoint")
    algo.stop()
    out_dir = tmp_path / "data"
    code = cli.main(["record", "--checkpoint", str(checkpoint), "--episodes", "3", "--output", str(out_dir)])
    out = capsys.readouterr().out
    assert code == 0
    table = pq.read_table(out_dir)
    assert len(set(table.column("eps_id").to_pylist())) == 3
    assert (
        out
        == f"Recorded 3 episodes ({table.num_rows} env steps, return mean {table.num_rows / 3:.2f}) to {out_dir}\n"
    )


def test_record_without_a_checkpoint_exits_2(tmp_path, capsys):
    code = cli.main(
        ["record", "--checkpoint", str(tmp_path / "nope"), "--episodes", "1", "--output", str(tmp_path)]
    )
    assert code == 2
    assert capsys.readouterr().err.startswith(
        f"flywheel record: error: No checkpoint directory at '{tmp_path / 'nope'}'"
    )
