"""What a node gets of one of gpufleet's own files: a `Part` (path, mode, text) and the text as shipped, without
full-line comments; scripts also without blank lines and indentation (Python keeps one space a level) or docstrings.

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
SOURCE_POINTER = "gpufleet: the source of this file, with comments, is at its path under cloud_init/files/"
PYTHON_SHEBANG = "#!/usr/bin/env python3"
_STATEMENT_START = (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT)


def python_without_docstrings(source: str) -> str:
    """`source` without the lines of docstrings (string statements on lines of their own, unless one is a block's
    only statement), without trailing comments and without blank lines outside strings, indented by one space a
    level. Whole lines and leading whitespace only, found by the tokenizer, so the result runs the same (the same
    syntax tree less the docstrings) and is the same text on every Python version; it keeps AWS's 16 KB of user data
    for real work.

    Cached on disk by content (`content_cache`): the scripts are gpufleet's own files, and tokenizing them was a
    tenth of a plan's time."""
    return cached_text("python-minified", module_salt(__name__), source,
                       lambda: _one_space_indents(_python_without_docstrings(source)))


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


def _one_space_indents(source: str) -> str:
    """`source` with each line's leading whitespace replaced by one space per block level (one more on a line that
    continues a statement), except lines inside a string that spans lines. Python reads the same tokens, and gzip
    has less to store: about a tenth of a node script's compressed size on AWS."""
    lines = source.splitlines()
    verbatim: set[int] = set()
    depth_of: dict[int, int] = {}
    depth, previous = 0, tokenize.NEWLINE
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.INDENT:
            depth += 1
        elif tok.type == tokenize.DEDENT:
            depth -= 1
        elif tok.type not in (tokenize.NL, tokenize.COMMENT, tokenize.ENDMARKER):
            row = tok.start[0]
            if row not in depth_of and not lines[row - 1][:tok.start[1]].strip():
                depth_of[row] = depth + (previous not in _STATEMENT_START)
            verbatim.update(range(tok.start[0] + 1, tok.end[0] + 1))
            previous = tok.type
    for row, level in depth_of.items():
        if row not in verbatim:
            lines[row - 1] = " " * level + lines[row - 1].lstrip()
    return "\n".join(lines) + "\n"


SHELL_HEADS = ("#!/bin/bash", "#!/bin/sh", "# shellcheck shell=")
_WORD_START = " \t;&|()"


def shell_without_indentation(script: str) -> str:
    """`script` without blank lines and leading whitespace, except where a quoted string spans lines (kept whole)
    and after a backslash-continued line (one space, so words stay apart). bash parses the result to the same
    commands (tests/cloud_init/test_lint.py compares `declare -f` of both); it is a tenth of a shell script's
    compressed size. A script with a here-document or backquotes is returned as it is: this scanner does not
    follow them."""
    return cached_text("shell-minified", module_salt(__name__), script, lambda: _shell_without_indentation(script))


def _shell_without_indentation(script: str) -> str:
    lines = script.splitlines()
    kept: list[str] = []
    contexts = ["code"]  # innermost last: code, "'", '"', "$(" (with its parenthesis depth)
    depths: list[int] = []
    continued = False
    for line in lines:
        quoted = contexts[-1] in ("'", '"')
        if quoted:
            kept.append(line)
        elif line.strip():
            kept.append((" " if continued else "") + line.lstrip())
        if _scan_shell_line(line, contexts, depths) is None:
            return script
        continued = not quoted and contexts[-1] not in ("'", '"') and line.endswith("\\")
    return "\n".join(kept) + "\n"


def _scan_shell_line(line: str, contexts: list[str], depths: list[int]) -> bool | None:
    """Follows quotes and command substitutions through one line; None where the scanner cannot follow."""
    index = 0
    while index < len(line):
        char, context = line[index], contexts[-1]
        if context == "'":
            if char == "'":
                contexts.pop()
        elif char == "\\":
            index += 1
        elif context == '"':
            if char == '"':
                contexts.pop()
            elif line.startswith("$(", index):
                contexts.append("$(")
                depths.append(1)
                index += 1
            elif char == "`":
                return None
        else:
            if char == "#" and (index == 0 or line[index - 1] in _WORD_START):
                break
            if char == "`" or line.startswith("<<", index) and not line.startswith("<<<", index):
                return None
            if line.startswith("<<<", index):
                index += 2
            elif char in "'\"":
                contexts.append(char)
            elif line.startswith("$(", index):
                contexts.append("$(")
                depths.append(1)
                index += 1
            elif context == "$(" and char == "(":
                depths[-1] += 1
            elif context == "$(" and char == ")":
                depths[-1] -= 1
                if depths[-1] == 0:
                    depths.pop()
                    contexts.pop()
        index += 1
    return True


def shipped(content: str, relative: str) -> str:
    """`content` without full-line comments, with a pointer to its source after the first line; Python scripts
    also without docstrings and blank lines, one space a level; shell scripts without blank lines or indentation.
    The pointer is the same line in every file (the node's path is the
    source's path under cloud_init/files/), so gzip stores it once: naming each file there cost AWS's user data
    about 250 bytes."""
    if content.startswith(PYTHON_SHEBANG):
        content = python_without_docstrings(content)
    lines = content.splitlines()
    marker = "//" if relative.startswith("etc/apt/") else "#"
    prefixes = ("#", ";") if relative.startswith(SYSTEMD_DIR) else (marker,)
    head = lines[:1] if lines and lines[0].startswith(("#!", "# shellcheck shell=")) else []
    body = [line for line in lines[len(head):]
            if not line.lstrip().startswith(prefixes) or line.lstrip().startswith(KEPT_COMMENTS)]
    text = "\n".join(head + [f"{marker} {SOURCE_POINTER}"] + body) + "\n"
    return shell_without_indentation(text) if content.startswith(SHELL_HEADS) else text
