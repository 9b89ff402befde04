/* A growable byte buffer for response bodies. Appends never fail loudly:
 * on allocation failure the buffer is marked failed and further appends are
 * ignored, so renderers check once at the end. Not thread safe. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct buf {
        char *data;
        size_t len, cap;
        bool failed;
};

/* Makes room for at least n more bytes; false when out of memory. */
bool buf_reserve(struct buf *b, size_t n);
void buf_append(struct buf *b, const char *data, size_t len);
void buf_puts(struct buf *b, const char *s);
void buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends v with the fewest digits that read back as the same double. */
void buf_double(struct buf *b, double v);
void buf_free(struct buf *b); /* NULL-safe; leaves an empty buffer */

/* True when s is well-formed UTF-8 (no overlong forms, no surrogates). */
bool utf8_valid(const char *s);

/* The length of the well-formed UTF-8 character at s (1 to 4), or 0 when
 * s does not begin one. Reads no further than a NUL. */
size_t utf8_char_length(const char *s);

/* Writes s to out (size > 0 bytes) with every byte that does not begin a
 * well-formed UTF-8 character replaced by U+FFFD. Returns the length of
 * the result, written whole only when it is less than size (as snprintf;
 * otherwise cut at a character's start). */
size_t utf8_sanitize(char *out, size_t size, const char *s);

/* JSON: a string with quotes and escapes; invalid UTF-8 is replaced by U+FFFD. */
void json_string(struct buf *b, const char *s);
