"""The alert rules over GraphQL and the CLI: the manage_alerts scope, bad input named, the
secret never read back, and another account's rule looking exactly like a missing one."""

from __future__ import annotations

import subprocess
import sys

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.support.comparisons import graphql
from tests.support.world import World

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
ADD = (
    'mutation($url: String!, $kind: String!) { addAlertRule(kind: $kind, url: $url, secret: "'
    + SECRET
    + '", minSessions: 4, status: ["failed", "error"]) '
    "{ id kind url minSessions windowHours statuses enabled } }"
)
RULES = "{ alertRules { id kind url } alertDeliveries { webhookId state nextAttemptAt } }"
REMOVE = "mutation($id: UUID!) { removeAlertRule(id: $id) }"
MANAGE = ("view_runtime_sessions", "manage_alerts")


async def keys(engine: AsyncEngine) -> tuple[str, str, str]:
    """A managing key, a viewing one of the same account, and another account's managing key."""
    world = World()
    _, manager = world.account("alerting", scopes=MANAGE)
    world.lines[-1]["api_keys"].append({"key": "sk-test-viewer-only", "scopes": [MANAGE[0]]})
    _, other = world.account("other", scopes=MANAGE)
    await world.write(engine)
    return manager, "sk-test-viewer-only", other


async def test_rules_are_managed_under_manage_alerts_and_read_back_without_the_secret(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    manager, viewer, other = await keys(engine)
    url = "https://hooks.example.com/similar"
    added = await graphql(client, manager, ADD, url=url, kind="new")
    rule = added["data"]["addAlertRule"]
    assert rule["url"] == url and rule["minSessions"] == 4 and rule["windowHours"] == 24
    assert rule["statuses"] == ["error", "failed"] and rule["enabled"]
    listed = await graphql(client, manager, RULES)
    assert listed["data"]["alertRules"] == [{"id": rule["id"], "kind": "new", "url": url}]
    assert SECRET not in str(listed)
    # a key without the scope: refused, named
    for query, variables in ((RULES, {}), (ADD, {"url": url, "kind": "new"})):
        refused = await graphql(client, viewer, query, **variables)
        assert refused["errors"][0]["extensions"] == {"code": "FORBIDDEN", "scope": "manage_alerts"}
    # another account: sees none of them, and removing one is removing a missing one
    assert (await graphql(client, other, RULES))["data"]["alertRules"] == []
    assert (await graphql(client, other, REMOVE, id=rule["id"]))["data"]["removeAlertRule"] is False
    assert (await graphql(client, manager, REMOVE, id=rule["id"]))["data"]["removeAlertRule"]
    assert (await graphql(client, manager, RULES))["data"]["alertRules"] == []


async def test_bad_rules_are_refused_naming_what_is_wrong(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    manager, _, _ = await keys(engine)
    for url, kind, argument, words in (
        ("http://hooks.example.com/", "new", "url", "must be https"),
        ("https://127.0.0.1/", "new", "url", "loopback"),
        ("https://hooks.example.com/", "spike", "kind", "must be one of new, surge"),
    ):
        body = await graphql(client, manager, ADD, url=url, kind=kind)
        (error,) = body["errors"]
        assert error["extensions"] == {"code": "BAD_USER_INPUT", "argument": argument}
        assert words in error["message"]


def cli(database_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "similar_sessions.cli", "alerts", *args],
        env={"DATABASE_URL": database_url, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )


async def test_the_cli_adds_lists_and_removes_a_rule(
    engine: AsyncEngine, database_url: str
) -> None:
    world = World()
    account, _ = world.account("cli")
    await world.write(engine)
    url = "https://hooks.example.com/cli"
    common = ["--account", account, "--url", url, "--secret", SECRET]
    added = cli(database_url, "add", *common, "--kind", "surge", "--factor", "4", "--status", "any")
    assert added.returncode == 0, added.stderr
    rule_id = added.stdout.strip()
    listed = cli(database_url, "list", "--account", account)
    assert listed.stdout.startswith(f"{rule_id} surge {url} ") and SECRET not in listed.stdout
    assert "factor=4 baseline_days=7 status=any enabled" in listed.stdout
    refused = cli(
        database_url,
        "add",
        *common[:2],
        "--url",
        "http://x.example.com/",
        "--secret",
        SECRET,
        "--kind",
        "new",
    )
    assert refused.returncode == 1 and "url: must be https" in refused.stderr
    assert cli(database_url, "remove", rule_id).returncode == 0
    gone = cli(database_url, "remove", rule_id)
    assert gone.returncode == 1 and "no such rule" in gone.stderr
