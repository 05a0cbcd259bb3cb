// inbox.schedule_purge() / inbox.unschedule_purge(): CALL inbox.purge() as a pg_cron job.
// pg_cron stays optional: it is looked up in the catalog and called through SPI, never linked.
extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "postmaster/postmaster.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "miscadmin.h"
}

#include "pg/arguments.hpp"
#include "pg/compat.hpp"
#include "pg/spi.hpp"

namespace {

// One job per database and role; scheduling again replaces its schedule (pg_cron upserts by
// job name and user).
constexpr const char* job_name = "inbox-purge";
constexpr const char* job_command = "CALL inbox.purge()";
constexpr const char* cron_schema_name = "cron";

// pg_cron's upsert keeps the host and port a job was first scheduled with, so a job scheduled
// before cron.host was set (to a Unix socket, say) would keep failing to connect. Such a job is
// replaced: scheduled anew with where the server listens now (a new job id).
constexpr const char* unschedule_stale_job =
    "SELECT cron.unschedule(jobid) FROM cron.job "
    "WHERE jobname OPERATOR(pg_catalog.=) $1 AND username OPERATOR(pg_catalog.=) CURRENT_USER "
    "AND (nodename OPERATOR(pg_catalog.<>) $2 OR nodeport OPERATOR(pg_catalog.<>) $3)";

// pg_cron installed, and its functions reachable by the current user: a job is the scheduling
// role's, scheduled with its privileges. Without USAGE on pg_cron's schema the call would fail
// inside pg_cron's own query, which says nothing of the grant it needs ('operate' access grants
// EXECUTE on schedule_purge, never privileges on another extension's schema).
void require_pg_cron() {
    // (the extension's own schema is pg_catalog; its functions and tables are in schema cron)
    Oid schema = OidIsValid(get_extension_oid("pg_cron", true))
                     ? get_namespace_oid(cron_schema_name, true)
                     : InvalidOid;
    if (!OidIsValid(schema))
        ereport(ERROR,
                (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                 errmsg("pg_cron is not installed in this database"),
                 errhint("Add pg_cron to shared_preload_libraries and run CREATE EXTENSION pg_cron "
                         "in the database named by cron.database_name, or let the inbox purge "
                         "workers do the purging (inbox.purge_worker).")));
    if (pg::object_privilege(NamespaceRelationId, schema, GetUserId(), ACL_USAGE) != ACLCHECK_OK) {
        const char* role = GetUserNameFromId(GetUserId(), false);
        ereport(ERROR,
                (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                 errmsg("role \"%s\" may not use pg_cron's schema \"%s\"", role, cron_schema_name),
                 errhint("The purge's job is the role's own: GRANT USAGE ON SCHEMA %s TO %s; the "
                         "job also needs to log in as it (docs/operations.md, pg_cron).",
                         cron_schema_name, quote_identifier(role))));
    }
}

// Runs a one-row, one-column query on pg_cron's functions; false when it returned no row.
bool run_cron_query(const char* sql, int nargs, Oid* argtypes, Datum* values, Datum* result,
                    bool* isnull) {
    pg::spi_connect();
    int rc = SPI_execute_with_args(sql, nargs, argtypes, values, nullptr, false, 0);
    if (rc != SPI_OK_SELECT) elog(ERROR, "\"%s\" failed: %s", sql, SPI_result_code_string(rc));
    bool found = SPI_processed > 0;
    if (found) {
        *result = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, isnull);
        // by-value results only (bigint, boolean): nothing to copy out of SPI's memory
    }
    SPI_finish();
    return found;
}

}  // namespace

extern "C" {

PG_FUNCTION_INFO_V1(inbox_schedule_purge);
PGDLLEXPORT Datum inbox_schedule_purge(PG_FUNCTION_ARGS) {
    pg::require_argument(fcinfo, 0, "schedule", "Give a cron schedule such as '0 3 * * *'.");
    require_pg_cron();
    Oid argtypes[3] = {TEXTOID, TEXTOID, TEXTOID};
    Datum values[3] = {CStringGetTextDatum(job_name), PG_GETARG_DATUM(0),
                       CStringGetTextDatum(job_command)};
    // cron.host is for superusers' eyes only in SQL; pg_cron defines it whenever it is loaded.
    const char* host = GetConfigOption("cron.host", true, false);
    if (host != nullptr) {
        Oid where_types[3] = {TEXTOID, TEXTOID, INT4OID};
        Datum where[3] = {values[0], CStringGetTextDatum(host), Int32GetDatum(PostPortNumber)};
        Datum unscheduled = 0;
        bool isnull = true;
        run_cron_query(unschedule_stale_job, 3, where_types, where, &unscheduled, &isnull);
    }
    Datum job_id = 0;
    bool isnull = true;
    run_cron_query("SELECT cron.schedule($1, $2, $3)", 3, argtypes, values, &job_id, &isnull);
    if (isnull) elog(ERROR, "cron.schedule returned no job id");
    PG_RETURN_DATUM(job_id);
}

PG_FUNCTION_INFO_V1(inbox_unschedule_purge);
PGDLLEXPORT Datum inbox_unschedule_purge(PG_FUNCTION_ARGS) {
    require_pg_cron();
    // cron.job shows only the jobs of the current user: the one this user scheduled.
    Oid argtypes[1] = {TEXTOID};
    Datum values[1] = {CStringGetTextDatum(job_name)};
    Datum removed = 0;
    bool isnull = true;
    bool found = run_cron_query(
        "SELECT cron.unschedule(jobid) FROM cron.job "
        "WHERE jobname OPERATOR(pg_catalog.=) $1 AND username OPERATOR(pg_catalog.=) "
        "CURRENT_USER",
        1, argtypes, values, &removed, &isnull);
    PG_RETURN_BOOL(found && !isnull && DatumGetBool(removed));
}
}
