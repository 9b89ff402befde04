#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "web/files.h"

/* libmicrohttpd has already decoded %XX, so "%2e%2e" arrives as "..": the
 * checks on the text catch encoded forms too. realpath() then resolves
 * symlinks, and O_NOFOLLOW keeps the last component from being swapped
 * for a symlink after that. O_NONBLOCK: opening a FIFO for reading would
 * otherwise wait for a writer. */
int files_open(const char *web_root, const char *path, int *ret_fd, struct stat *ret_st) {
        char full[PATH_MAX], real_root[PATH_MAX], real_path[PATH_MAX];
        struct stat st;

        if (path[0] != '/' || strstr(path, "/.") || strchr(path, '\\') || strstr(path, "//"))
                return -ENOENT;
        const char *rel = strcmp(path, "/") == 0 ? "/index.html" : path;
        if ((size_t) snprintf(full, sizeof(full), "%s%s", web_root, rel) >= sizeof(full))
                return -ENOENT;
        if (!realpath(web_root, real_root) || !realpath(full, real_path))
                return -ENOENT;
        size_t root_len = strlen(real_root);
        if (strncmp(real_path, real_root, root_len) != 0 || real_path[root_len] != '/')
                return -ENOENT;
        int fd = open(real_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
        if (fd < 0)
                return -ENOENT;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                close(fd);
                return -ENOENT;
        }
        *ret_fd = fd;
        *ret_st = st;
        return 0;
}

void files_etag(const struct stat *st, char *etag, size_t size) {
        snprintf(etag, size, "\"%llx-%llx-%llx\"", (unsigned long long) st->st_ino, (unsigned long long) st->st_size,
                 (unsigned long long) st->st_mtim.tv_sec * 1000000000ULL + (unsigned long long) st->st_mtim.tv_nsec);
}

bool files_etag_matches(const char *if_none_match, const char *etag) {
        if (!if_none_match)
                return false;
        if (strcmp(if_none_match, "*") == 0)
                return true;
        size_t n = strlen(etag);
        for (const char *p = strstr(if_none_match, etag); p; p = strstr(p + 1, etag)) {
                /* A weak validator W/"x" matches too (If-None-Match uses weak comparison). */
                char after = p[n];
                if (after == '\0' || after == ',' || after == ' ')
                        return true;
        }
        return false;
}

const char *files_mime_type(const char *path) {
        static const struct {
                const char *ext, *type;
        } types[] = {
                { ".html", "text/html; charset=utf-8" },
                { ".js", "text/javascript; charset=utf-8" },
                { ".mjs", "text/javascript; charset=utf-8" },
                { ".css", "text/css; charset=utf-8" },
                { ".svg", "image/svg+xml" },
                { ".png", "image/png" },
                { ".ico", "image/x-icon" },
                { ".json", "application/json" },
                { ".map", "application/json" },
                { ".txt", "text/plain; charset=utf-8" },
                { ".woff2", "font/woff2" },
        };
        const char *dot = strrchr(path, '.');
        for (size_t i = 0; dot && i < sizeof(types) / sizeof(types[0]); i++)
                if (strcmp(dot, types[i].ext) == 0)
                        return types[i].type;
        return "application/octet-stream";
}

void files_serve(const struct web_context *ctx, const struct web_request *req, struct web_reply *reply) {
        struct stat st;
        int fd;
        char etag[64];

        if (files_open(ctx->web_root, req->path, &fd, &st) < 0) {
                reply_error(reply, 404, "not_found", "no such path: %.200s", req->path);
                return;
        }
        files_etag(&st, etag, sizeof(etag));
        if (files_etag_matches(MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_IF_NONE_MATCH),
                               etag)) {
                close(fd);
                reply->response = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
                reply->status = MHD_HTTP_NOT_MODIFIED;
        } else {
                reply->response = MHD_create_response_from_fd((uint64_t) st.st_size, fd);
                if (!reply->response)
                        close(fd);
                reply->status = MHD_HTTP_OK;
        }
        if (!reply->response) {
                reply_error(reply, 500, "internal", "out of memory");
                return;
        }
        MHD_add_response_header(reply->response, MHD_HTTP_HEADER_ETAG, etag);
        /* The dashboard changes with upgrades: revalidate every time, cheaply. */
        MHD_add_response_header(reply->response, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
        reply->content_type = files_mime_type(strcmp(req->path, "/") == 0 ? "/index.html" : req->path);
}
