"""What a section of the benchmark report needs from the Bench that runs it."""

from __future__ import annotations

import uuid

from resolvers.tuning import Tuning


class Report:
    """Mixed into Bench, which provides say(), sample(), the tuning under test and the
    run's repetitions."""

    tuning: Tuning
    size_name: str
    rounds: int
    page_rounds: int

    def say(self, line: str = "") -> None:
        raise NotImplementedError

    def sample(self, sessions: list[uuid.UUID], n: int) -> list[uuid.UUID]:
        raise NotImplementedError
