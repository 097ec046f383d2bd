"""The messages a model call sends again, read once: each call of a conversation sends the
conversation so far as `gen_ai.input.messages`, so its JSON text starts as the last call's did
and only the messages after that are new. Of each conversation the process keeps the last
text's length and digest and the turns read from it; a text that extends it is read from
where it ended. Reading the whole conversation at every call made a live session's requests
grow with its length (bench.ingest).

Nothing is trusted but the text: the kept turns are used only when the new text begins with
the very characters they were read from (by digest), so the turns are those a full reading
gives, whoever sent the text."""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from transfer.formats.conversation import Turn

MAX_KEPT_CHARS = 16 * 1024**2  # the texts' characters kept for, over every conversation
MAX_TEXT_CHARS = 8 * 1024**2  # a longer text is read whole and not kept


@dataclass(frozen=True, slots=True)
class _Read:
    length: int  # of the text, which ends with "]"
    digest: bytes  # of the text but its closing "]"
    turns: tuple[Turn, ...]


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class SentAgain:
    """Each conversation's last messages text as read (bounded by the characters it was read
    from; the least recent goes first). Safe across threads: large bodies decode in threads."""

    def __init__(self, max_chars: int = MAX_KEPT_CHARS) -> None:
        self.max_chars = max_chars
        self._reads: OrderedDict[str, _Read] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()

    def turns(
        self, conversation: str, text: str, read: Callable[[str], list[Turn] | None]
    ) -> list[Turn] | None:
        """The turns of a JSON array of messages: `read(text)` of only what follows the
        conversation's last text when `text` extends it, else of the whole text (None when it
        is not an array of messages)."""
        with self._lock:
            last = self._reads.get(conversation)
        turns: list[Turn] | None = None
        if last is not None and _same(text, last):  # the same call read again
            return list(last.turns)
        if last is not None and _extends(text, last):
            new = read("[" + text[last.length :])
            if new is not None:
                turns = [*last.turns, *new]
        if turns is None:
            turns = read(text)
        if turns is not None and text.endswith("]") and len(text) <= MAX_TEXT_CHARS:
            self._keep(conversation, _Read(len(text), _digest(text[:-1]), tuple(turns)))
        return turns

    def _keep(self, conversation: str, read: _Read) -> None:
        with self._lock:
            old = self._reads.pop(conversation, None)
            self._chars += read.length - (old.length if old else 0)
            self._reads[conversation] = read
            while self._chars > self.max_chars and self._reads:
                _, dropped = self._reads.popitem(last=False)
                self._chars -= dropped.length


def _same(text: str, last: _Read) -> bool:
    """Whether `text` is the last text itself."""
    n = last.length
    return len(text) == n and text.endswith("]") and _digest(text[:-1]) == last.digest


def _extends(text: str, last: _Read) -> bool:
    """Whether `text` is the last text with more messages after it: the same characters up to
    its closing bracket, then a comma."""
    n = last.length
    return len(text) > n and text[n - 1] == "," and _digest(text[: n - 1]) == last.digest


SENT_AGAIN = SentAgain()  # the process's, shared by the receiver's requests and imports
