"""Credentials recognised in text, and the text with each one masked.

The detectors are detect-secrets' (Yelp): the API keys and tokens of the common providers,
AWS keys, JWTs, passwords in URLs, and values assigned to a password, secret or key. Three
kinds they find only in part are added here: a private key's whole block (they find its
first line), a bearer token, and a provider key of the `sk-` family (OpenAI's project keys,
Anthropic's, `sk-live-`/`sk_test_` keys) or a value assigned to a token.

A masked credential reads `[masked: <kind>]` where it is shown; the lexical features and the
shared terms are counted from the text with each credential left out (`without`), so a
credential never becomes a term."""

from __future__ import annotations

import asyncio
import functools
import re
import string
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextvars import ContextVar
from dataclasses import dataclass

from detect_secrets.plugins import keyword
from detect_secrets.plugins.artifactory import ArtifactoryDetector
from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
from detect_secrets.plugins.base import RegexBasedDetector
from detect_secrets.plugins.basic_auth import BasicAuthDetector
from detect_secrets.plugins.discord import DiscordBotTokenDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.jwt import JwtTokenDetector
from detect_secrets.plugins.mailchimp import MailchimpDetector
from detect_secrets.plugins.npm import NpmDetector
from detect_secrets.plugins.openai import OpenAIDetector
from detect_secrets.plugins.pypi_token import PypiTokenDetector
from detect_secrets.plugins.sendgrid import SendGridDetector
from detect_secrets.plugins.slack import SlackDetector
from detect_secrets.plugins.square_oauth import SquareOAuthDetector
from detect_secrets.plugins.stripe import StripeDetector
from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
from detect_secrets.plugins.twilio import TwilioKeyDetector

# The account feature that shows credentials as they were recorded; without it every text the
# API shows has them masked (data/accounts.py names it for the rows).
SHOWN_FEATURE = "secrets_shown"

_PROVIDERS: tuple[RegexBasedDetector, ...] = (
    AWSKeyDetector(),
    ArtifactoryDetector(),
    AzureStorageKeyDetector(),
    BasicAuthDetector(),
    DiscordBotTokenDetector(),
    GitHubTokenDetector(),
    GitLabTokenDetector(),
    JwtTokenDetector(),
    MailchimpDetector(),
    NpmDetector(),
    OpenAIDetector(),
    PypiTokenDetector(),
    SendGridDetector(),
    SlackDetector(),
    SquareOAuthDetector(),
    StripeDetector(),
    TelegramBotTokenDetector(),
    TwilioKeyDetector(),
)
# `password = "x"` or `api_key: 'x'`: detect-secrets' rules for quoted values, any file.
_QUOTED = keyword.QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP
# `password=x` unquoted, as config files and command lines write it, when the value has a
# digit or a symbol: code writes `password = None` and `password=self.password` too, and
# prose writes `password: x`.
_UNQUOTED = re.compile(
    rf"(?i)(?>{keyword.DENYLIST_REGEX})\s*=\s*"
    r"(?P<value>(?=[^\s\"'`,;()\[\]{}]*[^\w\s.\"'`,;()\[\]{}]|[^\s\"'`,;()\[\]{}]*\d)"
    r"[^\s\"'`,;()\[\]{}]{4,})"
)
# Every keyword of detect-secrets' list holds one of these (found by str.find, far faster
# than the rules' alternation tried at every place).
_STEMS = ("key", "pass", "pwd", "secret", "contras")
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)  # keeps places
_KEYWORD_KIND = "Secret Keyword"
# The names a value is a secret under, for the forms detect-secrets does not read.
_NAMES = f"(?:{'|'.join(keyword.DENYLIST)}|token)"
_AWS_SECRET_NAME = r"aws_?secret_?(?:access_?)?key"  # noqa: S105 (a name, not a secret)
_KEYWORD_FIRST = f"({'|'.join(keyword.DENYLIST)})"  # how the rules led by a keyword begin
_KEYWORD = re.compile(_KEYWORD_FIRST, re.IGNORECASE)
_WORD_RUN = re.compile(r"\w+")

