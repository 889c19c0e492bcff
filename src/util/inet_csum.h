/*
 * The Internet checksum (RFC 1071): a one's-complement sum of big-endian
 * 16-bit words. Used by the in-band TCP/IP stack and for the IPv4 headers the
 * RDMA engine synthesises in UD receives.
 */
#ifndef ERNIC_UTIL_INET_CSUM_H
#define ERNIC_UTIL_INET_CSUM_H

#include <stddef.h>
#include <stdint.h>

/* Add len bytes at data to a running sum (an odd last byte is padded with zero). */
static inline uint64_t inet_csum_add(uint64_t sum, const void *data, size_t len)
{
	const uint8_t *p = data;

	while (len > 1) {
		sum += ((uint32_t)p[0] << 8) | p[1];
		p += 2;
		len -= 2;
	}
	if (len > 0)
		sum += (uint32_t)p[0] << 8;
	return sum;
}

/* Fold the carries and complement: the checksum field, or 0 when verifying a correct one. */
static inline uint16_t inet_csum_fold(uint64_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffffu) + (sum >> 16);
	return (uint16_t)~sum;
}

#endif
