#!/usr/bin/env python3
"""Checks every relative link of README.md and docs/**/*.md: the file (or
folder) it names must exist and, for a `#anchor`, the heading must be in
the Markdown file it points at (anchors as GitHub makes them from
headings). Links outside the repository (http:, https:, mailto:) are not
followed. Prints each broken link and exits 1 if there is one.

    python3 docs/check-links.py
"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"`[^`]*`")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def main():
    files = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    broken = [problem for path in files for problem in check(path)]
    for problem in broken:
        print(problem)
    if broken:
        sys.exit(f"check-links: {len(broken)} broken link(s) in README.md and docs/")
    print(f"check-links: every relative link of {len(files)} files resolves")


def check(path):
    """Every broken link of one file, as `file:line: link: why`. A link's
    text may run over lines, so the prose is searched as one text (code
    blocks blanked, code spans cut out with their line breaks kept)."""
    lines = dict(prose_lines(path))
    total = len(path.read_text().splitlines())
    prose = "\n".join(lines.get(number, "") for number in range(1, total + 1))
    prose = CODE_SPAN.sub(lambda span: "\n" * span.group(0).count("\n"), prose)
    for link in LINK.finditer(prose):
        target = link.group(1)
        why = broken(path, target)
        if why:
            number = prose.count("\n", 0, link.start()) + 1
            yield f"{path.relative_to(ROOT)}:{number}: {target}: {why}"


def prose_lines(path):
    """The file's lines outside fenced code blocks, numbered from 1."""
    fenced = False
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            yield number, line


def broken(path, target):
    """Why `target`, linked from `path`, does not resolve (None if it does)."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", target):
        return None
    name, _, anchor = target.partition("#")
    linked = (path.parent / name).resolve() if name else path
    if not linked.exists():
        return "no such file"
    if anchor and linked.suffix == ".md" and anchor not in anchors(linked):
        return f"no heading #{anchor} in {linked.relative_to(ROOT)}"
    return None


def anchors(path):
    """The anchors GitHub gives the headings of a Markdown file."""
    seen = {}
    found = set()
    for _, line in prose_lines(path):
        heading = HEADING.match(line)
        if not heading:
            continue
        slug = slugify(heading.group(2))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def slugify(text):
    """A heading's anchor: links reduced to their text, lower case,
    punctuation dropped (hyphens and underscores kept), spaces as hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = text.lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


if __name__ == "__main__":
    main()
