"""Reads YAML from stack files and `--set` values into plain data, or one `SpecError` that says where it broke.

PyYAML's `safe_load` keeps the last of two equal keys without a word (a stack file with `nodes: 2` and, further
down, `nodes: 16` plans 16 nodes) and reports a syntax error as a multi-line traceback. Here, a repeated key, a
syntax error and nesting too deep for the parser are each one `Problem` with the file, line and column, and the
line's text.
"""

from __future__ import annotations

import copy
from functools import lru_cache
from typing import Any

import yaml

from .errors import Problem, SpecError


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key repeated within one mapping."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        self.flatten_mapping(node)
        seen: dict[Any, yaml.Node] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            try:
                first = seen.get(key)
            except TypeError:  # an unhashable key ({[a]: 1}); SafeLoader reports it below
                first = None
            if first is not None:
                raise yaml.constructor.ConstructorError(
                    None, None, f"the key {key!r} is already set on line {first.start_mark.line + 1} (YAML would "
                    "keep only the last one); keep one of them", key_node.start_mark)
            if first is None and _hashable(key):
                seen[key] = key_node
        return super().construct_mapping(node, deep=deep)


def load_yaml(text: str, source: str) -> Any:
    """The YAML document in `text`; `source` names it in messages (a file path, or `--set nodes`). A copy of the
    document parsed once per text (callers may change theirs; plans read the same stack files again and again)."""
    return copy.deepcopy(_parsed(text, source))


@lru_cache(maxsize=64)
def _parsed(text: str, source: str) -> Any:
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 (a SafeLoader subclass)
    except yaml.MarkedYAMLError as err:
        raise SpecError([_marked_problem(err, text, source)], root=source) from None
    except yaml.YAMLError as err:
        raise SpecError([Problem(source, "(the document)", f"expected YAML: {err}")], root=source) from None
    except ValueError as err:  # an integer over Python's 4,300-digit conversion limit
        raise SpecError([Problem(source, "(a number of thousands of digits)", f"expected a number up to 2**63-1 "
                                 f"({_first_words(err)})")], root=source) from None
    except RecursionError:
        raise SpecError([Problem(source, "(the document)", "nested too deeply to read; the spec is a few levels "
                                 "deep")], root=source) from None


def _marked_problem(err: yaml.MarkedYAMLError, text: str, source: str) -> Problem:
    mark = err.problem_mark or err.context_mark
    what = " ".join(part for part in (err.context, err.problem) if part)
    if mark is None:
        return Problem(source, "(the document)", f"expected valid YAML: {what}")
    lines = text.splitlines()
    line_text = lines[mark.line].rstrip() if mark.line < len(lines) else ""
    return Problem(f"{source}:{mark.line + 1}:{mark.column + 1}", line_text[:120],
                   f"expected valid YAML: {what}")


def _first_words(err: Exception) -> str:
    return str(err).split(";")[0][:120]


def _hashable(key: Any) -> bool:
    try:
        hash(key)
    except TypeError:
        return False
    return True
