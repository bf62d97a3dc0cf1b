"""The `flywheel` command line: settings, config files, errors, a tiny train run, evaluate."""

import csv
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from flywheel import cli
from flywheel.algorithms.algorithm import Algorithm
from flywheel.errors import ConfigError

TINY = ["--set", "train_batch_size_per_learner=256", "minibatch_size=64", "num_epochs=1"]


def config_of(*argv):
    return cli.make_config(cli.build_parser().parse_args(["train", *argv]))[1]


def run(argv, capsys):
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def fake_save(monkeypatch):
    """A stand-in for Algorithm.save_to_path that records the iteration it saved (fast, no torch files)."""

    def save_to_path(self, path=None):
        Path(path).mkdir(parents=True)
        (Path(path) / "iteration").write_text(str(self.iteration))
        return path

    monkeypatch.setattr(Algorithm, "save_to_path", save_to_path, raising=False)


# ---------------------------------------------------------------------------------- --set values


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("lr=3e-4", ("lr", 0.0003)),
        ("explore=False", ("explore", False)),
        ("seed=None", ("seed", None)),
        ("env=CartPole-v1", ("env", "CartPole-v1")),
        ("model_config={'fcnet_hiddens': [64]}", ("model_config", {"fcnet_hiddens": [64]})),
        ("lr=[[0, 1e-3], [1000, 1e-4]]", ("lr", [[0, 1e-3], [1000, 1e-4]])),
        (" num_epochs = 3 ", ("num_epochs", 3)),
        ("env=a=b", ("env", "a=b")),
        ("env=", ("env", "")),
    ],
)
def test_parse_setting(text, expected):
    assert cli.parse_setting(text) == expected


@pytest.mark.parametrize("text", ["lr", "=3", " =3"])
def test_parse_setting_needs_key_and_equals_sign(text):
    with pytest.raises(
        ConfigError, match=r"^--set expects key=value \(e\.g\. --set lr=0\.001\), got '.*'\.$"
    ):
        cli.parse_setting(text)


def test_settings_are_layered_flags_then_set_in_order():
    config = config_of(
        "--env", "CartPole-v1", "--num-envs", "4", "--seed", "7",
        "--set", "lr=0.01", "num_epochs=2", "--set", "lr=0.02", "env=Pendulum-v1",
    )  # fmt: skip
    assert (config.env, config.num_envs_per_env_runner, config.seed) == ("Pendulum-v1", 4, 7)
    assert (config.lr, config.num_epochs) == (0.02, 2)
    assert type(config).__name__ == "PPOConfig"


def test_ppo_without_a_config_file_trains_with_the_cli_recipe_over_rllibs_defaults(tmp_path):
    config = config_of("--env", "CartPole-v1", "--set", "num_epochs=4")
    recipe = (config.lr, config.num_epochs, config.clip_param, config.use_kl_loss, config.lambda_)
    assert recipe == (3e-4, 4, 0.2, False, 0.95)
    path = tmp_path / "ppo.yaml"
    path.write_text("env: CartPole-v1\n")
    config = config_of("--config", str(path))  # a config file starts from the plain (RLlib's) defaults
    assert (config.lr, config.num_epochs, config.clip_param, config.use_kl_loss, config.lambda_) == (
        5e-5,
        30,
        0.3,
        True,
        1.0,
    )


def test_algo_name_is_case_insensitive():
    assert cli.build_parser().parse_args(["train", "--algo", "ppo"]).algo == "PPO"
    assert cli.available_algorithms()[0] == "PPO"


def test_unknown_setting_prints_the_configs_did_you_mean_and_exits_2(capsys):
    code, out, err = run(["train", "--env", "CartPole-v1", "--set", "lrr=0.1"], capsys)
    assert code == 2 and out == ""
    assert err == (
        "flywheel train: error: --set lrr=0.1: PPOConfig.update_from_dict() got an unexpected key 'lrr'. "
        "Did you mean 'lr'?\n"
    )


def test_malformed_set_exits_2(capsys):
    code, _, err = run(["train", "--env", "CartPole-v1", "--set", "lr"], capsys)
    assert code == 2
    assert err == "flywheel train: error: --set expects key=value (e.g. --set lr=0.001), got 'lr'.\n"


