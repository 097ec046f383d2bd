"""What masking costs on adversarial text: each input repeats a credential pattern's prefix
(or a piece a pattern backtracks over) to the length asked, and the time to find the
credentials in it is printed against the length. Linear is the time doubling with the length;
the target is under 50 ms for 64 KB on one core.

    python -m bench.masking [--repeat 3] [--sizes 8192,16384,32768,65536]
"""

from __future__ import annotations

import argparse
import statistics
import time

from values import credentials

# Pieces each rule of values/credentials.py scans from, repeated: the prefixes of the `sk-`
# family and OpenAI's keys, JWTs, npm's `//…/:_authToken=`, URLs with a user and password,
# bearer tokens, assigned keywords and private key blocks.
ADVERSARIAL = (
    "sk-",
    "sk-a",
    "sk-aaaaaaaaaaaaaaaaaaaaT3BlbkFJ",
    "eyJ",
    "eyJ=",
    "eyJhIjoxfQ.eyJhIjoxfQ.",
    "://",
    "://a:",
    "//x/:_authToken=",
    "https://hooks.slack.com/",
    "AKIA",
    "aws",
    "bearer ",
    "token",
    "token=",
    "token: 1",
    "password",
    "password=",
    "password='",
    "passwordpasswordpassword='",
    "passwordpasswordpassword=';",
    "secret = '",
    "password=`a,",
    "secret: `a,",
    "password,`a,`;",
    "api_key",
    "-----BEGIN PRIVATE KEY-----",
    "ghp_",
    "xoxb-",
    "aws_secret_key",
    "aws_secret_access_key: ",
    'password\\"',
    "password%3D",
    "://:",
    "Authorization: Basic ",
    "x-api-key: ",
    "github_pat_",
    "AIza",
)


def adversarial(piece: str, length: int) -> str:
    return (piece * (length // len(piece) + 1))[:length]


def timed_ms(text: str, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        credentials.found(text)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--sizes", default="8192,16384,32768,65536")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    print("| repeated piece | " + " | ".join(f"{s // 1024} KB, ms" for s in sizes) + " | ratio |")
    print("|---|" + "---|" * len(sizes) + "---|")
    worst = 0.0
    for piece in ADVERSARIAL:
        ms = [timed_ms(adversarial(piece, size), args.repeat) for size in sizes]
        worst = max(worst, ms[-1])
        growth = f"{ms[-1] / ms[0]:.1f}x for {sizes[-1] // sizes[0]}x" if ms[0] else "-"
        print(f"| `{piece}` | " + " | ".join(f"{m:.1f}" for m in ms) + f" | {growth} |")
    print(f"\nslowest at {sizes[-1] // 1024} KB: {worst:.1f} ms")


if __name__ == "__main__":
    main()
