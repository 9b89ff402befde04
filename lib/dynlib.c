#include "config.h"

#include <dlfcn.h>
#include <stdio.h>

#include "lib/dynlib.h"

void *dynlib_load(const char *soname, const char *what, const struct dynlib_symbol *symbols, size_t n, char *err,
                  size_t errlen) {
        void *l = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
        if (!l) {
                snprintf(err, errlen, "%s: %s", what, dlerror());
                return NULL;
        }
        for (size_t i = 0; i < n; i++)
                if (!(*symbols[i].slot = dlsym(l, symbols[i].name))) {
                        snprintf(err, errlen, "%s %s has no %s", what, soname, symbols[i].name);
                        dlclose(l);
                        return NULL;
                }
        return l;
}