def test_bad_env_id_exits_2_with_one_clear_line(capsys, tmp_path):
    code, out, err = run(["train", "--env", "CartPolx-v1", "--checkpoint-dir", str(tmp_path / "r")], capsys)
    assert code == 2 and out == ""
    assert err.startswith("flywheel train: error: Unknown env 'CartPolx-v1'. Did you mean 'CartPole-v1'?")
    assert "Traceback" not in err and err.count("\n") == 1
    assert not (tmp_path / "r").exists()  # nothing written for a run that never started


def test_old_schedule_keyword_and_unknown_env_without_registered_names(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr("flywheel.env.make._REGISTRY", {})  # other tests' registered names stay out
    code, _, err = run(
        ["train", "--env", "CartPole-v1", "--set", "lr_schedule=[[0, 1e-3], [1000, 1e-4]]"], capsys
    )
    assert (code, err) == (
        2,
        "flywheel train: error: --set lr_schedule=[[0, 1e-3], [1000, 1e-4]]: PPOConfig.update_from_dict() got an "
        "unexpected key 'lr_schedule'. RLlib's new API stack (and flywheel) take the schedule in 'lr' itself: a "
        "float, or a list of [env_steps, value] pairs interpolated linearly. Fix: lr=[[0, 0.001], [1000, 0.0001]].\n",
    )
    code, _, err = run(["train", "--env", "NoSuchGame-v0", "--checkpoint-dir", str(tmp_path / "r")], capsys)
    assert code == 2 and "Registered names" not in err  # none are: no "Registered names: []"


def test_invalid_config_lists_every_problem_and_exits_2(capsys):
    code, _, err = run(["train", "--env", "CartPole-v1", "--set", "minibatch_size=8192", "lr=-1"], capsys)
    assert code == 2
    assert err.startswith("flywheel train: error: Invalid PPOConfig (2 problems):\n- ")
    assert "minibatch_size=8192 is larger than train_batch_size=4000" in err
    assert "lr=-1 must be a number > 0" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["train", "--stop-iters", "0"], "argument --stop-iters: expected an integer >= 1, got '0'"),
        (["train", "--num-envs", "x"], "argument --num-envs: expected an integer >= 1, got 'x'"),
        (["train", "--algo", "XYZ"], "argument --algo: invalid choice: 'XYZ'"),
        (["evaluate"], "the following arguments are required: path"),
        ([], "the following arguments are required: COMMAND"),
    ],
)
def test_argument_errors_exit_2(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


# ---------------------------------------------------------------------------------- config files


def test_yaml_config_file_then_flags_then_set(tmp_path):
    path = tmp_path / "ppo.yaml"
    path.write_text("env: CartPole-v1\nlr: 3e-4\nnum_epochs: 3\nmodel_config:\n  fcnet_hiddens: [32, 32]\n")
    config = config_of("--config", str(path))
    assert (config.env, config.lr, config.num_epochs) == ("CartPole-v1", 0.0003, 3)
    assert config.model_config == {"fcnet_hiddens": [32, 32]}
    config = config_of("--config", str(path), "--env", "Pendulum-v1", "--set", "num_epochs=5")
    assert (config.env, config.lr, config.num_epochs) == ("Pendulum-v1", 0.0003, 5)


def test_json_config_file(tmp_path):
    path = tmp_path / "ppo.json"
    path.write_text(json.dumps({"env": "CartPole-v1", "gamma": 0.9, "explore": False}))
    config = config_of("--config", str(path))
    assert (config.env, config.gamma, config.explore) == ("CartPole-v1", 0.9, False)


def test_py_config_file_with_a_config_object(tmp_path):
    path = tmp_path / "ppo.py"
    path.write_text(
        "from flywheel import PPOConfig\nconfig = PPOConfig().environment('CartPole-v1').training(lr=0.005)\n"
    )
    config = config_of("--config", str(path), "--set", "num_epochs=2")
    assert (config.env, config.lr, config.num_epochs) == ("CartPole-v1", 0.005, 2)


def test_py_config_file_with_a_config_function(tmp_path):
    path = tmp_path / "ppo.py"
    path.write_text(
        "from flywheel import PPOConfig\ndef config():\n    return PPOConfig().training(gamma=0.5)\n"
    )
    assert config_of("--config", str(path)).gamma == 0.5


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        (
            "bad.py",
            "settings = 1\n",
            "--config {path}: expected the file to define `config` (an AlgorithmConfig such as PPOConfig()) "
            "or a function `config()` returning one, got no `config`.",
        ),
        (
            "number.py",
            "def config():\n    return 3\n",
            "--config {path}: expected the file to define `config` (an AlgorithmConfig such as PPOConfig()) "
            "or a function `config()` returning one, got int from `config`.",
        ),
        (
            "bad.yaml",
            "- lr\n- 0.1\n",
            "--config {path}: expected a mapping of settings (e.g. `lr: 0.001`), got list.",
        ),
        (
            "bad.toml",
            "lr = 0.1\n",
            "--config {path}: expected a .py, .yaml, .yml or .json file, got '.toml'.",
        ),
        (
            "typo.yaml",
            "lrr: 0.1\n",
            "--config {path}: PPOConfig.update_from_dict() got an unexpected key 'lrr'. Did you mean 'lr'?",
        ),
    ],
)
def test_config_file_errors_exit_2(name, text, message, tmp_path, capsys):
    path = tmp_path / name
    path.write_text(text)
    code, _, err = run(["train", "--config", str(path)], capsys)
    assert code == 2
    assert err == f"flywheel train: error: {message.format(path=path)}\n"


