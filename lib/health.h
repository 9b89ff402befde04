/* Device health: a state per device and per NeuronCore (healthy, degraded,
 * unhealthy or unknown), the reasons, since when, and the action AWS's
 * troubleshooting guidance recommends, derived from a tick's values by the
 * rules of health_rules[] (docs/health.md lists them with their sources).
 *
 * health_evaluate() is a pure function of the tick's snapshot, the one
 * before it and the result of that one: the tick loop calls it after each
 * tick and publishes the result with the snapshot (snapshot->health), so
 * that HTTP threads read a whole result or none. A result is immutable
 * once made and freed with its last reference.
 *
 * Never healthy by default: a device is healthy only when every rule that
 * applies to it could be evaluated and passed. A rule whose figures the
 * backend does not have for a device (no series, or no earlier sample for
 * a rate) makes it unknown, unless another rule found it degraded or
 * unhealthy. */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/metric.h"

struct snapshot;
struct device_info;

/* In order of severity: a device's state is the worst of its findings. */
enum health_state { HEALTH_HEALTHY, HEALTH_UNKNOWN, HEALTH_DEGRADED, HEALTH_UNHEALTHY, HEALTH__COUNT };
extern const char *const health_state_names[HEALTH__COUNT];

enum health_severity { HEALTH_INFO, HEALTH_WARNING, HEALTH_CRITICAL, HEALTH_SEVERITY__COUNT };
extern const char *const health_severity_names[HEALTH_SEVERITY__COUNT];

/* How a rule reads its metric. */
enum health_condition {
        HEALTH_IS_ZERO,     /* the gauge is 0 */
        HEALTH_INCREASE,    /* the counters rose by more than the threshold since the last tick */
        HEALTH_RATE,        /* the counters rose faster than the threshold per second */
        HEALTH_SHARE,       /* the gauge over the total (rule.total) is above the threshold */
        HEALTH_LINK_SILENT, /* a link that carried traffic moves nothing while its neighbours do */
        HEALTH_CORE_IDLE,   /* a core at 0 % holding memory while a core of its runtime works */
};

enum health_rule_id {
        HEALTH_RULE_DEVICE_DOWN,
        HEALTH_RULE_ECC_UNCORRECTED,
        HEALTH_RULE_ECC_REPAIRABLE,
        HEALTH_RULE_ECC_CORRECTED,
        HEALTH_RULE_LINK_DOWN,
        HEALTH_RULE_EXEC_ERRORS,
        HEALTH_RULE_HARDWARE_ERRORS,
        HEALTH_RULE_CORE_STUCK,
        HEALTH_RULE_HBM_FULL,
        HEALTH_RULE__COUNT,
};

#define HEALTH_FILTER_MAX 6

struct health_rule {
        const char *kind; /* its name in events and reasons: "device_down" */
        enum metric_id metric;
        /* Only the series whose label `filter_label` has one of these
         * values (NULL: every series of the metric). */
        const char *filter_label;
        const char *filter[HEALTH_FILTER_MAX];
        enum health_condition condition;
        enum metric_id total;    /* HEALTH_SHARE: the gauge it is a share of */
        double threshold;        /* events, events per second, or a share */
        int64_t hold_ms;         /* a tripped rule stays tripped this long after its last trip */
        enum health_state state; /* when it trips */
        bool per_core;           /* its findings name a core where the series does */
        const char *reason;
        const char *action;
};

extern const struct health_rule health_rules[HEALTH_RULE__COUNT];

/* A rule that tripped on a device (or one of its cores), or could not be
 * evaluated there (state HEALTH_UNKNOWN). */
#define HEALTH_DETAIL_MAX 72
struct health_finding {
        enum health_rule_id rule;
        enum health_state state;
        unsigned device;
        int core;                       /* host-wide logical core, or -1 */
        char detail[HEALTH_DETAIL_MAX]; /* what tripped: "sram_ecc_uncorrected", "peer 5", "runtime bert-0" */
        double value;                   /* the value that tripped it */
        int64_t since_ms;               /* stamp of the tick it began */
        int64_t last_ms;                /* stamp of the tick it last tripped (for hold_ms) */
};

struct health_device {
        unsigned index;
        enum health_state state;
        int64_t since_ms;    /* stamp of the tick the state began */
        size_t first, count; /* its findings in health_result.findings */
        const char *action;  /* of its worst finding; NULL when healthy */
};

struct health_core {
        enum health_state state;
        int64_t since_ms;
};

/* What an event is about: a rule tripping or clearing, or a device's
 * state changing. */
enum health_event_phase { HEALTH_BEGIN, HEALTH_END, HEALTH_CHANGE };
extern const char *const health_phase_names[3];

#define HEALTH_KIND_STATE "state"
#define HEALTH_KINDS (HEALTH_RULE__COUNT + 1) /* every rule's kind, then "state" */
#define HEALTH_REASON_MAX 160

struct health_event {
        int64_t timestamp_ms;
        int device;    /* -1: none */
        int core;      /* -1: none */
        unsigned kind; /* a rule id, or HEALTH_RULE__COUNT for a state change */
        enum health_event_phase phase;
        enum health_severity severity;
        enum health_state state; /* the device's state after the event */
        char reason[HEALTH_REASON_MAX];
        double value; /* NAN when there is none */
};

/* The kind's name: a rule's kind, or "state". */
const char *health_kind_name(unsigned kind);
/* The kind of a name, or -ENOENT. */
int health_kind_lookup(const char *name);
int health_severity_lookup(const char *name);

#define HEALTH_RECENT_EVENTS 20

struct health_result {
        atomic_int refs;
        int64_t timestamp_ms;
        size_t n_devices;
        struct health_device *devices;
        size_t n_findings;
        struct health_finding *findings; /* grouped by device, in device order */
        size_t n_cores;                  /* host-wide logical cores */
        struct health_core *cores;
        size_t n_events; /* what this tick began, ended or changed */
        struct health_event *events;
        size_t n_recent; /* the last HEALTH_RECENT_EVENTS events, oldest first */
        struct health_event recent[HEALTH_RECENT_EVENTS];
        uint64_t events_total[HEALTH_KINDS][HEALTH_SEVERITY__COUNT]; /* since the first result */
};

/* Evaluates every rule for the devices (n of them) on snap, with prev the
 * snapshot before it (NULL at the first tick: rates are then unknown) and
 * prev_result its result (NULL: every device was unknown). Returns a new
 * result with one reference, or NULL when out of memory. */
struct health_result *health_evaluate(const struct device_info *devices, size_t n, const struct snapshot *prev,
                                      const struct snapshot *snap, const struct health_result *prev_result);

struct health_result *health_result_ref(struct health_result *r); /* NULL-safe */
void health_result_unref(struct health_result *r);                /* NULL-safe */

/* The worst state of the devices (unknown when there are none). */
enum health_state health_worst(const struct health_result *r);

/* The finding's text: the rule's reason with its detail, "uncorrected ECC
 * errors (sram_ecc_uncorrected)". */
void health_finding_text(const struct health_finding *f, char *out, size_t size);
