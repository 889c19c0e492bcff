/* Logging to stderr; see log.h. */
#include "util/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static enum log_level current_level = LOG_LEVEL_INFO;

static const char *const level_names[] = {
	[LOG_LEVEL_ERROR] = "error",
	[LOG_LEVEL_WARN] = "warn",
	[LOG_LEVEL_INFO] = "info",
	[LOG_LEVEL_DEBUG] = "debug",
};

static const char *const level_prefix[] = {
	[LOG_LEVEL_ERROR] = "error: ",
	[LOG_LEVEL_WARN] = "warning: ",
	[LOG_LEVEL_INFO] = "",
	[LOG_LEVEL_DEBUG] = "debug: ",
};

void log_set_level(enum log_level level)
{
	current_level = level;
}

int log_level_parse(const char *s, enum log_level *out)
{
	for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (strcmp(s, level_names[i]) == 0) {
			*out = (enum log_level)i;
			return 0;
		}
	}
	return -1;
}

bool log_enabled(enum log_level level)
{
	return level <= current_level;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int n;

	if (!log_enabled(level))
		return;
	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	/* stderr is unbuffered: glibc emits the formatted line in one write. */
	if (level == LOG_LEVEL_DEBUG) {
		/* Debug lines carry the monotonic clock, to line them up with each other and with a trace. */
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		fprintf(stderr, "%s%lld.%06ld %s\n", level_prefix[level], (long long)ts.tv_sec, ts.tv_nsec / 1000,
			line);
	} else {
		fprintf(stderr, "%s%s\n", level_prefix[level], line);
	}
	fflush(stderr);
}

int err_set(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}
