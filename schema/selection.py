"""What a GraphQL client selected: read so that no unasked column is read."""

from __future__ import annotations

from collections.abc import Iterable

from strawberry.types.nodes import FragmentSpread, InlineFragment, SelectedField, Selection


def selects(selections: Iterable[Selection], *path: str) -> bool:
    """Whether the selection set asks for the field at `path` (through any fragment)."""
    if not path:
        return True
    for selection in selections:
        if isinstance(selection, FragmentSpread | InlineFragment):
            rest: tuple[str, ...] = path
        elif isinstance(selection, SelectedField) and selection.name == path[0]:
            rest = path[1:]
        else:
            continue
        if selects(selection.selections, *rest):
            return True
    return False


def selects_passage_text(selections: Iterable[Selection], field: str) -> bool:
    """Whether the client selected, under a ranked answer's field, a passage's text (or
    what is read from it: a search match's matched words), of its results or its nearest,
    of a match or of its probe."""
    return any(
        selects(selections, field, listed, "matches", *passage, leaf)
        for listed in ("results", "nearest")
        for passage in ((), ("probe",))
        for leaf in ("text", "matchedWords")
    )
