"""The default embedder end to end: text in every script finds its twin, a chunk without
any feature is skipped (never a zero vector), repeated content by share, and a refit is
a new model identity that re-embeds the account."""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

import httpx
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from data.model_identity import ModelIdentity
from indexer.chunking import ChunkPolicy
from indexer.embedders import DEFAULT_MODEL, Registry
from indexer.lexical import is_lexical
from indexer.passes import IndexerConfig
from indexer.worker import index_once
from tests.support.world import World

CONFIG = IndexerConfig(progress=False)

# One sentence about a failed database migration, translated (not transliterated).
MIGRATION_FAILED = {
    "english": "The database migration failed because another transaction had locked the "
    "orders table.",
    "russian": "Миграция базы данных не удалась, потому что другая транзакция заблокировала "
    "таблицу заказов.",
    "chinese": "数据库迁移失败了，因为另一个事务锁定了订单表。",
    "arabic": "فشل ترحيل قاعدة البيانات لأن معاملة أخرى قامت بقفل جدول الطلبات.",
    "japanese": "別のトランザクションが注文テーブルをロックしていたため、"
    "データベースの移行に失敗しました。",
}


async def rows(engine: AsyncEngine, query: str, **params: Any) -> list[Any]:
    async with engine.connect() as conn:
        return list((await conn.execute(sa.text(query), params)).all())


async def test_the_same_sentence_finds_its_twin_in_every_script(
    engine: AsyncEngine, client: httpx.AsyncClient
) -> None:
    world = World()
    account, key = world.account(model=str(DEFAULT_MODEL))
    twins: dict[str, list[str]] = {}
    for language, sentence in MIGRATION_FAILED.items():
        for n, reply in enumerate(["Thanks, I will look into it.", "ok"]):
            sid = world.session(account, f"{language} {n}", day=len(twins))
            world.activity(sid, 0, sentence)
            world.activity(sid, 1, reply, role="assistant")
            twins.setdefault(language, []).append(sid)
    await world.write(engine)
    report = await index_once(engine, Registry(), CONFIG)
    assert report.chunks_embedded == 10 and report.zero_vectors_skipped == 0
    for language, (a, b) in twins.items():
        for session, twin in ((a, b), (b, a)):
            answer = await client.get(
                f"/api/v1/runtime-sessions/{session}/similar",
                headers={"Authorization": f"Bearer {key}"},
            )
            body = answer.json()
            assert is_lexical(ModelIdentity.parse(body["model_identity"]))
            first = body["results"][0]
            assert first["runtime_session_id"] == twin, language
            assert first["similarity"] > 0.9  # shares the sentence, not always the reply


async def test_a_chunk_without_any_feature_is_skipped_and_poisons_nothing(
    engine: AsyncEngine, client: httpx.AsyncClient
) -> None:
    world = World()
    account, key = world.account(model=str(DEFAULT_MODEL))
    polite = world.session(account, "polite", day=0)
    world.activity(polite, 0, "ok yes please")
    sessions = []
    for n in range(3):
        sid = world.session(account, f"deploy {n}", day=n + 1)
        world.activity(sid, 0, f"the deploy of service billing failed at step {n}")
        sessions.append(sid)
    await world.write(engine)
    report = await index_once(engine, Registry(), CONFIG)
    assert report.zero_vectors_skipped == 1 and report.chunks_embedded == 3
    (state,) = await rows(
        engine,
        "SELECT embedding_state, embedding IS NULL AS empty FROM session_chunks "
        "WHERE runtime_session_id = :s",
        s=uuid.UUID(polite),
    )
    assert (state.embedding_state, state.empty) == ("skipped", True)
    answer = await client.get(
        f"/api/v1/runtime-sessions/{sessions[0]}/similar",
        headers={"Authorization": f"Bearer {key}"},
    )
    found = [r["runtime_session_id"] for r in answer.json()["results"]]
    assert polite not in found and set(found) == set(sessions[1:])


async def test_repeated_content_is_told_by_its_share_of_the_sessions(engine: AsyncEngine) -> None:
    world = World()
    account, _ = world.account(model=str(DEFAULT_MODEL))
    for n in range(6):
        sid = world.session(account, day=n)
        template = "You are a coding agent. Reply with one shell command per turn."
        world.activity(sid, 0, template if n < 4 else f"a task of its own, number {n}")
        task = "TypeError: RST.__init__() got an unexpected keyword argument header_rows"
        world.activity(sid, 1, task if n < 2 else f"another issue, number {n}", role="user")
    await world.write(engine)
    # windows of 12 tokens: the template and the task text each make a chunk of their own
    config = IndexerConfig(ChunkPolicy(window_tokens=12), 2, 4, False, repeat_min_share_percent=50)
    await index_once(engine, Registry(), config)
    found = await rows(engine, "SELECT content, embedding_state FROM session_chunks")
    states = {(c.startswith("You are"), c.startswith("TypeError"), s) for c, s in found}
    assert (True, False, "skipped") in states  # 4 of 6 sessions: a template
    assert (False, True, "embedded") in states  # 2 of 6: one task's own text
    assert not any(c.startswith("You are") and s == "embedded" for c, s in found)


async def test_a_grown_account_is_refitted_under_a_new_identity_and_re_embedded(
    engine: AsyncEngine,
) -> None:
    world = World()
    account, _ = world.account(model=str(DEFAULT_MODEL))
    for n in range(4):
        sid = world.session(account, day=n)
        world.activity(sid, 0, f"migration of table orders failed on shard {n % 2}")
    await world.write(engine)
    await index_once(engine, Registry(), CONFIG)
    (first,) = await rows(engine, "SELECT model_identity FROM embedding_settings")
    assert first.model_identity.startswith("local:lexical-384.")
    again = await index_once(engine, Registry(), CONFIG)
    assert again.chunks_embedded == 0  # no growth, no refit
    grown = World()
    for n in range(4, 6):  # +50% sessions, past the 25% that calls for a new fit
        sid = grown.session(account, day=n)
        grown.activity(sid, 0, f"the orders migration failed again on shard {n % 2}")
    await grown.write(engine)
    recent = await index_once(engine, Registry(), CONFIG)  # fitted moments ago: not again yet
    assert recent.chunks_embedded == 2
    (kept,) = await rows(engine, "SELECT model_identity FROM embedding_settings")
    assert kept.model_identity == first.model_identity
    report = await index_once(engine, Registry(), replace(CONFIG, refit_min_interval_s=0))
    (second,) = await rows(engine, "SELECT model_identity FROM embedding_settings")
    assert second.model_identity != first.model_identity and report.chunks_embedded == 6
    assert CONFIG.refit_min_interval_s == 600  # the setting's default, which held it back
    models = await rows(engine, "SELECT DISTINCT embedding_model FROM session_chunks")
    assert [m.embedding_model for m in models] == [second.model_identity]
    registered = {r.model_identity for r in await rows(engine, "SELECT * FROM embedding_models")}
    assert second.model_identity in registered and first.model_identity not in registered
    (fit,) = await rows(engine, "SELECT model_identity, sessions FROM lexical_fits")
    assert (fit.model_identity, fit.sessions) == (second.model_identity, 6)