_BLOCK = re.compile(
    r"-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----"
    r".*?(?:-----END \1-----|\Z)",
    re.DOTALL,
)
_OWN: tuple[tuple[str, re.Pattern[str], tuple[str, ...]], ...] = (
    ("Bearer Token", re.compile(r"(?i)\bbearer\s+([A-Za-z0-9._~+/=-]{16,})"), ("bearer",)),
    (
        "API Key",
        re.compile(r"\b((?:sk|rk)[-_](?:[A-Za-z0-9]+[-_])?[A-Za-z0-9_-]{20,})"),
        ("sk-", "sk_", "rk-", "rk_"),
    ),
    (
        "Secret Keyword",
        re.compile(
            r"(?i)token\w*[\"']?\s*[=:]\s*[\"']?"
            r"((?=[A-Za-z0-9._~+/-]*\d)(?=[A-Za-z0-9._~+/-]*[A-Za-z])[A-Za-z0-9._~+/=-]{16,})"
        ),
        ("token",),
    ),
    # Issue 59's forms: each was shown in clear.
    (
        "AWS Access Key",  # detect-secrets' rule wants quotes: `aws_secret_access_key: …`
        re.compile(rf"(?i){_AWS_SECRET_NAME}\w*[\"']?\s*[:=]\s*[\"']?([A-Za-z0-9/+]{{40}})"),
        ("aws",),
    ),
    ("Basic Auth Credentials", re.compile(r"://:([^:/?#\[\]@!$&'()*+,;=\s]+)@"), ("://:",)),
    ("GitHub Token", re.compile(r"\b(github_pat_[A-Za-z0-9_]{22,255})"), ("github_pat_",)),
    (
        "Secret Keyword",  # a tool's arguments encoded twice: `{\"password\": \"x\"}`
        re.compile(rf"(?i){_NAMES}\w*\\+[\"']\s*[:=]\s*\\+[\"']([^\\\"'\s]{{4,}})\\+[\"']"),
        (*_STEMS, "token"),
    ),
    (
        "Basic Auth Credentials",
        re.compile(r"(?i)\bauthorization[\"']?\s*[:=]\s*[\"']?basic\s+([A-Za-z0-9+/]{8,}={0,2})"),
        ("basic",),
    ),
    (
        "API Key",
        re.compile(
            r"(?i)\b(?:x-api-key|x-api-token|x-auth-token|x-access-token)[\"']?\s*[:=]\s*[\"']?"
            r"([A-Za-z0-9._~+/=-]{12,})"
        ),
        ("x-api-key", "x-api-token", "x-auth-token", "x-access-token"),
    ),
    ("Webhook Secret", re.compile(r"\b(whsec_[A-Za-z0-9+/=]{20,})"), ("whsec_",)),
    ("Google API Key", re.compile(r"\b(AIza[0-9A-Za-z_-]{35})(?![0-9A-Za-z_-])"), ("aiza",)),
    (
        "Secret Keyword",  # URL-encoded: `password%3Dx`, up to `&` or its encoding `%26`
        re.compile(rf"(?i){_NAMES}\w*%3D([^&\s\"'%]+(?:%(?!26)[0-9A-Fa-f]{{2}}[^&\s\"'%]*)*)"),
        ("%3d",),
    ),
)
# The patterns whose first group is the value, the rest of the match its context (the name
# it is assigned to, the user before a password); in the others a group is a prefix.
_VALUE_GROUP = frozenset(
    {
        AWSKeyDetector.denylist[1].pattern,
        BasicAuthDetector.denylist[0].pattern,
        NpmDetector.denylist[0].pattern,
    }
)
_JWT_TAIL = re.compile(r"[A-Za-z0-9_.+/=-]*")
# Text every match of a slow pattern holds (lowercased): a text with none of it is not
# scanned by that pattern. The rest start with a literal, which `re` finds fast.
_GATES: dict[str, tuple[str, ...]] = {
    OpenAIDetector.denylist[0].pattern: ("t3blbkfj",),  # `sk-` x 15,000 read back and forth
    TelegramBotTokenDetector.denylist[0].pattern: (":",),  # each digit tried, in any text
    DiscordBotTokenDetector.denylist[0].pattern: (".",),
    AWSKeyDetector.denylist[1].pattern: ("aws",),
    ArtifactoryDetector.denylist[0].pattern: ("akc",),
    ArtifactoryDetector.denylist[1].pattern: ("ap",),
    MailchimpDetector.denylist[0].pattern: ("-us",),
    SlackDetector.denylist[0].pattern: ("xox",),
    SlackDetector.denylist[1].pattern: ("hooks.slack.com",),
    StripeDetector.denylist[0].pattern: ("k_live_",),
}


