#include "config.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"

bool buf_reserve(struct buf *b, size_t n) {
        if (b->failed)
                return false;
        if (b->cap - b->len >= n)
                return true;
        size_t cap = b->cap ? b->cap : 256;
        while (cap - b->len < n) {
                if (cap > SIZE_MAX / 2) {
                        b->failed = true;
                        return false;
                }
                cap *= 2;
        }
        char *grown = realloc(b->data, cap);
        if (!grown) {
                b->failed = true;
                return false;
        }
        b->data = grown;
        b->cap = cap;
        return true;
}

void buf_append(struct buf *b, const char *data, size_t len) {
        if (!buf_reserve(b, len))
                return;
        memcpy(b->data + b->len, data, len);
        b->len += len;
}

void buf_puts(struct buf *b, const char *s) {
        buf_append(b, s, strlen(s));
}

void buf_printf(struct buf *b, const char *fmt, ...) {
        va_list ap;
        char small[256];

        va_start(ap, fmt);
        int n = vsnprintf(small, sizeof(small), fmt, ap);
        va_end(ap);
        if (n < 0) {
                b->failed = true;
                return;
        }
        if ((size_t) n < sizeof(small)) {
                buf_append(b, small, (size_t) n);
                return;
        }
        if (!buf_reserve(b, (size_t) n + 1))
                return;
        va_start(ap, fmt);
        vsnprintf(b->data + b->len, (size_t) n + 1, fmt, ap);
        va_end(ap);
        b->len += (size_t) n;
}

void buf_double(struct buf *b, double v) {
        char tmp[32];

        if (isnan(v)) {
                buf_puts(b, "NaN");
                return;
        }
        if (isinf(v)) {
                buf_puts(b, v > 0 ? "+Inf" : "-Inf");
                return;
        }
        /* Integral values (counters, bytes) print without exponent up to 2^53. */
        if (v == floor(v) && fabs(v) < 9007199254740992.0) {
                int n = snprintf(tmp, sizeof(tmp), "%.0f", v);
                buf_append(b, tmp, (size_t) n);
                return;
        }
        int n = snprintf(tmp, sizeof(tmp), "%.15g", v);
        if (strtod(tmp, NULL) != v)
                n = snprintf(tmp, sizeof(tmp), "%.17g", v);
        buf_append(b, tmp, (size_t) n);
}

void buf_free(struct buf *b) {
        if (!b)
                return;
        free(b->data);
        *b = (struct buf){ 0 };
}

/* Length of the valid UTF-8 sequence at s, or 0 when it is invalid. */
size_t utf8_char_length(const char *text) {
        const unsigned char *s = (const unsigned char *) text;
        if (s[0] < 0x80)
                return 1;
        size_t len;
        uint32_t cp;
        if ((s[0] & 0xe0) == 0xc0) {
                len = 2;
                cp = s[0] & 0x1f;
        } else if ((s[0] & 0xf0) == 0xe0) {
                len = 3;
                cp = s[0] & 0x0f;
        } else if ((s[0] & 0xf8) == 0xf0) {
                len = 4;
                cp = s[0] & 0x07;
        } else {
                return 0;
        }
        for (size_t i = 1; i < len; i++) {
                if ((s[i] & 0xc0) != 0x80)
                        return 0;
                cp = (cp << 6) | (s[i] & 0x3f);
        }
        /* Reject overlong forms, surrogates and values past U+10FFFF. */
        static const uint32_t min_cp[5] = { 0, 0, 0x80, 0x800, 0x10000 };
        if (cp < min_cp[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
                return 0;
        return len;
}

void json_string(struct buf *b, const char *s) {
        const unsigned char *p = (const unsigned char *) s;

        buf_append(b, "\"", 1);
        while (*p) {
                if (*p == '"' || *p == '\\') {
                        char esc[2] = { '\\', (char) *p++ };
                        buf_append(b, esc, 2);
                } else if (*p < 0x20) {
                        buf_printf(b, "\\u%04x", *p++);
                } else {
                        size_t len = utf8_char_length((const char *) p);
                        if (len == 0) {
                                buf_puts(b, "\xef\xbf\xbd");
                                p++;
                        } else {
                                buf_append(b, (const char *) p, len);
                                p += len;
                        }
                }
        }
        buf_append(b, "\"", 1);
}

bool utf8_valid(const char *s) {
        for (const char *p = s; *p;) {
                size_t len = utf8_char_length(p);
                if (len == 0)
                        return false;
                p += len;
        }
        return true;
}

size_t utf8_sanitize(char *out, size_t size, const char *s) {
        static const char replacement[] = "\xef\xbf\xbd";
        size_t total = 0;
        bool fits = true;

        for (const char *p = s; *p;) {
                size_t len = utf8_char_length(p);
                const char *piece = len ? p : replacement;
                size_t piece_len = len ? len : sizeof(replacement) - 1;
                fits = fits && total + piece_len < size;
                if (fits)
                        memcpy(out + total, piece, piece_len);
                else if (total < size)
                        out[total] = '\0';
                total += piece_len;
                p += len ? len : 1;
        }
        if (fits)
                out[total] = '\0';
        return total;
}
