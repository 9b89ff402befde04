#include "config.h"

#include <stdlib.h>

#include "lib/cursor.h"

int cursor_position_compare(const struct cursor_position *a, const struct cursor_position *b) {
        if (a->timestamp_ms != b->timestamp_ms)
                return a->timestamp_ms < b->timestamp_ms ? -1 : 1;
        if (a->series != b->series)
                return a->series < b->series ? -1 : 1;
        return 0;
}

void cursor_page_free(struct cursor_page *p) {
        if (!p)
                return;
        free(p->samples);
        *p = (struct cursor_page){ 0 };
}
