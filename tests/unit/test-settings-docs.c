/* The settings table against what documents it: --help, the sample config
 * file, the man page and the README name exactly the table's flags and
 * keys. The files are read from the source tree. */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon/settings.h"

#define NAME_MAX_LEN 48

/* A set of names found in a document, or declared by the table. */
struct names {
        char name[96][NAME_MAX_LEN];
        size_t n;
};

static void names_add(struct names *set, const char *name, size_t len) {
        if (len == 0 || len >= NAME_MAX_LEN)
                fail_msg("name '%.*s' is empty or too long", (int) len, name);
        for (size_t i = 0; i < set->n; i++)
                if (strlen(set->name[i]) == len && memcmp(set->name[i], name, len) == 0)
                        return;
        assert_true(set->n < sizeof(set->name) / sizeof(set->name[0]));
        memcpy(set->name[set->n], name, len);
        set->name[set->n++][len] = '\0';
}

static bool names_has(const struct names *set, const char *name) {
        for (size_t i = 0; i < set->n; i++)
                if (strcmp(set->name[i], name) == 0)
                        return true;
        return false;
}

/* Prints every difference between the document's names and the table's;
 * returns how many there are. */
static int compare_names(const struct names *doc, const struct names *table, const char *where, const char *what) {
        int differences = 0;

        for (size_t i = 0; i < table->n; i++)
                if (!names_has(doc, table->name[i])) {
                        print_error("%s does not name the %s '%s'\n", where, what, table->name[i]);
                        differences++;
                }
        for (size_t i = 0; i < doc->n; i++)
                if (!names_has(table, doc->name[i])) {
                        print_error("%s names the %s '%s', which the settings table does not declare\n", where, what,
                                    doc->name[i]);
                        differences++;
                }
        return differences;
}

/* Long flags as "listen", short ones as "-l, --listen", and config keys. */
static void table_names(struct names *flags, struct names *shorts, struct names *keys) {
        char text[NAME_MAX_LEN];

        for (size_t i = 0; i < settings_table_size; i++) {
                const struct settings_item *it = &settings_table[i];
                if (it->flag)
                        names_add(flags, it->flag, strlen(it->flag));
                if (it->short_flag) {
                        snprintf(text, sizeof(text), "-%c, --%s", it->short_flag, it->flag);
                        names_add(shorts, text, strlen(text));
                }
                if (it->key)
                        names_add(keys, it->key, strlen(it->key));
        }
        /* The keys of [remote_write NAME] sections are documented beside them. */
        for (size_t i = 0; i < settings_remote_write_table_size; i++)
                names_add(keys, settings_remote_write_table[i].key, strlen(settings_remote_write_table[i].key));
}

static char *read_source_file(const char *relative) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", TOP_SRCDIR, relative);
        FILE *f = fopen(path, "re");
        if (!f)
                fail_msg("%s: %s", path, strerror(errno));
        char *text = calloc(1, 1 << 20);
        assert_non_null(text);
        size_t len = fread(text, 1, (1 << 20) - 1, f);
        assert_true(len < (1 << 20) - 1);
        fclose(f);
        return text;
}

/* The next line of *text, NUL-terminated in place; NULL at the end. */
static char *next_line(char **text) {
        char *line = *text;
        if (!*line)
                return NULL;
        char *end = strchr(line, '\n');
        if (end) {
                *end = '\0';
                *text = end + 1;
        } else {
                *text = line + strlen(line);
        }
        return line;
}

#define FLAG_CHARS "abcdefghijklmnopqrstuvwxyz-"
#define KEY_CHARS "abcdefghijklmnopqrstuvwxyz0123456789_"

/* "-l, --listen" or "--listen" at p: adds the flag and its short form. */
static void add_flag_at(const char *p, struct names *flags, struct names *shorts) {
        char short_flag = 0;

        if (p[0] == '-' && p[1] != '-' && p[2] == ',' && p[3] == ' ') {
                short_flag = p[1];
                p += 4;
        }
        if (strncmp(p, "--", 2) != 0)
                fail_msg("no long flag at '%s'", p);
        p += 2;
        size_t len = strspn(p, FLAG_CHARS);
        names_add(flags, p, len);
        if (short_flag) {
                char text[NAME_MAX_LEN];
                snprintf(text, sizeof(text), "-%c, --%.*s", short_flag, (int) len, p);
                names_add(shorts, text, strlen(text));
        }
}

