#!/usr/bin/python3
"""Pastes every ```sql block of the given Markdown documents into psql as a reader would, after
checking that each link of a document reaches its target.

    check.py DOCUMENT...        (PGHOST, PGPORT, PGUSER: a superuser of a cluster that has the
                                 extension available, preloads it, and has wal_level = logical
                                 as docs/operations.md asks of a publisher)

A link to a file must name one that exists, and a link to #anchor (in the document or in another
Markdown file) a heading there, as GitHub makes anchors of headings; a broken link is reported as
FILE:LINE and the document's blocks are not run.

Excerpts of tested code. A block fenced as ```LANGUAGE from PATH (PATH relative to the document,
as its links are) shows lines of that file, a program that another suite runs: its lines must
be lines of the file as they are, one after the other, or it is reported as FILE:LINE, and the
document's blocks are not run.

Who runs a block. Each ```sql block begins with a comment that says who runs it, which the reader
sees as the first line of the block:

    -- as a superuser             the superuser PGUSER names
    -- as app                     the role app (created, with LOGIN, by an earlier block)

and anything after the role (", when the consumer is deployed") is for the reader. A block fenced
as ```sql template is shown, not run (signatures, templates with $1, fragments), and needs no
such line; a block with any other info string is not SQL.

How it runs. Each document gets a fresh database named shop (the name the documents give it), and
its blocks run in order, each in the one psql session of its role, opened at that role's first
block and kept until the end of the document: a block may use what an earlier one created, and
a session setting, a SET ROLE or a transaction left behind is met by the next block of the same
role, as by a reader pasting into the same window. Statements are sent one at a time, as psql
would run them, and each must succeed without a WARNING; after each block its session must still
be its role, outside a transaction. The first failure of a document is reported as FILE:LINE,
and the rest of that document is skipped (its blocks would fail on what the failed one did not
do). Roles a document creates are dropped afterwards, so documents stay independent.

What a statement shows. The comment at the end of a statement's last line, when it begins with a
result, is checked against the statement's one row of output:

    SELECT inbox.claim('shipping', 'msg-7f3a9c');   -- true: do the work now
    SELECT outcome, sqlstate FROM ...;             -- failed, 42501
    SELECT place_order('key-41', '{...}');         -- {"body": {"order": 1}, "status": 201}
    SELECT inbox.claim('biling', 'msg-1');         -- ERROR 42704: nobody configured biling

A result is true, false, a number, an inbox.outcome value or an answer of inbox.claim_position (the
first column; what follows after commas, up to a colon or a parenthesis, the next columns), a JSON
value (compared as JSON with the first column; "..." stands for any value), or ERROR and the
SQLSTATE the statement must fail with.
Comment lines right below a statement whose first line is the statement's column names, as psql
prints them (columns separated by |), are its whole output, row by row:

    SELECT * FROM inbox.claim_batch('shipping', ARRAY['ship-3', 'ship-1']);
    --  claim_batch
    -- ship-3
    -- ship-1
"""

import json
import os
import queue
import re
import subprocess
import sys
import threading
import uuid

