"""What a section of the benchmark report needs from the Bench that runs it."""

from __future__ import annotations

import uuid

from resolvers.tuning import Tuning


class Report:
    """Mixed into Bench, which provides say(), sample() and the tuning under test."""

    tuning: Tuning

    def say(self, line: str = "") -> None:
        raise NotImplementedError

    def sample(self, sessions: list[uuid.UUID], n: int) -> list[uuid.UUID]:
        raise NotImplementedError
