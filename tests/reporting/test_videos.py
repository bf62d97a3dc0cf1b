"""mp4 files from frames and from the videos a result holds."""

import imageio.v2 as imageio
import numpy as np
import pytest

from flywheel.errors import FlywheelError
from flywheel.reporting import VideoWriter, save_video


def frames(t=5, h=6, w=8):
    """t gray frames, frame k filled with 40 k."""
    return np.stack([np.full((h, w, 1), 40 * k, np.uint8) for k in range(t)])


def test_save_video_writes_an_mp4_with_every_frame(tmp_path):
    path = save_video(frames(), tmp_path / "sub" / "clip.mp4", fps=10)
    read = imageio.mimread(path)
    # Odd sizes are padded to even ones (yuv420p); gray becomes RGB.
    assert len(read) == 5 and read[0].shape == (6, 8, 3)
    assert [int(round(f[:6, :8].mean())) for f in read] == pytest.approx([0, 40, 80, 120, 160], abs=3)


def test_save_video_pads_odd_sides_and_scales_float_frames(tmp_path):
    clip = np.ones((2, 5, 7, 3), np.float32) * 0.5
    read = imageio.mimread(save_video(clip, tmp_path / "f.mp4"))
    assert read[0].shape == (6, 8, 3) and abs(int(read[0][:5, :7].mean()) - 128) <= 3


def test_save_video_rejects_what_is_not_frames(tmp_path):
    with pytest.raises(
        FlywheelError, match=r"save_video expects frames \[T, H, W, C\] with C 1 or 3, got shape \(5, 6\)"
    ):
        save_video(np.zeros((5, 6)), tmp_path / "x.mp4")


def test_video_writer_saves_each_video_of_a_result(tmp_path):
    writer = VideoWriter(tmp_path)
    result = {
        "training_iteration": 7,
        "env_runners": {"episode_return_mean": 1.0},
        "evaluation": {"env_runners": {"episode_videos": [frames()[None], frames(t=3)[None]]}},
    }
    writer.write(result)
    writer.write({"training_iteration": 8, "env_runners": {"episode_return_mean": 2.0}})
    writer.close()
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == [
        "evaluation_env_runners_episode_videos_0_000007.mp4",
        "evaluation_env_runners_episode_videos_1_000007.mp4",
    ]
    assert writer.paths == [str(tmp_path / name) for name in names]
    assert len(imageio.mimread(writer.paths[1])) == 3
