"""Tests of the harness's own logic (no framework needed): `.venv/bin/pytest bench/test_bench.py`."""

import json
import threading
import time
from types import SimpleNamespace

import benchlib
import pytest
import report
import report_appo
import report_tuned
import tuned_examples
from offpolicy_watch import ThresholdWatch
from turns import Turns


def chunk(id_: str, rewards: float, done: bool) -> SimpleNamespace:
    """A stand-in episode chunk with the three members the tracker reads."""
    return SimpleNamespace(id_=id_, get_return=lambda: rewards, is_done=done)


def test_tracker_sums_chunks_of_one_episode_and_counts_only_finished_ones():
    tracker = benchlib.EpisodeReturnTracker()
    tracker.add_chunks([chunk("a", 10.0, False), chunk("b", 3.0, True)])
    tracker.add_chunks([chunk("a", 5.0, False)])
    tracker.add_chunks([chunk("a", 2.0, True), chunk("c", 1.0, False)])
    assert list(tracker.finished) == [3.0, 17.0]
    assert tracker.num_finished == 2
    assert tracker.mean_last_100() is None


def test_tracker_mean_is_over_the_last_100_finished_episodes():
    tracker = benchlib.EpisodeReturnTracker()
    for ret in range(150):
        tracker.add_finished(float(ret))
    assert tracker.num_finished == 150
    assert tracker.mean_last_100() == pytest.approx(sum(range(50, 150)) / 100)


def test_clock_records_each_threshold_once_and_stops_at_the_last():
    tracker = benchlib.EpisodeReturnTracker()
    clock = benchlib.ThresholdClock(tracker)
    clock.start_training()
    for _ in range(100):
        tracker.add_finished(460.0)
    assert clock.check(1000) is False
    assert clock.check(2000) is False
    assert clock.reached[450.0]["env_steps"] == 1000
    for _ in range(100):
        tracker.add_finished(500.0)
    assert clock.check(3000) is True
    result = clock.result(3000)
    assert result["to_450"]["env_steps"] == 1000
    assert result["to_475"]["env_steps"] == 3000
    assert result["total_env_steps"] == 3000
    assert result["num_episodes"] == 200
    assert result["final_mean_last_100"] == 500.0
    assert result["peak_tree_rss_mb"] > 0


def test_time_sampling_keeps_calling_until_min_calls_and_counts_returned_steps():
    calls = []

    def sample(n: int) -> int:
        calls.append(n)
        return n + 1

    result = benchlib.time_sampling(sample, num_timesteps=10, calls=4, warmup=2, min_seconds=0.0)
    assert calls == [10] * 6
    assert result["env_steps_timed"] == 44
    assert len(result["per_call_steps_per_s"]) == 4


