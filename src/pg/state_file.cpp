// See state_file.hpp: the file, checked against the cluster's shutdown state before it is
// read.
#include "pg/state_file.hpp"

extern "C" {
#include "catalog/pg_control.h"
#include "common/controldata_utils.h"
#include "miscadmin.h"
#include "storage/fd.h"
}

#include <cerrno>

namespace pg {

namespace {

void temporary_path(const char* path, char* out) {
    snprintf(out, MAXPGPATH, "%s.tmp", path);
}

bool shut_down_cleanly() {
    bool crc_ok;
    ControlFileData* control = get_controlfile(DataDir, &crc_ok);
    bool clean =
        crc_ok && (control->state == DB_SHUTDOWNED || control->state == DB_SHUTDOWNED_IN_RECOVERY);
    pfree(control);
    return clean;
}

}  // namespace

bool begin_state_file(StateFileWriter* writer, const char* path, uint32 magic, uint32 version) {
    char temporary[MAXPGPATH];
    temporary_path(path, temporary);
    writer->path = path;
    writer->file = AllocateFile(temporary, PG_BINARY_W);
    writer->ok = writer->file != nullptr;
    if (!writer->ok) {
        ereport(LOG, (errcode_for_file_access(),
                      errmsg("could not write inbox state file \"%s\": %m", temporary)));
        return false;
    }
    write_state(writer, &magic, sizeof(magic));
    write_state(writer, &version, sizeof(version));
    return true;
}

void write_state(StateFileWriter* writer, const void* data, size_t size) {
    if (writer->ok) writer->ok = fwrite(data, size, 1, writer->file) == 1;
}

void finish_state_file(StateFileWriter* writer) {
    char temporary[MAXPGPATH];
    temporary_path(writer->path, temporary);
    if (FreeFile(writer->file) != 0) writer->ok = false;
    if (writer->ok) {
        (void)durable_rename(temporary, writer->path, LOG);
        return;
    }
    ereport(LOG, (errcode_for_file_access(),
                  errmsg("could not write inbox state file \"%s\": %m", temporary)));
    unlink(temporary);
}

FILE* open_state_file(const char* path, uint32 magic, uint32* version) {
    if (!shut_down_cleanly()) {
        unlink(path);
        return nullptr;
    }
    FILE* file = AllocateFile(path, PG_BINARY_R);
    if (file == nullptr) {
        if (errno != ENOENT)
            ereport(LOG, (errcode_for_file_access(),
                          errmsg("could not read inbox state file \"%s\": %m", path)));
        return nullptr;
    }
    uint32 found_magic = 0;
    if (!read_state(file, &found_magic, sizeof(found_magic)) || found_magic != magic ||
        !read_state(file, version, sizeof(*version))) {
        close_state_file(file, path, false);
        return nullptr;
    }
    return file;
}

bool read_state(FILE* file, void* data, size_t size) {
    return fread(data, size, 1, file) == 1;
}

void close_state_file(FILE* file, const char* path, bool complete) {
    if (!complete)
        ereport(LOG, (errmsg("inbox state file \"%s\" is invalid or truncated; it was not fully "
                             "restored",
                             path)));
    FreeFile(file);
    unlink(path);
}

}  // namespace pg
