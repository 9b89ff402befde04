#include "config.h"

#include <stdlib.h>

#include "lib/history.h"

void history_result_free(struct history_result *r) {
        if (!r)
                return;
        for (size_t i = 0; i < r->n_series; i++)
                free(r->series[i].points);
        free(r->series);
        free(r);
}
