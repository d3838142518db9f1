#!/usr/bin/env python3
"""Checks the links of doppler's markdown docs: every `[text](target)` (and `![alt](src)`, and
`[ref]: target` definitions) in README.md, docs/*.md and examples/**/*.md, or in the .md files given as arguments.

- A relative target (`docs/learner.md`, `../README.md`, `runtime/src/x.cpp`) must exist relative
  to the linking file's directory (a target starting with `/` is relative to the repository root).
- An anchor (`file.md#anchor`, `#anchor`) must be the slug of a heading of the target file, by
  GitHub's rule: lowercase; drop every character that is not a letter, digit, space, hyphen or
  underscore; spaces become '-'; a repeated slug gets -1, -2, ... Anchors into other files than
  markdown are not checked.
- Headings and links inside ``` / ~~~ fenced code blocks and inline code spans are ignored;
  http(s), mailto and other URI-scheme links are skipped.

Prints `file:line: broken link TARGET (why)` per broken link and exits 1 if there is any; else
prints a one-line summary and exits 0. Standard library only. Run from anywhere:
    scripts/check_doc_links.py                    # README.md, docs/*.md, examples/**/*.md
    scripts/check_doc_links.py docs/learner.md    # given files (paths relative to the current directory)
ctest runs it as the test `doc_links` (label `docs`).
"""
import glob
import os
import re
import sys
import urllib.parse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
LINK = re.compile(r"(?<!\\)!?\[((?:[^\[\]\\]|\\.|\[[^\[\]]*\])*)\]\(\s*(<[^>\n]*>|[^()\s]*(?:\([^()\s]*\)[^()\s]*)*)"
                  r"(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)")
REFDEF = re.compile(r"^ {0,3}\[([^\]]+)\]:[ \t]*(<[^>\n]*>|\S+)")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
GITHUB_LINE = re.compile(r"^L\d+(-L\d+)?$")


def split_fences(lines):
    """Yields (lineno, line, in_fence) for every line; fence delimiter lines count as fenced."""
    fence = None
    for i, line in enumerate(lines, 1):
        m = FENCE.match(line)
        if fence is None:
            if m and not (m.group(1)[0] == "`" and "`" in line[m.end():]):
                fence = m.group(1)
                yield i, line, True
                continue
            yield i, line, False
        else:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) \
                    and line[m.end():].strip() == "":
                fence = None
            yield i, line, True


def blank_code_spans(text):
    """Replaces inline code spans (backtick runs matched by a run of the same length) with spaces,
    keeping newlines, so that nothing inside them is read as a link."""
    out = list(text)
    runs = [(m.start(), m.end()) for m in re.finditer(r"(?<!\\)`+", text)]
    i = 0
    while i < len(runs):
        s, e = runs[i]
        n = e - s
        j = next((k for k in range(i + 1, len(runs)) if runs[k][1] - runs[k][0] == n), None)
        if j is None:
            i += 1
            continue
        for p in range(s, runs[j][1]):
            if out[p] != "\n":
                out[p] = " "
        i = j + 1
    return "".join(out)


def paragraphs(lines):
    """Yields (first_lineno, text) for each run of non-blank lines outside fenced code."""
    block, start = [], None
    for i, line, fenced in split_fences(lines):
        if fenced or line.strip() == "":
            if block:
                yield start, "\n".join(block)
            block, start = [], None
            continue
        if start is None:
            start = i
        block.append(line)
    if block:
        yield start, "\n".join(block)


def heading_text_to_slug(text):
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # links and images -> their text
    text = re.sub(r"<[^>]+>", "", text)                      # inline HTML
    text = text.replace("`", "").replace("*", "")
    slug = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return slug.replace(" ", "-")


_slug_cache = {}


def heading_slugs(path):
    """The set of GitHub anchors of the headings of a markdown file."""
    if path in _slug_cache:
        return _slug_cache[path]
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    slugs, counts = set(), {}
    prev = None  # the previous line when it could be a setext heading's text
    for _, line, fenced in split_fences(lines):
        text = None
        if not fenced:
            m = ATX.match(line)
            if m:
                text = re.sub(r"[ \t]+#+$", "", m.group(2) or "")
                if re.fullmatch(r"#+", text):
                    text = ""
            elif prev is not None and SETEXT.match(line):
                text = prev
        if text is not None:
            base = heading_text_to_slug(text)
            n = counts.get(base, 0)
            slugs.add(base if n == 0 else f"{base}-{n}")
            counts[base] = n + 1
            prev = None
            continue
        prev = line if (not fenced and line.strip() and not ATX.match(line)) else None
    _slug_cache[path] = slugs
    return slugs


def shown(path):
    """A path as printed: relative to the repository root when inside it, else to the current directory."""
    path = os.path.abspath(path)
    return os.path.relpath(path, ROOT) if path.startswith(ROOT + os.sep) else os.path.relpath(path)


def check_target(md_path, target):
    """None if the link is fine or skipped, else why it is broken."""
    if target.startswith("<") and target.endswith(">"):
        target = target[1:-1]
    if target == "" or SCHEME.match(target):
        return None
    path, _, anchor = target.partition("#")
    path = urllib.parse.unquote(path)
    if path == "":
        dest = md_path
    elif path.startswith("/"):
        dest = os.path.normpath(os.path.join(ROOT, path.lstrip("/")))
    else:
        dest = os.path.normpath(os.path.join(os.path.dirname(md_path), path))
    if not os.path.exists(dest):
        return f"no such file: {shown(dest)}"
    if anchor == "":
        return None
    if not dest.endswith(".md") or not os.path.isfile(dest):
        return None  # anchors into source files (GitHub's #L10) or folders are not checked
    anchor = urllib.parse.unquote(anchor)
    if anchor not in heading_slugs(dest):
        return f"no heading with anchor #{anchor} in {shown(dest)}"
    return None


def check_file(md_path):
    """Returns (number of links checked, list of (line, target, why))."""
    with open(md_path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    checked, broken = 0, []
    for start, text in paragraphs(lines):
        text = blank_code_spans(text)
        found = [(m.start(), m.group(2)) for m in LINK.finditer(text)]
        for m in re.finditer(r"^.*$", text, re.M):
            d = REFDEF.match(m.group(0))
            if d:
                found.append((m.start() + d.start(2), d.group(2)))
        for pos, target in found:
            checked += 1
            why = check_target(md_path, target)
            if why:
                broken.append((start + text.count("\n", 0, pos), target, why))
    return checked, sorted(broken)


def main(argv):
    if argv:
        files = [os.path.abspath(a) for a in argv]
    else:
        docs = os.path.join(ROOT, "docs")
        files = [os.path.join(ROOT, "README.md")] + sorted(
            os.path.join(docs, n) for n in os.listdir(docs) if n.endswith(".md"))
        files += sorted(glob.glob(os.path.join(ROOT, "examples", "**", "*.md"), recursive=True))
    total, bad = 0, 0
    for path in files:
        if not os.path.isfile(path):
            print(f"{path}: no such file", file=sys.stderr)
            return 2
        n, broken = check_file(path)
        total += n
        for line, target, why in broken:
            print(f"{shown(path)}:{line}: broken link {target} ({why})")
        bad += len(broken)
    if bad:
        print(f"check_doc_links: {bad} broken of {total} links in {len(files)} files", file=sys.stderr)
        return 1
    print(f"check_doc_links: {total} links in {len(files)} files, none broken")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
