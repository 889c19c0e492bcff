/*
 * Logging: one line per message on stderr, filtered by a global level.
 *
 * Info lines are printed as they are given, so the lines the specs name
 * (for example "ionic_datapath: s3 bucket ...") appear verbatim; the other
 * levels carry a "warning: ", "error: " or "debug: " prefix; debug lines then
 * give the monotonic clock in seconds (CLOCK_MONOTONIC, microseconds).
 *
 * Guest- and wire-supplied strings must not be passed as the format.
 */
#ifndef ERNIC_UTIL_LOG_H
#define ERNIC_UTIL_LOG_H

#include <stdbool.h>
#include <stddef.h>

enum log_level {
	LOG_LEVEL_ERROR,
	LOG_LEVEL_WARN,
	LOG_LEVEL_INFO,
	LOG_LEVEL_DEBUG,
};

/* Set the most verbose level that is printed (default LOG_LEVEL_INFO). */
void log_set_level(enum log_level level);

/* Parse "error", "warn", "info" or "debug". Returns 0, or -1 on anything else. */
int log_level_parse(const char *s, enum log_level *out);

bool log_enabled(enum log_level level);

void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Format a one-line reason into err (for functions that report failures to
 * their caller as text) and return -1, so "return err_set(...)" reads well.
 */
int err_set(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#define LOG_ERR(...)   log_msg(LOG_LEVEL_ERROR, __VA_ARGS__)
#define LOG_WARN(...)  log_msg(LOG_LEVEL_WARN, __VA_ARGS__)
#define LOG_INFO(...)  log_msg(LOG_LEVEL_INFO, __VA_ARGS__)
#define LOG_DEBUG(...) do { if (log_enabled(LOG_LEVEL_DEBUG)) log_msg(LOG_LEVEL_DEBUG, __VA_ARGS__); } while (0)

#endif