# Patterns whose failed tries rescan a run of text from every place they start at: `sk-` x
# 15,000 took 7.2 s (OpenAI's `sk-[A-Za-z0-9-_]*…T3BlbkFJ…` read the run to its end from each
# `sk-`). Each is tried only at the first place of its literal in a run of the characters its
# first repeat reads (the run regex, searched in the text or, for a case-insensitive pattern,
# its lowercase): a try from a later place in the same run reads to the same end and meets
# the same text after it, so it fails where the first failed, and after a match the scan goes
# on from its end. Each run is read once: linear.
_WORDS = re.compile(r"\w+")
_FIRST_IN_RUN: dict[str, tuple[re.Pattern[str], str | re.Pattern[str]]] = {
    OpenAIDetector.denylist[0].pattern: (re.compile(r"[A-Za-z0-9_-]+"), "sk-"),
    JwtTokenDetector.denylist[0].pattern: (re.compile(r"[A-Za-z0-9_=-]+"), "eyJ"),
    NpmDetector.denylist[0].pattern: (re.compile(r"[^\n]+"), "//"),
    _OWN[2][1].pattern: (_WORDS, "token"),
    _OWN[3][1].pattern: (_WORDS, re.compile(_AWS_SECRET_NAME, re.IGNORECASE)),
    _OWN[6][1].pattern: (_WORDS, re.compile(_NAMES, re.IGNORECASE)),  # encoded twice
    _OWN[11][1].pattern: (_WORDS, re.compile(_NAMES, re.IGNORECASE)),  # URL-encoded
}


def _first_of_each_run(runs: re.Pattern[str], literal: str) -> re.Pattern[str]:
    """The first place of the literal in each run (empty up to it from the run's start): the
    runs without it are passed over in one scan."""
    char = runs.pattern.removesuffix("+")
    return re.compile(f"(?<!{char})(?>{char}*?(?={re.escape(literal)}))")


# A literal that is a pattern (an alternation of names) is sought run by run instead: a scan
# trying it at every place took twice as long.
_FIRSTS = {
    source: _first_of_each_run(runs, literal)
    for source, (runs, literal) in _FIRST_IN_RUN.items()
    if isinstance(literal, str)
}


def _matches(pattern: re.Pattern[str], text: str, low: str) -> Iterator[re.Match[str]]:
    """The pattern's matches in the text, as `finditer` finds them, each run read once for the
    patterns of _FIRST_IN_RUN."""
    if pattern.pattern not in _FIRST_IN_RUN:
        yield from pattern.finditer(text)
        return
    runs, literal = _FIRST_IN_RUN[pattern.pattern]
    searched = low if pattern.flags & re.IGNORECASE else text
    end = 0
    for run, at in _firsts(pattern.pattern, runs, literal, searched):
        if at < end:  # in the run the last match ended inside: its first place after the match
            if run.end() <= end:
                continue
            at = _first(searched, literal, end, run.end())
        if at >= 0 and (match := pattern.match(text, at)) is not None:
            end = match.end()
            yield match


