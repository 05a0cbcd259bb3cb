# inbox: PGXS build. `make && make install` builds and installs the extension;
# `make demo` and `make test` also install what a fresh Debian 12 machine is missing.

EXTENSION = inbox
MODULE_big = inbox
include sources.mk
OBJS = $(INBOX_SOURCES:.cpp=.o)
DATA = sql/inbox--1.0.sql sql/inbox--1.1.sql sql/inbox--1.0--1.1.sql sql/inbox--1.1--1.2.sql \
	sql/inbox--1.2--1.3.sql
# From 1.2 on, the full script of a version is the previous one followed by its update script:
# one source for both, so that a fresh install and an update cannot drift apart.
DATA_built = sql/inbox--1.2.sql sql/inbox--1.3.sql

# Tests, run the PGXS way: `make install`, then `make installcheck` (no server needed: the regress
# and isolation tests start temporary instances that preload the library, the TAP tests start
# their own nodes). One suite alone: `make installcheck ISOLATION= TAP_TESTS=` (regress),
# `REGRESS= TAP_TESTS=` (isolation), `REGRESS= ISOLATION=` (TAP); one file: `REGRESS=purge`.
REGRESS = claim claim_table_changes apply forget bad_input privileges configure_consumer upsert_versioned insert_once stats purge purge_bursts hostile_search_path layout_1_0 schema_guard outcomes handler_name drop_extension messages_delete consumer_registration consumer_owners outbox outbox_backlog outbox_cause outbox_retention outbox_sql_edition outbox_take_editions outbox_many_keys streams stream_table_changes
# The test databases are UTF8 with the C locale, whatever the caller's environment says.
ENCODING = UTF8
NO_LOCALE = 1
TEMP_INSTANCE_CONF = $(srcdir)/test/regress/postgresql.conf
REGRESS_OPTS = --temp-instance=./tmp_check_regress --temp-config=$(TEMP_INSTANCE_CONF) \
	--load-extension=inbox
