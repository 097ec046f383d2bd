"""Credentials recognised in text: each kind is masked whole, ordinary code and prose are
left alone, and a credential never becomes a lexical feature."""

from __future__ import annotations

import base64
import json
import re

import pytest
from detect_secrets.plugins.base import RegexBasedDetector

from indexer import credentials
from indexer.lexical import Fit, LexicalEmbedder, features
from resolvers.rules.shared_terms import shared_terms


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
