"""Credentials recognised in text: each kind is masked whole, ordinary code and prose are
left alone, and a credential never becomes a lexical feature."""

from __future__ import annotations

import asyncio
import base64
import json
import re
import threading
import time
from collections.abc import Iterator

import pytest
from detect_secrets.plugins.base import RegexBasedDetector
from hypothesis import given, settings
from hypothesis import strategies as st

from indexer.lexical import Fit, LexicalEmbedder, features
from resolvers.rules.shared_terms import shared_terms
from values import credentials


def _jwt() -> str:
    def part(value: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    return f"{part({'alg': 'HS256', 'typ': 'JWT'})}.{part({'sub': 'ops-7'})}.c2lnbmF0dXJlMTIz"


PRIVATE_KEY = (
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6\n"
    "ffAt0gBEwRM7vX2Sa8ZCfZk9Qm7yVb\n-----END RSA PRIVATE KEY-----"
)
# (what a line says, the credential in it, the kind it is shown as)
KINDS = [
    ("export AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE", "AWS Access Key"),
    (f"set-cookie: session={_jwt()}; HttpOnly", _jwt(), "JSON Web Token"),
    (
        "curl -H 'Authorization: Bearer 9f8e7d6c5b4a39281706f5e4d3c2b1a0'",
        "9f8e7d6c5b4a39281706f5e4d3c2b1a0",
        "Bearer Token",
    ),
    (
        "stripe.api_key = sk_live_4eC39HqLyjWDarjtT1zdp7dc",
        "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
        "Stripe Access Key",
    ),
    (
        "OPENAI_API_KEY=sk-proj-Xk29fLq0Zt7WmB3nPd8sYv1RcHe5JuA",
        "sk-proj-Xk29fLq0Zt7WmB3nPd8sYv1RcHe5JuA",
        "API Key",
    ),
    ("using key sk-live-0a9b8c7d6e5f4a3b2c1d0e9f", "sk-live-0a9b8c7d6e5f4a3b2c1d0e9f", "API Key"),
    (
        "git clone https://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@github.com/acme/app",
        "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",
        "GitHub Token",
    ),
    (
        "SLACK_TOKEN=xoxb-123456789012-1234567890123-AbCdEfGhIjKl",
        "xoxb-123456789012-1234567890123-AbCdEfGhIjKl",
        "Slack Token",
    ),
    ("db = connect(password='hunter2-prod')", "hunter2-prod", "Secret Keyword"),
    ("mysql -u root --password=s3cr3t!x", "s3cr3t!x", "Secret Keyword"),
    ('config = {"client_secret": "q8Zr2LmN0pW4xY6t"}', "q8Zr2LmN0pW4xY6t", "Secret Keyword"),
    ("refresh_token: 1f2e3d4c5b6a79880a1b2c3d", "1f2e3d4c5b6a79880a1b2c3d", "Secret Keyword"),
    ("postgres://admin:Tr0ub4dor@db.internal:5432/app", "Tr0ub4dor", "Basic Auth Credentials"),
    (f"the key:\n{PRIVATE_KEY}\nthen it failed", PRIVATE_KEY, "Private Key"),
    # Issue 59's forms, each shown in clear before.
    (
        "aws_secret_access_key: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "AWS Access Key",
    ),
    (
        "REDIS_URL=redis://:s3cretPassw0rd@cache.internal:6379/0",
        "s3cretPassw0rd",
        "Basic Auth Credentials",
    ),
    (
        "GH_TOKEN github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRS",
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRS",
        "GitHub Token",
    ),
    (
        '{"name": "login", "arguments": '
        '"{\\"user\\": \\"bob\\", \\"password\\": \\"hunter2-prod\\"}"}',
        "hunter2-prod",
        "Secret Keyword",
    ),
    (
        "curl -H 'Authorization: Basic dXNlcjpzM2NyZXRQYXNzdzByZA==' https://api.internal",
        "dXNlcjpzM2NyZXRQYXNzdzByZA==",
        "Basic Auth Credentials",
    ),
    (
        "X-Api-Key: 9f8e7d6c5b4a39281706f5e4d3c2b1a0",
        "9f8e7d6c5b4a39281706f5e4d3c2b1a0",
        "API Key",
    ),
    (
        "STRIPE_WEBHOOK=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        "Webhook Secret",
    ),
    (
        "maps key AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY in the page",
        "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY",
        "Google API Key",
    ),
    (
        "POST /login body=user%3Dbob%26password%3Dhunter2prod%26next%3D%2F",
        "hunter2prod",
        "Secret Keyword",
    ),
]


@pytest.mark.parametrize(("line", "secret", "kind"), KINDS, ids=[k for _, _, k in KINDS])
def test_each_kind_is_masked_whole(line: str, secret: str, kind: str) -> None:
    shown = credentials.masked(line)
    # Not one run of 6 characters of the credential is left (a part of it could be used).
    for start in range(len(secret) - 5):
        assert secret[start : start + 6] not in shown
    assert f"[masked: {kind}]" in shown
    assert shown.replace(f"[masked: {kind}]", "") == line.replace(secret, "")


def test_a_block_cut_before_its_end_is_masked_to_the_end() -> None:
    cut = PRIVATE_KEY[:80]
    assert credentials.masked(f"key: {cut}") == "key: [masked: Private Key]"


@pytest.mark.parametrize(
    "text",
    [
        "def reset(self, password=None):\n    self.password = password",
        "password_change_template = None",
        "response = client.chat(max_tokens=1024, num_tokens=len(prompt))",
        "The customer forgot her password: she asked for a reset link.",
        "commit 3f9a1c2e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39 fixed the key error",
        "KeyError: 'user_id' in models/secret_santa.py line 42",
        "the agent asked for a risk-assessment of sk- prefixed names",
    ],
)
def test_ordinary_code_and_prose_are_left_alone(text: str) -> None:
    assert credentials.found(text) == []
    assert credentials.masked(text) == text


def test_no_credential_becomes_a_feature() -> None:
    for line, secret, _ in KINDS:
        counted = " ".join(features(line))
        for word in re.findall(r"[A-Za-z0-9]{6,}", secret):
            assert word.lower() not in counted, (word, line)
    # What is around the credential still counts.
    assert {"export", "aws_access_key_id"} <= set(features(KINDS[0][0]))


def test_overlapping_finds_are_one_span() -> None:
    # A JWT sent as a bearer token is found by both rules: one mask.
    shown = credentials.masked(f"Authorization: Bearer {_jwt()}")
    assert shown == "Authorization: Bearer [masked: JSON Web Token]"


def test_each_gate_is_text_its_pattern_holds() -> None:
    # A gate lets a text skip a slow pattern; it must be text every match of it holds. The
    # check that it is in the pattern's own text fails when detect-secrets changes one.
    patterns = {
        p.pattern
        for d in credentials._PROVIDERS
        if isinstance(d, RegexBasedDetector)
        for p in d.denylist
    }
    for pattern, gate in credentials._GATES.items():
        assert pattern in patterns
        plain = pattern.lower().replace("\\", "")
        assert all(part in plain for part in gate), (pattern, gate)
    for _, pattern, gate in credentials._OWN:
        plain = pattern.pattern.lower().replace("\\", "").replace("[-_]", "-")
        assert any(part.rstrip("-_") in plain for part in gate)


def test_the_account_feature_shows_credentials() -> None:
    line = KINDS[0][0]
    credentials.show_for(frozenset({"similarSessions"}))
    assert credentials.shown(line) == "export AWS_ACCESS_KEY_ID=[masked: AWS Access Key]"
    credentials.show_for(frozenset({"similarSessions", credentials.SHOWN_FEATURE}))
    assert credentials.shown(line) == line
    credentials.show_for(frozenset())


def test_a_credential_in_template_text_is_no_shared_term() -> None:
    # Leaving the template's words out casefolds the text: a credential must be left out
    # before, or `akiaiosfodnn7example` is no AWS key any more and becomes a term.
    template = "you are a helpful deploy agent for the platform team"
    sessions = [[f"{template}. deploy {n} done"] for n in range(6)]
    sessions += [[f"{template}. key AKIAIOSFODNN7EXAMPLE failed"] for _ in range(2)]
    fitted = LexicalEmbedder(Fit.of_sessions(sessions, template_min_sessions=2))
    one = fitted.weighted(f"{template}. key AKIAIOSFODNN7EXAMPLE failed again")
    other = fitted.weighted(f"{template}. the key AKIAIOSFODNN7EXAMPLE failed")
    assert "failed" in shared_terms(one, other)  # the template is left out, the rest counts
    assert not any("akia" in word for word in [*one, *other])


class Counted:
    """A pattern that counts where it is tried (`match`) and whether it scanned (`finditer`)."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.wrapped, self.pattern, self.flags = pattern, pattern.pattern, pattern.flags
        self.tries = 0
        self.scans = 0

    def match(self, text: str, at: int) -> re.Match[str] | None:
        self.tries += 1
        return self.wrapped.match(text, at)

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        self.scans += 1
        return self.wrapped.finditer(text)


RESCANNING = list(credentials._FIRST_IN_RUN)


@pytest.mark.parametrize("piece", ["sk-", "eyJ=", "://", "token"])
def test_a_pattern_that_rescans_is_tried_once_a_run_on_adversarial_text(piece: str) -> None:
    # `sk-` x 15,000 took 7.2 s: OpenAI's pattern read the rest of the run from every `sk-`.
    text = piece * 15000
    for source in RESCANNING:
        counted = Counted(re.compile(source))
        list(credentials._matches(counted, text, text.lower()))  # type: ignore[arg-type]
        assert counted.scans == 0 and counted.tries <= 1, (piece, source)


def test_a_credential_after_adversarial_text_is_still_masked() -> None:
    key = "sk-proj-Xk29fLq0Zt7WmB3nPd8sYv1RcHe5JuA"
    for piece in ("sk-", "eyJ", "://", "token", "password='", "aws"):
        shown = credentials.masked(piece * 5000 + " " + key)
        assert shown.endswith(" [masked: API Key]") and key not in shown, piece
    jwt = _jwt()
    assert credentials.masked("eyJ" * 5000 + " " + jwt).endswith("[masked: JSON Web Token]")


PIECES = ["sk-", "a", "A1", "T3BlbkFJ", "eyJ", ".", "=", "//", "/:_authToken=", "npm_", "token"]
PIECES += ["TOKEN", " ", "\n", "1", ":", "'", "_", "-", "0123456789abcdef0123", "password"]
PIECES += ["aws_secret_key", "AWS_SECRET_ACCESS_KEY", "\\", '"', "%3D", "%26"]
PIECES += ["wJalrXUtnFEMI/K7MDENG"]


@given(st.lists(st.sampled_from(PIECES), max_size=60))
@settings(max_examples=300, deadline=None)
def test_trying_once_a_run_finds_what_every_place_finds(pieces: list[str]) -> None:
    text = "".join(pieces)
    low = text.translate(credentials._ASCII_LOWER)
    for source, pattern in {p.pattern: p for p in _rescanning()}.items():
        once = [m.span() for m in credentials._matches(pattern, text, low)]
        assert once == [m.span() for m in pattern.finditer(text)], (source, text)


def _rescanning() -> list[re.Pattern[str]]:
    providers = [p for d in credentials._PROVIDERS for p in d.denylist]
    own = [pattern for _, pattern, _ in credentials._OWN]
    return [p for p in [*providers, *own] if p.pattern in credentials._FIRST_IN_RUN]


def test_a_long_text_is_masked_off_the_event_loop_with_the_request_s_choice() -> None:
    key = KINDS[0][0]
    long = "x" * credentials.OFF_LOOP_CHARS + "\n" + key
    threads: list[int] = []
    masked = credentials.masked

    def recorded(text: str) -> str:
        threads.append(threading.get_ident())
        return masked(text)

    async def shown(text: str) -> str:
        return await credentials.shown_off_loop(text)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(credentials, "masked", recorded)
        assert asyncio.run(shown(key)) == credentials.shown(key)
        assert threads == [threading.get_ident(), threading.get_ident()]  # a short one: here
        assert asyncio.run(shown(long)).endswith("=[masked: AWS Access Key]")
        assert threads[-1] != threading.get_ident()
    credentials.show_for(frozenset({credentials.SHOWN_FEATURE}))
    try:
        assert asyncio.run(shown(long)) == long
    finally:
        credentials.show_for(frozenset())


QUOTED_PIECES = ["password", "secret", "api_key", "passwordx", "db_pass", "token", "a", "A1"]
QUOTED_PIECES += ["'", '"', "`", ",", ";", "=", "==", "!=", "=>", ":", " ", "\v", "]", "\\"]
QUOTED_PIECES += ["_", "-", "1", "é", "contraseña", "x y"]


@given(st.lists(st.sampled_from(QUOTED_PIECES), max_size=40))
@settings(max_examples=2000, deadline=None)
def test_the_keyword_rules_linear_twins_find_what_the_rules_find(pieces: list[str]) -> None:
    # `password,\`a,\`;` x 3,000 (32 KB) took 6.3 s: the quoted rules read from each backtick
    # to the end of the line. Their twins read each part of it a bounded number of times.
    line = "".join(pieces)
    rules = credentials._QUOTED.items()
    values = [m.group(group) for rule, group in rules if (m := rule.search(line))]
    assert list(credentials._quoted(line, credentials._first_keywords(line))) == values, line
    unquoted = re.compile(credentials._UNQUOTED.pattern.replace("(?>", "(?:", 1))
    places = {(f.start, f.end) for v in values for f in credentials._each(line, 0, v, "")}
    places |= {m.span("value") for m in unquoted.finditer(line)}
    assert {(f.start, f.end) for f in credentials._assigned(line, 0)} == places, line


def test_each_quoted_rule_has_a_linear_twin() -> None:
    # The twins are written from detect-secrets' rules by replacing their text: a rule of a
    # new release that no longer holds that text keeps its slow read and fails here.
    for rule in credentials._QUOTED:
        linear, _ = credentials._LINEAR[rule.pattern]
        assert credentials._VALUE_READ not in linear.pattern, rule.pattern
        assert "(?=\\w)" in linear.pattern
        if rule.pattern.startswith(credentials._KEYWORD_FIRST):
            assert linear.pattern.startswith("(?>"), rule.pattern


@pytest.mark.parametrize("piece", ["password=`a,", "secret: `a,", "password,`a,`;", "`a,"])
def test_each_backtick_left_is_closed_by_the_last_on_adversarial_text(piece: str) -> None:
    # A backtick opens a value read to the next quote and back to a closing backtick: with no
    # closing, the rules read from each backtick to the end of the line (3,000 times in 32 KB
    # here). In the line the rules read, a stretch's backticks are closed by its last one, so
    # a try from any of them matches or fails where it starts.
    line = piece * 3000
    for rule in credentials._QUOTED:
        _, last_closing = credentials._LINEAR[rule.pattern]
        read = credentials._openable(line, last_closing)
        for stretch in credentials._BACKTICK_STRETCH.finditer(read):
            closing = last_closing.match(read, stretch.start())
            assert closing is not None, (piece, rule.pattern)
            assert closing.end() - 1 == read.rindex("`", *stretch.span()), (piece, rule.pattern)
    shown = credentials.masked(line + "\npassword = `hunter22`")
    assert shown.endswith("\npassword = `[masked: Secret Keyword]`")


def test_long_texts_are_masked_one_at_a_time() -> None:
    # A pattern holds the GIL: long texts asked at once queue for one thread rather than
    # each taking one of asyncio's, which the event loop would wait on side by side.
    running, most = 0, 0
    masked = credentials.masked

    def recorded(text: str) -> str:
        nonlocal running, most
        running += 1
        most = max(most, running)
        time.sleep(0.01)
        running -= 1
        return masked(text)

    async def shown(count: int) -> list[str]:
        texts = [f"{n} " + "x" * credentials.OFF_LOOP_CHARS for n in range(count)]
        return await asyncio.gather(*(credentials.shown_off_loop(t) for t in texts))

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(credentials, "masked", recorded)
        assert len(asyncio.run(shown(4))) == 4
    assert most == 1
