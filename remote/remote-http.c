#include "config.h"

/* curl.h's type checks are macros named as its functions: they would
 * rewrite the calls through the pointers below. */
#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/dynlib.h"
#include "remote/remote-internal.h"

/* The part of a response body kept for the log: receivers say why they
 * refused a request in its first line. */
#define RESPONSE_KEPT 512

struct remote_http {
        CURL *curl;
        struct curl_slist *headers;
        const atomic_bool *stop;
        char response[RESPONSE_KEPT];
        size_t response_len;
        char error[CURL_ERROR_SIZE];
};

/* libcurl is loaded, and started, by the first connection: linked in, it
 * and the libraries it needs (OpenSSL's libcrypto, Kerberos, LDAP, ...)
 * cost every daemon about 4.5 MiB of resident memory (bench/RESULTS.md),
 * and a daemon without remote write never calls it. These are the
 * functions this file calls, by their declarations in curl.h. */
#define CURL_FUNCTIONS(X)                                                                                              \
        X(curl_easy_cleanup)                                                                                           \
        X(curl_easy_getinfo)                                                                                           \
        X(curl_easy_init)                                                                                              \
        X(curl_easy_perform)                                                                                           \
        X(curl_easy_setopt)                                                                                            \
        X(curl_easy_strerror)                                                                                          \
        X(curl_global_cleanup)                                                                                         \
        X(curl_global_init)                                                                                            \
        X(curl_slist_append)                                                                                           \
        X(curl_slist_free_all)

#define CURL_POINTER(name) __typeof__(name) *name;
static struct { CURL_FUNCTIONS(CURL_POINTER) } curl;
static pthread_mutex_t curl_lock = PTHREAD_MUTEX_INITIALIZER;
static bool curl_started;

/* Loads libcurl (once; it stays) and starts it. Returns 0, or -ENOPKG or
 * -EIO with the reason in err. */
static int start_curl(char *err, size_t errlen) {
#define CURL_SYMBOL(name) { #name, (void **) &curl.name },
        static const struct dynlib_symbol symbols[] = { CURL_FUNCTIONS(CURL_SYMBOL) };
#undef CURL_SYMBOL
        static void *library;
        int r = 0;

        pthread_mutex_lock(&curl_lock);
        if (!library)
                library = dynlib_load(CURL_SONAME, "remote write's libcurl", symbols,
                                      sizeof(symbols) / sizeof(symbols[0]), err, errlen);
        if (!library) {
                r = -ENOPKG;
        } else if (!curl_started) {
                curl_started = curl.curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
                if (!curl_started) {
                        snprintf(err, errlen, "libcurl: initialising it failed");
                        r = -EIO;
                }
        }
        pthread_mutex_unlock(&curl_lock);
        return r;
}

void remote_global_cleanup(void) {
        pthread_mutex_lock(&curl_lock);
        if (curl_started)
                curl.curl_global_cleanup();
        curl_started = false;
        pthread_mutex_unlock(&curl_lock);
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *userdata) {
        struct remote_http *h = userdata;
        size_t len = size * nmemb, room = sizeof(h->response) - 1 - h->response_len;
        size_t keep = len < room ? len : room;

        memcpy(h->response + h->response_len, data, keep);
        h->response_len += keep;
        return len;
}

/* Called by libcurl often while a request runs: a non-zero return
 * abandons it, so that stopping never waits for a slow receiver. */
static int on_progress(void *userdata, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow) {
        const struct remote_http *h = userdata;
        return atomic_load(h->stop) ? 1 : 0;
}

void remote_http_free(struct remote_http *h) {
        if (!h)
                return;
        curl.curl_easy_cleanup(h->curl);
        curl.curl_slist_free_all(h->headers);
        free(h);
}

static int add_header(struct remote_http *h, const char *header) {
        struct curl_slist *l = curl.curl_slist_append(h->headers, header);
        if (!l)
                return -ENOMEM;
        h->headers = l;
        return 0;
}

