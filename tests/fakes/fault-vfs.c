#include "config.h"

#include <stddef.h>

#include <sqlite3.h>

#include "tests/fakes/fault-vfs.h"

/* The VFS that was the default (the unix one), which does the real work. */
static sqlite3_vfs *base;
static sqlite3_vfs vfs;

/* What each kind fails. */
enum op { OP_WRITE, OP_SYNC, OP_OPEN, OP_TRUNCATE };
static const struct {
        enum op op;
        int code;
        const char *name;
} kinds[FAULT__COUNT] = {
        [FAULT_WRITE] = { OP_WRITE, SQLITE_IOERR_WRITE, "xWrite (SQLITE_IOERR_WRITE)" },
        [FAULT_FULL] = { OP_WRITE, SQLITE_FULL, "xWrite (SQLITE_FULL)" },
        [FAULT_SYNC] = { OP_SYNC, SQLITE_IOERR_FSYNC, "xSync (SQLITE_IOERR_FSYNC)" },
        [FAULT_OPEN] = { OP_OPEN, SQLITE_CANTOPEN, "xOpen (SQLITE_CANTOPEN)" },
        [FAULT_TRUNCATE] = { OP_TRUNCATE, SQLITE_IOERR_TRUNCATE, "xTruncate (SQLITE_IOERR_TRUNCATE)" },
};

static enum fault_kind armed_kind;
static bool armed;
static long fail_at, calls, failures;

/* The error code the call fails with, or SQLITE_OK to pass it through. */
static int fault(enum op op) {
        if (kinds[armed_kind].op != op)
                return SQLITE_OK;
        calls++;
        if (!armed || fail_at <= 0 || calls < fail_at)
                return SQLITE_OK;
        failures++;
        return kinds[armed_kind].code;
}

/* Our file, with the base VFS's file right after it. */
struct fault_file {
        sqlite3_file base;
        sqlite3_file *real;
};

static sqlite3_file *real(sqlite3_file *f) {
        return ((struct fault_file *) f)->real;
}

static int f_close(sqlite3_file *f) {
        return real(f)->pMethods->xClose(real(f));
}

static int f_read(sqlite3_file *f, void *buf, int n, sqlite3_int64 at) {
        return real(f)->pMethods->xRead(real(f), buf, n, at);
}

static int f_write(sqlite3_file *f, const void *buf, int n, sqlite3_int64 at) {
        int rc = fault(OP_WRITE);
        return rc != SQLITE_OK ? rc : real(f)->pMethods->xWrite(real(f), buf, n, at);
}

static int f_truncate(sqlite3_file *f, sqlite3_int64 size) {
        int rc = fault(OP_TRUNCATE);
        return rc != SQLITE_OK ? rc : real(f)->pMethods->xTruncate(real(f), size);
}

static int f_sync(sqlite3_file *f, int flags) {
        int rc = fault(OP_SYNC);
        return rc != SQLITE_OK ? rc : real(f)->pMethods->xSync(real(f), flags);
}

static int f_file_size(sqlite3_file *f, sqlite3_int64 *size) {
        return real(f)->pMethods->xFileSize(real(f), size);
}

static int f_lock(sqlite3_file *f, int level) {
        return real(f)->pMethods->xLock(real(f), level);
}

static int f_unlock(sqlite3_file *f, int level) {
        return real(f)->pMethods->xUnlock(real(f), level);
}

static int f_check_reserved_lock(sqlite3_file *f, int *out) {
        return real(f)->pMethods->xCheckReservedLock(real(f), out);
}

static int f_file_control(sqlite3_file *f, int op, void *arg) {
        return real(f)->pMethods->xFileControl(real(f), op, arg);
}

static int f_sector_size(sqlite3_file *f) {
        return real(f)->pMethods->xSectorSize(real(f));
}

static int f_device_characteristics(sqlite3_file *f) {
        return real(f)->pMethods->xDeviceCharacteristics(real(f));
}

static int f_shm_map(sqlite3_file *f, int page, int size, int extend, void volatile **out) {
        return real(f)->pMethods->xShmMap(real(f), page, size, extend, out);
}

static int f_shm_lock(sqlite3_file *f, int offset, int n, int flags) {
        return real(f)->pMethods->xShmLock(real(f), offset, n, flags);
}

static void f_shm_barrier(sqlite3_file *f) {
        real(f)->pMethods->xShmBarrier(real(f));
}

static int f_shm_unmap(sqlite3_file *f, int delete_flag) {
        return real(f)->pMethods->xShmUnmap(real(f), delete_flag);
}

static int f_fetch(sqlite3_file *f, sqlite3_int64 at, int n, void **out) {
        return real(f)->pMethods->xFetch(real(f), at, n, out);
}

static int f_unfetch(sqlite3_file *f, sqlite3_int64 at, void *p) {
        return real(f)->pMethods->xUnfetch(real(f), at, p);
}

/* Version 3, as the unix VFS's files are: every method is forwarded. */
static const sqlite3_io_methods methods = {
        .iVersion = 3,
        .xClose = f_close,
        .xRead = f_read,
        .xWrite = f_write,
        .xTruncate = f_truncate,
        .xSync = f_sync,
        .xFileSize = f_file_size,
        .xLock = f_lock,
        .xUnlock = f_unlock,
        .xCheckReservedLock = f_check_reserved_lock,
        .xFileControl = f_file_control,
        .xSectorSize = f_sector_size,
        .xDeviceCharacteristics = f_device_characteristics,
        .xShmMap = f_shm_map,
        .xShmLock = f_shm_lock,
        .xShmBarrier = f_shm_barrier,
        .xShmUnmap = f_shm_unmap,
        .xFetch = f_fetch,
        .xUnfetch = f_unfetch,
};

/* Every file SQLite opens: the database, its WAL, journals, temporary
 * files (the -shm file is the unix VFS's own business). */
static int f_open(sqlite3_vfs *v, sqlite3_filename name, sqlite3_file *file, int flags, int *out_flags) {
        struct fault_file *f = (struct fault_file *) file;
        (void) v;
        /* No methods: SQLite does not close a file that failed to open. */
        file->pMethods = NULL;
        int rc = fault(OP_OPEN);
        if (rc != SQLITE_OK)
                return rc;
        f->real = (sqlite3_file *) (f + 1);
        rc = base->xOpen(base, name, f->real, flags, out_flags);
        if (rc == SQLITE_OK)
                file->pMethods = &methods;
        return rc;
}

int fault_vfs_register(void) {
        base = sqlite3_vfs_find(NULL);
        if (!base)
                return SQLITE_ERROR;
        /* A copy of the base VFS with its own xOpen and room for both
         * files: its other methods (delete, access, full path, time) serve
         * as they are, as the unix VFS's take nothing from the VFS they are
         * given but mxPathname, which the copy keeps. */
        vfs = *base;
        vfs.zName = "fault";
        vfs.pNext = NULL;
        vfs.szOsFile = (int) sizeof(struct fault_file) + base->szOsFile;
        vfs.xOpen = f_open;
        return sqlite3_vfs_register(&vfs, 1);
}

void fault_vfs_arm(enum fault_kind kind, long nth) {
        armed_kind = kind;
        armed = true;
        fail_at = nth;
        calls = failures = 0;
}

void fault_vfs_disarm(void) {
        armed = false;
}

long fault_vfs_calls(void) {
        return calls;
}

long fault_vfs_failures(void) {
        return failures;
}

const char *fault_kind_name(enum fault_kind kind) {
        return kinds[kind].name;
}
