"""What a node gets of one of gpufleet's own files: a `Part` (path, mode, text) and the text as shipped, without
full-line comments, and Python scripts without docstrings.

Apart from parts.py (which files a node gets) so that the inference parts (triton.py) use the same text transform
without importing parts.py, which imports them: no import cycle between the two.
"""

from __future__ import annotations

import io
import tokenize
from dataclasses import dataclass

from .content_cache import cached_text, module_salt

SYSTEMD_DIR = "etc/systemd/system/"


@dataclass(frozen=True)
class Part:
    """One file for write_files: where it goes on the node, its mode and content."""

    path: str
    permissions: str
    content: str


KEPT_COMMENTS = ("#!", "# shellcheck")
PYTHON_SHEBANG = "#!/usr/bin/env python3"
_STATEMENT_START = (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT)


def python_without_docstrings(source: str) -> str:
    """`source` without the lines of docstrings (string statements on lines of their own, unless one is a block's
    only statement), without trailing comments and without blank lines outside strings. Whole lines only, found by the tokenizer, so the result
    runs the same and is the same text on every Python version; it keeps AWS's 16 KB of user data for real work.

    Cached on disk by content (`content_cache`): the scripts are gpufleet's own files, and tokenizing them was a
    tenth of a plan's time."""
    return cached_text("python-minified", module_salt(__name__), source, lambda: _python_without_docstrings(source))


def _python_without_docstrings(source: str) -> str:
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    drop: set[int] = set()
    inside_strings: set[int] = set()
    significant = [tok for tok in tokens if tok.type not in (tokenize.COMMENT, tokenize.NL)]
    for index, tok in enumerate(significant):
        if tok.start[0] != tok.end[0]:
            inside_strings.update(range(tok.start[0] + 1, tok.end[0] + 1))
        previous = significant[index - 1].type if index else tokenize.NEWLINE
        if tok.type != tokenize.STRING or previous not in _STATEMENT_START:
            continue
        after = significant[index + 1:index + 3]
        ends_statement = bool(after) and after[0].type == tokenize.NEWLINE
        only_statement = (previous == tokenize.INDENT and len(after) > 1
                          and after[1].type == tokenize.DEDENT)
        if ends_statement and not only_statement and after[0].start[0] == tok.end[0]:
            drop.update(range(tok.start[0], tok.end[0] + 1))
    lines = source.splitlines()
    for tok in tokens:  # trailing comments: cut the line where the tokenizer says the comment starts
        row, col = tok.start
        if tok.type == tokenize.COMMENT and row > 1 and lines[row - 1][:col].strip():
            lines[row - 1] = lines[row - 1][:col].rstrip()
    kept = [line for number, line in enumerate(lines, 1)
            if number not in drop and (line.strip() or number in inside_strings)]
    return "\n".join(kept) + "\n"


def shipped(content: str, relative: str) -> str:
    """`content` without full-line comments, with a pointer to its source after the first line; Python scripts
    also without docstrings and blank lines."""
    if content.startswith(PYTHON_SHEBANG):
        content = python_without_docstrings(content)
    lines = content.splitlines()
    marker = "//" if relative.startswith("etc/apt/") else "#"
    prefixes = ("#", ";") if relative.startswith(SYSTEMD_DIR) else (marker,)
    head = lines[:1] if lines and lines[0].startswith(("#!", "# shellcheck shell=")) else []
    body = [line for line in lines[len(head):]
            if not line.lstrip().startswith(prefixes) or line.lstrip().startswith(KEPT_COMMENTS)]
    return "\n".join(head + [f"{marker} gpufleet: cloud_init/files/{relative} (comments are in the source)"] + body) + "\n"
