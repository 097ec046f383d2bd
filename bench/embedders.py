"""all-MiniLM-L6-v2 as the product runs it (int8 ONNX, indexer/onnx_minilm.py) against the
torch model it replaced (sentence-transformers, when it is installed): agreement of the
vectors, and speed idle and beside other work, one text at a time (a search's text) and in
batches of 32 passages of up to 256 word pieces (indexing).

    python -m bench.embedders [--texts 96] [--repeat 3]

"Beside other work" runs two processes that keep both cores busy, as the server, the
database and the indexer do on a small machine."""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from bench.common.load import busy_processes
from bench.common.torch_minilm import torch_minilm
from bench.credentials import corpora
from indexer.onnx_minilm import OnnxMiniLM

SEARCH_TEXT = "the customer wants to change the return flight but keep the outbound one"


def _median(run: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=96)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    random.seed(7)
    texts = [t for ts in corpora().values() for t in random.sample(ts, args.texts // 2)]
    models: dict[str, Any] = {}
    for threads in (1, 2):
        models[f"onnx int8, {threads} thread(s)"] = OnnxMiniLM(threads=threads)
        torch = torch_minilm(threads)
        if torch is not None:
            models[f"torch, {threads} thread(s)"] = torch
    reference = next((m for name, m in models.items() if name.startswith("torch, 1")), None)
    if reference is not None:
        ours = models["onnx int8, 1 thread(s)"].embed(texts)
        cosines = (ours * reference.embed(texts)).sum(axis=1)
        print(
            f"cosine of the ONNX vectors to torch's over {len(texts)} passages: "
            f"min {cosines.min():.4f}, median {np.median(cosines):.4f}\n"
        )
    print(
        "| model | a search text, idle | beside other work | passages/s, idle | beside other work |"
    )
    print("|---|---|---|---|---|")
    for name, model in models.items():
        model.embed([SEARCH_TEXT])  # warm
        one: dict[bool, float] = {}
        batch: dict[bool, float] = {}
        for busy in (False, True):
            with busy_processes(2 * busy):
                one[busy] = _median(partial(model.embed, [SEARCH_TEXT]), args.repeat * 5)
                batch[busy] = _median(partial(model.embed, texts), args.repeat)
        print(
            f"| {name} | {one[False] * 1000:.0f} ms | {one[True] * 1000:.0f} ms "
            f"| {len(texts) / batch[False]:.1f} | {len(texts) / batch[True]:.1f} |"
        )


if __name__ == "__main__":
    main()
