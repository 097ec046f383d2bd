"""A bound on what makes validation expensive, checked before validation runs, in one pass
over the document's selections.

graphql-core's OverlappingFieldsCanBeMerged compares every pair of fields that share a
response name in one selection set, so its work grows with the square of their count: 240
copies of `viewer { name }` (962 tokens, under the token limit) took 1.2 to 2.8 s of
validation, on the event loop. A text's spaces vary at will, so the validation cache does not
help. Refused here, such a query costs one step per selection, and validation never sees it
(the way graphql-armor's max-aliases and cost limits refuse before graphql-js validates)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from graphql import (
    DocumentNode,
    ExecutableDefinitionNode,
    FieldNode,
    InlineFragmentNode,
    SelectionSetNode,
)

# Selections (fields, fragment spreads, inline fragments) in one selection set; the
# console's widest has 17.
MAX_SELECTIONS = 100
# Fields of one response name in one selection set (graphql-core compares each pair of them).
MAX_SAME_NAME = 10


class Bounded:
    """The first selection set past a bound in a document, found in one pass; `steps` counts
    the selections it read."""

    def __init__(self, document: DocumentNode) -> None:
        self.steps = 0
        self.refusal: str | None = None
        for selections in _selection_sets(document):
            self.refusal = self._judge(selections)
            if self.refusal is not None:
                return

    def _judge(self, selections: SelectionSetNode) -> str | None:
        names: Counter[str] = Counter()
        for count, selection in enumerate(selections.selections, start=1):
            self.steps += 1
            if count > MAX_SELECTIONS:
                return (
                    f"selections: one selection set holds more than {MAX_SELECTIONS} fields and "
                    f"fragments; at most {MAX_SELECTIONS} (MAX_SELECTIONS): split the query"
                )
            if isinstance(selection, FieldNode):
                key = (selection.alias or selection.name).value
                names[key] += 1
                if names[key] > MAX_SAME_NAME:
                    return (
                        f"`{key}`: selected more than {MAX_SAME_NAME} times in one selection "
                        f"set; at most {MAX_SAME_NAME} (MAX_SAME_NAME): ask it once, or under "
                        "aliases"
                    )
        return None


def _selection_sets(document: DocumentNode) -> Iterator[SelectionSetNode]:
    """Every selection set of the document's operations and fragments, each once."""
    stack: list[SelectionSetNode] = [
        d.selection_set for d in document.definitions if isinstance(d, ExecutableDefinitionNode)
    ]
    while stack:
        selections = stack.pop()
        yield selections
        for selection in selections.selections:
            if isinstance(selection, FieldNode | InlineFragmentNode) and selection.selection_set:
                stack.append(selection.selection_set)
