# The one list of extension sources, read by both Makefile (PGXS) and CMakeLists.txt.
INBOX_SOURCES = \
	src/module.cpp \
	src/pg/guard.cpp \
	src/message_key.cpp \
	src/marker_store.cpp \
	src/apply.cpp \
	src/stats_table.cpp \
	src/claim_stats.cpp \
	src/stats_functions.cpp \
	src/upsert_statement.cpp \
	src/upsert_plan_cache.cpp \
	src/upsert.cpp \
	src/purge_settings.cpp \
	src/purge.cpp \
	src/purge_schedule.cpp \
	src/worker_status.cpp \
	src/purge_worker.cpp
