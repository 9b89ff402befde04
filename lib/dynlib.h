/* Shared libraries loaded when first needed rather than linked: gRPC's
 * (kube/podres.c) and libcurl (remote/remote-http.c) would otherwise be
 * resident in every daemon, used or not (bench/RESULTS.md). */
#pragma once

#include <stddef.h>

/* A function to look up, and where its address goes. */
struct dynlib_symbol {
        const char *name;
        void **slot;
};

/* Loads the library by its soname and fills every slot. Returns its
 * handle, which stays loaded, or NULL with the reason in err, prefixed by
 * what (how the caller names the library). */
void *dynlib_load(const char *soname, const char *what, const struct dynlib_symbol *symbols, size_t n, char *err,
                  size_t errlen);