def test_missing_config_file_exits_2(tmp_path, capsys):
    code, _, err = run(["train", "--config", str(tmp_path / "nope.yaml")], capsys)
    assert code == 2
    assert err == (
        f"flywheel train: error: --config {tmp_path / 'nope.yaml'}: no such file. "
        "Fix: pass the path of a .py, .yaml or .json file.\n"
    )


def test_algo_must_match_the_class_a_py_file_builds(tmp_path, capsys):
    path = tmp_path / "base.py"
    path.write_text("from flywheel import AlgorithmConfig\nconfig = AlgorithmConfig()\n")
    code, _, err = run(["train", "--algo", "PPO", "--config", str(path)], capsys)
    assert code == 2
    assert err == (
        f"flywheel train: error: --algo PPO expects a PPOConfig, but --config {path} gives a AlgorithmConfig. "
        "Fix: drop --algo or make the file build a PPOConfig.\n"
    )


# ------------------------------------------------------------------------------------- --help


@pytest.mark.parametrize("module", ["flywheel", "flywheel.cli"])
def test_python_m_flywheel_help_works_without_importing_torch(module):
    done = subprocess.run(
        [sys.executable, "-m", module, "--help"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0
    assert done.stdout.startswith("usage: flywheel [-h] COMMAND ...")
    assert "train" in done.stdout and "evaluate" in done.stdout
    probe = (
        "import sys\nfrom flywheel.cli import main\n"
        "for argv in (['--help'], ['train', '--help'], ['evaluate', '--help']):\n"
        "    try:\n        main(argv)\n    except SystemExit:\n        pass\n"
        "print('torch' in sys.modules, 'ray' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.stdout.splitlines()[-1] == "False False"


# ------------------------------------------------------------------------------------- train


def test_tiny_train_run_writes_results_and_rotates_checkpoints(tmp_path, capsys, fake_save):
    run_dir = tmp_path / "run"
    argv = ["train", "--env", "CartPole-v1", "--stop-iters", "3", "--checkpoint-dir", str(run_dir), "--seed", "0",
            "--checkpoint-every", "1", "--keep-last", "2", "--no-progress", *TINY]  # fmt: skip
    code, out, err = run(argv, capsys)
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0] == f"Training PPO on CartPole-v1; run dir: {run_dir}"
    assert lines[1].startswith("Stopped: training_iteration 3 >= 3 (iter=3 env_steps=768 return=")
    assert lines[2] == f"Checkpoint: {run_dir / 'checkpoint'}"

    # Periodic checkpoints: only the newest two are kept; the final one is separate.
    assert sorted(p.name for p in run_dir.glob("checkpoint*")) == [
        "checkpoint",
        "checkpoint_000002",
        "checkpoint_000003",
    ]
    assert (run_dir / "checkpoint" / "iteration").read_text() == "3"

    with (run_dir / "results.csv").open(newline="") as file:
        rows = list(csv.DictReader(file))
    assert [row["training_iteration"] for row in rows] == ["1", "2", "3"]
    assert [row["env_runners/num_env_steps_sampled_lifetime"] for row in rows] == ["256", "512", "768"]
    assert {
        "env_runners/episode_return_mean",
        "learners/default_policy/total_loss",
        "time_this_iter_s",
    } <= set(rows[0])

    results = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert [r["training_iteration"] for r in results] == [1, 2, 3]
    assert [r["num_env_steps_sampled_lifetime"] for r in results] == [256, 512, 768]
    assert (
        float(rows[2]["env_runners/episode_return_mean"]) == results[2]["env_runners"]["episode_return_mean"]
    )

    events = EventAccumulator(str(run_dir))
    events.Reload()
    returns = events.Scalars("env_runners/episode_return_mean")
    assert [s.step for s in returns] == [1, 2, 3]
    assert returns[2].value == pytest.approx(results[2]["env_runners"]["episode_return_mean"])
    assert "learners/default_policy/total_loss" in events.Tags()["scalars"]


def test_the_quick_start_prints_its_header_bar_and_summary_and_nothing_else(tmp_path):
    # `make train` with a budget of 6 iterations instead of a return of 475: the algorithm's defaults, its bar.
    run_dir = tmp_path / "cartpole"
    argv = ["train", "--algo", "PPO", "--env", "CartPole-v1", "--stop-iters", "6", "--seed", "0",
            "--checkpoint-dir", str(run_dir)]  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "flywheel", *argv], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line.split(" ")[0] for line in lines] == [
        "Training",
        "Stopped:",
        "Checkpoint:",
        "Results:",
        "Learning",
    ]
    assert lines[0] == f"Training PPO on CartPole-v1; run dir: {run_dir}"
    assert lines[1].startswith("Stopped: training_iteration 6 >= 6 (iter=6 env_steps=24000 return=")
    # stderr holds the bar's redraws only: no warning (e.g. about PPO's value-loss clamping), no log line.
    drawn = [part for part in re.split(r"[\r\n]", done.stderr) if part.strip()]
    assert drawn and all(part.startswith("PPO CartPole-v1: ") for part in drawn), done.stderr
    assert drawn[-1].startswith("PPO CartPole-v1: 100%|") and " 6/6 [" in drawn[-1]


