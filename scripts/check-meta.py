#!/usr/bin/env python3
"""Checks the release metadata against the tree, so that a release cannot ship metadata of another
version: META.json (PGXN), its required fields, versions and files that agree with inbox.control;
debian/ (the Debian package), the version of debian/changelog's latest entry, and debian/control
as pg_buildext generates it from debian/control.in for the major it names; the licence, the
PostgreSQL License, named alike in LICENSE, META.json and debian/copyright; and a CHANGELOG.md
entry for the version.

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
    if meta.get("license") != "postgresql":
        problems.append(f"license {meta.get('license')!r}, not 'postgresql' (LICENSE)")
    problems = [f"META.json: {problem}" for problem in problems]
    problems += debian_problems(control)
    problems += licence_and_changelog_problems(control)
    for problem in problems:
        print(problem)
    sys.exit(1 if problems else 0)


def debian_problems(control_version):
    problems = []
    with open(os.path.join(root, "debian", "changelog")) as f:
        latest = re.match(r"inbox \(([^)]+)\)", f.readline())
    if not latest or latest.group(1) != control_version:
        problems.append(f"debian/changelog: the latest entry is of version "
                        f"{latest and latest.group(1)!r}, but inbox.control's default_version is "
                        f"{control_version!r}")
    # debian/control is debian/control.in for one major (pg_buildext updatecontrol): with one
    # version supported, PGVERSION is that version everywhere.
    with open(os.path.join(root, "debian", "control.in")) as f:
        template = f.read()
    with open(os.path.join(root, "debian", "control")) as f:
        generated = f.read()
    major = re.search(r"^Package: postgresql-(\d+)-inbox$", generated, re.M)
    if not major or template.replace("PGVERSION", major.group(1)) != generated:
        problems.append("debian/control: not debian/control.in for one major; run "
                        "'PG_SUPPORTED_VERSIONS=15 pg_buildext updatecontrol'")
    return problems


def licence_and_changelog_problems(control_version):
    problems = []
    licence = os.path.join(root, "LICENSE")
    if not os.path.exists(licence) or not open(licence).readline().startswith("PostgreSQL License"):
        problems.append("LICENSE: missing, or not the PostgreSQL License")
    with open(os.path.join(root, "debian", "copyright")) as f:
        copyright_file = f.read()
    if not re.search(r"^Files: \*\n(?:.+\n)*License: PostgreSQL$", copyright_file, re.M):
        problems.append("debian/copyright: the files are not under 'License: PostgreSQL'")
    with open(os.path.join(root, "CHANGELOG.md")) as f:
        changelog = f.read()
    if not re.search(rf"^## {re.escape(control_version)}\b", changelog, re.M):
        problems.append(f"CHANGELOG.md: no entry '## {control_version}'")
    return problems


if __name__ == "__main__":
    main()
