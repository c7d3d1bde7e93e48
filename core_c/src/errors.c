/* Errors: the message of the last failing call, per thread, and the shape text messages quote. */
#include <stdarg.h>
#include <stdio.h>
#include "core.h"

static _Thread_local char last_error[512];

int pf_error(int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return code;
}

const char *pf_last_error(void) { return last_error; }

const char *pf_shape_str(const pf_tensor *t, char *buf) {
    int n = 0;
    n += snprintf(buf + n, 128 - n, "[");
    for (int i = 0; i < t->ndim && i < PF_MAX_DIMS && n < 100; i++)
        n += snprintf(buf + n, 128 - n, i ? ", %lld" : "%lld", (long long)t->shape[i]);
    snprintf(buf + n, 128 - n, "]");
    return buf;
}