def _firsts(
    source: str, runs: re.Pattern[str], literal: str | re.Pattern[str], searched: str
) -> Iterator[tuple[re.Match[str], int]]:
    """Each run holding the literal, with the literal's first place in it."""
    if source in _FIRSTS:
        if isinstance(literal, str) and literal not in searched:  # str.find is far faster
            return
        for first in _FIRSTS[source].finditer(searched):
            run = runs.match(searched, first.start())
            assert run is not None  # the literal is of the run's characters
            yield run, first.end()
        return
    for run in runs.finditer(searched):
        at = _first(searched, literal, run.start(), run.end())
        if at >= 0:
            yield run, at


def _first(text: str, literal: str | re.Pattern[str], start: int, end: int) -> int:
    """Where the literal (or the pattern's first match) is first in text[start:end], or -1."""
    if isinstance(literal, str):
        return text.find(literal, start, end)
    found = literal.search(text, start, end)
    return -1 if found is None else found.start()


@dataclass(frozen=True, slots=True)
class Found:
    """A credential: where it is in the text, and its kind (`AWS Access Key`, …)."""

    start: int
    end: int
    kind: str


def found(text: str) -> list[Found]:
    """The credentials in a text, in order, none overlapping."""
    low = text.translate(_ASCII_LOWER)

    def skipped(gate: tuple[str, ...]) -> bool:
        return bool(gate) and not any(part in low for part in gate)

    spans = [Found(m.start(), m.end(), "Private Key") for m in _BLOCK.finditer(text)]
    for detector in _PROVIDERS:
        for pattern in detector.denylist:
            if not skipped(_GATES.get(pattern.pattern, ())):
                spans.extend(_matched(detector, _matches(pattern, text, low), text))
    for kind, pattern, gate in _OWN:
        if not skipped(gate):
            hits = _matches(pattern, text, low)
            spans.extend(Found(m.start(1), m.end(1), kind) for m in hits)
    # The keyword rules are most of the work: only lines naming a keyword are read.
    for start in _lines_naming(low):
        end = text.find("\n", start)
        spans.extend(_assigned(text[start : len(text) if end < 0 else end], start))
    spans.sort(key=lambda f: (f.start, -f.end))
    kept: list[Found] = []
    for span in spans:
        if kept and span.start < kept[-1].end:
            if span.end > kept[-1].end:  # overlapping: one span covers both
                kept[-1] = Found(kept[-1].start, span.end, kept[-1].kind)
            continue
        kept.append(span)
    return kept


def _lines_naming(low: str) -> list[int]:
    """The starts of the lines holding a keyword's stem, in order, each once."""
    starts = set()
    for stem in _STEMS:
        at = low.find(stem)
        while at >= 0:
            start = low.rfind("\n", 0, at) + 1
            starts.add(start)
            end = low.find("\n", at)
            at = -1 if end < 0 else low.find(stem, end)
    return sorted(starts)


def _matched(
    detector: RegexBasedDetector, matches: Iterator[re.Match[str]], text: str
) -> Iterator[Found]:
    """A detector's matches with their place (its own scan yields values only): the value's
    group where the match holds more than the value, else the whole match; a JWT only when
    its parts decode, with its signature (read once: a match inside the last is skipped)."""
    tail_end = 0
    for match in matches:
        group = 1 if match.re.pattern in _VALUE_GROUP else 0
        value, end = match.group(group), match.end(group)
        if isinstance(detector, JwtTokenDetector):
            if match.start() < tail_end or not detector.is_formally_valid(value):
                continue
            tail = _JWT_TAIL.match(text, end)  # its pattern stops before the signature
            end = tail_end = tail.end() if tail else end
        yield Found(match.start(group), end, detector.secret_type)


