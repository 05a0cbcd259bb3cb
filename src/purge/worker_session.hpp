// What every background process of the extension (the purge launcher and its workers) sets up for
// itself.
#pragma once

// SIGTERM ends the process at once; SIGHUP asks for a reload.
void take_worker_signals();

// Once connected to a database: pins, for the process's own session, the settings that a
// database owner may give his database (ALTER DATABASE ... SET is open to him for these) and
// that would make the process's work fail or go astray, as autovacuum pins its own.
void pin_worker_settings();
