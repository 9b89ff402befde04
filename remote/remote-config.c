#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/file.h"
#include "remote/remote.h"

/* Files an endpoint names are small: a CA bundle is the largest. */
#define REMOTE_FILE_MAX (4 * 1024 * 1024)

void remote_endpoint_init(struct remote_endpoint *e, const char *name) {
        *e = (struct remote_endpoint){
                .remote_timeout_ms = REMOTE_DEFAULT_TIMEOUT_MS,
                .max_samples_per_send = REMOTE_DEFAULT_MAX_SAMPLES_PER_SEND,
                .batch_send_deadline_ms = REMOTE_DEFAULT_BATCH_SEND_DEADLINE_MS,
                .min_backoff_ms = REMOTE_DEFAULT_MIN_BACKOFF_MS,
                .max_backoff_ms = REMOTE_DEFAULT_MAX_BACKOFF_MS,
        };
        snprintf(e->name, sizeof(e->name), "%s", name);
}

static bool label_name_valid(const char *s, size_t len) {
        if (len == 0 || (len >= 2 && s[0] == '_' && s[1] == '_'))
                return false;
        for (size_t i = 0; i < len; i++) {
                char c = s[i];
                bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
                if (!letter && !(i > 0 && c >= '0' && c <= '9'))
                        return false;
        }
        return true;
}

static const char *skip_blanks(const char *p) {
        return p + strspn(p, " \t");
}

/* A value at p, quoted or bare, into out; *end after it. */
static int parse_value(const char *p, char *out, size_t size, const char **end, char *why, size_t whylen) {
        size_t n = 0;

        if (*p == '"') {
                for (p++; *p != '"'; p++) {
                        if (*p == '\0') {
                                snprintf(why, whylen, "a quoted value has no closing quote");
                                return -EINVAL;
                        }
                        if (*p == '\\' && (p[1] == '"' || p[1] == '\\'))
                                p++;
                        if (n + 1 >= size) {
                                snprintf(why, whylen, "a value is longer than %zu bytes", size - 1);
                                return -EINVAL;
                        }
                        out[n++] = *p;
                }
                p++;
        } else {
                size_t len = strcspn(p, ",\"");
                while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t'))
                        len--;
                if (len + 1 > size) {
                        snprintf(why, whylen, "a value is longer than %zu bytes", size - 1);
                        return -EINVAL;
                }
                memcpy(out, p, len);
                n = len;
                p += len;
        }
        out[n] = '\0';
        *end = skip_blanks(p);
        return 0;
}

int remote_parse_labels(const char *text, struct remote_labels *ret, char *why, size_t whylen) {
        struct remote_labels labels = { 0 };
        const char *p = skip_blanks(text);

        while (*p) {
                if (labels.n == REMOTE_EXTERNAL_LABELS_MAX) {
                        snprintf(why, whylen, "more than %d labels", REMOTE_EXTERNAL_LABELS_MAX);
                        return -EINVAL;
                }
                struct cursor_label *l = &labels.label[labels.n];
                size_t len = strcspn(p, "= \t,");
                if (!label_name_valid(p, len) || len >= sizeof(l->name)) {
                        snprintf(why, whylen,
                                 "'%.*s' is not a label name ([a-zA-Z_][a-zA-Z0-9_]*, not starting with __)", (int) len,
                                 p);
                        return -EINVAL;
                }
                memcpy(l->name, p, len);
                l->name[len] = '\0';
                p = skip_blanks(p + len);
                if (*p != '=') {
                        snprintf(why, whylen, "label '%s' has no '=value'", l->name);
                        return -EINVAL;
                }
                if (parse_value(skip_blanks(p + 1), l->value, sizeof(l->value), &p, why, whylen) < 0)
                        return -EINVAL;
                if (!l->value[0]) {
                        snprintf(why, whylen, "label '%s' has an empty value", l->name);
                        return -EINVAL;
                }
                for (size_t i = 0; i < labels.n; i++)
                        if (strcmp(labels.label[i].name, l->name) == 0) {
                                snprintf(why, whylen, "label '%s' is given twice", l->name);
                                return -EINVAL;
                        }
                labels.n++;
                if (*p == ',')
                        p = skip_blanks(p + 1);
                else if (*p) {
                        snprintf(why, whylen, "expected ',' after label '%s'", l->name);
                        return -EINVAL;
                }
        }
        *ret = labels;
        return 0;
}

/* A file the endpoint names must be a readable regular text file. */
static int check_file(const struct remote_endpoint *e, const char *key, const char *path, char *err, size_t errlen) {
        char why[256];
        char *text = NULL;
        size_t len;

        if (!path[0])
                return 0;
        int r = file_read_text(path, REMOTE_FILE_MAX, &text, &len, why, sizeof(why));
        free(text);
        if (r < 0) {
                snprintf(err, errlen, "remote_write %s: %s %s: %s", e->name, key, path, why);
                return -EINVAL;
        }
        return 0;
}

int remote_endpoint_check(const struct remote_endpoint *e, char *err, size_t errlen) {
        bool https = strncmp(e->url, "https://", 8) == 0;
        const char *problem = NULL;

        if (!e->url[0])
                problem = "no url";
        else if (!https && strncmp(e->url, "http://", 7) != 0)
                problem = "url must start with http:// or https://";
        else if (!https && (e->tls_ca_file[0] || e->tls_cert_file[0] || e->tls_insecure_skip_verify))
                problem = "tls_* settings need an https:// url";
        else if (!e->tls_cert_file[0] != !e->tls_key_file[0])
                problem = "tls_cert_file and tls_key_file must be given together";
        else if (!e->basic_auth_username[0] != !e->basic_auth_password_file[0])
                problem = "basic_auth_username and basic_auth_password_file must be given together";
        else if (e->basic_auth_username[0] && e->bearer_token_file[0])
                problem = "basic authentication and a bearer token exclude each other";
        else if (e->min_backoff_ms > e->max_backoff_ms)
                problem = "min_backoff is longer than max_backoff";
        if (problem) {
                snprintf(err, errlen, "remote_write %s: %s", e->name, problem);
                return -EINVAL;
        }
        if (check_file(e, "tls_ca_file", e->tls_ca_file, err, errlen) < 0 ||
            check_file(e, "tls_cert_file", e->tls_cert_file, err, errlen) < 0 ||
            check_file(e, "tls_key_file", e->tls_key_file, err, errlen) < 0 ||
            check_file(e, "basic_auth_password_file", e->basic_auth_password_file, err, errlen) < 0 ||
            check_file(e, "bearer_token_file", e->bearer_token_file, err, errlen) < 0)
                return -EINVAL;
        return 0;
}
