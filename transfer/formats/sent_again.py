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
    length: int  # of the text in characters, which ends with "]"
    size: int  # of the text in UTF-8 bytes
    digest: bytes  # of the text but its closing "]"
    turns: tuple[Turn, ...]


def _hasher(data: memoryview) -> hashlib.blake2b:  # the digest's state, to go on from
    return hashlib.blake2b(data, digest_size=16)


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
        is not an array of messages). The text is encoded and digested once: the digest of
        the last text's characters, then on to the end."""
        with self._lock:
            last = self._reads.get(conversation)
        encoded = memoryview(text.encode("utf-8", "surrogatepass"))
        hasher, upto = None, 0  # the digest of encoded[:upto]
        turns: list[Turn] | None = None
        if last is not None and _may_follow(text, encoded, last):
            upto = last.size - 1  # the last text but its closing bracket
            hasher = _hasher(encoded[:upto])
            if hasher.digest() == last.digest:
                if len(text) == last.length:  # the same call read again
                    return list(last.turns)
                new = read("[" + text[last.length :])
                if new is not None:
                    turns = [*last.turns, *new]
        if turns is None:
            turns = read(text)
        if turns is not None and text.endswith("]") and len(text) <= MAX_TEXT_CHARS:
            if hasher is None:
                hasher, upto = _hasher(encoded[:0]), 0
            hasher.update(encoded[upto:-1])
            self._keep(conversation, _Read(len(text), len(encoded), hasher.digest(), tuple(turns)))
        return turns

    def _keep(self, conversation: str, read: _Read) -> None:
        with self._lock:
            old = self._reads.pop(conversation, None)
            self._chars += read.length - (old.length if old else 0)
            self._reads[conversation] = read
            while self._chars > self.max_chars and self._reads:
                _, dropped = self._reads.popitem(last=False)
                self._chars -= dropped.length


def _may_follow(text: str, encoded: memoryview, last: _Read) -> bool:
    """Whether `text` can be the last text itself (as long, ending with its bracket) or the
    last text with more messages after it (longer, a comma where its bracket was): the
    digest of its first characters then tells."""
    n, size = last.length, last.size
    if len(text) == n:
        return len(encoded) == size and text.endswith("]")
    return len(text) > n and len(encoded) > size and encoded[size - 1] == ord(",")


SENT_AGAIN = SentAgain()  # the process's, shared by the receiver's requests and imports
