"""The built-in lexical embedder: words of every script (pairs of characters where a script
writes no spaces), weighted by inverse document frequency fitted on the account's sessions,
signed feature hashing into 384 dimensions, L2-normalised.

The fit is part of the model identity (`local:lexical-384.<fit digest>@384`): vectors of
two fits are never compared, and a refit re-embeds the account."""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import regex

from data.model_identity import ModelIdentity
from indexer import templates
from indexer.keys import feature_key
from indexer.masked import without_credentials

FAMILY = "lexical-384"
DIMENSIONS = 384
UNFITTED = ModelIdentity.of("local", FAMILY, DIMENSIONS)
MIN_SESSIONS = 2  # a feature of one session matches nothing: it only dilutes the others

# Scripts written without spaces between words: their runs become overlapping character pairs.
_UNSPACED = r"\p{Han}\p{Hiragana}\p{Katakana}\p{Thai}\p{Lao}\p{Khmer}\p{Myanmar}\u30fc"
_WORD = r"[\p{L}\p{M}\p{N}_]+(?:[.'\u2019-][\p{L}\p{M}\p{N}_]+)*"
_TOKEN = regex.compile(rf"{_WORD}|\p{{So}}")
_RUNS = regex.compile(  # splits a token that mixes scripts (rare: V1 set difference is slow)
    rf"(?P<unspaced>[{_UNSPACED}]+)|[[\p{{L}}\p{{M}}\p{{N}}_]--[{_UNSPACED}]]+", regex.V1
)
# The same tokens for ASCII text (no unspaced script, no symbol of category So), far faster.
_ASCII_TOKEN = re.compile(r"[a-z0-9_]+(?:[.'-][a-z0-9_]+)*")
# The keys of structured tool output ("flight_number": ...) are its schema, the same in
# every call of the tool; the values say what the call was about.
_JSON_KEY = re.compile(r'"[^"\n]{1,64}"\s*:')
# Words too common to say what a passage is about.
# fmt: off
STOPWORDS = frozenset({
    "a", "about", "above", "after", "again", "all", "also", "am", "an", "and", "any", "are",
    "as", "at", "be", "been", "before", "being", "below", "between", "both", "but", "by", "can",
    "could", "did", "do", "does", "doing", "done", "down", "during", "each", "either", "else",
    "few", "for", "from", "further", "get", "got", "had", "has", "have", "having", "he", "her",
    "here", "hers", "him", "his", "how", "i", "if", "in", "into", "is", "it", "its", "itself",
    "just", "let", "like", "may", "me", "might", "more", "most", "much", "must", "my", "myself",
    "no", "nor", "not", "now", "of", "off", "ok", "okay", "on", "once", "only", "or", "other",
    "our", "ours", "out", "over", "own", "please", "same", "shall", "she", "should", "so",
    "some", "such", "than", "that", "the", "their", "theirs", "them", "then", "there", "these",
    "they", "this", "those", "through", "to", "too", "under", "until", "up", "us", "very",
    "want", "was", "we", "were", "what", "when", "where", "which", "while", "who", "whom", "why",
    "will", "with", "would", "yes", "yet", "you", "your", "yours",
})
# fmt: on


def features(text: str, common: frozenset[int] = frozenset()) -> Counter[str]:
    """Feature counts of a text less the words of its `common` shingles (its template text,
    indexer/templates.py): casefolded NFKC words less stopwords, character pairs of unspaced
    scripts (a lone character stands for itself), and symbols such as emoji. A credential is
    no feature: it is left out first (values/credentials.py), before the template's words are
    (which casefolds the text, and `akiaiosfodnn7example` is no AWS key any more)."""
    text = templates.strip(without_credentials(text), common)
    # Tokens never span whitespace, so the (usual) ASCII pieces take the fast path.
    pieces = _JSON_KEY.sub(" ", text).split()
    plain = " ".join(p for p in pieces if p.isascii()).lower()
    out = Counter(w for w in _ASCII_TOKEN.findall(plain) if w not in STOPWORDS)
    other = " ".join(p for p in pieces if not p.isascii())
    normal = unicodedata.normalize("NFKC", other).casefold()
    for token in _TOKEN.findall(normal):
        if token.isascii() or _plain(token):
            if token not in STOPWORDS:
                out[token] += 1
            continue
        for run in _RUNS.finditer(token):
            part = run.group()
            if not run.group("unspaced"):
                if part not in STOPWORDS:
                    out[part] += 1
            elif len(part) == 1:
                out[part] += 1
            else:
                out.update(part[i : i + 2] for i in range(len(part) - 1))
    return out


_UNSPACED_CHAR = regex.compile(rf"[{_UNSPACED}]")


def _plain(token: str) -> bool:
    """A token with no character of an unspaced script."""
    return _UNSPACED_CHAR.search(token) is None


