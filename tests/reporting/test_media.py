"""Non-scalar result values in TensorBoard: images, image batches, videos (animated GIFs), histograms."""

import io

import numpy as np
import pytest
from PIL import Image
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from flywheel import PPOConfig
from flywheel.reporting import CSVWriter, TensorBoardWriter
from flywheel.reporting.media import to_media


def events_of(log_dir):
    events = EventAccumulator(str(log_dir), size_guidance={"images": 0, "histograms": 0})
    events.Reload()
    return events


@pytest.mark.parametrize(
    ("value", "kind", "shape"),
    [
        (np.zeros((5, 6)), "image", (5, 6, 1)),
        (np.zeros((3, 5, 6), np.uint8), "image", (5, 6, 3)),
        (np.zeros((5, 6, 4)), "image", (5, 6, 4)),
        (np.zeros((2, 1, 5, 6)), "images", (2, 5, 6, 1)),
        (np.zeros((2, 5, 6, 3)), "images", (2, 5, 6, 3)),
        (np.zeros((1, 7, 3, 5, 6)), "video", (7, 5, 6, 3)),
        (np.zeros((1, 7, 5, 6, 1), np.uint8), "video", (7, 5, 6, 1)),
        (np.arange(4.0), "histogram", (4,)),
        ([1, 2.5, 3], "histogram", (3,)),
    ],
)
def test_shapes_and_what_they_draw_as(value, kind, shape):
    (media,) = to_media("k", value)
    assert (media.tag, media.kind, media.data.shape) == ("k", kind, shape)


def test_batches_of_videos_and_lists_get_one_tag_per_element():
    videos = to_media("v", np.ones((2, 3, 3, 4, 4)))
    assert [(m.tag, m.kind, m.data.dtype, m.data.max()) for m in videos] == [
        ("v/0", "video", np.uint8, 255),
        ("v/1", "video", np.uint8, 255),
    ]
    listed = to_media("s", [np.zeros((4, 4)), np.zeros((1, 2, 3, 4, 4))])
    assert [(m.tag, m.kind) for m in listed] == [("s/0", "image"), ("s/1", "video")]


@pytest.mark.parametrize(
    "value",
    [
        np.zeros((5, 6, 7)),
        np.zeros((2, 2, 2, 2, 2, 2)),
        np.array(["a"]),
        [],
        ["a", "b"],
        [np.zeros((5, 6, 7))],
        object(),
    ],
)
def test_what_cannot_be_drawn(value):
    assert to_media("k", value) is None


def test_tensorboard_writes_images_videos_and_histograms(tmp_path):
    frames = np.zeros((1, 4, 3, 8, 6), dtype=np.uint8)
    frames[0, :, 0] = np.arange(4)[:, None, None] * 60  # the red channel brightens frame by frame
    result = {
        "training_iteration": 3,
        "img": np.full((8, 6, 3), 0.5),
        "gray": np.zeros((8, 6), np.uint8),
        "batch": np.zeros((2, 3, 8, 6), np.uint8),
        "video": frames,
        "actions": [0, 1, 1, 2],
        "text": "no image",
    }
    with (
        TensorBoardWriter(tmp_path) as writer,
        pytest.warns(UserWarning, match=r"TensorBoardWriter skips 'cube'"),
    ):
        writer.write({**result, "cube": np.zeros((5, 5, 5))})
    events = events_of(tmp_path)
    assert sorted(events.Tags()["images"]) == ["batch", "gray", "img", "video"]
    assert events.Tags()["histograms"] == ["actions"]
    image = events.Images("img")[0]
    assert (image.step, image.width, image.height) == (3, 6, 8)
    video = events.Images("video")[0]
    assert (video.step, video.width, video.height) == (3, 6, 8)
    gif = Image.open(io.BytesIO(video.encoded_image_string))
    assert (gif.format, gif.n_frames, gif.info["duration"], gif.info["loop"]) == ("GIF", 4, 50, 0)
    gif.seek(3)
    assert gif.convert("RGB").getpixel((0, 0)) == (180, 0, 0)
    histogram = events.Histograms("actions")[0].histogram_value
    assert (histogram.num, histogram.min, histogram.max, histogram.sum) == (4, 0, 2, 4)


def test_videos_logged_by_runners_reach_the_result_and_tensorboard(tmp_path):
    def log_frames(*, episode, metrics_logger, **kwargs):
        video = np.zeros((1, 3, 3, 4, 4), np.uint8)  # [N, T, C, H, W]
        metrics_logger.log_value("episode_videos", video, reduce="item_series")
        metrics_logger.log_value("last_video", video, reduce="item")

    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .training(train_batch_size_per_learner=128, minibatch_size=64, num_epochs=1)
        .callbacks(on_episode_end=log_frames)
        .debugging(seed=1)
    )
    algo = config.build_algo()
    result = algo.train()
    algo.stop()
    runners = result["env_runners"]
    assert len(runners["episode_videos"]) == runners["num_episodes"] > 0
    assert runners["episode_videos"][0].shape == (1, 3, 3, 4, 4) and runners["last_video"].shape == (
        1,
        3,
        3,
        4,
        4,
    )
    with TensorBoardWriter(tmp_path / "tb") as writer:
        writer.write(result)
    tags = events_of(tmp_path / "tb").Tags()["images"]
    assert "env_runners/last_video" in tags and "env_runners/episode_videos/0" in tags
    with CSVWriter(tmp_path / "r.csv") as writer, pytest.warns(UserWarning) as caught:
        writer.write(result)
    assert len(caught) == 1 and "'env_runners/episode_videos', 'env_runners/last_video'" in str(
        caught[0].message
    )
