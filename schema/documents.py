"""The parse and the validation of query texts, kept per schema and bounded by the kept texts'
total length, not their count (issue #37).

A parsed document takes about 110 bytes of memory per character of its text: the 962-token
query of 240 `viewer { name }` (3.8 KB) parses into 435 KB. Kept by count (strawberry's
`ParserCache` and `ValidationCache`, 256 texts), one client sending that text with a
different run of spaces each time pinned 111 MB until other texts pushed them out; the
fairness benchmark's tokens case left the server 44 MB larger. Kept by length, at most
QUERY_CACHE_CHARS characters of text are held (about 7 MB of documents), which is still
some 130 texts of the console's size (its largest query is about 500 characters): the texts a
client sends many times stay, and a repeated text is parsed and validated once."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from cachetools import LRUCache
from graphql import DocumentNode, GraphQLError, OperationDefinitionNode, parse
from strawberry.extensions import SchemaExtension
from strawberry.schema import schema as strawberry_schema
from strawberry.types.execution import ParseOptions

from schema.limit_messages import limit_exceeded
from schema.selection_bound import Bounded

QUERY_CACHE_CHARS = 64 * 1024


@dataclass(slots=True)
class Kept:
    """A text's document, and its validation's errors once validated (None: not validated,
    the bound refused it, or not asked yet)."""

    chars: int
    document: DocumentNode
    errors: list[GraphQLError] | None = None


class Documents:
    """The schema's kept documents, the least recently used out past `chars` characters of
    text; used on the event loop only."""

    def __init__(self, chars: int = QUERY_CACHE_CHARS) -> None:
        self.chars = chars
        self._kept: LRUCache[str, Kept] = LRUCache(chars, getsizeof=lambda kept: kept.chars)

    def parsed(self, text: str, options: ParseOptions) -> DocumentNode:
        kept = self._kept.get(text)
        if kept is None:
            kept = Kept(len(text), parse(text, **options))
            if kept.chars <= self.chars:
                self._kept[text] = kept
        return kept.document

    def validated(
        self,
        text: str,
        document: DocumentNode,
        validate: Callable[[], list[GraphQLError]],
    ) -> list[GraphQLError]:
        kept = self._kept.get(text)
        if kept is None or kept.document is not document:  # not kept (too long, or pushed out)
            return validate()
        if kept.errors is None:
            kept.errors = validate()
        return kept.errors

    def __len__(self) -> int:
        return len(self._kept)

    @property
    def kept_chars(self) -> int:
        return int(self._kept.currsize)


class CachedParse(SchemaExtension):
    """Parsing, kept by text (Documents)."""

    def __init__(self, documents: Documents) -> None:
        super().__init__()
        self.documents = documents

    def on_parse(self) -> Iterator[None]:
        context = self.execution_context
        context.graphql_document = self.documents.parsed(context.query or "", context.parse_options)
        yield


class BoundedValidation(SchemaExtension):
    """Validation, kept by text (Documents), after the bound: a document with a selection set
    past it is refused (LIMIT_EXCEEDED, naming the field and the bound) and not validated."""

    def __init__(self, documents: Documents) -> None:
        super().__init__()
        self.documents = documents

    def on_validate(self) -> Iterator[None]:
        context = self.execution_context
        document = context.graphql_document
        if document is None:
            yield
            return
        refusal = Bounded(document).refusal
        if refusal is not None:
            context.pre_execution_errors = [limit_exceeded(refusal, "selections")]
            yield
            return
        # What the client sent: `operation_name` answers the first operation's name without.
        unnamed = unchosen(document, context._provided_operation_name)
        if unnamed is not None:
            context.pre_execution_errors = [unnamed]
            yield
            return
        context.pre_execution_errors = self.documents.validated(
            context.query or "",
            document,
            lambda: strawberry_schema.validate_document(
                context.schema._schema, document, context.validation_rules
            ),
        )
        yield


def unchosen(document: DocumentNode, operation_name: str | None) -> GraphQLError | None:
    """The error of a document of several operations sent without `operationName` (the
    GraphQL spec's GetOperation: strawberry ran the first), else None."""
    if operation_name is not None:
        return None
    operations = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    if len(operations) < 2:
        return None
    names = ", ".join(o.name.value if o.name else "(unnamed)" for o in operations)
    return GraphQLError(
        f"operationName: the query holds {len(operations)} operations ({names}); name the one "
        "to run in `operationName`",
        extensions={"code": "BAD_USER_INPUT", "argument": "operationName"},
    )