int remote_http_new(const struct remote_endpoint *e, const char *secret, const atomic_bool *stop,
                    struct remote_http **ret, char *err, size_t errlen) {
        char header[4096];
        int r = start_curl(err, errlen);
        if (r < 0)
                return r;

        struct remote_http *h = calloc(1, sizeof(*h));
        if (!h)
                return -ENOMEM;
        h->stop = stop;
        h->curl = curl.curl_easy_init();
        if (!h->curl) {
                free(h);
                return -ENOMEM;
        }
        /* The headers of the remote write specification; "Expect:" keeps
         * libcurl from waiting for a 100 Continue before large bodies. */
        r = add_header(h, "Content-Encoding: snappy");
        if (r == 0)
                r = add_header(h, "Content-Type: application/x-protobuf");
        if (r == 0)
                r = add_header(h, "X-Prometheus-Remote-Write-Version: 0.1.0");
        if (r == 0)
                r = add_header(h, "Expect:");
        if (r == 0 && secret && e->bearer_token_file[0]) {
                snprintf(header, sizeof(header), "Authorization: Bearer %s", secret);
                r = add_header(h, header);
        }
        if (r < 0) {
                remote_http_free(h);
                return r;
        }

        CURL *c = h->curl;
        CURLcode rc = CURLE_OK;
#define SET(option, value)                                                                                             \
        do {                                                                                                           \
                if (rc == CURLE_OK)                                                                                    \
                        rc = curl.curl_easy_setopt(c, option, value);                                                  \
        } while (0)
        SET(CURLOPT_URL, e->url);
        SET(CURLOPT_PROTOCOLS_STR, "http,https");
        SET(CURLOPT_NOSIGNAL, 1L);
        SET(CURLOPT_POST, 1L);
        SET(CURLOPT_HTTPHEADER, h->headers);
        SET(CURLOPT_USERAGENT, "neurond/" PACKAGE_VERSION);
        SET(CURLOPT_TIMEOUT_MS, (long) e->remote_timeout_ms);
        SET(CURLOPT_CONNECTTIMEOUT_MS, (long) e->remote_timeout_ms);
        SET(CURLOPT_WRITEFUNCTION, on_body);
        SET(CURLOPT_WRITEDATA, h);
        SET(CURLOPT_NOPROGRESS, 0L);
        SET(CURLOPT_XFERINFOFUNCTION, on_progress);
        SET(CURLOPT_XFERINFODATA, h);
        SET(CURLOPT_ERRORBUFFER, h->error);
        if (e->tls_ca_file[0])
                SET(CURLOPT_CAINFO, e->tls_ca_file);
        if (e->tls_cert_file[0]) {
                SET(CURLOPT_SSLCERT, e->tls_cert_file);
                SET(CURLOPT_SSLKEY, e->tls_key_file);
        }
        if (e->tls_insecure_skip_verify) {
                SET(CURLOPT_SSL_VERIFYPEER, 0L);
                SET(CURLOPT_SSL_VERIFYHOST, 0L);
        }
        if (secret && e->basic_auth_username[0]) {
                SET(CURLOPT_HTTPAUTH, (long) CURLAUTH_BASIC);
                SET(CURLOPT_USERNAME, e->basic_auth_username);
                SET(CURLOPT_PASSWORD, secret);
        }
#undef SET
        if (rc != CURLE_OK) {
                snprintf(err, errlen, "remote_write %s: libcurl: %s", e->name, curl.curl_easy_strerror(rc));
                remote_http_free(h);
                return -EINVAL;
        }
        *ret = h;
        return 0;
}

/* The response's first line, without control bytes, for a log line. */
static void first_line(const char *text, size_t len, char *out, size_t size) {
        size_t n = 0;
        for (size_t i = 0; i < len && text[i] != '\n' && n + 1 < size; i++)
                out[n++] = (unsigned char) text[i] < 0x20 ? ' ' : text[i];
        out[n] = '\0';
}

int remote_http_post(struct remote_http *h, const uint8_t *body, size_t len, long *ret_status,
                     int64_t *ret_retry_after_s, char *msg, size_t msglen) {
        long status = 0;
        curl_off_t retry_after = 0;

        h->response_len = 0;
        h->error[0] = '\0';
        curl.curl_easy_setopt(h->curl, CURLOPT_POSTFIELDS, (const char *) body);
        curl.curl_easy_setopt(h->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) len);
        CURLcode rc = curl.curl_easy_perform(h->curl);
        if (rc != CURLE_OK) {
                snprintf(msg, msglen, "%s", h->error[0] ? h->error : curl.curl_easy_strerror(rc));
                return rc == CURLE_ABORTED_BY_CALLBACK ? -ECANCELED : -EIO;
        }
        curl.curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &status);
        if (curl.curl_easy_getinfo(h->curl, CURLINFO_RETRY_AFTER, &retry_after) != CURLE_OK || retry_after < 0)
                retry_after = 0;
        first_line(h->response, h->response_len, msg, msglen);
        *ret_status = status;
        *ret_retry_after_s = (int64_t) retry_after;
        return 0;
}
