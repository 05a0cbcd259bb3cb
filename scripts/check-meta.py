#!/usr/bin/env python3
"""Checks META.json (PGXN) against the tree: the fields PGXN requires, and versions and files
that agree with inbox.control, so that a release cannot ship metadata of another version.

    scripts/check-meta.py            (from anywhere; prints what is wrong, exits 1 if anything)
"""

import json
import os
import re
import sys

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def main():
    with open(os.path.join(root, "inbox.control")) as f:
        control = re.search(r"^default_version\s*=\s*'([^']+)'", f.read(), re.M).group(1)
    # PGXN wants a semantic version: default_version '1.0' is 1.0.0.
    semver = control if control.count(".") == 2 else control + ".0"
    with open(os.path.join(root, "META.json")) as f:
        meta = json.load(f)

    problems = []
    for field in ("name", "abstract", "version", "maintainer", "license", "provides", "meta-spec"):
        if not meta.get(field):
            problems.append(f"missing mandatory field {field!r}")
    if meta.get("name") != "inbox":
        problems.append(f"name is {meta.get('name')!r}, not 'inbox'")
    if meta.get("version") != semver:
        problems.append(f"version {meta.get('version')!r}, but inbox.control's default_version "
                        f"is {control!r} ({semver!r})")
    extension = meta.get("provides", {}).get("inbox", {})
    if extension.get("version") != semver:
        problems.append(f"provides.inbox.version {extension.get('version')!r}, expected {semver!r}")
    for key in ("file", "docfile"):
        if extension.get(key) and not os.path.exists(os.path.join(root, extension[key])):
            problems.append(f"provides.inbox.{key} {extension[key]!r} does not exist")
    for problem in problems:
        print(f"META.json: {problem}")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
