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

    targets: list[tuple[str, str, bool]]

    def say(self, line: str = "") -> None:
        raise NotImplementedError

    def target(self, name: str, figure: str, met: bool) -> None:
        """A target of the performance issue, its figure in this run, and whether it is met;
        printed together at the end of the report."""
        self.targets.append((name, figure, met))

    def sample(self, sessions: list[uuid.UUID], n: int) -> list[uuid.UUID]:
        raise NotImplementedError
