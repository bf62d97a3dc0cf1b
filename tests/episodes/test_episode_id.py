import os
import re

from flywheel.episodes import MultiAgentEpisode, SingleAgentEpisode
from flywheel.episodes.episode_id import new_episode_id


def test_ids_are_32_hex_digits_unique_and_differ_up_front():
    ids = [new_episode_id() for _ in range(10_000)]
    assert all(re.fullmatch(r"[0-9a-f]{32}", i) for i in ids)
    assert len(set(ids)) == 10_000
    assert len({i[:8] for i in ids}) > 9_900  # reprs show the first 8 digits


def test_episodes_draw_fresh_ids_unless_given():
    a, b = SingleAgentEpisode(), MultiAgentEpisode()
    assert len({a.id_, b.id_}) == 2 and len(a.id_) == len(b.id_) == 32
    assert SingleAgentEpisode("mine").id_ == "mine" and MultiAgentEpisode("m").id_ == "m"


def test_a_forked_child_draws_other_ids_than_its_parent():
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: send its next ids and leave at once
        os.write(write, "".join(new_episode_id() for _ in range(3)).encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    child = os.read(read, 96).decode()
    os.close(read)
    parent = "".join(new_episode_id() for _ in range(3))
    assert len(child) == 96 and {child[i : i + 32] for i in range(0, 96, 32)}.isdisjoint(
        {parent[i : i + 32] for i in range(0, 96, 32)}
    )
