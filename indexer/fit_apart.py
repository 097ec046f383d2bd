"""`python -m indexer.fit_apart ACCOUNT TEMPLATE_MIN_SESSIONS MIN_SHARE_PERCENT`: one account's
lexical fit built by a process of its own, on the database at $SIMILAR_SESSIONS_FIT_URL (the
environment, not the command line, carries its password). It writes the fit to stdout: the
sessions it was fitted on (8 bytes, little-endian), then its weights (`Fit.to_bytes`).

A watching indexer starts one for each new fit (indexer.fitting.Refits). Read and counted in
the indexer's own process, a fit of 25,000 passages took its event loop in turns with the
passes, and made every pass ten times as long for the minutes it lasted; its millions of
shingles counted also stayed in the indexer's memory. Apart, the fit takes another core if
there is one, and its memory ends with it. It runs at a lower priority (`NICENESS`): on a
machine with no core to spare, the passes it shares one with are a running session's
freshness, while the fit only decides how soon the account's new words count."""

from __future__ import annotations

import asyncio
import os
import sys
from uuid import UUID

from config.logs import configure_logging
from data import indexing as sql
from data.engine import make_engine
from indexer.fitting import FIT_URL, SESSIONS_BYTES, built_fit


async def _fitted(url: str, account_id: UUID, template_min_sessions: int, share: int) -> bytes:
    engine = make_engine(url, pool_size=1)
    try:
        repeat = sql.RepeatRule(min_share_percent=share)
        fit = await built_fit(engine, account_id, template_min_sessions, repeat)
    finally:
        await engine.dispose()
    return fit.sessions.to_bytes(SESSIONS_BYTES, "little") + fit.to_bytes()


# Added to the process's niceness: a tenth of a pass's share of a contended core (Linux).
NICENESS = 10


def main(argv: list[str]) -> int:
    configure_logging("WARNING")
    os.nice(NICENESS)
    account, template_min_sessions, share = UUID(argv[0]), int(argv[1]), int(argv[2])
    try:
        out = asyncio.run(_fitted(os.environ[FIT_URL], account, template_min_sessions, share))
    except Exception as exc:  # the reason on one line, the last of stderr, for the indexer
        sys.stderr.write(f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}\n")
        return 1
    sys.stdout.buffer.write(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
