"""The code blocks of docs/concepts/environments.md and docs/concepts/pixels.md run as written."""

import re


def test_environments_page_blocks_run(run_doc_blocks):
    run_doc_blocks("docs/concepts/environments.md", blocks=9)


def test_pixels_page_blocks_run(capsys, run_doc_blocks):
    namespace = run_doc_blocks("docs/concepts/pixels.md", blocks=8)
    out = capsys.readouterr().out
    assert out.startswith(
        "Box(0, 255, (84, 84, 4), uint8)\n(84, 84, 1) uint8\n(32, 84, 84, 1) uint8\n(32, 3, 84, 84, 1)\n"
        "Box(-1.0, 1.0, (42, 42, 4), float32)\n"
    )
    assert re.search(r"^PPO \d+\.\d+\nDQN \d+\.\d+\n\(1, \d+, 400, 600, 3\)\n", out, re.M), out
    assert namespace["out"]["path"].endswith("cartpole.mp4") and namespace["out"]["episode_len"] >= 8
    assert out.endswith("/cartpole_seed0/curves.png\n")
