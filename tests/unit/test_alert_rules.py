"""The alerts' pure parts: a rule's checks, when `new` and `surge` fire, which kept group a
regrouped one is, the URL rules, and the retries' schedule."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from alerts.delivery import retry_at
from alerts.rules import RuleSpec, Seen, matched, verdict
from alerts.urls import AllowedHosts, RefusedUrl, checked_url
from data.alert_deliveries import Due
from resolvers.errors import BadArgument

NOW = datetime(2026, 12, 6, 12, tzinfo=UTC)
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


def spec(kind: str = "new", **values: object) -> RuleSpec:
    return RuleSpec(kind, "https://hooks.example.com/x", SECRET, **values).checked()  # type: ignore[arg-type]


def group(hours_ago: list[float], is_new: bool = True) -> Seen:
    members = {uuid.uuid4(): NOW - timedelta(hours=h) for h in hours_ago}
    return Seen(members, next(iter(members)), is_new)


def test_new_fires_at_min_sessions_within_the_window() -> None:
    assert not verdict(spec(), group([1, 2]), NOW).fires
    assert verdict(spec(), group([1, 2, 3]), NOW).fires
    assert not verdict(spec(), group([1, 2, 30]), NOW).fires  # the third is outside 24 h
    assert not verdict(spec(), group([1, 2, 3], is_new=False), NOW).fires


def test_surge_fires_at_factor_times_its_baseline_mean() -> None:
    rule = spec("surge", min_sessions=3, factor=3.0, baseline_days=7)
    baseline = [24 + 24 * d + 1 for d in range(7)]  # one a day: a mean of 1 per 24 h
    assert not verdict(rule, group([1, 2, *baseline]), NOW).fires
    fired = verdict(rule, group([1, 2, 3, *baseline]), NOW)
    assert fired.fires and fired.recent == 3 and fired.baseline_mean == pytest.approx(1.0)
    busier = [24 + 12 * d + 1 for d in range(14)]  # two a day: 3 is no surge
    assert not verdict(rule, group([1, 2, 3, *busier]), NOW).fires
    assert not verdict(rule, group([1, 2, 3]), NOW).fires  # new, not recurring: no surge


def test_a_regrouped_group_is_the_kept_one_it_shares_most_members_with() -> None:
    a, b, c, d, e, f = (uuid.uuid4() for _ in range(6))
    kept = [frozenset({a, b, c}), frozenset({d, e})]
    assert matched([frozenset({a, b, c, f})], kept) == {0: 0}
    assert matched([frozenset({b, c}), frozenset({a, d, e})], kept) == {0: 0, 1: 1}
    assert matched([frozenset({a, f})], kept) == {}  # one of three shared: not most
    # two current groups claim one kept group: the larger overlap wins, the other is new
    assert matched([frozenset({a, b}), frozenset({a, b, c})], kept) == {1: 0}


@pytest.mark.parametrize(
    ("field", "values"),
    [
        ("kind", {"kind": "spike"}),
        ("secret", {"secret": "plain"}),
        ("minSessions", {"min_sessions": 0}),
        ("windowHours", {"window_hours": 24 * 31}),
        ("factor", {"factor": 0.5}),
        ("baselineDays", {"baseline_days": 0}),
    ],
)
def test_a_bad_rule_is_refused_naming_the_field(field: str, values: dict[str, object]) -> None:
    given = {"kind": "new", "url": "https://h.example.com/", "secret": SECRET, **values}
    with pytest.raises(BadArgument) as refused:
        RuleSpec(**given).checked()  # type: ignore[arg-type]
    assert refused.value.argument == field


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("ftp://hooks.example.com/", "https"),
        ("http://hooks.example.com/", "plain http"),
        ("https://127.0.0.1/", "loopback"),
        ("https://10.1.2.3/hook", "private"),
        ("https://192.168.0.7/", "private"),
        ("https://169.254.169.254/latest/meta-data", "link-local"),
        ("https://[::1]:8443/", "loopback"),
        ("https://[::ffff:127.0.0.1]/", "loopback"),
        ("https://user:pw@hooks.example.com/", "credentials"),
        ("https:///nohost", "host"),
    ],
)
def test_the_url_rules_refuse(url: str, why: str) -> None:
    with pytest.raises(RefusedUrl, match=why):
        checked_url(url, AllowedHosts())


def test_the_url_rules_allow_public_https_and_what_the_operator_allows() -> None:
    assert checked_url("https://hooks.example.com/a?b=1", AllowedHosts()).target == "/a?b=1"
    allowed = AllowedHosts.parse("receiver.internal, 10.0.0.0/8, 127.0.0.1")
    assert checked_url("http://receiver.internal:8080/", allowed).port == 8080
    assert checked_url("https://10.9.9.9/", allowed).host == "10.9.9.9"
    assert checked_url("http://127.0.0.1:9/", allowed).scheme == "http"
    with pytest.raises(RefusedUrl):
        checked_url("http://192.168.1.1/", allowed)
    with pytest.raises(ValueError, match="range"):
        AllowedHosts.parse("10.0.0.0/99")


def test_retries_double_from_the_base_and_stop_after_24_hours() -> None:
    created = NOW
    due = [
        Due(uuid.uuid4(), 1, uuid.uuid4(), "msg_1", "{}", "https://h/", SECRET, n, created)
        for n in range(20)
    ]
    gaps = [retry_at(d, NOW, 10.0) for d in due[:5]]
    assert [(g - NOW).total_seconds() for g in gaps if g] == [10, 20, 40, 80, 160]
    late = NOW + timedelta(hours=23, minutes=59)
    assert retry_at(due[4], late, 10.0) is None  # 160 s more would pass 24 h: given up
    assert retry_at(due[0], late, 10.0) is not None
    assert retry_at(due[14], NOW, 10.0) is None  # 10 x 2^14 s is past a day


def test_a_malformed_allow_list_is_refused_when_settings_are_read() -> None:
    from config.settings import Settings, SettingsError

    with pytest.raises(SettingsError, match="SIMILAR_SESSIONS_ALERT_ALLOW_HOSTS"):
        Settings.from_env({"SIMILAR_SESSIONS_ALERT_ALLOW_HOSTS": "10.0.0.0/99"})
    given = {"SIMILAR_SESSIONS_ALERT_ALLOW_HOSTS": "hooks.internal, 10.0.0.0/8"}
    assert Settings.from_env(given).alert_allow_hosts == "hooks.internal, 10.0.0.0/8"
