/*
 * Strict parsers for integers, sizes and addresses.
 *
 * Header-only on purpose: the guest-side test client (tests/s3_rdma_client.c)
 * is built inside the guest with this one file from the tree.
 *
 * Every parser takes a NUL-terminated string and accepts it whole or not at
 * all: no sign, no leading or trailing white space, no trailing junk, no
 * empty string, no overflow. They return 0 on success, -EINVAL on a syntax
 * error and -ERANGE when the value does not fit; *out is written only on
 * success.
 */
#ifndef ERNIC_UTIL_PARSE_INT_H
#define ERNIC_UTIL_PARSE_INT_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Unsigned decimal, at least one digit, no sign; leading zeros allowed. */
static inline int parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (s == NULL || *s == '\0')
		return -EINVAL;
	for (; *s; s++) {
		unsigned d;

		if (*s < '0' || *s > '9')
			return -EINVAL;
		d = (unsigned)(*s - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

/* Decimal within [min, max]; -ERANGE outside it. */
static inline int parse_u64_range(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	uint64_t v;
	int rc = parse_u64(s, &v);

	if (rc)
		return rc;
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

static inline int parse_hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * Exactly len hexadecimal digits (no "0x"), 1 <= len <= 16, taken from s
 * without needing a terminator. Used for fixed-width wire fields.
 */
static inline int parse_hex_u64_n(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;

	if (s == NULL || len == 0 || len > 16)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		int d = parse_hex_digit(s[i]);

		if (d < 0)
			return -EINVAL;
		v = (v << 4) | (uint64_t)d;
	}
	*out = v;
	return 0;
}

/*
 * A size in bytes: decimal digits, optionally followed by a binary multiplier
 * K, M, G or T (either case), itself optionally followed by "iB"
 * ("64M", "64MiB", "1g" and "4096" are all accepted; "64MB", "1.5G" are not).
 */
static inline int parse_size(const char *s, uint64_t *out)
{
	char digits[24];
	const char *p = s;
	size_t n = 0;
	unsigned shift = 0;
	uint64_t v;
	int rc;

	if (s == NULL)
		return -EINVAL;
	while (*p >= '0' && *p <= '9') {
		if (n + 1 >= sizeof(digits))
			return -ERANGE;
		digits[n++] = *p++;
	}
	if (n == 0)
		return -EINVAL;
	digits[n] = '\0';
	if (*p) {
		switch (*p) {
		case 'K': case 'k': shift = 10; break;
		case 'M': case 'm': shift = 20; break;
		case 'G': case 'g': shift = 30; break;
		case 'T': case 't': shift = 40; break;
		default: return -EINVAL;
		}
		p++;
		if (*p && strcmp(p, "iB") != 0)
			return -EINVAL;
	}
	rc = parse_u64(digits, &v);
	if (rc)
		return rc;
	if (shift && v > (UINT64_MAX >> shift))
		return -ERANGE;
	*out = v << shift;
	return 0;
}

/*
 * IPv4 dotted quad: exactly four decimal octets 0..255, no leading zeros
 * (so "010" is never mistaken for octal). *out is in host byte order.
 */
static inline int parse_ipv4(const char *s, uint32_t *out)
{
	uint32_t addr = 0;
	const char *p = s;

	if (s == NULL)
		return -EINVAL;
	for (int i = 0; i < 4; i++) {
		unsigned v = 0, nd = 0;

		while (*p >= '0' && *p <= '9') {
			if (nd == 1 && v == 0)
				return -EINVAL; /* leading zero */
			v = v * 10 + (unsigned)(*p - '0');
			if (++nd > 3 || v > 255)
				return -EINVAL;
			p++;
		}
		if (nd == 0)
			return -EINVAL;
		addr = (addr << 8) | v;
		if (i < 3) {
			if (*p != '.')
				return -EINVAL;
			p++;
		}
	}
	if (*p)
		return -EINVAL;
	*out = addr;
	return 0;
}

/* The inverse of parse_ipv4: dotted quad of a host-order address into buf (16 bytes). */
static inline void format_ipv4(uint32_t ip, char buf[16])
{
	snprintf(buf, 16, "%u.%u.%u.%u", ip >> 24, (ip >> 16) & 0xffu, (ip >> 8) & 0xffu, ip & 0xffu);
}

/* MAC address: six two-digit hex octets separated by ':' ("02:53:c0:a8:c8:01"). */
static inline int parse_mac(const char *s, uint8_t out[6])
{
	uint8_t mac[6];

	if (s == NULL || strlen(s) != 17)
		return -EINVAL;
	for (int i = 0; i < 6; i++) {
		int hi = parse_hex_digit(s[i * 3]), lo = parse_hex_digit(s[i * 3 + 1]);

		if (hi < 0 || lo < 0)
			return -EINVAL;
		if (i < 5 && s[i * 3 + 2] != ':')
			return -EINVAL;
		mac[i] = (uint8_t)(hi << 4 | lo);
	}
	memcpy(out, mac, sizeof(mac));
	return 0;
}

#endif
