"""Pacing for the pymysql drivers beside it (connect_churn.py, old_view.py): rounds at a fixed rate.

pace = Pacer(rate=50.0)      # rounds a second for this thread or process (0: no pacing)
while running:
    pace.wait()              # sleeps until the next round is due
    ...one round...
pace.restart()               # after a hold: the rounds not run are not owed
"""

from __future__ import annotations

import time

BEHIND_S = 1.0  # a round this late (a starved host) restarts the schedule instead of catching up in a burst


class Pacer:
    def __init__(self, rate: float) -> None:
        self.period = 1.0 / rate if rate > 0 else 0.0
        self.due = time.monotonic()

    def restart(self) -> None:
        self.due = time.monotonic()

    def wait(self) -> None:
        if not self.period:
            return
        now = time.monotonic()
        if self.due > now:
            time.sleep(self.due - now)
        elif now - self.due > BEHIND_S:
            self.due = now
        self.due += self.period