def _assigned(line: str, offset: int) -> Iterator[Found]:
    """The values a line assigns to a keyword (`password`, `secret`, `api_key`, …)."""
    quoted, assigned = any(quote in line for quote in "'\"`"), "=" in line
    if not (quoted or assigned):
        return
    starts = _first_keywords(line)
    if quoted:  # each rule of _QUOTED needs a quote
        for value in dict.fromkeys(_quoted(line, starts)):  # two rules often find one value
            yield from _each(line, offset, value, _KEYWORD_KIND)
    if not assigned:
        return
    # As finditer finds them, tried at the first keyword of each run: its `\w*` reads to the
    # run's end, and a match ends before a character no word holds, so never inside a run.
    end = 0
    for at in starts:
        if at >= end and (match := _UNQUOTED.match(line, at)) is not None:
            end = match.end()
            yield Found(offset + match.start("value"), offset + match.end("value"), _KEYWORD_KIND)


def _quoted(line: str, starts: list[int]) -> Iterator[str]:
    r"""The values detect-secrets' quoted rules find in a line (KeywordDetector.analyze_string:
    each rule's first match), each rule that starts with a keyword tried only at the first
    keyword of each run of word characters (`starts`): from any keyword of a run its `\w*`
    reads to the run's end, so a later one fails where the first failed (`password` x 2,700 in
    one line read every run from each of its keywords, 5 rules over, 240 ms for 64 KB). Each
    rule is its linear twin (_LINEAR), on the line with its dead backticks made commas
    (_openable); the value is read from the line itself."""
    read: dict[str, str] = {}  # the line each last closing leaves, shared by rules
    for rule, group in _QUOTED.items():
        if rule.pattern.endswith(";") and not any(f"{q};" in line for q in "'\"`"):
            continue  # `private_key "x";`: the rule that reads most, without its ending
        linear, last_closing = _LINEAR[rule.pattern]
        if last_closing.pattern not in read:
            read[last_closing.pattern] = _openable(line, last_closing)
        openable = read[last_closing.pattern]
        if not any(quote in openable for quote in "'\"`"):
            continue  # every backtick was dead, and no other quote opens a value
        if not rule.pattern.startswith(_KEYWORD_FIRST):
            match = linear.search(openable)
        else:
            match = next(filter(None, (linear.match(openable, at) for at in starts)), None)
        if match:
            yield line[match.start(group) : match.end(group)]


# The quoted rules' value, `([\'"`])((?=[^\v\'\"]*)(?=\w+)[^\v\'\"]*[^\v,\'\"`])(\N)`, is read to
# the next quote or \v and back: once for a `'` or `"` (the next is its only closing), but
# from every backtick of a stretch without one, whose closing is any backtick (`password,\`a`
# x 3,000, 32 KB, took 6.3 s). The value after a backtick ends at the stretch's last closing
# (a backtick after a character that may end a value, followed by what the rule reads after
# it) at least two places on; a backtick past that opens nothing and closes nothing: made a
# comma (the rules read both alike everywhere else), the backticks left open a match or fail
# at once. The rest of each twin: the lookahead that always holds is dropped, `(?=\w+)` reads
# one character, and a keyword and its `\w*` are atomic (a shorter `\w*` leaves a word
# character, which no rule reads next).
_VALUE_READ = r"(?=[^\v\'\"]*)(?=\w+)"
_KEYWORD_RUN = _KEYWORD_FIRST + r"\w*"
_CLOSING = re.compile(r"\(\\\d\)")  # the value's closing, a backreference to its quote
_BACKTICK_STRETCH = re.compile(r"(?<![^\v'\"])[^\v'\"`]*+`[^\v'\"]*+")


