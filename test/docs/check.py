#!/usr/bin/python3
"""Runs every ```sql block of the given Markdown documents as pasted into psql, after checking
that each link of a document reaches its target.

    check.py DOCUMENT...        (PGHOST, PGPORT, PGUSER: a cluster with the extension available)

A link to a file must name one that exists, and a link to #anchor (in the document or in another
Markdown file) a heading there, as GitHub makes anchors of headings; a broken link is reported as
FILE:LINE and the document's blocks are not run.

Each document gets a fresh database, and its blocks run in order, each in its own psql session,
so a block may use what an earlier one created. A block fenced as ```sql template is shown, not
run (signatures, templates with $1, fragments); a block with any other info string is not SQL.
The first failing block of a document is reported as FILE:LINE with psql's error, and the rest
of that document is skipped (its blocks would fail on what the failed one did not create).
Roles a document creates are dropped afterwards, so documents stay independent.
"""

import os
import re
import subprocess
import sys
import tempfile

BLOCK_TIMEOUT_SECONDS = 60
FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})\s*(.*)$")
LINK = re.compile(r"\]\(([^()\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")


def blocks(path):
    """Yields (line of the opening fence, info words, text) for each fenced block."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        indent, fence, info = len(match.group(1)), match.group(2), match.group(3).split()
        start, body = i + 1, []
        i += 1
        while i < len(lines) and not re.match(r"^ {0,3}" + re.escape(fence[0]) + "{%d,}\\s*$"
                                               % len(fence), lines[i]):
            body.append(lines[i][indent:] if lines[i][:indent].isspace() else lines[i])
            i += 1
        if i == len(lines):
            raise SystemExit(f"{path}:{start}: unclosed code fence")
        i += 1
        yield start, info, "\n".join(body) + "\n"


def prose(path):
    """Yields (line number, line) for each line outside fenced blocks."""
    fenced = set()
    for start, _, text in blocks(path):
        fenced.update(range(start, start + text.count("\n") + 2))
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f.read().split("\n"), 1):
            if number not in fenced:
                yield number, line


def anchors(path):
    """The anchors of a document's headings, as GitHub makes them: lower case, punctuation but
    hyphens and underscores dropped, spaces as hyphens, a repeated one suffixed -1, -2, ..."""
    made, seen = set(), {}
    for _, line in prose(path):
        match = HEADING.match(line)
        if match:
            anchor = re.sub(r"[^\w\- ]", "", match.group(1).lower()).replace(" ", "-")
            made.add(anchor if anchor not in seen else f"{anchor}-{seen[anchor]}")
            seen[anchor] = seen.get(anchor, 0) + 1
    return made


def broken_links(path):
    """Yields FILE:LINE: TARGET for each relative link whose file or heading does not exist."""
    for number, line in prose(path):
        for target in LINK.findall(line):
            if re.match(r"[a-z]+:", target):
                continue
            file, _, anchor = target.partition("#")
            linked = os.path.normpath(os.path.join(os.path.dirname(path), file)) if file else path
            if not os.path.exists(linked):
                yield f"{path}:{number}: link to a missing file: {target}"
            elif anchor and linked.endswith(".md") and anchor not in anchors(linked):
                yield f"{path}:{number}: link to a missing heading: {target}"


def psql(database, *args, **kwargs):
    return subprocess.run(["psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", database,
                           *args], capture_output=True, text=True, **kwargs)


def admin(database, sql):
    result = psql(database, "-c", sql)
    if result.returncode != 0:
        raise SystemExit(f"checker set-up failed: {sql}: {result.stderr.strip()}")
    return result.stdout.split()


def check_document(path, number):
    broken = list(broken_links(path))
    if broken:
        print("\n".join(broken))
        return False
    database = f"inbox_docs_{number}"
    roles_before = set(admin("postgres", "SELECT rolname FROM pg_roles"))
    admin("postgres", f"CREATE DATABASE {database}")
    ran = templates = 0
    failure = None
    try:
        for line, info, text in blocks(path):
            if not info or info[0] != "sql":
                continue
            if info[1:] == ["template"]:
                templates += 1
                continue
            if info[1:]:
                failure = f"{path}:{line}: unknown info string {' '.join(info)!r} (sql or sql template)"
                break
            with tempfile.NamedTemporaryFile("w", suffix=".sql") as block:
                block.write(text)
                block.flush()
                try:
                    result = psql(database, "-f", block.name, timeout=BLOCK_TIMEOUT_SECONDS)
                except subprocess.TimeoutExpired:
                    failure = f"{path}:{line}: block did not finish in {BLOCK_TIMEOUT_SECONDS} s"
                    break
            ran += 1
            if result.returncode != 0:
                # psql names the temporary file and the line in it: make that the document's.
                def in_document(match):
                    return f"{path}:{line + int(match.group(1))}:"
                message = re.sub(r"^psql:[^\n:]*:(\d+):", in_document, result.stderr.strip(),
                                 flags=re.M)
                failure = f"{path}:{line}: block failed:\n{message}"
                break
    finally:
        new_roles = set(admin("postgres", "SELECT rolname FROM pg_roles")) - roles_before
        for role in sorted(new_roles):
            admin(database, f'DROP OWNED BY "{role}"')
        admin("postgres", f"DROP DATABASE {database}")
        for role in sorted(new_roles):
            admin("postgres", f'DROP ROLE "{role}"')
    if failure:
        print(failure)
        return False
    print(f"{path}: {ran} sql blocks ran, {templates} templates shown")
    return True


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    results = [check_document(path, n) for n, path in enumerate(sys.argv[1:], 1)]
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
