# The one list of extension sources, read by both Makefile (PGXS) and CMakeLists.txt; by folder,
# from the layer that depends on nothing of ours up (scripts/check-layers.py), and a file after
# the files whose headers it includes.
INBOX_SOURCES = \
	src/pg/guard.cpp \
	src/pg/shared_memory.cpp \
	src/pg/spi.cpp \
	src/pg/state_file.cpp \
	src/pg/subtransaction.cpp \
	src/settings.cpp \
	src/store/message_key.cpp \
	src/store/marker_arguments.cpp \
	src/store/distribution.cpp \
	src/store/marker_table.cpp \
	src/store/marker_insert.cpp \
	src/store/marker_ops.cpp \
	src/store/marker_store_1_0.cpp \
	src/store/marker_forms.cpp \
	src/store/consumer_access.cpp \
	src/store/consumer_registration.cpp \
	src/store/consumer_registry.cpp \
	src/store/messages_delete.cpp \
	src/stats/details_visibility.cpp \
	src/stats/stats_table.cpp \
	src/stats/citus_counters.cpp \
	src/stats/stats_functions.cpp \
	src/stats/marker_counts.cpp \
	src/stats/attempts_table.cpp \
	src/stats/attempts_functions.cpp \
	src/stats/max_attempts_warning.cpp \
	src/claim/pending_claims.cpp \
	src/claim/claimed_cause.cpp \
	src/claim/marker_attempts.cpp \
	src/claim/handler_name.cpp \
	src/claim/handler.cpp \
	src/claim/outcome.cpp \
	src/claim/payload_fingerprint.cpp \
	src/claim/claim.cpp \
	src/claim/receive.cpp \
	src/claim/claim_batch.cpp \
	src/claim/configure_consumer.cpp \
	src/purge/purge_bucket_rows.cpp \
	src/purge/purge.cpp \
	src/purge/purge_schedule.cpp \
	src/purge/purge_status.cpp \
	src/purge/worker_session.cpp \
	src/purge/purge_worker.cpp \
	src/purge/purge_launcher.cpp \
	src/upsert/upsert_statement.cpp \
	src/upsert/upsert_table.cpp \
	src/upsert/upsert_parameters.cpp \
	src/upsert/upsert_plan.cpp \
	src/upsert/upsert.cpp \
	src/drop/drop_statement.cpp \
	src/drop/drop_guard.cpp \
	src/drop/drop_guard_hook.cpp \
	src/drop/citus_drop.cpp \
	src/module.cpp
