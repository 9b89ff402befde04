/* A wrapping SQLite VFS for the unit tests: I/O errors injected where the
 * store meets the disk, instead of provoked with a small file system in a
 * mount namespace. Registered as the default VFS over the one that was
 * (the unix VFS), it passes every call through; once armed it fails the
 * Nth call of one kind counted from then, and every later call of that
 * kind until disarmed, as a full disk stays full until space is freed.
 * Every connection of the process uses it, the test's own included.
 *
 * Not for threads: the counters are plain, and the tests that use it
 * drive the store from one thread (no scheduled integrity check). */
#pragma once

#include <stdbool.h>

enum fault_kind {
        FAULT_WRITE,    /* xWrite: SQLITE_IOERR_WRITE, a failing disk */
        FAULT_FULL,     /* xWrite: SQLITE_FULL, a full disk */
        FAULT_SYNC,     /* xSync: SQLITE_IOERR_FSYNC */
        FAULT_OPEN,     /* xOpen: SQLITE_CANTOPEN, a file that cannot be opened */
        FAULT_TRUNCATE, /* xTruncate: SQLITE_IOERR_TRUNCATE */
        FAULT__COUNT,
};

/* Registers the VFS as the default; once per process. 0 or an SQLite
 * error code. */
int fault_vfs_register(void);

/* From now on the nth call of kind (1 the first) and every later one of
 * that kind fail; counts start again from 0. */
void fault_vfs_arm(enum fault_kind kind, long nth);

/* Calls pass through again; the counts stay as they are. */
void fault_vfs_disarm(void);

/* Calls of the kind last armed, and how many of them failed, since it was
 * armed. */
long fault_vfs_calls(void);
long fault_vfs_failures(void);

/* "xWrite (SQLITE_FULL)" and so on, for messages. */
const char *fault_kind_name(enum fault_kind kind);
