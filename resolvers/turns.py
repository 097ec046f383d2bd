"""The event loop's turns, handed out fairly across accounts.

One process serves every account on one event loop, and a request's work on it cannot be
interrupted: a field's answer is completed (graphql-core turning it into JSON-ready values)
in one stretch, right after its resolver returns. A request asking many fields at once (29
aliases of a page of 100 sessions) has as many stretches ready together, and the loop runs
ready work first come, first served: another account's small request waited behind all of
them, at each of its own steps.

So an async resolver, once its answer is ready, takes a turn before it returns
(`TakesTurn`): one turn at a time in the process, the accounts waiting served round robin,
one turn each. A turn ends when the step that took it does (the loop runs the release right
after it), so a stretch of one account's request is followed by the next account's rather
than by the rest of its own. A lone account takes its turns back to back, with nothing to
wait for: work-conserving, as the seats are (similar_sessions/fair_queue.py).

Not every async field takes one: a field asked many times side by side (`runtimeSession`
as aliases, `similarSessions` on each session of a page) whose own fields read through
DataLoaders is completed all in one step, because a DataLoader batches what is asked in one
step of the loop: completed turn by turn, a page of 50 would read its timelines in 50
statements rather than one. Those fields' completions are small (one session) or their
answers come from one batch.

The other steps of a request (reading its body, authenticating, parsing the query, writing
the answer) take no turn: each is one stretch, and there is one of each per request."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

from strawberry.extensions import FieldExtension
from strawberry.types import Info


class LoopTurns:
    """One turn at a time; the accounts waiting for one served round robin."""

    def __init__(self) -> None:
        self.taken = False
        self.waiting: dict[str, deque[asyncio.Future[None]]] = {}  # in the order they are served

    async def take(self, account: str) -> None:
        """Wait for a turn: at once when nobody holds one or waits, else in the account's
        place of the round. The turn ends when the caller's step does."""
        if not self.taken and not self.waiting:
            self._hold()
            return
        turn = asyncio.get_running_loop().create_future()
        self.waiting.setdefault(account, deque()).append(turn)
        await turn  # cancelled: the turn is skipped (a granted one still ends by itself)

    def _hold(self) -> None:
        self.taken = True
        asyncio.get_running_loop().call_soon(self._next)

    def _next(self) -> None:
        """End the turn, and give the next one to the account at the head of the round, which
        then goes to its end."""
        self.taken = False
        while self.waiting:
            account = next(iter(self.waiting))
            queue = self.waiting.pop(account)
            turn = queue.popleft()
            if queue:
                self.waiting[account] = queue  # back of the round
            if not turn.cancelled():
                turn.set_result(None)  # its task's step is scheduled before the release
                self._hold()
                return


class TakesTurn(FieldExtension):
    """A field whose resolver is async takes the loop's turn once its answer is ready, before
    graphql-core completes it (the field's stretch)."""

    async def resolve_async(
        self, next_: Callable[..., Awaitable[Any]], source: Any, info: Info, **kwargs: Any
    ) -> Any:
        answer = await next_(source, info, **kwargs)
        context = info.context
        await context.services.turns.take(str(context.principal.account_id))
        return answer
