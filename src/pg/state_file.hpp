// State that shared memory carries across a clean restart: written by the postmaster at
// shutdown, read back once at the next start and then removed. After a crash (or an immediate
// shutdown, which is followed by crash recovery) it is not trusted and the state starts empty,
// as PostgreSQL's own statistics do.
#pragma once

extern "C" {
#include "postgres.h"
}

#include <cstdio>

namespace pg {

struct StateFileWriter {
    FILE* file;
    const char* path;
    bool ok;
};

// Starts writing `path` (through a temporary file) with its header.
bool begin_state_file(StateFileWriter* writer, const char* path, uint32 magic, uint32 version);
void write_state(StateFileWriter* writer, const void* data, size_t size);
// Puts the file in place when everything was written; logs and removes it otherwise.
void finish_state_file(StateFileWriter* writer);

// The file written at the last clean shutdown, positioned after its header, and its version;
// nullptr when there is none, when the server did not shut down cleanly (the file is then
// removed) or when it is not one of ours.
FILE* open_state_file(const char* path, uint32 magic, uint32* version);
bool read_state(FILE* file, void* data, size_t size);
// Closes and removes the file, so that neither a crash restart nor a base backup resurrects
// it; logs when it was cut short.
void close_state_file(FILE* file, const char* path, bool complete);

}  // namespace pg
