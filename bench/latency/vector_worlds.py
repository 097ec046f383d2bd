"""The report's sections on vectors like real ones (issue #29): the clustered worlds, then the
labelled corpora embedded by the product's models and scaled, each measured by
real_vectors.py, with the issue's targets."""

from __future__ import annotations

from bench.common.timing import p50
from bench.latency import clustered, labelled_world
from bench.latency.cold import cold_account
from bench.latency.corpus import Account
from bench.latency.lookup_costs import lookup_costs
from bench.latency.real_vectors import PAGE, Measured, World, measure_world, say_world
from bench.latency.report import Report

ISSUE_WORLD = "clustered-0.55-25k"  # the issue's account: 25,000 chunks, 300 topics, noise 0.9


async def vector_worlds(
    report: Report,
    server: str,
    prefix: str,
    models: list[str],
    fresh: bool,
    only: list[str] | None = None,
) -> None:
    """Both worlds measured and reported, their databases loaded first when needed; only the
    accounts whose label contains one of `only`, when given (the clustered world skipped when
    none of its labels matches, the labelled one when every `only` names a clustered label)."""
    planned = [(w.account.name, w.account) for w in clustered.plan()]
    if _kept(planned, only):
        await _clustered_world(report, server, prefix, fresh, only)
    if not only or not all(o.startswith("clustered-") for o in only):
        await _labelled_world(report, server, prefix, models, fresh, only)


async def _clustered_world(
    report: Report, server: str, prefix: str, fresh: bool, only: list[str] | None
) -> None:
    exact_max = report.tuning.exact_scan_max_chunks
    url, worlds, meta = await clustered.prepare(server, f"{prefix}clustered", exact_max, fresh)
    labels = _kept([(w.account.name, w.account) for w in worlds], only)
    world = World("clustered", url, labels)
    figures = await measure_world(report, world)
    cosines = meta["same_topic_cosine"]
    say_world(
        report,
        "Clustered vectors: route against the exact path, by noise and size",
        figures,
        "Accounts of 600, 5,000 and 25,000 chunks in topics of about 83 chunks (25,000 in "
        "300), sessions of 5 to 40 chunks on one topic each, every chunk its topic's centre "
        "plus noise; the name says the expected same-topic cosine, 1 / (1 + noise²) for noise "
        f"{', '.join(str(n) for n in clustered.NOISES)}. Measured on 2,000 same-topic pairs "
        "of each account: "
        + ", ".join(f"{name} {value:.2f}" for name, value in cosines.items())
        + f". {clustered.LONGEST_SESSION}-chunk sessions at most; "
        f"shared index built in {meta['shared_index_s']} s.",
    )
    _clustered_targets(report, figures)
    issue = _by_label(figures, ISSUE_WORLD)
    if issue is not None:
        await cold_account(report, world, issue)
    await lookup_costs(report, url, [(f.label, f.account) for f in figures if f.path != "exact"])


async def _labelled_world(
    report: Report, server: str, prefix: str, models: list[str], fresh: bool, only: list[str] | None
) -> None:
    exact_max = report.tuning.exact_scan_max_chunks
    url, real, meta = await labelled_world.prepare(
        server, f"{prefix}labelled", models, exact_max, fresh
    )
    labels = _kept([(_label(a), a.account) for a in real], only)
    figures = await measure_world(report, World("labelled", url, labels))
    say_world(
        report,
        "Labelled corpora embedded by the product's models, scaled by sampling sessions",
        figures,
        "Each corpus imported as plain activity and indexed as `bench.quality` does "
        f"(models: {', '.join(models)}), then its sessions sampled with replacement into "
        "accounts of growing size, each copy with new ids and its chunks' vectors as the model "
        "made them (so an account of 100k coding-agents chunks holds each session about 20 "
        "times). Loading took " + ", ".join(f"{k} {v} s" for k, v in meta["seconds"].items()) + ".",
    )
    _real_targets(report, figures)
    await lookup_costs(report, url, [(f.label, f.account) for f in figures if f.path != "exact"])


def _kept(labels: list[tuple[str, Account]], only: list[str] | None) -> list[tuple[str, Account]]:
    return [x for x in labels if not only or any(o in x[0] for o in only)]


def _label(a: labelled_world.RealAccount) -> str:
    """The corpus as imported by its account's name; a scaled copy by its size."""
    if a.copied_from is None:
        return a.account.name
    return f"{a.corpus} {a.model} x{round(a.account.size / 1000, 1):g}k"


def _by_label(figures: list[Measured], label: str) -> Measured | None:
    return next((f for f in figures if f.label == label), None)


def _clustered_targets(report: Report, figures: list[Measured]) -> None:
    issue = _by_label(figures, ISSUE_WORLD)
    if issue is None:
        return
    report.target(
        f"clustered 25k account ({ISSUE_WORLD}): route p50 at most 0.25x of its exact path",
        f"{issue.ratio:.2f} ({p50(issue.route_ms):.1f} / {p50(issue.exact_ms):.1f} ms)",
        issue.ratio <= 0.25,
    )
    if issue.page is not None:
        report.target(
            f"clustered 25k account: a page of {PAGE} at most 0.5x of its {PAGE} requests",
            f"{issue.page.ratio:.2f} ({p50(issue.page.pages):.0f} / "
            f"{p50(issue.page.rests):.0f} ms)",
            issue.page.ratio <= 0.5,
        )
    slower = [f.label for f in figures if f.ratio > 1]
    report.target(
        "clustered: every account's route at or below its exact path",
        ", ".join(slower) + " slower" if slower else "all",
        not slower,
    )


def _real_targets(report: Report, figures: list[Measured]) -> None:
    for f in figures:
        if f.account.name.startswith("bench ") and f.path != "exact":  # a corpus as imported
            report.target(
                f"{f.label}: route median at or below its exact path",
                f"{f.ratio:.2f} ({p50(f.route_ms):.1f} / {p50(f.exact_ms):.1f} ms)",
                f.ratio <= 1,
            )
