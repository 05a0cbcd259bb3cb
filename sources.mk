# The one list of extension sources, read by both Makefile (PGXS) and CMakeLists.txt.
INBOX_SOURCES = \
	src/module.cpp \
	src/settings.cpp \
	src/pg/guard.cpp \
	src/pg/shared_memory.cpp \
	src/pg/spi.cpp \
	src/pg/state_file.cpp \
	src/pg/subtransaction.cpp \
	src/message_key.cpp \
	src/marker_table.cpp \
	src/consumer_registry.cpp \
	src/worker_session.cpp \
	src/consumer_registrar.cpp \
	src/marker_forms.cpp \
	src/marker_ops.cpp \
	src/handler.cpp \
	src/claim.cpp \
	src/outcome.cpp \
	src/payload_fingerprint.cpp \
	src/receive.cpp \
	src/claim_batch.cpp \
	src/stats_table.cpp \
	src/pending_claims.cpp \
	src/attempts_table.cpp \
	src/stats_functions.cpp \
	src/upsert_statement.cpp \
	src/upsert_table.cpp \
	src/upsert_parameters.cpp \
	src/upsert_plan.cpp \
	src/upsert.cpp \
	src/purge.cpp \
	src/purge_schedule.cpp \
	src/purge_status.cpp \
	src/purge_launcher.cpp \
	src/purge_worker.cpp \
	src/drop_guard.cpp
