/* make check's driver for a fuzz target (tests/fuzz/fuzz-*.c), linked in
 * place of libFuzzer: it feeds every file of the directories and files on
 * its command line to LLVMFuzzerTestOneInput(), each in a buffer of
 * exactly its size, as libFuzzer does, so that the sanitizers see any read
 * past its end. Without arguments it replays its target's committed
 * corpus, $top_srcdir/tests/fuzz/corpus/<target>, the program being named
 * replay-<target>; CI's valgrind stage runs it so.
 *
 * A harness reports a bad input by crashing (abort(), a sanitizer's
 * report), so each input's path is printed before it is fed: the last one
 * in the log is the culprit. The output is TAP, for make check. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t replayed;

static void fail(const char *what, const char *path) {
        printf("not ok 1 - %s %s: %s\n", what, path, strerror(errno));
        exit(1);
}

static void replay_file(const char *path) {
        FILE *f = fopen(path, "rb");
        struct stat st;
        if (!f || fstat(fileno(f), &st) < 0)
                fail("cannot open", path);
        size_t size = (size_t) st.st_size;
        uint8_t *data = malloc(size ? size : 1);
        if (!data)
                fail("no memory for", path);
        if (fread(data, 1, size, f) != size || ferror(f))
                fail("cannot read", path);
        fclose(f);
        printf("# %s\n", path);
        fflush(stdout);
        LLVMFuzzerTestOneInput(data, size);
        free(data);
        replayed++;
}

/* A directory's entries in name order, so that runs are alike; dot files
 * (an editor's, a file manager's) are not inputs. */
static void replay(const char *path) {
        struct stat st;
        struct dirent **entries;
        if (stat(path, &st) < 0)
                fail("cannot find", path);
        if (!S_ISDIR(st.st_mode)) {
                replay_file(path);
                return;
        }
        int n = scandir(path, &entries, NULL, alphasort);
        if (n < 0)
                fail("cannot list", path);
        for (int i = 0; i < n; i++) {
                if (entries[i]->d_name[0] != '.') {
                        char *sub;
                        if (asprintf(&sub, "%s/%s", path, entries[i]->d_name) < 0)
                                fail("no memory for", path);
                        replay(sub);
                        free(sub);
                }
                free(entries[i]);
        }
        free(entries);
}

int main(int argc, char **argv) {
        printf("1..1\n");
        if (argc > 1) {
                for (int i = 1; i < argc; i++)
                        replay(argv[i]);
        } else {
                const char *name = strrchr(argv[0], '/'), *top = getenv("top_srcdir");
                name = name ? name + 1 : argv[0];
                if (strncmp(name, "replay-", 7) != 0) {
                        printf("not ok 1 - no inputs given, and %s is not named replay-<target>\n", name);
                        return 1;
                }
                char *corpus;
                if (asprintf(&corpus, "%s/tests/fuzz/corpus/%s", top ? top : ".", name + 7) < 0)
                        fail("no memory for", name);
                replay(corpus);
                free(corpus);
        }
        if (replayed == 0) {
                printf("not ok 1 - no inputs to replay\n");
                return 1;
        }
        printf("ok 1 - %zu inputs replayed\n", replayed);
        return 0;
}