@dataclass(frozen=True)
class Fit:
    """Inverse document frequencies over an account's N sessions, ln((N + 1) / df), for the
    features in at least MIN_SESSIONS of them (any other feature weighs 0), and the shingles
    of its template text (indexer/templates.py), left out before features are counted."""

    sessions: int
    keys: np.ndarray  # uint64, sorted
    weights: np.ndarray  # float32, one per key
    common: np.ndarray  # uint64, sorted: template shingles

    @classmethod
    def of_sessions(
        cls,
        sessions: Iterable[Iterable[str]],
        template_min_sessions: int = 20,
        template_min_share_percent: int = 5,
    ) -> Fit:
        """Fit on each session's passages (in two passes: templates, then frequencies)."""
        sessions = [list(passages) for passages in sessions]
        counter = templates.TemplateCounter()
        for passages in sessions:
            counter.add_session(passages)
        builder = FitBuilder(counter.common(template_min_sessions, template_min_share_percent))
        for passages in sessions:
            builder.add_session(passages)
        return builder.build()

    def to_bytes(self) -> bytes:
        head = np.array([len(self.keys), len(self.common)], dtype="<u8").tobytes()
        return (
            head
            + self.keys.astype("<u8").tobytes()
            + self.weights.astype("<f4").tobytes()
            + self.common.astype("<u8").tobytes()
        )

    @classmethod
    def from_bytes(cls, sessions: int, blob: bytes) -> Fit:
        n, m = (int(x) for x in np.frombuffer(blob[:16], dtype="<u8"))
        keys = np.frombuffer(blob[16 : 16 + 8 * n], dtype="<u8").astype(np.uint64)
        weights = np.frombuffer(blob[16 + 8 * n : 16 + 12 * n], dtype="<f4").astype(np.float32)
        common = np.frombuffer(blob[16 + 12 * n : 16 + 12 * n + 8 * m], dtype="<u8")
        return cls(sessions, keys, weights, common.astype(np.uint64))

    @property
    def identity(self) -> ModelIdentity:
        digest = hashlib.blake2b(self.to_bytes(), digest_size=4).hexdigest()
        return ModelIdentity.of("local", f"{FAMILY}.{digest}", DIMENSIONS)


class FitBuilder:
    """Document frequencies gathered one session at a time (so a fit can stream), of the
    passages less their template text."""

    def __init__(self, common: frozenset[int] = frozenset()) -> None:
        self.common = common
        self.df: Counter[int] = Counter()
        self.sessions = 0

    def add_session(self, passages: Iterable[str]) -> None:
        seen: set[int] = set()
        for text in passages:
            seen.update(feature_key(f) for f in features(text, self.common))
        self.df.update(seen)
        self.sessions += 1

    def build(self) -> Fit:
        kept = sorted(k for k, n in self.df.items() if n >= MIN_SESSIONS)
        weights = [math.log((self.sessions + 1) / self.df[k]) for k in kept]
        return Fit(
            self.sessions,
            np.array(kept, dtype=np.uint64),
            np.array(weights, dtype=np.float32),
            np.array(sorted(self.common), dtype=np.uint64),
        )


def is_lexical(identity: ModelIdentity) -> bool:
    """Whether the identity is the lexical family, fitted or not."""
    return (
        identity.provider == UNFITTED.provider
        and identity.dimensions == DIMENSIONS
        and (identity.model == FAMILY or identity.model.startswith(FAMILY + "."))
    )


class LexicalEmbedder:
    """Texts in, unit vectors out (a text with no weighted feature gets the zero vector)."""

    max_tokens: int | None = None
    usd_per_1k_tokens: float = 0.0

    def __init__(self, fit: Fit | None = None) -> None:
        self.fit = fit
        self.identity = UNFITTED if fit is None else fit.identity
        self._weight: dict[int, float] = (
            {} if fit is None else dict(zip(fit.keys.tolist(), fit.weights.tolist(), strict=True))
        )
        self._common = frozenset() if fit is None else frozenset(fit.common.tolist())

    def token_cost(self, word: str) -> int:
        return 1

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        for row, text in enumerate(texts):
            out[row] = self.vector(text)
        return out

    def weighted(self, text: str) -> dict[str, float]:
        """The text's features with what each adds to its vector before hashing (its fitted
        weight times 1 + ln count), the features the fit weighs 0 left out: two texts'
        vectors' dot product is the sum over their shared features of these products, but
        for the collisions of hashing."""
        out: dict[str, float] = {}
        for feature, count in features(text, self._common).items():
            weight = 1.0 if self.fit is None else self._weight.get(feature_key(feature), 0.0)
            if weight:
                out[feature] = weight * (1.0 + math.log(count))
        return out

    def vector(self, text: str) -> np.ndarray:
        vector = np.zeros(DIMENSIONS, dtype=np.float64)
        for feature, count in features(text, self._common).items():
            key = feature_key(feature)
            weight = 1.0 if self.fit is None else self._weight.get(key, 0.0)
            if weight:
                sign = 1.0 if key & 1 else -1.0
                vector[(key >> 1) % DIMENSIONS] += sign * weight * (1.0 + math.log(count))
        norm = float(np.linalg.norm(vector))
        return (vector / norm if norm else vector).astype(np.float32)
