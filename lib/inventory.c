#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "lib/inventory.h"

void inventory_free(struct inventory *inv) {
        if (!inv)
                return;
        /* n_devices may be set before the array's allocation failed. */
        for (unsigned i = 0; inv->devices && i < inv->n_devices; i++)
                free(inv->devices[i].peers);
        free(inv->devices);
        free(inv->series);
        *inv = (struct inventory){ 0 };
}

int inventory_add_series(struct inventory *inv, enum metric_id metric, const char *const *label_values) {
        /* Grow by doubling: inventories are built once at open. */
        size_t n = inv->n_series;
        if ((n & (n - 1)) == 0) {
                struct series_desc *grown = realloc(inv->series, (n ? 2 * n : 1) * sizeof(*grown));
                if (!grown)
                        return -ENOMEM;
                inv->series = grown;
        }
        struct series_desc *s = &inv->series[n];
        *s = (struct series_desc){ .metric = metric };
        for (size_t i = 0; i < metric_label_count(&metric_table[metric]); i++)
                snprintf(s->label_values[i], sizeof(s->label_values[i]), "%s", label_values[i]);
        inv->n_series = n + 1;
        return 0;
}