static void settings_table__help__names_every_flag_and_key(void **state) {
        struct names table_flags = { 0 }, table_shorts = { 0 }, table_keys = { 0 };
        struct names flags = { 0 }, shorts = { 0 }, keys = { 0 };
        char *help = NULL, *line;
        size_t size = 0;

        table_names(&table_flags, &table_shorts, &table_keys);
        FILE *out = open_memstream(&help, &size);
        assert_non_null(out);
        settings_print_help(out, "neurond");
        fclose(out);
        /* Flag lines: "  -l, --listen ADDR:PORT  ..." or "      --log-level LEVEL  ...".
         * Key lines: "    listen = ADDR:PORT  ..." or "  * interval = DURATION  ...". */
        for (char *p = help; (line = next_line(&p));) {
                if (strncmp(line, "  -", 3) == 0 || strncmp(line, "      --", 8) == 0) {
                        add_flag_at(line + strspn(line, " "), &flags, &shorts);
                } else if (strncmp(line, "    ", 4) == 0 || strncmp(line, "  * ", 4) == 0) {
                        size_t len = strspn(line + 4, KEY_CHARS);
                        if (len && strncmp(line + 4 + len, " = ", 3) == 0)
                                names_add(&keys, line + 4, len);
                }
        }
        free(help);
        int differences = compare_names(&flags, &table_flags, "--help", "flag") +
                          compare_names(&shorts, &table_shorts, "--help", "short flag") +
                          compare_names(&keys, &table_keys, "--help", "key");
        assert_int_equal(differences, 0);
}

static void settings_table__contrib_conf__names_every_key(void **state) {
        struct names table_flags = { 0 }, table_shorts = { 0 }, table_keys = { 0 }, keys = { 0 };
        char *text = read_source_file("contrib/neurond.conf.in"), *line;

        table_names(&table_flags, &table_shorts, &table_keys);
        /* Every key is shown commented out: "# key = default" or, as an
         * example, "#   key = value". */
        for (char *p = text; (line = next_line(&p));) {
                if (line[0] != '#')
                        continue;
                line += 1 + strspn(line + 1, " ");
                size_t len = strspn(line, KEY_CHARS);
                if (len && strncmp(line + len, " = ", 3) == 0)
                        names_add(&keys, line, len);
        }
        free(text);
        assert_int_equal(compare_names(&keys, &table_keys, "contrib/neurond.conf.in", "key"), 0);
}

/* The section of an mdoc page that starts with ".Sh name", up to the next. */
static char *man_section(char *page, const char *name) {
        char heading[64];
        snprintf(heading, sizeof(heading), "\n.Sh %s\n", name);
        char *start = strstr(page, heading);
        if (!start)
                fail_msg("doc/neurond.8 has no section %s", name);
        start += strlen(heading);
        char *end = strstr(start, "\n.Sh ");
        if (end)
                end[1] = '\0';
        return start;
}

/* ".It Fl l , Fl \-listen Ar ADDR:PORT" or ".It Fl \-log\-level Ar LEVEL". */
static void add_man_flags(const char *line, struct names *flags, struct names *shorts) {
        char flag[NAME_MAX_LEN] = "", short_flag = 0;
        size_t n = 0;

        for (const char *p = line + 4; (p = strstr(p, "Fl ")); p += 3) {
                const char *arg = p + 3;
                if (strncmp(arg, "\\-", 2) != 0) {
                        short_flag = arg[0];
                        continue;
                }
                /* Long flags are escaped: "\-log\-level". */
                for (arg += 2; *arg && *arg != ' ' && n + 1 < sizeof(flag); arg++)
                        if (*arg != '\\')
                                flag[n++] = *arg;
                flag[n] = '\0';
        }
        if (!n)
                fail_msg("doc/neurond.8: no long flag in '%s'", line);
        names_add(flags, flag, n);
        if (short_flag) {
                char text[NAME_MAX_LEN + 8]; /* "-x, --" and the flag */
                snprintf(text, sizeof(text), "-%c, --%s", short_flag, flag);
                names_add(shorts, text, strlen(text));
        }
}