STATEMENT_TIMEOUT_SECONDS = 60
DATABASE = "shop"
FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})\s*(.*)$")
LINK = re.compile(r"\]\(([^()\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
ROLE_LINE = re.compile(r"^--\s*as\s+(a superuser|[a-z_][a-z0-9_]*)\b")
OUTCOMES = ("processed", "duplicate", "in_progress", "payload_mismatch", "poisoned", "failed",
            "next", "gap")
EXPECTED_ERROR = re.compile(r"^ERROR\s+([0-9A-Z]{5})\b")
SCALAR = re.compile(r"^(true|false|%s|-?\d+(?:\.\d+)?)\b([^:(]*)" % "|".join(OUTCOMES))


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


def stale_excerpts(path):
    """Yields FILE:LINE: ... for each ```LANGUAGE from PATH block that is not a run of lines of
    PATH as they are."""
    for line, info, text in blocks(path):
        if info[1:2] != ["from"]:
            continue
        if len(info) != 3:
            yield f"{path}:{line}: an excerpt names one file: ```LANGUAGE from PATH"
            continue
        source = os.path.normpath(os.path.join(os.path.dirname(path), info[2]))
        if not os.path.isfile(source):
            yield f"{path}:{line}: an excerpt of a missing file: {info[2]}"
            continue
        with open(source, encoding="utf-8") as f:
            lines = f.read().split("\n")
        excerpt = text.split("\n")[:-1]
        if not excerpt or not any(lines[i:i + len(excerpt)] == excerpt
                                  for i in range(len(lines))):
            yield f"{path}:{line}: the block is not as {info[2]} has these lines"


def statements(text):
    """Yields (start, end) offsets of each statement of a block of SQL, end just after the
    semicolon that ends it, splitting where psql would: not inside quotes, dollar quotes,
    comments or parentheses. A statement left without its semicolon ends at None."""
    i, n, start, depth = 0, len(text), None, 0
    while i < n:
        c = text[i]
        if text.startswith("--", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
            continue
        if text.startswith("/*", i):
            level = 0
            while i < n:
                if text.startswith("/*", i):
                    level, i = level + 1, i + 2
                elif text.startswith("*/", i):
                    level, i = level - 1, i + 2
                    if level == 0:
                        break
                else:
                    i += 1
            continue
        if c.isspace():
            i += 1
            continue
        if start is None:
            start = i
            if c == "\\":                          # a psql meta-command: the rest of the line
                i = text.find("\n", i)
                i = n if i < 0 else i
                yield start, i
                start = None
                continue
        dollar = re.match(r"\$([A-Za-z_][A-Za-z0-9_]*)?\$", text[i:])
        if c in "'\"":
            backslashes = c == "'" and i > 0 and text[i - 1] in "eE"
            i += 1
            while i < n and text[i] != c:
                i += 2 if backslashes and text[i] == "\\" else 1
            i += 1
            if i < n and text[i] == c:              # a doubled quote goes on
                continue
        elif dollar and not (i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_")):
            end = text.find(dollar.group(0), i + len(dollar.group(0)))
            i = n if end < 0 else end + len(dollar.group(0))
        else:
            depth += {"(": 1, ")": -1}.get(c, 0)
            i += 1
            if c == ";" and depth <= 0:
                yield start, i
                start, depth = None, 0
    if start is not None:
        yield start, None


class Failure(Exception):
    pass


class Session:
    """One psql process, as a reader's window connected as one role, fed a statement at a time."""

    def __init__(self, role):
        self.role = role
        self.sentinel = f"@@inbox-docs-{uuid.uuid4().hex}@@"
        user = ["-U", role] if role else []
        self.process = subprocess.Popen(
            ["psql", "-X", "-q", "-A", "-P", "footer=off", "-P", "pager=off", "-d", DATABASE,
             *user], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, bufsize=1)
        self.stdout, self.stderr = queue.Queue(), queue.Queue()
        for stream, lines in ((self.process.stdout, self.stdout),
                              (self.process.stderr, self.stderr)):
            threading.Thread(target=self._read, args=(stream, lines), daemon=True).start()

    @staticmethod
    def _read(stream, lines):
        for line in stream:
            lines.put(line.rstrip("\n"))
        lines.put(None)

    def _until_sentinel(self, lines, errors):
        collected = []
        while True:
            try:
                line = lines.get(timeout=STATEMENT_TIMEOUT_SECONDS)
            except queue.Empty:
                raise Failure(f"no answer in {STATEMENT_TIMEOUT_SECONDS} s (waiting for a lock?)")
            if line is None:
                raise Failure("psql ended: " + "\n".join(errors() + collected).strip())
            if line.startswith(self.sentinel):
                return collected, line[len(self.sentinel):].strip()
            collected.append(line)

    def run(self, sql):
        """Runs one statement; returns (output lines, messages of stderr, SQLSTATE)."""
        try:
            self.process.stdin.write(f"{sql}\n\\echo {self.sentinel} :SQLSTATE\n"
                                     f"\\warn {self.sentinel}\n")
            self.process.stdin.flush()
        except BrokenPipeError:
            pass                                    # psql ended: the reads say why
        messages = []

        def drained():
            while True:
                try:
                    line = self.stderr.get_nowait()
                except queue.Empty:
                    return messages
                if line is not None:
                    messages.append(line)
        output, sqlstate = self._until_sentinel(self.stdout, drained)
        messages, _ = self._until_sentinel(self.stderr, lambda: [])
        messages = [re.sub(r"^psql:<stdin>:\d+: ", "", line) for line in messages]
        return output, messages, sqlstate

    def close(self):
        try:
            self.process.stdin.close()
        except BrokenPipeError:
            pass
        try:
            self.process.wait(timeout=STATEMENT_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def cells(line):
    return [cell.strip() for cell in line.split("|")]


def same_json(expected, actual):
    if expected == "...":
        return True
    if isinstance(expected, dict):
        return (isinstance(actual, dict) and expected.keys() == actual.keys()
                and all(same_json(expected[k], actual[k]) for k in expected))
    if isinstance(expected, list):
        return (isinstance(actual, list) and len(expected) == len(actual)
                and all(same_json(e, a) for e, a in zip(expected, actual)))
    return expected == actual


def check_result(comment, table, output):
    """Compares what the statement printed (header and rows, unaligned) with what its comments
    say; returns the number of checks made, or raises Failure."""
    checks = 0
    header, rows = (cells(output[0]), [cells(line) for line in output[1:]]) if output else ([], [])
    scalar = SCALAR.match(comment)
    as_json = None
    if comment.startswith(("{", "[")):
        try:
            as_json = json.JSONDecoder().raw_decode(comment)[0]
        except ValueError:
            pass
    if scalar or as_json is not None:
        if len(rows) != 1:
            raise Failure(f"says `{comment}`, but printed {len(rows)} rows:\n" + "\n".join(output))
        if scalar:
            expected = [scalar.group(1)] + [item.strip() for item in scalar.group(2).split(",")
                                            if item.strip()]
            actual = [{"t": "true", "f": "false"}.get(cell, cell) for cell in rows[0]]
            if actual[:len(expected)] != expected:
                raise Failure(f"says `{comment}`, but printed: {' | '.join(rows[0])}")
        else:
            try:
                printed = json.loads(rows[0][0])
            except ValueError:
                printed = None
            if not same_json(as_json, printed):
                raise Failure(f"says `{comment}`, but printed: {rows[0][0]}")
        checks += 1
    if table:
        if cells(table[0]) == header:
            shown = [cells(line) for line in table[1:]]
            if shown != rows:
                raise Failure("the output shown below it is not what it printed:\n"
                              + "\n".join(output))
            checks += 1
        elif "|" in table[0]:
            raise Failure(f"the output shown below it has the columns {cells(table[0])}, "
                          f"the statement {header}")
    return checks


def run_block(session, path, line, text):
    """Runs the statements of one block in its session; returns the number of results checked."""
    lines = text.split("\n")
    checks, position = 0, 0
    for start, end in statements(text):
        first = line + 1 + text.count("\n", 0, start)
        where = f"{path}:{first}"
        if end is None:
            raise Failure(f"{where}: the statement has no semicolon: psql would wait for more")
        last = text.count("\n", 0, end - 1)
        comment = lines[last][len(text[:end].split("\n")[-1]):].strip()
        comment = comment[2:].strip() if comment.startswith("--") else ""
        table = []
        for following in lines[last + 1:]:
            if not following.lstrip().startswith("--"):
                break
            table.append(following.lstrip()[2:])
        try:
            output, messages, sqlstate = session.run(text[position:end])
        except Failure as failure:
            raise Failure(f"{where}: {failure}")
        position = end
        expected_error = EXPECTED_ERROR.match(comment)
        if expected_error:
            if sqlstate != expected_error.group(1):
                raise Failure(f"{where}: says {expected_error.group(0)}, but got SQLSTATE "
                              f"{sqlstate}:\n" + "\n".join(messages))
            checks += 1
            continue
        if sqlstate != "00000":
            raise Failure(f"{where}: failed (SQLSTATE {sqlstate}):\n" + "\n".join(messages))
        warnings = [message for message in messages if re.match(r"WARNING:", message)]
        if warnings:
            raise Failure(f"{where}: a warning:\n" + "\n".join(messages))
        try:
            checks += check_result(comment, table, output)
        except Failure as failure:
            raise Failure(f"{where}: {failure}")
    output, messages, sqlstate = session.run(
        "SELECT current_user, transaction_timestamp() <> statement_timestamp();")
    if sqlstate != "00000":
        raise Failure(f"{path}:{line}: after the block: " + "\n".join(messages))
    user, in_transaction = cells(output[1])
    if user != (session.role or os.environ.get("PGUSER", "postgres")):
        raise Failure(f"{path}:{line}: the block leaves its session as {user} (a SET ROLE?), "
                      f"not {session.role or 'the superuser'}")
    if in_transaction == "t":
        raise Failure(f"{path}:{line}: the block leaves a transaction open")
    return checks


def psql(database, *args, **kwargs):
    return subprocess.run(["psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", database,
                           *args], capture_output=True, text=True, **kwargs)


def admin(database, sql):
    result = psql(database, "-c", sql)
    if result.returncode != 0:
        raise SystemExit(f"checker set-up failed: {sql}: {result.stderr.strip()}")
    return result.stdout.split()


def check_document(path):
    broken = list(broken_links(path)) + list(stale_excerpts(path))
    if broken:
        print("\n".join(broken))
        return False
    roles_before = set(admin("postgres", "SELECT rolname FROM pg_roles"))
    admin("postgres", f"CREATE DATABASE {DATABASE}")
    sessions, ran, templates, checks = {}, {}, 0, 0
    failure = None
    try:
        for line, info, text in blocks(path):
            if not info or info[0] != "sql":
                continue
            if info[1:] == ["template"]:
                templates += 1
                continue
            if info[1:]:
                failure = (f"{path}:{line}: unknown info string {' '.join(info)!r} "
                           "(sql or sql template)")
                break
            role = ROLE_LINE.match(text.lstrip())
            if not role:
                failure = (f"{path}:{line + 1}: the block does not say who runs it: begin it with "
                           "`-- as a superuser` or `-- as ROLE`")
                break
            name = None if role.group(1) == "a superuser" else role.group(1)
            if name not in sessions:
                sessions[name] = Session(name)
            try:
                checks += run_block(sessions[name], path, line, text)
            except Failure as error:
                failure = f"{error}\n(the block of {path}:{line}, as {role.group(1)})"
                break
            ran[role.group(1)] = ran.get(role.group(1), 0) + 1
    finally:
        for session in sessions.values():
            session.close()
        new_roles = set(admin("postgres", "SELECT rolname FROM pg_roles")) - roles_before
        for role in sorted(new_roles):
            admin(DATABASE, f'DROP OWNED BY "{role}"')
        admin("postgres", f"DROP DATABASE {DATABASE} WITH (FORCE)")
        for role in sorted(new_roles):
            admin("postgres", f'DROP ROLE "{role}"')
    if failure:
        print(failure)
        return False
    roles = ", ".join(f"{count} as {role}" for role, count in ran.items())
    excerpts = sum(1 for _, info, _ in blocks(path) if info[1:2] == ["from"])
    print(f"{path}: {sum(ran.values())} sql blocks ran{' (' + roles + ')' if roles else ''}, "
          f"{checks} results checked, {templates} templates shown"
          f"{f', {excerpts} excerpts as their files have them' if excerpts else ''}")
    return True


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    results = [check_document(path) for path in sys.argv[1:]]
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
