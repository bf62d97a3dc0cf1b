"""Turn-taking between benchmark processes, so that peers are timed over the same stretches of time.

This machine's speed swings by up to 2x within seconds (other tenants of the host share its cores).
Two frameworks timed one after the other can land in different phases, and their ratio then
measures the machine. Started side by side and timed in alternating turns, each turn lasting as
long as the lead's last one, they see the same phases alike. A process waiting for its turn sleeps.

The processes share a directory: `ready.<name>` files announce the end of each one's warm-up, and
a `baton` file names whose turn it is and how long the lead's last turn lasted.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path


class Turns:
    """One process's side of strict round-robin turns among `order` (the first name leads).

    The lead's turns last at least `lead_seconds`; every other turn lasts at least as long as the
    lead's turn before it. A process whose partner stops passing the turn (crashed, killed) gives
    up after `timeout_s` with an error naming it.
    """

    def __init__(
        self,
        directory: str | Path,
        order: list[str],
        me: str,
        *,
        rounds: int = 5,
        lead_seconds: float = 2.0,
        timeout_s: float = 300.0,
    ) -> None:
        if me not in order or len(set(order)) != len(order) or len(order) < 2:
            raise ValueError(f"Turns: expected {me!r} among two or more distinct names, got order={order}")
        self.dir = Path(directory)
        self.order = list(order)
        self.me = me
        self.rounds = rounds
        self.lead_seconds = lead_seconds
        self.timeout_s = timeout_s
        self._next = order[(order.index(me) + 1) % len(order)]
        self._last_lead_seconds = 0.0
        self._turns_taken = 0

    @property
    def is_lead(self) -> bool:
        return self.order[0] == self.me

    def ready(self) -> None:
        """Announces this process warmed up; the lead then waits until every other one is too."""
        (self.dir / f"ready.{self.me}").touch()
        if self.is_lead:
            for name in self.order[1:]:
                self._wait_for(lambda name=name: (self.dir / f"ready.{name}").exists(), name)

    def wait(self) -> float:
        """Blocks until it is this process's turn; returns the seconds the turn should last at least."""
        if self.is_lead and self._turns_taken == 0:
            return self.lead_seconds
        previous = self.order[self.order.index(self.me) - 1]
        self._wait_for(self._mine, previous)
        return self.lead_seconds if self.is_lead else self._last_lead_seconds

    def pass_on(self, seconds: float) -> None:
        """Ends this turn (which lasted `seconds`) and hands the next one on."""
        self._turns_taken += 1
        lead_seconds = seconds if self.is_lead else self._last_lead_seconds
        tmp = self.dir / f"baton.{self.me}"
        tmp.write_text(f"{self._next} {lead_seconds!r}")
        os.replace(tmp, self.dir / "baton")

    def finish(self) -> None:
        """Announces this process took all its turns and waits until every other one has too, so
        that none shuts down (RLlib stops Ray, which takes the CPU for seconds) during a turn."""
        (self.dir / f"done.{self.me}").touch()
        for name in self.order:
            self._wait_for(lambda name=name: (self.dir / f"done.{name}").exists(), name)

    def _mine(self) -> bool:
        try:
            name, seconds = (self.dir / "baton").read_text().split()
        except (FileNotFoundError, ValueError):
            return False
        if name != self.me:
            return False
        self._last_lead_seconds = float(seconds)
        return True

    def _wait_for(self, condition: Callable[[], bool], partner: str) -> None:
        deadline = time.monotonic() + self.timeout_s
        while not condition():
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"{self.me}: no turn from {partner!r} within {self.timeout_s:.0f} s "
                    f"(in {self.dir}); did it crash? See its log."
                )
            time.sleep(0.005)
