/* Logging for the daemon and the web handlers (collectors and the store
 * never log). Lines go to stderr; when stderr is the journal they carry a
 * "<N>" priority prefix that journald understands. Thread safe. */
#pragma once

#include "daemon/settings.h"

void log_init(enum log_level max_level);
void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_error(...) log_msg(LOG_LEVEL_ERROR, __VA_ARGS__)
#define log_warning(...) log_msg(LOG_LEVEL_WARNING, __VA_ARGS__)
#define log_info(...) log_msg(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_LEVEL_DEBUG, __VA_ARGS__)
