#!/usr/bin/env python3
"""Checks that the includes of src/ only go down its layers: a file includes the headers of its
own folder and of the layers below it, never of its own layer's other folders or of a layer
above. Each folder is one concern; pg/ depends on nothing of ours. Nor do two parts (a header and
its .cpp) depend on each other, in one folder either.

    scripts/check-layers.py          (from anywhere; prints each include that goes up, exits 1 if any)
"""

import os
import re
import sys

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
src = os.path.join(root, "src")

# From the bottom up; the folders of one layer do not include each other.
LAYERS = [
    # PostgreSQL's APIs as the extension uses them; and inbox-relay, a program of its own (never
    # linked into the library) that includes nothing of the library's
    ["pg", "relay"],
    ["settings"],  # the inbox.* settings (src/settings.*)
    ["store"],  # the markers, their details and the consumer registry, as tables
    ["stats"],  # what shared memory counts: claims, failed attempts; and what shows it
    # the SQL functions (claim, upsert), the workers and the hooks
    ["claim", "purge", "upsert", "drop"],
    # streams' positions, counted in inbox.stats as claims are; inbox.send, which records the
    # cause the claims leave
    ["stream", "outbox"],
    ["module"],  # src/module.cpp: what the library registers when it is loaded
]
RANK = {folder: rank for rank, layer in enumerate(LAYERS) for folder in layer}
OWN_INCLUDE = re.compile(r'^#include "([a-z_/]+\.hpp)"', re.M)


def folder_of(path):
    """The folder of a path under src/; a top-level file is its own (settings, module)."""
    head, _, tail = path.partition("/")
    return head if tail else os.path.splitext(head)[0]


def cycles(depends):
    """The include cycles between parts (src/x/name for name.hpp and name.cpp), each once."""
    found, done = set(), set()

    def visit(part, path):
        if part in path:
            cycle = path[path.index(part):]
            if min(cycle) == cycle[0]:
                found.add(tuple(cycle + [part]))
            return
        if part in done:
            return
        for needed in sorted(depends.get(part, ())):
            visit(needed, path + [part])
        if not path:
            done.add(part)

    for part in sorted(depends):
        visit(part, [])
    return sorted(found)


def main():
    problems = []
    depends = {}
    for directory, _, files in os.walk(src):
        for name in sorted(files):
            if not name.endswith((".cpp", ".hpp")):
                continue
            path = os.path.relpath(os.path.join(directory, name), src)
            folder = folder_of(path)
            if folder not in RANK:
                problems.append(f"src/{path}: folder {folder}/ is in no layer (scripts/check-layers.py)")
                continue
            with open(os.path.join(src, path)) as f:
                for included in OWN_INCLUDE.findall(f.read()):
                    part, needed = os.path.splitext(path)[0], os.path.splitext(included)[0]
                    if needed != part:
                        depends.setdefault(part, set()).add(needed)
                    target = folder_of(included)
                    if target == folder:
                        continue
                    if target not in RANK or RANK[target] >= RANK[folder]:
                        problems.append(f"src/{path} includes {included}: not a layer below {folder}")
    for cycle in cycles(depends):
        problems.append("include cycle: " + " -> ".join(cycle))
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
