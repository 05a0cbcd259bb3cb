#!/usr/bin/env bash
# The examples suite: every example of examples/ is run exactly as examples/README.md says, and
# what it prints must be what the README says it prints, line for line; each example's header
# must show the same commands and output. Then each stub consumer (Python, Node, C++) runs as two
# instances at once, fed the same at-least-once stream, and every distinct payment must be
# applied exactly once.
#   test/examples/run.sh WORKDIR [python|node|cpp|rabbitmq|rabbitmq_stream ...]
#
# The README's blocks are found by the HTML comment before each (<!-- test: KIND [EXAMPLE] -->):
# setup (the examples' database, run before each example), build EXAMPLE, run EXAMPLE and
# output EXAMPLE. They run as bash scripts from the top of a copy of examples/, against a
# PostgreSQL of the suite's own set up as Debian's (scripts/cluster.sh, the PostgreSQL of
# pg_config in PATH): TCP on localhost with passwords (scram-sha-256), the Unix socket for the
# superuser postgres, and inbox preloaded. What differs from a Debian machine is given through
# the environment only, as a user's own settings would be: PGPORT (the cluster's port), AMQP_URL
# (a private RabbitMQ node's, scripts/rabbitmq.sh), and `sudo -u postgres`, which connects as the
# cluster's superuser through its socket.
set -euo pipefail

