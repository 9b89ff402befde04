/* SQLite helpers of the store: SQLite's result codes as negative errnos,
 * and the few ways the store runs a statement. Internal to storage/.
 *
 * Each call uses only the connection it is given: safe from any thread
 * that owns that connection. */
#pragma once

#include <sqlite3.h>
#include <stdint.h>

/* SQLite's result code as store.h's errors: 0 for OK, DONE and ROW. */
int sql_errno(int rc);

/* Opens a connection with the store's settings (busy timeout, a small page
 * cache), reading the file's schema. flags as sqlite3_open_v2() takes
 * them. */
int sql_open(const char *path, int flags, sqlite3 **ret);

/* Runs one or more statements that return nothing the caller needs. */
int sql_exec(sqlite3 *db, const char *sql);

int sql_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **ret);

/* Runs a statement that returns one integer, or none (then 0). */
int sql_query_int(sqlite3 *db, const char *sql, int64_t *ret);

/* Steps a prepared statement once and resets it, keeping its bindings. */
int sql_step_done(sqlite3_stmt *st);

/* Bytes in pages that hold data (not on the free list), 0 when unknown. */
int64_t sql_used_bytes(sqlite3 *db);

/* PRAGMA quick_check: 0 when it answers "ok", else -EUCLEAN (or the error
 * that kept it from running; -EINTR when sqlite3_interrupt() stopped it). */
int sql_quick_check(sqlite3 *db);
