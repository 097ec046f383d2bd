"""Fair queuing across accounts (issue #37): seats by cost (priced in test_admission.py), the
least-served account first, waiting never charged, a lone account never held back; and the
event loop's turns, round robin across accounts."""

from __future__ import annotations

import asyncio

import pytest

from resolvers.turns import LoopTurns
from similar_sessions.fair_queue import FairQueue, QueueFull


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def request(
    fair: FairQueue,
    account: str,
    until: asyncio.Event,
    *,
    cost: int = 1,
    seen: list[str] | None = None,
    name: str = "",
) -> asyncio.Task[None]:
    """A request of `account` costing `cost`, holding its seats until `until` is set; once
    seated it adds `name` to `seen`."""

    async def run() -> None:
        async with fair.seated(account, cost):
            if seen is not None:
                seen.append(name)
            await until.wait()

    return asyncio.create_task(run())


async def test_a_lone_account_takes_every_seat_and_waits_only_for_its_own_work() -> None:
    fair = FairQueue(4, 1)
    release = asyncio.Event()
    started: list[str] = []
    tasks = [request(fair, "lone", release, seen=started, name=str(n)) for n in range(4)]
    await settle()
    assert sorted(started) == ["0", "1", "2", "3"] and fair.free == 0  # every seat, nobody refused
    release.set()
    await asyncio.gather(*tasks)
    assert fair.free == 4 and fair.flows == {}


async def test_a_wide_request_leaves_one_seat_for_requests_of_one() -> None:
    fair = FairQueue(4, 8)
    release = asyncio.Event()
    started: list[str] = []

    def one(name: str, account: str, cost: int) -> asyncio.Task[None]:
        return request(fair, account, release, cost=cost, seen=started, name=name)

    tasks = [one("pass", "loud", 3)]
    await settle()
    tasks.append(one("page", "loud", 2))  # 3 + 2 would take the last
    await settle()
    assert started == ["pass"] and fair.free == 1
    tasks.append(one("viewer", "quiet", 1))  # the seat kept for it
    await settle()
    assert started == ["pass", "viewer"] and fair.free == 0
    release.set()
    await asyncio.gather(*tasks)
    assert started == ["pass", "viewer", "page"] and fair.free == 4
    assert fair.width(10) == 3 and FairQueue(1, 1).width(3) == 1  # at most all but one


async def test_the_least_served_account_goes_first_and_waiting_is_never_charged() -> None:
    clock = Clock()
    fair = FairQueue(1, 8, clock=clock)
    gates = {name: asyncio.Event() for name in ("a1", "a2", "b1", "b2")}
    order: list[str] = []

    def one(name: str) -> asyncio.Task[None]:
        return request(fair, name[0], gates[name], seen=order, name=name)

    first = one("a1")
    await settle()
    waiting = [one(n) for n in ("a2", "b1", "b2")]
    await settle()
    clock.now += 10  # a1 runs 10 s; b waits those 10 s, which it is not charged
    gates["a1"].set()
    await settle()
    assert order == ["a1", "b1"]  # a had 10 seat-seconds, b none
    clock.now += 2
    gates["b1"].set()
    await settle()
    assert order == ["a1", "b1", "b2"]  # b has 2 (its 10 s of waiting not counted), a 10
    assert fair.flows["b"].work(clock.now) == pytest.approx(2.0)
    assert fair.flows["a"].work(clock.now) == pytest.approx(10.0)
    gates["b2"].set()
    gates["a2"].set()
    await asyncio.gather(first, *waiting)
    assert order == ["a1", "b1", "b2", "a2"] and fair.flows == {}


async def test_an_account_arriving_later_starts_level_with_those_queuing() -> None:
    clock = Clock()
    fair = FairQueue(1, 8, clock=clock)
    release = asyncio.Event()
    order: list[str] = []

    def one(name: str, account: str) -> asyncio.Task[None]:
        return request(fair, account, release, seen=order, name=name)

    tasks = [one("old", "old")]
    await settle()
    tasks.append(one("old again", "old"))
    await settle()
    clock.now += 100  # old has 100 seat-seconds: a newcomer is not owed all of them
    tasks.append(one("new", "new"))
    await settle()
    assert fair.flows["new"].done == pytest.approx(fair.flows["old"].work(clock.now))
    release.set()
    await asyncio.gather(*tasks)
    assert order == ["old", "new", "old again"]  # level: the one started fewer times first


async def test_only_a_full_queue_of_the_account_itself_refuses() -> None:
    fair = FairQueue(1, 2)
    release = asyncio.Event()
    tasks = [request(fair, "loud", release) for _ in range(3)]  # 1 running, 2 waiting
    await settle()
    with pytest.raises(QueueFull) as full:
        async with fair.seated("loud", 1):
            pass
    assert full.value.waiting == 2 and full.value.retry_after_s == 1
    tasks.append(request(fair, "quiet", release))  # its own queue has room
    await settle()
    assert len(fair.flows["quiet"].waiting) == 1
    release.set()
    await asyncio.gather(*tasks)
    assert fair.free == 1 and fair.flows == {}


async def test_a_request_gone_while_waiting_holds_nothing() -> None:
    fair = FairQueue(1, 4)
    release = asyncio.Event()
    running = request(fair, "a", release)
    await settle()
    gone = request(fair, "b", release)
    await settle()
    gone.cancel()
    await settle()
    assert "b" not in fair.flows
    release.set()
    await running
    assert fair.free == 1 and fair.flows == {}


async def test_turns_go_round_the_accounts_waiting_one_each() -> None:
    turns = LoopTurns()
    order: list[str] = []

    async def step(name: str) -> None:
        await turns.take(name[0])
        order.append(name)

    await asyncio.gather(*(step(n) for n in ("a1", "a2", "a3", "a4", "b1", "b2", "c1")))
    # a1 found the loop free; then a round: a, b, c, a, b, a
    assert order == ["a1", "a2", "b1", "c1", "a3", "b2", "a4"]
    assert not turns.taken or turns.waiting == {}
    await settle()
    assert not turns.taken and turns.waiting == {}


async def test_a_turn_lasts_the_step_that_took_it() -> None:
    turns = LoopTurns()
    seen: list[str] = []

    async def long_step() -> None:
        await turns.take("a")
        seen.append("a starts")
        seen.append("a ends")  # same step: nothing else runs between

    async def other() -> None:
        await turns.take("b")
        seen.append("b")

    await asyncio.gather(long_step(), other())
    assert seen == ["a starts", "a ends", "b"]