ISOLATION = $(sort $(basename $(notdir $(wildcard $(srcdir)/test/isolation/specs/*.spec))))
ISOLATION_OPTS = --inputdir=$(srcdir)/test/isolation --temp-instance=./tmp_check_iso \
	--temp-config=$(TEMP_INSTANCE_CONF) --load-extension=inbox
TAP_TESTS = 1
PROVE_TESTS = test/t/*.pl
# What the tests leave beyond PGXS's own list (results/, regression.*, log/, output_iso/,
# tmp_check/, tmp_check_iso/): the regress instance, and the CMake builds of lint and unit.
EXTRA_CLEAN = tmp_check_regress/ build/ $(OBJS:.o=.d) $(RELAY)

PG_CONFIG ?= pg_config

all: $(RELAY)

sql/inbox--1.2.sql: sql/inbox--1.1.sql sql/inbox--1.1--1.2.sql
	cat $^ > $@
sql/inbox--1.3.sql: sql/inbox--1.2.sql sql/inbox--1.2--1.3.sql
	cat $^ > $@

# C++20 (for named initialisers), warnings as errors in our own code; PostgreSQL headers are made
# -isystem below.
PG_CXXFLAGS = -std=c++20 -Wno-register -Wextra -Werror -fno-omit-frame-pointer -MMD -MP
SHLIB_LINK = -lstdc++

# Objects are rebuilt when a header they include changes (PGXS tracks no header dependencies).
-include $(OBJS:.o=.d)

# The LLVM bitcode step would compile our C++ with clang and PostgreSQL's C flags; JIT
# inlining of these functions buys nothing, so it is off.
override with_llvm = no

# inbox-relay, the program that publishes the outbox (src/relay, docs/outbox.md): a client of
# libpq, rabbitmq-c and libcurl, never linked into the library. PGXS builds one MODULE_big or one
# PROGRAM, not both: its rules are here, and `install` and `uninstall` get one more prerequisite.
RELAY = src/relay/inbox-relay
RELAY_SOURCES = $(wildcard src/relay/*.cpp)
RELAY_CXXFLAGS = -std=c++20 -Wall -Wextra -Werror -O2 -g -Isrc \
	-isystem $(shell $(PG_CONFIG) --includedir)
RELAY_LIBS = -L$(shell $(PG_CONFIG) --libdir) -lpq -lrabbitmq -lssl -lcrypto -lcurl

$(RELAY): $(RELAY_SOURCES) $(wildcard src/relay/*.hpp)
	$(CXX) $(RELAY_CXXFLAGS) $(RELAY_SOURCES) $(LDFLAGS) $(RELAY_LIBS) -o $@

install: install-relay
install-relay: $(RELAY)
	$(MKDIR_P) '$(DESTDIR)$(bindir)'
	$(INSTALL_PROGRAM) $(RELAY) '$(DESTDIR)$(bindir)/'
uninstall: uninstall-relay
uninstall-relay:
	rm -f '$(DESTDIR)$(bindir)/$(notdir $(RELAY))'

# On a fresh machine pg_config arrives with `make deps`; demo and test re-invoke make after it.
PGXS := $(shell $(PG_CONFIG) --pgxs 2>/dev/null)
ifneq ($(PGXS),)
include $(PGXS)
# The TAP tests' own module (test/t/InboxTest.pm; prove runs in the source directory). After
# the include, which empties PROVE_FLAGS; `override` adds it to a PROVE_FLAGS=--verbose given on
# the command line too.
override PROVE_FLAGS += -I test/t
# Our headers by their path from src/ ("store/marker_table.hpp"); PostgreSQL's as system headers,
# which our warnings-as-errors leave alone. Absolute paths: CMake compiles elsewhere with them.
override CPPFLAGS := -I$(abspath $(srcdir)/src) \
	$(foreach flag,$(CPPFLAGS),$(if $(filter -I%,$(flag)),-isystem $(abspath $(flag:-I%=%)),$(flag)))
# The flags PGXS compiles our C++ with, but for its dependency files: what CMakeLists.txt compiles
# with too, so that clang-tidy checks the compile that ships.
compile-flags:
	@echo $(filter-out -MMD -MP,$(CXXFLAGS)) $(CPPFLAGS)
else
all install compile-flags:
	@echo "pg_config not found: run 'make deps' (or 'make demo' / 'make test') first" >&2; exit 1
endif

.PHONY: install-relay uninstall-relay
.PHONY: deps demo test test-upgrade format format-check lint dist deb test-package compile-flags

# Installs the Debian packages the build and the tests need (no-op when present).
deps:
	scripts/install-deps.sh test

# The demo installs only what it needs (PostgreSQL 15, its headers, a compiler), builds quietly,
# installs the extension (refused over the library of a Debian package) and plays the story, a
# few lines for each step (scripts/demo.sh).
demo:
	@scripts/install-deps.sh demo
	@PG_CONFIG=$(PG_CONFIG) scripts/demo.sh --install

# The suites install into a private copy of PostgreSQL (see test/run.sh), never system-wide.
# `make test PG_MAJOR=17` runs them against another major, in a chroot of the Debian suite that
# packages it (scripts/major-chroot.sh: 15, 17, 18, 19); PG_MAJOR unset, or 15, is the machine's
# PostgreSQL. SUITES="regress tap" runs some of them. PG_CONFIG=<prefix>/bin/pg_config runs them
# against that installation instead (a PostgreSQL built from source: 16, which Debian does not
# package): test/run.sh tests the PostgreSQL whose pg_config comes first in PATH.
ifeq ($(filter-out 15,$(PG_MAJOR)),)
test: deps
	$(MAKE) all
	PATH="$$($(PG_CONFIG) --bindir):$$PATH" test/run.sh $(SUITES)
else
test:
	scripts/as-root.sh scripts/major-chroot.sh $(PG_MAJOR) $(SUITES)
endif

# The TAP test of pg_upgrade from 15 to PG_MAJOR (17 or 18), in a chroot of PG_MAJOR's suite with
# bookworm's PostgreSQL 15 beside it (scripts/major-chroot.sh, INBOX_UPGRADE_FROM).
test-upgrade:
	@test -n "$(filter-out 15,$(PG_MAJOR))" || { echo "make test-upgrade PG_MAJOR=17 (or 18): the major to upgrade 15 to" >&2; exit 2; }
	scripts/as-root.sh env INBOX_UPGRADE_FROM=15 PROVE_TESTS=test/t/025_pg_upgrade.pl \
		scripts/major-chroot.sh $(PG_MAJOR) tap

CXX_FILES = $(wildcard src/*.cpp src/*.hpp src/*/*.cpp src/*/*.hpp test/unit/*.cpp examples/cpp/*.cpp)
format:
	clang-format -i $(CXX_FILES)
format-check:
	clang-format --dry-run -Werror $(CXX_FILES)

# clang-tidy checks the compile of PGXS (`make compile-flags`), and inbox-relay's; clang's
# front end only does not know some of GCC's spellings in PostgreSQL's CXXFLAGS
# (-Wimplicit-fallthrough=3).
lint:
	cmake -S . -B build/lint -DCMAKE_EXPORT_COMPILE_COMMANDS=ON -DPG_CONFIG=$(PG_CONFIG) >/dev/null
	clang-tidy -p build/lint --quiet --extra-arg=-Wno-unknown-warning-option $(INBOX_SOURCES) \
		$(RELAY_SOURCES) 2>&1 | \
		{ ! grep -E 'error|warning:'; }

# The release archive for PGXN, as pgvector and pg_cron make it: the committed tree at HEAD
# (not the working copy) in dist/inbox-<default_version>.zip, once META.json agrees with
# inbox.control.
EXTVERSION = $(shell sed -n "s/^default_version *= *'\([^']*\)'.*/\1/p" $(EXTENSION).control)
dist:
	scripts/check-meta.py
	mkdir -p dist
	git archive --format zip --prefix=$(EXTENSION)-$(EXTVERSION)/ \
		--output dist/$(EXTENSION)-$(EXTVERSION).zip HEAD
	@echo "dist/$(EXTENSION)-$(EXTVERSION).zip"

# The Debian package for one PostgreSQL major, dist/postgresql-NN-inbox_<version>_<arch>.deb,
# built from debian/ in a chroot of the Debian suite that packages NN (scripts/package-build.sh),
# and its test: installed into a clean chroot of that suite, the extension created and a message
# delivered twice (scripts/package-test.sh). `make deb test-package PG_MAJOR=17`; PG_MAJOR unset:
# the machine's 15. Both run as root (through sudo when not root).
# The chroots they build them in are kept outside the tree, in root's ~/.cache/inbox/chroots, or
# in INBOX_CHROOTS=DIR (passed on through sudo).
PACKAGE_MAJOR = $(or $(PG_MAJOR),15)
CHROOTS_ENV = $(if $(INBOX_CHROOTS),env INBOX_CHROOTS=$(INBOX_CHROOTS))
deb:
	@scripts/as-root.sh $(CHROOTS_ENV) scripts/package-build.sh $(PACKAGE_MAJOR)
test-package:
	@scripts/as-root.sh $(CHROOTS_ENV) scripts/package-test.sh $(PACKAGE_MAJOR)
