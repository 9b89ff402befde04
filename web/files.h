/* The dashboard's static files, served from the web root and never from
 * outside it, with an ETag for cheap revalidation. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#include "web/reply.h"
#include "web/request.h"

/* Opens path ("/" means "/index.html") below web_root for reading,
 * refusing anything that could leave the root: dot segments, backslashes
 * and empty segments, and a target that, symlinks followed, does not lie
 * below the root. Only regular files open (a FIFO, a device or a
 * directory does not, and never blocks the caller). Returns 0 with the
 * descriptor and its stat, or -ENOENT. */
int files_open(const char *web_root, const char *path, int *ret_fd, struct stat *ret_st);

/* The ETag of a file: its inode, size and modification time. */
void files_etag(const struct stat *st, char *etag, size_t size);

/* True when an If-None-Match header value (may be NULL) names etag, weak
 * validators included, or is "*". */
bool files_etag_matches(const char *if_none_match, const char *etag);

/* The Content-Type for a file name, by its extension. */
const char *files_mime_type(const char *path);

/* The route handler: the file at req->path with its ETag (304 when
 * If-None-Match names it), or a JSON 404. */
void files_serve(const struct web_context *ctx, const struct web_request *req, struct web_reply *reply);
