"""The webhook event ``data`` TypedDicts match docs/webhooks.md ("Event types and their ``data``")
exactly: one per documented event type (``EVENT_DATA_TYPES``, ``EventType``), with the documented
fields and no others, each of the documented kind (``str``, ``int``, ``float``, a list of strings, an
object) and ``Optional`` exactly where the doc says "or null". Read from the classes' annotations
(``typing.get_type_hints``), never from a second list."""
import os
import re
import unittest
from typing import Any, Dict, List, Literal, Union, get_args, get_origin, get_type_hints

import support

from cds_client import types

DOC = os.path.join(support.REPO_ROOT, "docs", "webhooks.md")

#: The doc's type column as a kind: UUID, timestamp and decimal string are strings on the wire.
DOC_KINDS = {
    "UUID": "string",
    "string": "string",
    "decimal string": "string",
    "timestamp": "string",
    "integer": "integer",
    "number": "number",
    "array of strings": "string[]",
    "object": "object",
}


def documented_fields() -> Dict[str, Dict[str, str]]:
    """Event type -> field -> kind, from the "Event types and their `data`" section."""
    with open(DOC, encoding="utf-8") as f:
        doc = f.read()
    section = re.search(r"^## Event types and their `data`\n(.*?)(?=^## )", doc, re.S | re.M)
    if section is None:
        raise AssertionError('docs/webhooks.md has no "Event types and their `data`" section')
    out: Dict[str, Dict[str, str]] = {}
    for block in re.finditer(r"^### `([^`]+)`\n(.*?)(?=^### |\Z)", section.group(1), re.S | re.M):
        fields: Dict[str, str] = {}
        for row in re.finditer(r"^\| `([^`]+)` \| ([^|]+?) \|", block.group(2), re.M):
            doc_type = row.group(2)
            nullable = doc_type.endswith(" or null")
            base = doc_type[: -len(" or null")] if nullable else doc_type
            fields[row.group(1)] = DOC_KINDS.get(base, f'unknown doc type "{base}"') + (" | null" if nullable else "")
        out[block.group(1)] = fields
    return out


def kind(hint: Any) -> str:
    """The kind of a field's annotation, `` | null`` added for ``Optional``."""
    if get_origin(hint) is Union:
        args = [a for a in get_args(hint) if a is not type(None)]
        inner = kind(args[0]) if len(args) == 1 else f"union {hint}"
        return inner + " | null" if len(args) < len(get_args(hint)) else inner
    if get_origin(hint) is Literal:
        values = get_args(hint)
        return "string" if all(isinstance(v, str) for v in values) else f"literal {values}"
    if get_origin(hint) in (list, List):
        (item,) = get_args(hint)
        return "string[]" if kind(item) == "string" else f"list of {item}"
    if hint is str:
        return "string"
    if hint is int:
        return "integer"
    if hint is float:
        return "number"
    if isinstance(hint, type) and issubclass(hint, dict):  # a TypedDict
        return "object"
    return f"unknown annotation {hint}"


def sdk_fields(cls: Any) -> Dict[str, str]:
    return {name: kind(hint) for name, hint in get_type_hints(cls).items()}


class EventTypesMatchTheDocsTest(unittest.TestCase):
    documented: Dict[str, Dict[str, str]]

    @classmethod
    def setUpClass(cls) -> None:
        cls.documented = documented_fields()

    def test_the_doc_section_parses(self) -> None:
        self.assertGreaterEqual(len(self.documented), 13)
        for event_type, fields in self.documented.items():
            self.assertTrue(fields, event_type)

    def test_one_typed_dict_per_documented_event_type(self) -> None:
        self.assertEqual(sorted(types.EVENT_DATA_TYPES), sorted(self.documented))
        self.assertEqual(sorted(get_args(types.EventType)), sorted(self.documented))

    def test_each_typed_dict_has_the_documented_fields_of_the_documented_kinds(self) -> None:
        for event_type, cls in types.EVENT_DATA_TYPES.items():
            with self.subTest(event_type=event_type, typed_dict=cls.__name__):
                actual = sdk_fields(cls)
                expected = self.documented.get(event_type, {})
                # Names first, for a clear message on a missing or extra field; then name -> kind.
                self.assertEqual(sorted(actual), sorted(expected))
                self.assertEqual(actual, expected)
                # Every documented field is always present (None, not missing, when null).
                self.assertEqual(set(cls.__required_keys__), set(actual))

    def test_typed_dicts_are_exported(self) -> None:
        for cls in types.EVENT_DATA_TYPES.values():
            self.assertIn(cls.__name__, types.__all__)
            self.assertIs(getattr(types, cls.__name__), cls)
        self.assertIn("EVENT_DATA_TYPES", types.__all__)


if __name__ == "__main__":
    unittest.main()
