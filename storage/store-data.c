#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "storage/sql.h"
#include "storage/store-internal.h"

/* Why the bytes of hourly chunks are not a column of their rows: a chunk
 * of a few kilobytes is a cell of 0.5 to 4 KiB in a leaf page plus full
 * overflow pages, and leaf pages filled one cell after another with cells
 * of such sizes stay a third empty (12 % of the raw tier). Rows of
 * STORE_DATA_ROW_BYTES fill a page each. */

/* The first chunk_data row of an hour. */
static int64_t hour_base(int64_t hour) {
        return hour / STORE_HOUR_MS * STORE_DATA_ROWS_PER_HOUR;
}

int store_packer_open(struct store_packer *p, sqlite3 *db) {
        *p = (struct store_packer){ .hour = INT64_MIN };
        int r = sql_prepare(db,
                            "SELECT id, data FROM chunk_data WHERE id >= ?1 AND id < ?1 + " STORE_DATA_ROWS_PER_HOUR_SQL
                            " ORDER BY id DESC LIMIT 1",
                            &p->tail);
        if (r == 0)
                r = sql_prepare(db, "INSERT OR REPLACE INTO chunk_data(id, data) VALUES (?1, ?2)", &p->put_row);
        if (r == 0)
                r = sql_prepare(db,
                                "INSERT OR REPLACE INTO chunks(series_id, hour, at, size, start_ts, end_ts, count) "
                                "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                                &p->put_chunk);
        if (r < 0)
                store_packer_close(p);
        return r;
}

void store_packer_close(struct store_packer *p) {
        sqlite3_finalize(p->tail);
        sqlite3_finalize(p->put_row);
        sqlite3_finalize(p->put_chunk);
        *p = (struct store_packer){ .hour = INT64_MIN };
}

/* Continues the hour's stream where the database has it end. */
static int load_tail(struct store_packer *p, int64_t hour) {
        sqlite3_bind_int64(p->tail, 1, hour_base(hour));
        int rc = sqlite3_step(p->tail), r = 0;
        p->hour = hour;
        p->row = 0;
        p->fill = 0;
        if (rc == SQLITE_ROW) {
                size_t n = (size_t) sqlite3_column_bytes(p->tail, 1);
                p->row = sqlite3_column_int64(p->tail, 0) - hour_base(hour);
                p->fill = n < STORE_DATA_ROW_BYTES ? n : STORE_DATA_ROW_BYTES;
                if (p->fill > 0)
                        memcpy(p->buf, sqlite3_column_blob(p->tail, 1), p->fill);
        } else if (rc != SQLITE_DONE) {
                r = sql_errno(rc);
                p->hour = INT64_MIN;
        }
        sqlite3_reset(p->tail);
        return r;
}

static int put_row(struct store_packer *p) {
        sqlite3_bind_int64(p->put_row, 1, hour_base(p->hour) + p->row);
        sqlite3_bind_blob(p->put_row, 2, p->buf, (int) p->fill, SQLITE_STATIC);
        int r = sql_step_done(p->put_row);
        sqlite3_clear_bindings(p->put_row);
        if (r == 0)
                p->dirty = false;
        return r;
}

int store_packer_flush(struct store_packer *p) {
        if (!p->dirty)
                return 0;
        int r = put_row(p);
        if (r < 0)
                p->hour = INT64_MIN; /* read the tail again */
        return r;
}

int store_put_hourly(struct store_packer *p, int64_t series_id, int64_t hour, const uint8_t *data, size_t size,
                     int64_t first, int64_t last, size_t count) {
        int r = 0;
        if (p->hour != hour) {
                r = store_packer_flush(p);
                if (r == 0)
                        r = load_tail(p, hour);
        }
        if (r < 0)
                return r;
        if (p->fill == STORE_DATA_ROW_BYTES) {
                p->row++;
                p->fill = 0;
        }
        int64_t at = p->row * STORE_DATA_ROW_BYTES + (int64_t) p->fill;
        /* The hour's stream ends at its last row (4 GiB). */
        if (p->row + (int64_t) ((p->fill + size) / STORE_DATA_ROW_BYTES) >= STORE_DATA_ROWS_PER_HOUR)
                return -EFBIG;
        for (size_t done = 0; done < size && r == 0;) {
                size_t n = STORE_DATA_ROW_BYTES - p->fill;
                if (n > size - done)
                        n = size - done;
                memcpy(p->buf + p->fill, data + done, n);
                p->fill += n;
                done += n;
                p->dirty = true;
                /* A full row now; the last one at store_packer_flush(). */
                if (p->fill == STORE_DATA_ROW_BYTES)
                        r = store_packer_flush(p);
                if (r == 0 && p->fill == STORE_DATA_ROW_BYTES && done < size) {
                        p->row++;
                        p->fill = 0;
                }
        }
        if (r < 0)
                return r;
        sqlite3_stmt *st = p->put_chunk;
        sqlite3_bind_int64(st, 1, series_id);
        sqlite3_bind_int64(st, 2, hour);
        sqlite3_bind_int64(st, 3, at);
        sqlite3_bind_int64(st, 4, (int64_t) size);
        sqlite3_bind_int64(st, 5, first);
        sqlite3_bind_int64(st, 6, last);
        sqlite3_bind_int64(st, 7, (int64_t) count);
        return sql_step_done(st);
}

int store_collect_data(sqlite3 *db, int64_t before_ms) {
        sqlite3_stmt *st = NULL;
        int r = sql_prepare(db, "DELETE FROM chunk_data WHERE id < ?1", &st);
        if (r == 0) {
                /* The first hour that starts at before_ms or later. */
                sqlite3_bind_int64(st, 1, hour_base(store_hour_of(before_ms - 1) + STORE_HOUR_MS));
                r = sql_step_done(st);
        }
        sqlite3_finalize(st);
        return r;
}

/* chunk_bytes(): the statement that reads the rows, prepared once per
 * connection (preparing it per call made compaction of derived series
 * several times slower under a sanitizer). */
struct chunk_reader {
        sqlite3_stmt *rows;
};

static void reader_free(void *arg) {
        struct chunk_reader *cr = arg;
        sqlite3_finalize(cr->rows);
        free(cr);
}

/* The bytes of a chunk, or NULL when its rows are missing or short (a
 * damaged file): the caller's decoder then reports the chunk damaged. */
static void chunk_bytes(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
        struct chunk_reader *cr = sqlite3_user_data(ctx);
        int64_t hour = sqlite3_value_int64(argv[0]), at = sqlite3_value_int64(argv[1]),
                size = sqlite3_value_int64(argv[2]);
        (void) argc;
        if (at < 0 || size <= 0 || size > INT32_MAX || at / STORE_DATA_ROW_BYTES >= STORE_DATA_ROWS_PER_HOUR) {
                sqlite3_result_null(ctx);
                return;
        }
        int rc = SQLITE_OK;
        if (!cr->rows)
                rc = sqlite3_prepare_v2(sqlite3_context_db_handle(ctx),
                                        "SELECT id, data FROM chunk_data WHERE id BETWEEN ?1 AND ?2 ORDER BY id", -1,
                                        &cr->rows, NULL);
        uint8_t *out = rc == SQLITE_OK ? malloc((size_t) size) : NULL;
        if (!out) {
                if (rc == SQLITE_OK)
                        sqlite3_result_error_nomem(ctx);
                else
                        sqlite3_result_error_code(ctx, rc);
                return;
        }
        int64_t first = hour_base(hour) + at / STORE_DATA_ROW_BYTES;
        size_t skip = (size_t) (at % STORE_DATA_ROW_BYTES), got = 0;
        sqlite3_stmt *rows = cr->rows;
        sqlite3_bind_int64(rows, 1, first);
        sqlite3_bind_int64(rows, 2, first + (at + size - 1) / STORE_DATA_ROW_BYTES - at / STORE_DATA_ROW_BYTES);
        for (int64_t want = first; got < (size_t) size && (rc = sqlite3_step(rows)) == SQLITE_ROW; want++) {
                size_t n = (size_t) sqlite3_column_bytes(rows, 1);
                /* Rows are consecutive, and full but for the stream's last. */
                if (sqlite3_column_int64(rows, 0) != want || n <= skip || n > STORE_DATA_ROW_BYTES)
                        break;
                n -= skip;
                if (n >= (size_t) size - got)
                        n = (size_t) size - got;
                else if (n + skip < STORE_DATA_ROW_BYTES)
                        break;
                memcpy(out + got, (const uint8_t *) sqlite3_column_blob(rows, 1) + skip, n);
                got += n;
                skip = 0;
        }
        sqlite3_reset(rows);
        bool read = rc == SQLITE_ROW || rc == SQLITE_DONE;
        if (read && got == (size_t) size) {
                sqlite3_result_blob(ctx, out, (int) size, free);
                return;
        }
        free(out);
        if (read)
                sqlite3_result_null(ctx);
        else
                sqlite3_result_error_code(ctx, rc);
}

int store_data_register(sqlite3 *db) {
        struct chunk_reader *cr = calloc(1, sizeof(*cr));
        if (!cr)
                return -ENOMEM;
        /* On failure SQLite calls reader_free itself. */
        return sql_errno(sqlite3_create_function_v2(db, "chunk_bytes", 3, SQLITE_UTF8 | SQLITE_DIRECTONLY, cr,
                                                    chunk_bytes, NULL, NULL, reader_free));
}

void store_data_release(sqlite3 *db) {
        /* Deleting the function finalizes its statement (reader_free),
         * which sqlite3_close() would otherwise refuse to close with. */
        if (db)
                sqlite3_create_function(db, "chunk_bytes", 3, SQLITE_UTF8 | SQLITE_DIRECTONLY, NULL, NULL, NULL, NULL);
}
