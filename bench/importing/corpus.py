"""The import benchmark's corpus: one account, sessions of 5 to 40 chunks of clustered
384-d vectors (6 significant digits, as agents write them) and a paragraph of text, written
as an import file and, for the floor, the same chunk rows as a COPY text file."""

from __future__ import annotations

import json
import math
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from bench.common.synthetic import DIMS, MODEL, topic_space
from indexer import demo

ACCOUNT_ID = uuid.UUID("7d2f3a9e-1b4c-4e8a-9c61-0f5b2d8e4a17")
VOCABULARY = (
    "migration fails on the staging database after the upgrade the test suite times out "
    "retry with a smaller batch the index was rebuilt the customer asked for a refund "
    "deploy rolled back schema drift null pointer in the parser lock timeout vacuum "
    "the agent opened the file searched for the function and edited the handler "
    "traceback assertion error import cycle flaky network call cache miss"
)
WORDS = np.array(VOCABULARY.split())
FLOOR_COLUMNS = [
    "account_id",
    "id",
    "runtime_session_id",
    "source_kind",
    "chunk_index",
    "occurred_at",
    "role",
    "content",
    "redaction_state",
    "embedding_state",
    "embedding",
    "embedding_model",
]
T0 = datetime(2025, 1, 1, tzinfo=UTC)


def _vector_text(row: np.ndarray) -> str:
    return "[" + ",".join(f"{x:.6g}" for x in row.tolist()) + "]"


def write_files(folder: Path, chunks: int, seed: int = 11) -> tuple[Path, Path, list[str]]:
    """(import file, COPY text file of the same chunk rows, its columns); reused if present."""
    data_file, rows_file = folder / f"import-{chunks}.jsonl", folder / f"rows-{chunks}.tsv"
    if data_file.exists() and rows_file.exists():
        return data_file, rows_file, FLOOR_COLUMNS
    rng = np.random.default_rng(seed)
    centres, subs = topic_space(seed)
    account = {  # the demo's account, under an id, name and key of its own
        **demo.account_record(("local", "hash-384", DIMS)),
        "id": str(ACCOUNT_ID),
        "name": "import benchmark",
        "api_keys": [{"key": "sk-bench-import-0001", "scopes": ["view_runtime_sessions"]}],
    }
    written, s = 0, 0
    with data_file.open("w") as data, rows_file.open("w") as rows:
        data.write(json.dumps(account) + "\n")
        while written < chunks:
            n = min(chunks - written, round(math.exp(rng.uniform(math.log(5), math.log(40)))))
            sid, started = uuid.UUID(bytes=rng.bytes(16), version=4), T0 + timedelta(hours=s)
            session = {
                "type": "session",
                "id": str(sid),
                "account_id": str(ACCOUNT_ID),
                "title": f"session {s}: " + " ".join(rng.choice(WORDS, 8)),
                "source_type": "agent",
                "source_id": f"run-{s}",
                "reference": f"bench/import/{s}",
                "status": "completed",
                "started_at": started.isoformat(),
                "last_activity_at": (started + timedelta(minutes=n)).isoformat(),
            }
            data.write(json.dumps(session) + "\n")
            topic = int(rng.integers(0, len(centres)))
            noise = rng.standard_normal((n, DIMS)).astype(np.float32)
            noise /= np.linalg.norm(noise, axis=1, keepdims=True)
            phases = rng.integers(0, subs.shape[1], n)
            vectors = centres[topic] + 0.8 * subs[topic, phases] + 0.55 * noise
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            for j in range(n):
                cid = uuid.UUID(bytes=rng.bytes(16), version=4)
                at = (started + timedelta(minutes=j)).isoformat()
                content = " ".join(rng.choice(WORDS, 90))
                vector = _vector_text(vectors[j])
                data.write(
                    f'{{"type":"chunk","id":"{cid}","runtime_session_id":"{sid}",'
                    f'"source_kind":"transcript_message","chunk_index":{j},"occurred_at":"{at}",'
                    f'"role":"assistant","content":{json.dumps(content)},'
                    '"redaction_state":"clear","embedding_state":"embedded",'
                    f'"embedding_model":"{MODEL}","embedding":{vector}}}\n'
                )
                fields = [ACCOUNT_ID, cid, sid, "transcript_message", j, at, "assistant"]
                fields += [content, "clear", "embedded", vector, MODEL]
                rows.write("\t".join(str(f) for f in fields) + "\n")
            written += n
            s += 1
    return data_file, rows_file, FLOOR_COLUMNS
