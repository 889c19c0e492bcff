/*
 * The Internet checksum (RFC 1071): a one's-complement sum of big-endian
 * 16-bit words. Used by the in-band TCP/IP stack and for the IPv4 headers the
 * RDMA engine synthesises in UD receives.
 */
#ifndef ERNIC_UTIL_INET_CSUM_H
#define ERNIC_UTIL_INET_CSUM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/*
 * Add len bytes at data to a running sum (an odd last byte is padded with
 * zero). The bytes are summed as 64-bit words in the host's order, the
 * carries out of the top counted and added back (end-around: 2^64 is 1
 * modulo 0xffff), then folded to 16 bits and turned to network order: the
 * one's-complement sum does not depend on the byte order it is taken in
 * (RFC 1071 §2(B)). About ten times faster than two bytes per step, which
 * had been half of the S3 endpoint's CPU time while sending.
 */
static inline uint64_t inet_csum_add(uint64_t sum, const void *data, size_t len)
{
	const uint8_t *p = data;
	uint64_t acc = 0, carries = 0, w;
	uint32_t w4;
	uint16_t h;

	for (; len >= 8; p += 8, len -= 8) {
		memcpy(&w, p, 8);
		acc += w;
		carries += acc < w;
	}
	acc += carries;
	acc += acc < carries;
	acc = (acc & 0xffffffffu) + (acc >> 32);        /* at most 33 bits from here on */
	if (len >= 4) {
		memcpy(&w4, p, 4);
		acc += w4;
		p += 4;
		len -= 4;
	}
	if (len >= 2) {
		memcpy(&h, p, 2);
		acc += h;
		p += 2;
		len -= 2;
	}
	if (len > 0) {
		const uint8_t last[2] = { p[0], 0 };

		memcpy(&h, last, 2);
		acc += h;
	}
	while (acc >> 16)
		acc = (acc & 0xffffu) + (acc >> 16);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	acc = (uint16_t)(acc << 8 | acc >> 8);
#endif
	return sum + acc;
}

/* Fold the carries and complement: the checksum field, or 0 when verifying a correct one. */
static inline uint16_t inet_csum_fold(uint64_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffffu) + (sum >> 16);
	return (uint16_t)~sum;
}

#endif
