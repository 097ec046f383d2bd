"""The report a latency run writes, handed to each of its sections: the lines said so far, the
targets measured, and what every section needs of the run (the tuning under test, the
repetitions, one seeded sample of sessions)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from resolvers.tuning import Tuning


@dataclass
class Report:
    tuning: Tuning
    size_name: str
    rounds: int
    page_rounds: int
    lines: list[str] = field(default_factory=list)
    targets: list[tuple[str, str, bool]] = field(default_factory=list)
    # one generator for the whole run: each section's sample depends on those before it
    rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(11))

    def say(self, line: str = "") -> None:
        """Print the line, and keep it for the written report."""
        print(line)
        self.lines.append(line)

    def target(self, name: str, figure: str, met: bool) -> None:
        """A target of the performance issue, its figure in this run, and whether it is met;
        said together by say_targets() at the end."""
        self.targets.append((name, figure, met))

    def sample(self, sessions: list[uuid.UUID], n: int) -> list[uuid.UUID]:
        """n of the sessions (all of them when there are no more), drawn without replacement."""
        if len(sessions) <= n:
            return list(sessions)
        return [sessions[i] for i in self.rng.choice(len(sessions), n, replace=False)]

    def say_targets(self) -> None:
        self.say("## Targets")
        self.say()
        self.say("| target | this run | met |")
        self.say("|---|---|---|")
        for name, figure, met in self.targets:
            self.say(f"| {name} | {figure} | {'yes' if met else 'no'} |")
        self.say()

    def write(self, path: Path) -> None:
        path.write_text("\n".join(self.lines) + "\n")
        print(f"\nwritten to {path}")