def test_default_run_dir_and_progress_bar(tmp_path, capsys, monkeypatch, fake_save):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(["train", "--env", "CartPole-v1", "--stop-timesteps", "200", *TINY], capsys)
    assert code == 0
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert run_dir.name.startswith("PPO_CartPole-v1_20")
    assert (run_dir / "checkpoint" / "iteration").read_text() == "1"
    assert not list(run_dir.glob("checkpoint_*"))  # no --checkpoint-every: only the final checkpoint
    assert f"run dir: runs/{run_dir.name}" in out
    assert out.splitlines()[1].startswith("Stopped: num_env_steps_sampled_lifetime 256 >= 200")
    assert err.split("\r")[-1].startswith("PPO CartPole-v1: 256step [")  # the bar counted env steps


def test_interrupt_closes_the_run_and_exits_130(tmp_path, capsys, monkeypatch):
    def interrupted(algo, **kwargs):
        kwargs["writers"][1].write({"training_iteration": 1})
        raise KeyboardInterrupt

    monkeypatch.setattr("flywheel.reporting.train_with_progress", interrupted)
    code, _, err = run(["train", "--env", "CartPole-v1", "--checkpoint-dir", str(tmp_path), *TINY], capsys)
    assert code == 130
    assert err == "flywheel train: interrupted\n"
    assert (tmp_path / "results.csv").read_text() == "training_iteration\n1\n"


# ---------------------------------------------------------------------------------- evaluate


def test_evaluate_missing_checkpoint_exits_2(tmp_path, capsys):
    code, out, err = run(["evaluate", str(tmp_path / "nope")], capsys)
    assert code == 2 and out == ""
    assert err == (
        f"flywheel evaluate: error: No checkpoint directory at '{tmp_path / 'nope'}'. Fix: pass a directory "
        "`flywheel train` saved, e.g. runs/<run>/checkpoint.\n"
    )