source_dir=$(cd "$(dirname "$0")/../.." && pwd)
source "$source_dir/scripts/cluster.sh"
source "$source_dir/scripts/rabbitmq.sh"
work=$1
shift
examples=("$@")
((${#examples[@]})) || examples=(python node cpp rabbitmq rabbitmq_stream)
# The examples whose consumer reads the stub's stream, which two instances then run at once; the
# others read a RabbitMQ node of the suite's own.
declare -A stub=([python]=1 [node]=1 [cpp]=1)
mkdir -p "$work"
readme=$source_dir/examples/README.md

# The files whose header shows each example's commands and output.
declare -A example_files=(
    [python]=examples/python/consumer.py
    [node]=examples/node/consumer.js
    [cpp]=examples/cpp/consumer.cpp
    [rabbitmq]="examples/rabbitmq/publish.py examples/rabbitmq/consumer.py"
    [rabbitmq_stream]="examples/rabbitmq/stream_publish.py examples/rabbitmq/stream_consumer.py"
)

# ---------------------------------------------------------------------------- the README's blocks

blocks=$work/blocks
/usr/bin/python3 - "$readme" "$blocks" <<'PY' || exit 1
import os, re, sys
readme, out = sys.argv[1:]
os.makedirs(out, exist_ok=True)
lines = open(readme, encoding="utf-8").read().split("\n")
for i, line in enumerate(lines):
    match = re.match(r"^<!-- test: (setup|build|run|output)(?: (\w+))? -->$", line)
    if not match:
        continue
    if i + 1 >= len(lines) or not lines[i + 1].startswith("```"):
        sys.exit(f"{readme}:{i + 1}: a test comment not followed by a code block")
    end = next((j for j in range(i + 2, len(lines)) if lines[j] == "```"), None)
    if end is None:
        sys.exit(f"{readme}:{i + 2}: unclosed code block")
    name = match.group(1) + (f"-{match.group(2)}" if match.group(2) else "")
    if os.path.exists(os.path.join(out, name)):
        sys.exit(f"{readme}:{i + 1}: a second block '{name}'")
    with open(os.path.join(out, name), "w") as f:
        f.write("\n".join(lines[i + 2:end]) + "\n")
PY
[ -f "$blocks/setup" ] || { echo "examples/README.md: no setup block"; exit 1; }
for example in "${examples[@]}"; do
    for kind in run output; do
        [ -f "$blocks/$kind-$example" ] ||
            { echo "examples/README.md: no '$kind $example' block"; exit 1; }
    done
done

# Each line of the README's commands and output, in a header of the example's own files.
check_headers() {
    local example=$1 line file found failures=0
    while IFS= read -r line; do
        [ -n "$line" ] || continue
        found=0
        for file in ${example_files[$example]}; do
            # grep reads it all (no -q): under pipefail, sed stopped early would fail the pipe.
            sed -E 's,^[[:space:]]*(//|#)?[[:space:]]*,,; s,[[:space:]]+$,,' "$source_dir/$file" |
                grep -xF -- "$line" >/dev/null && found=1
        done
        if ((found == 0)); then
            echo "$example: '$line' (examples/README.md) is not in ${example_files[$example]}"
            failures=1
        fi
    done < <(cat "$blocks"/{build,run,output}-"$example" 2>/dev/null)
    return $failures
}

# ---------------------------------------------------------------------------- the servers

free_port() {
    /usr/bin/python3 -c '
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

cleanup() {
    cluster_stop
    rabbitmq_stop
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# No connection settings of the caller's: only what the README's commands set, and PGPORT.
unset PGHOST PGHOSTADDR PGUSER PGDATABASE PGPASSWORD PGPASSFILE PGSERVICE PGSSLMODE
pg_bindir=$(pg_config --bindir)
export PGPORT
PGPORT=$(free_port)
cluster=$work/cluster
mkdir -p "$cluster"
# Debian's pg_hba.conf, but for the superuser's socket connection: trust, the test's stand-in for
# peer as the operating-system user postgres.
cat >"$cluster/pg_hba.conf" <<'EOF'
local   all   postgres                  trust
local   all   all                       peer
host    all   all        127.0.0.1/32   scram-sha-256
host    all   all        ::1/128        scram-sha-256
EOF
chmod 644 "$cluster/pg_hba.conf"
cluster_start "$pg_bindir" "$cluster" "listen_addresses = 'localhost'" "port = $PGPORT" \
    "hba_file = '$cluster/pg_hba.conf'" "shared_preload_libraries = 'inbox'" "fsync = off" ||
    { echo "could not start the examples' cluster"; exit 1; }

needs_rabbitmq=0
for example in "${examples[@]}"; do
    [ -n "${stub[$example]:-}" ] || needs_rabbitmq=1
done
if ((needs_rabbitmq)); then
    rabbitmq_start "$work/rabbitmq" || { echo "could not start a RabbitMQ node"; exit 1; }
    export AMQP_URL="amqp://guest:guest@127.0.0.1:$rabbitmq_amqp_port/%2F"
fi

# `sudo -u postgres COMMAND`: COMMAND as the cluster's superuser, through its socket.
mkdir -p "$work/bin"
cat >"$work/bin/sudo" <<EOF
#!/usr/bin/env bash
[ "\$1 \$2" = "-u postgres" ] || { echo "the examples' test knows only sudo -u postgres" >&2; exit 2; }
shift 2
PGHOST='$cluster' PGUSER=postgres exec "\$@"
EOF
chmod 755 "$work/bin/sudo"
# Debian's python3 (with python3-psycopg and python3-pika), node and make, as on a Debian machine
# (not a python3 that happens to come first in the caller's PATH); the tested PostgreSQL's psql.
export PATH="$work/bin:$pg_bindir:/usr/bin:$PATH"

# The top of the tree as the README's commands see it: a copy of examples/, where they may build.
tree=$work/tree
mkdir -p "$tree"
cp -r "$source_dir/examples" "$tree/"
rm -rf "$tree/examples/node/node_modules" "$tree/examples/cpp/consumer"

# Runs a block of the README from the top of the tree, its output (standard output and error) in
# OUT.
run_block() {
    local block=$1 out=$2
    (cd "$tree" && bash -euo pipefail "$blocks/$block") >"$out" 2>&1
}

# The setup block: the examples' database afresh. It prints nothing when all goes well, but for
# dropdb's notice when there was no database to drop.
fresh_database() {
    local example=$1
    if ! run_block setup "$work/$example.setup.out" ||
        grep -vqxF 'NOTICE:  database "inbox_examples" does not exist, skipping' "$work/$example.setup.out"; then
        echo "$example: the set-up of examples/README.md failed or printed:"
        cat "$work/$example.setup.out"
        return 1
    fi
}

# ---------------------------------------------------------------------------- as documented

run_documented() {
    local example=$1
    fresh_database "$example" || return 1
    if [ -f "$blocks/build-$example" ] && ! run_block "build-$example" "$work/$example.build.out"; then
        echo "$example: the build of examples/README.md failed:"
        cat "$work/$example.build.out"
        return 1
    fi
    if ! run_block "run-$example" "$work/$example.out"; then
        echo "$example: the commands of examples/README.md failed:"
        cat "$work/$example.out"
        return 1
    fi
    if ! diff -u --label "examples/README.md (output $example)" --label "what it printed" \
        "$blocks/output-$example" "$work/$example.out"; then
        echo "$example: prints other than examples/README.md says"
        return 1
    fi
}

# ---------------------------------------------------------------------------- two at once

# What every stub delivers: payments 1 to 120 (payment i: account acct-<i % 5>, amount
# (i * 37) % 1000 + 1), some of them more than once, and one malformed payment whose handler
# fails until the consumer's max_attempts (examples/schema.sql) make it poisoned.
payments=120
malformed=pay-malformed
max_attempts=3

sql() { psql -X -q -A -t -v ON_ERROR_STOP=1 -h "$cluster" -U postgres -d inbox_examples "$@"; }

run_concurrently() {
    local example=$1 failures=0
    fresh_database "$example" || return 1
    # Two instances at once, as when a broker hands the same messages to a second instance.
    run_block "run-$example" "$work/$example.1.out" &
    local first=$!
    run_block "run-$example" "$work/$example.2.out" &
    local second=$!
    wait "$first" || { echo "$example: instance 1 failed:"; cat "$work/$example.1.out"; failures=1; }
    wait "$second" || { echo "$example: instance 2 failed:"; cat "$work/$example.2.out"; failures=1; }
    ((failures == 0)) || return 1

    # Each instance: every delivery acked, nacked or dead-lettered, the malformed payment
    # dead-lettered once.
    local processed=0 out count outcome
    local -A counts
    for out in "$work/$example".{1,2}.out; do
        echo "$example, two at once: $(head -1 "$out")"
        for outcome in delivered processed duplicate failed poisoned; do
            count=$(sed -n "s/.*\b$outcome=\([0-9]*\).*/\1/p" "$out")
            counts[$outcome]=${count:--1}
        done
        if ((counts[processed] + counts[duplicate] + counts[failed] + counts[poisoned] != counts[delivered])); then
            echo "$example: the outcomes do not add up to the deliveries in: $(cat "$out")"
            failures=1
        fi
        if ((counts[poisoned] != 1)); then
            echo "$example: expected the malformed payment dead-lettered once, in: $(cat "$out")"
            failures=1
        fi
        processed=$((processed + counts[processed]))
    done
    if ((processed != payments)); then
        echo "$example: the instances processed $processed payments together, expected $payments"
        failures=1
    fi

    local wrong applied markers
    wrong=$(sql -c "
        SELECT coalesce(a.id, e.id) || ': ' || coalesce(a.balance::text, 'none') || ' instead of ' || coalesce(e.balance::text, 'none')
        FROM examples.accounts AS a
        FULL JOIN (SELECT 'acct-' || i % 5 AS id, sum((i * 37) % 1000 + 1) AS balance
                   FROM generate_series(1, $payments) AS i GROUP BY 1) AS e USING (id)
        WHERE a.balance IS DISTINCT FROM e.balance")
    if [ -n "$wrong" ]; then
        echo "$example: balances differ from the distinct payments:"
        echo "$wrong"
        failures=1
    fi
    applied=$(sql -c "SELECT applied FROM inbox.stats WHERE consumer = 'examples.payments'")
    markers=$(sql -c "SELECT count(*) FROM inbox.messages WHERE consumer = 'examples.payments'")
    if [ "$applied" != "$payments" ] || [ "$markers" != "$payments" ]; then
        echo "$example: inbox.stats applied = $applied, markers = $markers, expected $payments"
        failures=1
    fi
    # The malformed payment: no marker, its failures kept by inbox.attempts (at least
    # max_attempts: the two instances may fail it side by side), and both instances told
    # "poisoned" (inbox.stats counts each answer).
    local dead_letter
    dead_letter=$(sql -c "
        SELECT (SELECT count(*) FROM inbox.messages WHERE consumer = 'examples.payments' AND message_id = '$malformed')
               || ' ' || coalesce((SELECT failures || ' ' || last_sqlstate FROM inbox.attempts
                                   WHERE consumer = 'examples.payments' AND message_id = '$malformed'), 'none')
               || ' ' || (SELECT poisoned FROM inbox.stats WHERE consumer = 'examples.payments')")
    read -r dl_markers dl_failures dl_sqlstate dl_poisoned <<<"$dead_letter"
    if [ "$dl_markers" != 0 ] || ! [[ $dl_failures =~ ^[0-9]+$ ]] || ((dl_failures < max_attempts)) ||
        [ "$dl_sqlstate" != 22P02 ] || [ "$dl_poisoned" != 2 ]; then
        echo "$example: $malformed: markers, failures, last SQLSTATE, poisoned answers = $dead_letter;" \
            "expected 0, at least $max_attempts, 22P02, 2"
        failures=1
    fi
    return $failures
}

failed=0
for example in "${examples[@]}"; do
    ok=1
    check_headers "$example" || ok=0
    run_documented "$example" || ok=0
    if ((ok)) && [ -n "${stub[$example]:-}" ]; then
        run_concurrently "$example" || ok=0
    fi
    if ((ok)); then
        echo "example $example: ok"
    else
        echo "example $example: FAILED"
        failed=1
    fi
done
exit $failed