static void settings_table__man_page__names_every_flag_and_key(void **state) {
        struct names table_flags = { 0 }, table_shorts = { 0 }, table_keys = { 0 };
        struct names flags = { 0 }, shorts = { 0 }, keys = { 0 };
        char *page = read_source_file("doc/neurond.8"), *copy = strdup(page), *line;

        assert_non_null(copy);
        table_names(&table_flags, &table_shorts, &table_keys);
        for (char *p = man_section(page, "OPTIONS"); (line = next_line(&p));)
                if (strncmp(line, ".It Fl ", 7) == 0)
                        add_man_flags(line, &flags, &shorts);
        /* ".It Cm listen Ar ADDR:PORT" */
        for (char *p = man_section(copy, "CONFIGURATION FILE"); (line = next_line(&p));)
                if (strncmp(line, ".It Cm ", 7) == 0)
                        names_add(&keys, line + 7, strspn(line + 7, KEY_CHARS));
        free(page);
        free(copy);
        int differences = compare_names(&flags, &table_flags, "doc/neurond.8 OPTIONS", "flag") +
                          compare_names(&shorts, &table_shorts, "doc/neurond.8 OPTIONS", "short flag") +
                          compare_names(&keys, &table_keys, "doc/neurond.8 CONFIGURATION FILE", "key");
        assert_int_equal(differences, 0);
}

static void settings_table__readme__names_every_flag_and_key(void **state) {
        struct names table_flags = { 0 }, table_shorts = { 0 }, table_keys = { 0 };
        struct names flags = { 0 }, shorts = { 0 };
        char *readme = read_source_file("README.md"), *line;

        table_names(&table_flags, &table_shorts, &table_keys);
        char *section = strstr(readme, "\n## Command line\n");
        assert_non_null(section);
        section++;
        char *end = strstr(section, "\n## ");
        if (end)
                end[1] = '\0';
        /* Every key in backquotes (`key` or `key = value`), or on a line of
         * the INI example. */
        int differences = 0;
        for (size_t i = 0; i < table_keys.n; i++) {
                char quoted[NAME_MAX_LEN + 2], assigned[NAME_MAX_LEN + 4], ini[NAME_MAX_LEN + 4];
                snprintf(quoted, sizeof(quoted), "`%s`", table_keys.name[i]);
                snprintf(assigned, sizeof(assigned), "`%s = ", table_keys.name[i]);
                snprintf(ini, sizeof(ini), "\n%s = ", table_keys.name[i]);
                if (!strstr(section, quoted) && !strstr(section, assigned) && !strstr(section, ini)) {
                        print_error("README.md's command line section does not name the key '%s'\n",
                                    table_keys.name[i]);
                        differences++;
                }
        }
        /* The flag table: "| `-l, --listen ADDR:PORT` | ..." */
        for (char *p = section; (line = next_line(&p));)
                if (strncmp(line, "| `-", 4) == 0)
                        add_flag_at(line + 3, &flags, &shorts);
        free(readme);
        differences += compare_names(&flags, &table_flags, "README.md's flag table", "flag") +
                       compare_names(&shorts, &table_shorts, "README.md's flag table", "short flag");
        assert_int_equal(differences, 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(settings_table__help__names_every_flag_and_key),
                cmocka_unit_test(settings_table__contrib_conf__names_every_key),
                cmocka_unit_test(settings_table__man_page__names_every_flag_and_key),
                cmocka_unit_test(settings_table__readme__names_every_flag_and_key),
        };
        return cmocka_run_group_tests_name("settings-docs", tests, NULL, NULL);
}