def test_train_then_evaluate_the_saved_checkpoint(tmp_path, capsys):
    run_dir = tmp_path / "run"
    argv = [
        "train",
        "--env",
        "CartPole-v1",
        "--stop-iters",
        "1",
        "--checkpoint-dir",
        str(run_dir),
        "--no-progress",
    ]
    assert run([*argv, *TINY], capsys)[0] == 0
    code, out, err = run(["evaluate", str(run_dir / "checkpoint"), "--episodes", "3"], capsys)
    assert code == 0, err
    assert out.startswith("Evaluated 3 episodes (explore=False): return mean ")
    code, out, _ = run(["evaluate", str(run_dir / "checkpoint"), "--episodes", "2", "--explore"], capsys)
    assert code == 0 and out.startswith("Evaluated 2 episodes (explore=True): return mean ")


def test_evaluate_unpickles_config_lambdas_only_when_trusted(tmp_path, capsys):
    from flywheel import PPOConfig
    from flywheel.connectors.env_to_module import MeanStdFilter

    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(env_to_module_connector=lambda env, spaces, device: MeanStdFilter())
        .training(train_batch_size_per_learner=32, minibatch_size=16, num_epochs=1)
    )
    algo = config.build_algo()
    path = algo.save_to_path(tmp_path / "checkpoint")
    algo.stop()
    code, _, err = run(["evaluate", path, "--episodes", "1"], capsys)
    # The fix that applies on the command line: --trusted, not trusted=True.
    assert (code, err) == (
        2,
        f"flywheel evaluate: error: {Path(path) / 'metadata.json'} stores config.env_to_module_connector as "
        "pickles (lambdas, closures, or classes defined in __main__ or inside a function). Flywheel unpickles "
        "only when told the checkpoint is trusted, because unpickling runs code the file chooses. Fix: if you "
        f"trust this checkpoint, add --trusted: flywheel evaluate {path} --episodes 1 --trusted\n",
    )
    code, _, err = run(
        ["record", "--checkpoint", path, "--episodes", "2", "--output", "out", "--explore"], capsys
    )
    assert code == 2 and err.endswith(
        f"add --trusted: flywheel record --checkpoint {path} --episodes 2 --output out --explore --trusted\n"
    )
    code, out, err = run(["evaluate", path, "--episodes", "1", "--trusted"], capsys)
    assert code == 0, err
    assert out.startswith("Evaluated 1 episodes (explore=False): return mean ")


def fake_checkpoint(path):
    path.mkdir(parents=True)
    (path / "metadata.json").write_text("{}")


def test_evaluate_a_run_dir_names_its_checkpoint(tmp_path, capsys):
    run_dir = tmp_path / "dqn"
    fake_checkpoint(run_dir / "checkpoint_000002")
    fake_checkpoint(run_dir / "checkpoint_000004")
    # An interrupted run: only periodic checkpoints, the newest is named.
    code, out, err = run(["evaluate", str(run_dir)], capsys)
    assert (code, out) == (2, "")
    assert err == (
        f"flywheel evaluate: error: {run_dir} is a run directory of `flywheel train`, not a checkpoint; its "
        f"newest checkpoint is {run_dir / 'checkpoint_000004'}. Fix: flywheel evaluate "
        f"{run_dir / 'checkpoint_000004'} --episodes 10\n"
    )
    fake_checkpoint(run_dir / "checkpoint")  # the final one, saved at the end of a run
    code, _, err = run(["evaluate", str(run_dir), "--episodes", "3", "--explore"], capsys)
    assert code == 2
    assert err.endswith(f"Fix: flywheel evaluate {run_dir / 'checkpoint'} --episodes 3 --explore\n")
    code, _, err = run(
        ["record", "--checkpoint", str(run_dir), "--episodes", "5", "--output", "data"], capsys
    )
    assert code == 2
    assert err.endswith(
        f"Fix: flywheel record --checkpoint {run_dir / 'checkpoint'} --episodes 5 --output data\n"
    )


def test_evaluate_a_directory_that_is_not_a_checkpoint_exits_2(tmp_path, capsys):
    code, _, err = run(["evaluate", str(tmp_path)], capsys)
    assert code == 2
    assert err.startswith("flywheel evaluate: error: ") and "Traceback" not in err


