/* Logging for the daemon and the web handlers (collectors and the store
 * never log). log_msg() is the one entry point; the macros below only fill
 * in its arguments.
 *
 * When stderr is connected to the journal (systemd's JOURNAL_STREAM names
 * it), each message goes to the journal with PRIORITY=, SYSLOG_IDENTIFIER=
 * and, when given, NEUROND_COLLECTOR= fields; if the journal refuses it,
 * the line goes to stderr with a "<N>" prefix that journald understands.
 * Otherwise lines are "neurond: LEVEL: [collector NAME: ]message".
 * Thread safe: every message is one write. */
#pragma once

enum log_level {
        LOG_LEVEL_ERROR = 3,
        LOG_LEVEL_WARNING = 4,
        LOG_LEVEL_INFO = 6,
        LOG_LEVEL_DEBUG = 7,
};

/* Parses "error", "warning", "info" or "debug". Returns 0 or -EINVAL. */
int log_level_parse(const char *text, enum log_level *ret);

void log_init(enum log_level max_level);
/* Changes the level at run time (configuration reload). */
void log_set_level(enum log_level max_level);

/* collector: the collector the message is about, or NULL. */
void log_msg(enum log_level level, const char *collector, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#define log_error(...) log_msg(LOG_LEVEL_ERROR, NULL, __VA_ARGS__)
#define log_warning(...) log_msg(LOG_LEVEL_WARNING, NULL, __VA_ARGS__)
#define log_info(...) log_msg(LOG_LEVEL_INFO, NULL, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_LEVEL_DEBUG, NULL, __VA_ARGS__)
#define log_collector(level, collector, ...) log_msg((level), (collector), __VA_ARGS__)