def _linear(rule: re.Pattern[str]) -> tuple[re.Pattern[str], re.Pattern[str]]:
    source = rule.pattern.replace(_VALUE_READ, "(?=\\w)")
    if source.startswith(_KEYWORD_RUN):
        source = f"(?>{_KEYWORD_RUN}){source[len(_KEYWORD_RUN) :]}"
    after = _CLOSING.split(rule.pattern)[-1]
    last_closing = rf"(?:[^\v'\"`]*+`)*(?<=[^\v,'\"`]`)(?={after})"
    return re.compile(source, rule.flags), re.compile(last_closing, rule.flags)


_LINEAR = {rule.pattern: _linear(rule) for rule in _QUOTED}


def _openable(line: str, last_closing: re.Pattern[str]) -> str:
    """The line with each backtick that can neither open nor close a rule's value a comma."""
    if "`" not in line:
        return line
    out: list[str] = []
    at = 0
    for stretch in _BACKTICK_STRETCH.finditer(line):
        start, end = stretch.span()
        closing = last_closing.match(line, start)
        keep = start if closing is None else closing.end() - 2  # the backticks before it open
        out += (line[at:keep], line[keep:end].replace("`", ","))
        if closing is not None:
            out[-1] = out[-1][:1] + "`" + out[-1][2:]  # the closing itself
        at = end
    out.append(line[at:])
    return "".join(out)


def _first_keywords(line: str) -> list[int]:
    """The place of the first keyword in each run of word characters of a line."""
    starts = []
    for run in _WORD_RUN.finditer(line):
        keyword = _KEYWORD.search(line, run.start(), run.end())
        if keyword is not None:
            starts.append(keyword.start())
    return starts


def _each(line: str, offset: int, value: str, kind: str) -> Iterator[Found]:
    """Every place of a detected value in its line (detect-secrets names the value only)."""
    if not value:
        return
    start = line.find(value)
    while start >= 0:
        yield Found(offset + start, offset + start + len(value), kind)
        start = line.find(value, start + len(value))


@functools.lru_cache(maxsize=1024)  # the texts a request shows are mostly shown again
def masked(text: str) -> str:
    """The text with each credential shown as `[masked: <kind>]`."""
    return _replaced(text, lambda f: f"[masked: {f.kind}]")


def without(text: str) -> str:
    """The text with each credential left out (a space in its place): what terms count."""
    return _replaced(text, lambda f: " ")


def _replaced(text: str, mark: Callable[[Found], str]) -> str:
    spans = found(text)
    if not spans:
        return text
    out: list[str] = []
    at = 0
    for span in spans:
        out += (text[at : span.start], mark(span))
        at = span.end
    out.append(text[at:])
    return "".join(out)


# Whether the request's account shows its credentials: set once per request (from the
# account's features, similar_sessions/request_context.py), read by every text it shows, in
# its task and the tasks and threads it starts. Unset, texts are masked.
_SHOWS: ContextVar[bool] = ContextVar("shows_credentials", default=False)


def show_for(features: frozenset[str]) -> None:
    """Begin a request of an account with these features."""
    _SHOWS.set(SHOWN_FEATURE in features)


def shown(text: str) -> str:
    """A text as the request's account is shown it."""
    return text if _SHOWS.get() else masked(text)


# Past this many characters a text is masked in a thread: finding costs up to 0.45 µs a
# character on adversarial text (bench.masking), 4 ms here, and the event loop serves every
# account. One thread, not asyncio's pool of several: a pattern holds the GIL while it runs,
# so each masking at once is one more thread the loop waits on, and one account's long turns
# would take as many as it asks. They queue for the one instead (a process of its own took
# the other core from PostgreSQL and did worse in bench.fairness's adversarial-replay: 6.1x
# idle in one run, against 3.7x with a thread of asyncio's pool).
OFF_LOOP_CHARS = 8192
_MASKER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="masking")


async def shown_off_loop(text: str) -> str:
    """`shown`, in the masking thread for a long text (the request's choice made here)."""
    if len(text) <= OFF_LOOP_CHARS or _SHOWS.get():
        return shown(text)
    return await asyncio.get_running_loop().run_in_executor(_MASKER, masked, text)