def test_turns_alternate_strictly_and_followers_last_as_long_as_the_lead(tmp_path):
    """Two samplers in threads: the timed calls interleave turn by turn, and the follower keeps
    calling until its turn is as long as the lead's last one."""
    calls, results = [], {}  # calls: (name, seconds) in the order they ran

    def sampler(name: str, seconds_per_call: float):
        def sample(n: int) -> int:
            t0 = time.perf_counter()
            time.sleep(seconds_per_call)
            calls.append((name, time.perf_counter() - t0))
            return n

        turns = Turns(tmp_path, ["slow", "fast"], name, rounds=3, lead_seconds=0.05, timeout_s=10)
        results[name] = benchlib.time_sampling(
            sample, num_timesteps=10, calls=1, warmup=0, min_seconds=0.0, turns=turns
        )

    threads = [
        threading.Thread(target=sampler, args=("slow", 0.06)),
        threading.Thread(target=sampler, args=("fast", 0.01)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    runs: list[list] = []  # consecutive calls of one sampler: [name, seconds, number of calls]
    for name, seconds in calls:
        if runs and runs[-1][0] == name:
            runs[-1][1] += seconds
            runs[-1][2] += 1
        else:
            runs.append([name, seconds, 1])
    assert [run[0] for run in runs] == ["slow", "fast"] * 3
    for lead, follower in zip(runs[::2], runs[1::2]):
        assert lead[2] == 1  # one 0.06 s call already outlasts the lead's minimum of 0.05 s
        assert follower[1] >= lead[1] > follower[1] - 0.05  # as long as the lead's turn, plus < 1 call
        assert follower[2] >= 2
    assert results["fast"]["turns_with"] == ["slow", "fast"]
    assert len(results["fast"]["per_turn_steps_per_s"]) == 3
    assert results["slow"]["env_steps_timed"] == 30


def test_turns_give_up_naming_the_partner_that_never_passed(tmp_path):
    turns = Turns(tmp_path, ["rllib", "flywheel"], "flywheel", timeout_s=0.05)
    with pytest.raises(TimeoutError, match="flywheel: no turn from 'rllib' within 0 s"):
        turns.wait()
    with pytest.raises(ValueError, match="expected 'x' among two or more distinct names"):
        Turns(tmp_path, ["rllib", "flywheel"], "x")


def test_run_guarded_turns_an_exception_into_an_error_line(capsys):
    def body() -> dict:
        raise KeyError("runner")

    benchlib.run_guarded({"bench": "sampling", "framework": "flywheel"}, body)
    line = json.loads(capsys.readouterr().out)
    assert line["error"] == "KeyError: 'runner'"
    assert line["framework"] == "flywheel"


def write_lines(path, rows) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_report_computes_ratios_from_medians_and_shows_errors(tmp_path, monkeypatch):
    monkeypatch.setattr(report, "RESULTS", tmp_path)
    monkeypatch.setattr(report, "HERE", tmp_path)
    for n, rllib, loop, ours in (
        (1, [900, 1000, 1100], [10_000], [12_000]),
        (8, [5000], [40_000], [15_000]),
        (64, [15_000], [100_000], [96_000]),
    ):
        write_lines(tmp_path / f"sampling_rllib_{n}envs.jsonl", [{"env_steps_per_s": v} for v in rllib])
        write_lines(tmp_path / f"sampling_loop_{n}envs.jsonl", [{"env_steps_per_s": v} for v in loop])
        write_lines(tmp_path / f"sampling_flywheel_{n}envs.jsonl", [{"env_steps_per_s": v} for v in ours])
    hit = {"seconds": 200.0, "train_seconds": 190.0, "env_steps": 150_000}
    write_lines(tmp_path / "train_rllib.jsonl", [{"to_450": hit, "to_475": None, "steps_per_s": 790.0}])
    write_lines(tmp_path / "train_sb3.jsonl", [{"error": "ImportError: no sb3"}])
    fast = {"seconds": 50.0, "train_seconds": 45.0, "env_steps": 60_000}
    write_lines(tmp_path / "train_flywheel.jsonl", [{"to_450": fast, "to_475": fast, "steps_per_s": 1333.3}])
    write_lines(tmp_path / "train_speed_loop.jsonl", [{"env_steps_per_s": v} for v in (1000, 1200, 1100)])
    write_lines(
        tmp_path / "train_speed_flywheel.jsonl", [{"env_steps_per_s": 980}, {"error": "ValueError: x"}]
    )
    report.main()
    text = (tmp_path / "RESULTS.md").read_text()
    assert "| flywheel / RLlib 2.60 | ≥ 10× | 12.00× (met) | 3.00× (NOT met) | 6.40× (NOT met) |" in text
    assert "| flywheel / single-file loop | ≥ 0.95× | 1.20× (met) | 0.38× (NOT met) | 0.96× (met) |" in text
    assert "| single-file loop | 1,100 (1,000–1,200, n=3) |" in text
    assert "| flywheel / single-file loop | ≥ 0.9× | 0.89× (NOT met) |" in text
    assert "- flywheel: `ValueError: x`" in text
    assert "| RLlib 2.60 ÷ flywheel | ≥ 3× | 4.00× (met) | 2.50× |" in text
    assert "| Stable-Baselines3 ÷ flywheel | > 1× | not measured | not measured |" in text
    assert "- Stable-Baselines3: `ImportError: no sb3`" in text
    assert "| RLlib 2.60 | 1/1 | 200.0 | 190.0 | 150,000 | — (0/1) |" in text


def test_report_multi_agent_and_remote_sections(tmp_path, monkeypatch):
    monkeypatch.setattr(report, "RESULTS", tmp_path)
    monkeypatch.setattr(report, "HERE", tmp_path)
    for n, rllib, ours in ((1, [400, 500, 600], [6000]), (8, [2000], [15_000])):
        write_lines(tmp_path / f"sampling_ma_rllib_{n}envs.jsonl", [{"env_steps_per_s": v} for v in rllib])
        write_lines(tmp_path / f"sampling_ma_flywheel_{n}envs.jsonl", [{"env_steps_per_s": v} for v in ours])
    remote = [
        {"num_env_runners": k, "steps_per_s": v, "loadavg_1m": 1.5} for k, v in ((0, 250.0), (2, 300.0))
    ]
    write_lines(
        tmp_path / "train_remote_rllib.jsonl", [*remote, {"num_env_runners": 1, "error": "IndexError: x"}]
    )
    ours = [
        {"num_env_runners": k, "steps_per_s": v, "loadavg_1m": 2.0} for k, v in ((0, 2000.0), (1, 2500.0))
    ]
    write_lines(
        tmp_path / "train_remote_flywheel.jsonl", [*ours, {"num_env_runners": 2, "steps_per_s": 3000.0}]
    )
    report.main()
    text = (tmp_path / "RESULTS.md").read_text()
    assert "| flywheel | 6,000 (6,000–6,000, n=1) | 15,000 (15,000–15,000, n=1) |" in text
    assert "| flywheel / RLlib 2.60 | ≥ 10× | 12.00× (met) | 7.50× (NOT met) |" in text
    assert "| RLlib 2.60 | 250 (1.00×) | — | 300 (1.20×) | 1.5, 1.5 |" in text
    assert "| flywheel | 2,000 (1.00×) | 2,500 (1.25×) | 3,000 (1.50×) | 2, 2 |" in text
    assert "| flywheel / RLlib 2.60 | ≥ 5× at 2 runners | 8.00× | not measured | 10.00× (met) |" in text
    assert "- RLlib 2.60: `IndexError: x`" in text


def appo_costs(learner: float) -> dict[str, float]:
    """An APPO throughput line's CPU costs: driver loop 10, runners 40, `learner` per step trained, 2 passes."""
    return {
        "driver_loop_cpu_us_per_step": 10.0,
        "runner_cpu_us_per_step": 40.0,
        "learner_cpu_us_per_trained_step": learner,
        "trained_per_sampled_step": 2.0,
    }


def test_report_appo_scaling_table_and_projection_from_cpu_costs(tmp_path, monkeypatch):
    monkeypatch.setattr(report, "RESULTS", tmp_path)
    costs = {"driver_cpu_us_per_step": 38.0, **appo_costs(14.0)}
    rows = [{"num_env_runners": 0, "steps_per_s": 9000.0, "driver_cpu_us_per_step": 80.0}]
    rows += [{"num_env_runners": n, "steps_per_s": 20_000.0, **costs} for n in (1, 2)]
    write_lines(tmp_path / "appo_scaling_flywheel.jsonl", rows)
    text = "\n".join(report_appo._scaling_lines())
    assert "| 0 | 9,000 | 80.0 | — | — | — | — |" in text
    assert "| 2 | 20,000 | 38.0 | 10.0 | 40.0 | 14.0 | 2.000 |" in text
    # learner in the driver: 1e6 / (10 + 2 * 14); with L learners: min(N / 40, 1 / 10, L / 28) per µs
    assert "| 16 | 0 | 17 | 26,316 | driver (learning in it) |" in text
    assert "| 16 | 3 | 20 | 100,000 | driver |" in text  # 3 learners (107,143 steps/s) suffice
    assert "| 64 | 3 | 68 | 100,000 | driver |" in text
    assert report_appo.projected_steps_per_s(2, 2, {"runner": 40.0, "driver": 10.0, "learner": 28.0}) == (
        50_000.0,
        "runners",
    )


def test_report_appo_ceiling_from_cpu_costs_and_rllib_rate(tmp_path, monkeypatch):
    monkeypatch.setattr(report, "RESULTS", tmp_path)
    write_lines(tmp_path / "appo_throughput_flywheel.jsonl", [{"steps_per_s": 16_000.0, **appo_costs(15.0)}])
    write_lines(
        tmp_path / "appo_throughput_rllib.jsonl", [{"steps_per_s": 5_000.0, "trained_per_sampled_step": 1.0}]
    )
    text = "\n".join(report_appo._ceiling_lines())
    # 40 + 10 + 15 x 2 = 80 µs: 25,000 steps/s on two cores; the driver 1e6 / 40 = 25,000 too
    assert "= 30.0 learning = 80.0 µs" in text and "2e6 / 80.0 =\n25,000 env steps/s" in text
    assert "5× RLlib's 5,000 is 25,000 env steps/s: 100% of that ceiling" in text
    assert "as busy as in\nthe turns above (64%), it needs at most 51.2 µs per step" in text
    assert (
        "would total 65.0 µs per\nstep, a two-core ceiling of 30,769 env steps/s" in text
    )  # 40 + 10 + 15 x 1


class Chunk:
    """A stand-in RLlib episode chunk: id, return, done flag and its env steps (len)."""

    def __init__(self, id_: str, rewards: float, done: bool, steps: int) -> None:
        self.id_, self.is_done, self._rewards, self._steps = id_, done, rewards, steps

    def get_return(self) -> float:
        return self._rewards

    def __len__(self) -> int:
        return self._steps


def test_watch_takes_the_mean_over_full_windows_and_records_the_first_crossing_once():
    watch = ThresholdWatch({"env": "E-v0", "threshold": 10.0, "window": 3}, max_seconds=60.0)
    watch.start()
    for ret, steps in ((30.0, 10), (0.0, 20)):
        watch.add_finished(ret, steps)
    assert watch.best is None and not watch.done()  # 2 of 3 episodes: no mean yet
    watch.add_finished(3.0, 30)  # mean 11 over (30, 0, 3): reached
    watch.add_finished(0.0, 40)  # mean 1
    watch.add_finished(60.0, 50)  # mean 21: the best, but the crossing stays the first
    result = watch.result(55)
    assert watch.done()
    assert result["env_steps_to_threshold"] == 30
    assert result["seconds_to_threshold"] is not None and result["seconds_to_threshold"] <= result["seconds"]
    assert (result["best_mean_return"], result["env_steps_at_best"]) == (21.0, 50)
    assert result["last_mean_return"] == 21.0
    assert (result["env_steps"], result["num_episodes"], result["window"]) == (55, 5, 3)


def test_watch_sums_rllib_chunks_per_episode_and_counts_their_env_steps():
    watch = ThresholdWatch({"env": "E-v0", "threshold": 100.0, "window": 2}, max_seconds=0.0)
    watch.start()
    watch.add_chunks([Chunk("a", 10.0, False, 10), Chunk("b", 3.0, True, 3)])
    watch.add_chunks([Chunk("a", 5.0, True, 5), Chunk("c", 1.0, False, 1)])
    result = watch.result()
    assert list(watch.returns) == [3.0, 15.0]
    assert (result["env_steps"], result["env_steps_at_best"], result["best_mean_return"]) == (19, 19, 9.0)
    assert result["env_steps_to_threshold"] is None and result["seconds_to_threshold"] is None
    assert watch.done()  # max_seconds=0: out of time at once


def offpolicy_run(seconds_to: float | None, seconds: float | None, best: float | None = None) -> dict:
    """A per-algorithm off-policy result; a peer's has `seconds`, flywheel's (seconds=None) does not."""
    run = {
        "env_steps_to_threshold": 50_000 if seconds_to else None,
        "seconds_to_threshold": seconds_to,
        "cpu_seconds_to_threshold": seconds_to and seconds_to + 1,
        "last_mean_return": 400.0,
    }
    if seconds is not None:
        run.update(seconds=seconds, env_steps_per_s=500.0, best_mean_return=best, env_steps_at_best=40_000)
    return run


def test_report_offpolicy_ratios_are_lower_bounds_when_a_peer_did_not_reach(tmp_path, monkeypatch):
    monkeypatch.setattr(report, "RESULTS", tmp_path)
    monkeypatch.setattr(report, "HERE", tmp_path)
    ours = {"dqn": offpolicy_run(100.0, None), "sac": offpolicy_run(20.0, None)}
    write_lines(tmp_path / "learning_offpolicy_flywheel.jsonl", [ours])
    rllib = {
        "dqn": offpolicy_run(None, 600.4, best=336.0),
        "sac": {"error": "ValueError: z"},
        "torch_threads": 2,
    }
    write_lines(tmp_path / "learning_offpolicy_rllib.jsonl", [rllib])
    sb3 = [
        {"dqn": offpolicy_run(80.0, 80.0, best=451.0), "sac": offpolicy_run(30.0, 30.0, best=-240.0)},
        {"dqn": offpolicy_run(90.0, 90.0, best=455.0), "sac": offpolicy_run(None, 600.0, best=-300.0)},
    ]
    sb3 = [{**line, "torch_threads": 1} for line in sb3]
    write_lines(tmp_path / "learning_offpolicy_sb3.jsonl", sb3)
    report.main()
    text = (tmp_path / "RESULTS.md").read_text()
    assert "| flywheel | DQN | 1/1 | 100.0 | 101.0 | 50,000 | — (—) | 400.0 | 500 | 100.0 |" in text
    assert "| RLlib 2.60 | DQN | 0/1 | — | — | — | 336.0 (40,000) | 400.0 | 500 | 600.4 |" in text
    assert "| RLlib 2.60 | SAC | 0/0 | — | — | — | — (—) | — | — | — |" in text
    assert (
        "| Stable-Baselines3 | DQN | 2/2 | 85.0 | 86.0 | 50,000 | 453.0 (40,000) | 400.0 | 500 | 85.0 |"
        in text
    )
    assert (
        "| RLlib 2.60 ÷ flywheel | ≥ 3× | ≥ 6.00× (peer not reached in 600 s, best mean 336.0) (met) "
        "| not measured |"
    ) in text
    assert (
        "| Stable-Baselines3 ÷ flywheel | ≥ 1× | 0.85× (NOT met) | ≥ 15.75× (1/2 seeds reached; the others "
        "count at the seconds they trained) (met) |"
    ) in text
    assert "- RLlib 2.60 SAC: `ValueError: z`" in text


def test_report_offpolicy_bound_below_the_target_is_not_met(tmp_path, monkeypatch):
    monkeypatch.setattr(report, "RESULTS", tmp_path)
    monkeypatch.setattr(report, "HERE", tmp_path)
    write_lines(tmp_path / "learning_offpolicy_flywheel.jsonl", [{"dqn": offpolicy_run(100.0, None)}])
    write_lines(
        tmp_path / "learning_offpolicy_rllib.jsonl", [{"dqn": offpolicy_run(None, 250.0, best=300.0)}]
    )
    report.main()
    text = (tmp_path / "RESULTS.md").read_text()
    assert (
        "| RLlib 2.60 ÷ flywheel | ≥ 3× | ≥ 2.50× (peer not reached in 250 s, best mean 300.0) (NOT met) |"
        in text
    )


def test_mujoco_report_curves_partial_runs_and_ratios(tmp_path, monkeypatch):
    import mujoco_report

    monkeypatch.setattr(mujoco_report, "RESULTS", tmp_path)
    (tmp_path / "mujoco").mkdir()
    (tmp_path / "mujoco" / "flywheel_Hopper-v5_seed0.jsonl").write_text(
        '{"t": 2048, "r": 10.0, "cpu_s": 1.0}\n{"t": 4096, "r": 30.0, "cpu_s": 2.0}\n'
    )
    (tmp_path / "mujoco" / "flywheel_Hopper-v5_seed1.jsonl").write_text('{"t": 2048, "r": 20.0}\n')
    done = {"env": "Hopper-v5", "seed": 1, "final_return": 20.0, "eval_return": 25.0}
    (tmp_path / "mujoco_flywheel.jsonl").write_text(
        json.dumps({**done, "final_return": 5.0, "env_steps_per_s": 1.0})
        + "\n"
        + json.dumps({**done, "env_steps_per_s": 140.0, "env_steps_per_cpu_s": 300.0})
        + "\n"
    )
    (tmp_path / "mujoco_sb3.jsonl").write_text(
        json.dumps({**done, "final_return": 10.0, "env_steps_per_s": 100.0, "env_steps_per_cpu_s": 250.0})
        + "\n"
    )
    assert [row["final_return"] for row in mujoco_report.summaries("flywheel", "Hopper-v5")] == [
        20.0
    ]  # the latest
    lines = mujoco_report.mujoco_section()
    (row,) = [line for line in lines if line.startswith("| flywheel |")]
    assert (
        row
        == "| flywheel | 1 (1) | 20 | 20 | 25 | 140 | 300 | seed 0: 30 at 4,096 steps, 2,048 steps per CPU-s |"
    )
    assert (
        "- env steps/s, flywheel ÷ SB3: 1.40× wall-clock (n=1; target ≥ 1.3×: met); "
        "1.20× per CPU-second (n=1; target ≥ 1.3×: NOT met)" in lines
    )
    assert "- final return, flywheel mean 20 vs SB3 mean 10: ≥ SB3" in lines
    assert mujoco_report._at([(0, 1.0, None), (10, 2.0, None)], 5) == 1.0


def test_report_ppo_parity_rows_per_label_and_ratio_per_seed(tmp_path, monkeypatch):
    import report_ppo_parity

    monkeypatch.setattr(report, "RESULTS", tmp_path)
    rows = [
        {"label": "rllib", "seed": 0, "env_steps_to_target": 160_000, "env_steps_to_own_metric": 88_000},
        {"label": "flywheel", "seed": 0, "env_steps_to_target": 120_000, "env_steps_to_own_metric": 120_000},
        {"label": "flywheel", "seed": 1, "env_steps_to_target": None, "env_steps_to_own_metric": None},
    ]
    write_lines(tmp_path / "ppo_parity.jsonl", rows)
    lines = report_ppo_parity.ppo_parity_section()
    assert (
        "| RLlib 2.60 | 160,000 | – | 160,000 |" in lines and "| RLlib 2.60 | 88,000 | – | 88,000 |" in lines
    )
    assert any(line.endswith("| 120,000 | not reached | 120,000 |") for line in lines)
    assert lines[-1] == "flywheel / RLlib, medians of env steps to a last-100 mean of 450: 0.75."


def test_report_offpolicy_speed_tables_and_ratios_per_repeat(tmp_path, monkeypatch):
    import report_offpolicy_speed

    monkeypatch.setattr(report, "RESULTS", tmp_path)
    write_lines(tmp_path / "tqc_speed_rllib.jsonl", [{"env_steps_per_s": 20.0}, {"env_steps_per_s": 26.0}])
    write_lines(
        tmp_path / "tqc_speed_flywheel.jsonl", [{"env_steps_per_s": 60.0}, {"env_steps_per_s": 104.0}]
    )
    write_lines(tmp_path / "iql_speed_rllib.jsonl", [{"error": "RuntimeError: boom"}])
    write_lines(tmp_path / "iql_speed_flywheel.jsonl", [{"rows_per_s": 5000.0}])
    lines = report_offpolicy_speed.offpolicy_speed_section()
    tqc = lines.index("### TQC env steps/s")
    assert lines[tqc + 4 : tqc + 6] == ["| RLlib 2.60 | 23 | 20, 26 |", "| flywheel | 82 | 60, 104 |"]
    assert any(line.startswith("flywheel / RLlib: 3.50× (met)") and "3.00, 4.00" in line for line in lines)
    assert any(
        "RuntimeError: boom" in line for line in lines[lines.index("### IQL rows/s (updates/s x 256)") :]
    )


def test_report_tuned_examples_medians_and_ratios(tmp_path, monkeypatch):
    monkeypatch.setattr(report, "RESULTS", tmp_path)
    run = {"example": "ppo/cartpole_ppo", "final_metric": 460.0, "best_metric": 471.5, "iterations": 30}
    run |= {"load_start": 12.0}
    write_lines(
        tmp_path / "tuned_examples.jsonl",
        [
            run
            | {"framework": "flywheel", "seed": 0, "passed": True, "env_steps_to_target": 120_000}
            | {"seconds_to_target": 50.0},
            run
            | {"framework": "flywheel", "seed": 1, "passed": True, "env_steps_to_target": 160_000}
            | {"seconds_to_target": 70.0},
            run
            | {"framework": "flywheel", "seed": 2, "passed": False, "env_steps_to_target": None}
            | {"seconds_to_target": None, "final_metric": 300.0},
            run
            | {"framework": "rllib", "seed": None, "passed": True, "env_steps_to_target": 100_000}
            | {"seconds_to_target": 240.0},
            run
            | {"framework": "rllib", "seed": 1, "passed": False, "env_steps_to_target": None}
            | {"seconds_to_target": None, "iterations": None, "error": "Exception: node timed out"},
        ],
    )
    text = "\n".join(report_tuned.tuned_section())
    assert "| ppo/cartpole_ppo | flywheel (ported) | 2 | no | — | — | 300.0 | 471.5 | 30 | 12.0 |" in text
    assert "| ppo/cartpole_ppo | RLlib 2.60 | — | yes | 100,000 | 240 | 460.0 | 471.5 | 30 | 12.0 |" in text
    # medians over the runs that reached the target: 140,000 and 60 s; ratios 1.40 and 4.00
    assert "| ppo/cartpole_ppo | 2/3 | 1/1 | 140,000 | 100,000 | 1.40 | 60 | 240 | 4.00 |" in text
    assert "- ppo/cartpole_ppo, RLlib 2.60, seed 1: `Exception: node timed out`" in text


def test_tuned_examples_reads_nested_and_flat_results_and_finds_the_examples_folder(tmp_path):
    nested = {"env_runners": {"episode_return_mean": 451.5, "num_env_steps_sampled_lifetime": 4032}}
    assert tuned_examples._lookup(nested, tuned_examples.RETURN_KEY) == 451.5
    assert (
        tuned_examples._lookup({"env_runners/num_env_steps_sampled_lifetime": 8064}, tuned_examples.STEPS_KEY)
        == 8064
    )
    assert (
        tuned_examples._lookup(
            {"env_runners": {"episode_return_mean": float("nan")}}, tuned_examples.RETURN_KEY
        )
        is None
    )
    assert tuned_examples.examples_folder(tmp_path) == tmp_path  # a folder of <algo>/<name>.py files
    (tmp_path / "rllib" / "examples" / "algorithms").mkdir(parents=True)
    assert tuned_examples.examples_folder(tmp_path) == tmp_path / "rllib" / "examples" / "algorithms"


def test_tuned_examples_holds_a_run_to_the_metric_the_harness_picks():
    key = tuned_examples.RETURN_KEY
    assert tuned_examples.success_metric({}, None, 450.0) == (key, 450.0)
    assert tuned_examples.success_metric({key: 900.0, "training_iteration": 200}, None, 100.0) == (key, 900.0)
    both = {key: 900.0, tuned_examples.EVAL_RETURN_KEY: 400.0}
    assert tuned_examples.success_metric(both, None, 100.0) == (tuned_examples.EVAL_RETURN_KEY, 400.0)
    assert tuned_examples.success_metric(both, {"custom/metric": 7}, 100.0) == ("custom/metric", 7.0)