def test_config_files_shown_in_docs_cli_md(tmp_path):
    page = (Path(__file__).parents[1] / "docs" / "cli.md").read_text()
    (yaml_text,) = re.findall(r"```yaml\n(.*?)```", page, re.S)
    (py_text,) = re.findall(r"```python\n(.*?)```", page, re.S)
    (tmp_path / "ppo.yaml").write_text(yaml_text)
    (tmp_path / "pendulum.py").write_text(py_text)
    config = config_of("--config", str(tmp_path / "ppo.yaml"))
    assert (config.env, config.lr, config.num_epochs, config.train_batch_size_per_learner) == (
        "CartPole-v1", 0.0003, 4, 1024,
    )  # fmt: skip
    assert config.model_config == {"fcnet_hiddens": [64, 64]}
    config = config_of("--config", str(tmp_path / "pendulum.py"), "--set", "lr=1e-3")
    assert (config.env, config.lr) == ("Pendulum-v1", 0.001)
    assert type(config.env_to_module_connector(None, None, None)).__name__ == "MeanStdFilter"


def test_api_md_section_11_commands_parse():
    parser = cli.build_parser()
    train_args = parser.parse_args(
        shlex.split("train --algo PPO --env CartPole-v1 --stop-reward 475 --checkpoint-dir runs/cartpole")
    )
    assert (train_args.handler, train_args.algo, train_args.env) == (cli.train, "PPO", "CartPole-v1")
    assert (train_args.stop_reward, train_args.checkpoint_dir) == (475.0, "runs/cartpole")
    evaluate_args = parser.parse_args(shlex.split("evaluate runs/cartpole/checkpoint --episodes 10"))
    assert (evaluate_args.handler, evaluate_args.path) == (cli.evaluate, "runs/cartpole/checkpoint")
    assert (evaluate_args.episodes, evaluate_args.explore) == (10, False)


def test_train_draws_the_learning_curves_and_saves_evaluation_videos(tmp_path, capsys):
    run_dir = tmp_path / "cartpole_seed0"
    argv = shlex.split(f"train --env CartPole-v1 --stop-iters 1 --checkpoint-dir {run_dir} --no-progress")
    evaluation = ["evaluation_interval=1", "evaluation_duration=1", "evaluation_config={'render_env': True}"]
    code, out, err = run([*argv, *TINY, *evaluation], capsys)
    assert code == 0, err
    videos = sorted((run_dir / "videos").iterdir())
    assert [p.name for p in videos] == ["evaluation_env_runners_episode_videos_0_000001.mp4"]
    assert f"Learning curves: {run_dir / 'curves.png'}\n" in out
    assert f"Videos: 1 mp4 file in {run_dir / 'videos'} (newest: {videos[0]})\n" in out
    assert (run_dir / "curves.png").is_file()


def test_plot_draws_several_runs_and_explains_a_missing_run(tmp_path, capsys):
    for seed in (0, 1):
        argv = ["train", "--env", "CartPole-v1", "--stop-iters", "2", "--seed", str(seed), "--no-progress"]
        assert (
            run([*argv, "--checkpoint-dir", str(tmp_path / "runs" / f"ppo_seed{seed}"), *TINY], capsys)[0]
            == 0
        )
    code, out, err = run(["plot", str(tmp_path / "runs"), "-o", str(tmp_path / "all.png")], capsys)
    assert (code, out) == (0, f"Learning curves: {tmp_path / 'all.png'}\n"), err
    code, out, err = run(["plot", str(tmp_path / "nope")], capsys)
    assert code == 2 and err.startswith(f"flywheel plot: error: {tmp_path / 'nope'} holds no results.csv")


@pytest.mark.parametrize("algo", ["APPO", "IMPALA"])
def test_asynchronous_algorithms_train_by_name(algo, tmp_path, capsys, fake_save):
    argv = ["train", "--algo", algo.lower(), "--env", "CartPole-v1", "--stop-iters", "2", "--no-progress",
            "--checkpoint-dir", str(tmp_path / "run"), "--seed", "0",
            "--set", "num_env_runners=0", "min_time_s_per_iteration=0", "train_batch_size_per_learner=100"]  # fmt: skip
    code, out, err = run(argv, capsys)
    assert code == 0 and err == ""
    assert out.splitlines()[0] == f"Training {algo} on CartPole-v1; run dir: {tmp_path / 'run'}"
    results = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert [r["learners"]["__all_modules__"]["weights_seq_no"] for r in results] == (
        [2, 4] if algo == "APPO" else [1, 2]  # APPO trains on each sampled batch twice
    )
