/*
 * net-nd-unit: IPv6 neighbour discovery and ICMPv6 echo for the in-process
 * hosts' link-local address (src/net/net_nd.c), then through the in-band
 * stack (inet_input) and through a host on the switch (net_host). The
 * solicitations, echo requests and the checks of every answer are written
 * here with byte offsets from RFC 8200 (IPv6 header), RFC 4861 §4.3-4.6
 * (messages and options) and RFC 4443 (echo), and checksums from
 * tests/lib/wire_bytes.h, never with the module's wire structs.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "net/inet.h"
#include "net/net_host.h"
#include "net/net_nd.h"
#include "net/net_switch.h"
#include "util/evloop.h"
#include "../lib/wire_bytes.h"

/* The S3 endpoint's MAC and the link-local address the brief derives from it. */
static const uint8_t our_mac[6] = { 0x02, 0x53, 0xc0, 0xa8, 0xc8, 0x01 };
static const uint8_t our_ll[16] = {
	0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x00, 0x53, 0xc0, 0xff, 0xfe, 0xa8, 0xc8, 0x01,
};
static const uint8_t our_snode[16] = {
	0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xff, 0xa8, 0xc8, 0x01,
};
static const uint8_t our_group_mac[6] = { 0x33, 0x33, 0xff, 0xa8, 0xc8, 0x01 };

/* A guest NIC as QEMU names them, and its link-local address. */
static const uint8_t guest_mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };
static const uint8_t guest_ll[16] = {
	0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x50, 0x54, 0x00, 0xff, 0xfe, 0x12, 0x34, 0x56,
};
static const uint8_t all_nodes[16] = { 0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01 };
static const uint8_t all_nodes_mac[6] = { 0x33, 0x33, 0, 0, 0, 0x01 };
static const uint8_t unspecified[16];

/* Offsets in a frame: Ethernet 14, then the IPv6 header (40), then ICMPv6. */
#define IP  14
#define MSG 54

#define NS_LEN   (MSG + 24 + 8)     /* with a source link-layer option */
#define NA_LEN   (MSG + 24 + 8)

/* ---- frames written here ---------------------------------------------------------- */

/* The ICMPv6 checksum of the message in f, from its IPv6 header: pseudo-header (RFC 8200 §8.1), then the message. */
static uint16_t icmp6_sum(const uint8_t *f)
{
	size_t mlen = get16(f + IP + 4);
	uint32_t s = sum16(0, f + IP + 8, 32) + (uint32_t)mlen + 58;

	return fold(sum16(s, f + MSG, mlen));
}

static void fix_csum(uint8_t *f)
{
	put16(f + MSG + 2, 0);
	put16(f + MSG + 2, icmp6_sum(f));
}

static void put_ip6(uint8_t *f, const uint8_t *dmac, const uint8_t *smac, const uint8_t *src, const uint8_t *dst,
		    uint8_t hlim, size_t mlen)
{
	memset(f, 0, MSG + mlen);
	memcpy(f, dmac, 6);
	memcpy(f + 6, smac, 6);
	put16(f + 12, 0x86dd);
	f[IP] = 0x60;
	put16(f + IP + 4, (uint32_t)mlen);
	f[IP + 6] = 58;
	f[IP + 7] = hlim;
	memcpy(f + IP + 8, src, 16);
	memcpy(f + IP + 24, dst, 16);
}

/* A solicitation for target from the guest, with its source link-layer option when slla. */
static size_t build_ns(uint8_t *f, const uint8_t *dmac, const uint8_t *src, const uint8_t *dst, const uint8_t *target,
		       bool slla)
{
	size_t mlen = 24 + (slla ? 8 : 0);

	put_ip6(f, dmac, guest_mac, src, dst, 255, mlen);
	f[MSG] = 135;
	memcpy(f + MSG + 8, target, 16);
	if (slla) {
		f[MSG + 24] = 1;
		f[MSG + 25] = 1;
		memcpy(f + MSG + 26, guest_mac, 6);
	}
	fix_csum(f);
	return MSG + mlen;
}

/* What the guest's kernel sends first: to our solicited-node group, from its link-local address, with SLLA. */
static size_t build_guest_ns(uint8_t *f)
{
	return build_ns(f, our_group_mac, guest_ll, our_snode, our_ll, true);
}

static size_t build_echo(uint8_t *f, const uint8_t *dmac, const uint8_t *src, const uint8_t *dst, uint16_t id,
			 uint16_t seq, const uint8_t *data, size_t dlen)
{
	put_ip6(f, dmac, guest_mac, src, dst, 64, 8 + dlen);
	f[MSG] = 128;
	put16(f + MSG + 4, id);
	put16(f + MSG + 6, seq);
	memcpy(f + MSG + 8, data, dlen);
	fix_csum(f);
	return MSG + 8 + dlen;
}

/* Parse a copy of exactly len bytes (so that ASan sees any read past them). */
static int parse(const uint8_t *f, size_t len, struct net_nd_ns *ns)
{
	uint8_t *copy = malloc(len ? len : 1);
	int rc;

	assert_non_null(copy);
	memcpy(copy, f, len);
	rc = net_nd_parse_ns(copy, len, our_ll, ns);
	free(copy);
	return rc;
}

/*
 * An advertisement from us, checked field by field: to dmac/dst, solicited
 * or not, the override flag, our address as target and our MAC in the one
 * option, hop limit 255, the checksum recomputed here.
 */
static void check_na(const uint8_t *f, size_t len, const uint8_t *dmac, const uint8_t *dst, bool solicited)
{
	assert_int_equal(len, NA_LEN);
	assert_memory_equal(f, dmac, 6);
	assert_memory_equal(f + 6, our_mac, 6);
	assert_int_equal(get16(f + 12), 0x86dd);
	assert_int_equal(get32(f + IP), 0x60000000u);             /* version 6, class and flow 0 */
	assert_int_equal(get16(f + IP + 4), 32);                  /* 24 + one option */
	assert_int_equal(f[IP + 6], 58);
	assert_int_equal(f[IP + 7], 255);
	assert_memory_equal(f + IP + 8, our_ll, 16);
	assert_memory_equal(f + IP + 24, dst, 16);
	assert_int_equal(f[MSG], 136);
	assert_int_equal(f[MSG + 1], 0);
	assert_int_equal(get32(f + MSG + 4), solicited ? 0x60000000u : 0x20000000u);  /* R=0, S, O=1 */
	assert_memory_equal(f + MSG + 8, our_ll, 16);
	assert_int_equal(f[MSG + 24], 2);                         /* target link-layer address */
	assert_int_equal(f[MSG + 25], 1);
	assert_memory_equal(f + MSG + 26, our_mac, 6);
	assert_int_equal(icmp6_sum(f), 0);
	assert_int_not_equal(get16(f + MSG + 2), 0);
}

/* ---- addresses ---------------------------------------------------------------------- */

static void test_ll_from_mac(void **state)
{
	static const uint8_t universal[6] = { 0x00, 0x1b, 0x21, 0xaa, 0xbb, 0xcc };
	uint8_t a[16], m[6];

	(void)state;
	/* 02:53:c0:a8:c8:01 -> fe80::53:c0ff:fea8:c801: the local bit cleared, ff:fe in the middle. */
	net_nd_ll_from_mac(our_mac, a);
	assert_int_equal(a[0], 0xfe);
	assert_int_equal(a[1], 0x80);
	for (int i = 2; i < 8; i++)
		assert_int_equal(a[i], 0);
	assert_int_equal(a[8], 0x00);
	assert_int_equal(a[9], 0x53);
	assert_int_equal(a[10], 0xc0);
	assert_int_equal(a[11], 0xff);
	assert_int_equal(a[12], 0xfe);
	assert_int_equal(a[13], 0xa8);
	assert_int_equal(a[14], 0xc8);
	assert_int_equal(a[15], 0x01);
	assert_memory_equal(a, our_ll, 16);
	/* A universal MAC gets the bit set: 00:1b:21:aa:bb:cc -> fe80::21b:21ff:feaa:bbcc. */
	net_nd_ll_from_mac(universal, a);
	assert_int_equal(a[8], 0x02);
	assert_int_equal(a[9], 0x1b);
	assert_int_equal(a[10], 0x21);
	assert_int_equal(a[15], 0xcc);
	net_nd_ll_from_mac(guest_mac, a);
	assert_memory_equal(a, guest_ll, 16);

	net_nd_solicited_node(our_ll, a);
	assert_memory_equal(a, our_snode, 16);
	net_nd_solicited_mac(our_ll, m);
	assert_memory_equal(m, our_group_mac, 6);
}

/* ---- solicitations answered ----------------------------------------------------------- */

static void test_na_exact(void **state)
{
	static const uint8_t other_mac[6] = { 0x52, 0x54, 0x00, 0xaa, 0xbb, 0xcc };
	uint8_t f[128], na[128];
	struct net_nd_ns ns;
	size_t n;

	(void)state;
	/* Multicast, with SLLA: the answer is solicited, to the guest's MAC and address. */
	n = build_guest_ns(f);
	assert_int_equal(n, NS_LEN);
	assert_int_equal(parse(f, n, &ns), 0);
	assert_memory_equal(ns.src, guest_ll, 16);
	assert_memory_equal(ns.smac, guest_mac, 6);
	assert_true(ns.slla);
	assert_false(ns.dad);
	memset(na, 0xa5, sizeof(na));
	n = net_nd_build_na(na, sizeof(na), &ns, our_mac, our_ll);
	check_na(na, n, guest_mac, guest_ll, true);
	assert_int_equal(na[NA_LEN], 0xa5);     /* nothing written past the frame */

	/* Unicast (a reachability probe): to our MAC and our address. */
	n = build_ns(f, our_mac, guest_ll, our_ll, our_ll, true);
	assert_int_equal(parse(f, n, &ns), 0);
	check_na(na, net_nd_build_na(na, sizeof(na), &ns, our_mac, our_ll), guest_mac, guest_ll, true);

	/* No SLLA: the answer goes to the frame's source. */
	n = build_ns(f, our_group_mac, guest_ll, our_snode, our_ll, false);
	assert_int_equal(parse(f, n, &ns), 0);
	assert_false(ns.slla);
	assert_memory_equal(ns.smac, guest_mac, 6);
	check_na(na, net_nd_build_na(na, sizeof(na), &ns, our_mac, our_ll), guest_mac, guest_ll, true);

	/* An SLLA other than the frame's source: the option names where the address lives. */
	n = build_guest_ns(f);
	memcpy(f + MSG + 26, other_mac, 6);
	fix_csum(f);
	assert_int_equal(parse(f, n, &ns), 0);
	check_na(na, net_nd_build_na(na, sizeof(na), &ns, our_mac, our_ll), other_mac, guest_ll, true);

	/* Unknown options are skipped by their length; a second SLLA is ignored. */
	n = build_guest_ns(f);
	put16(f + IP + 4, 24 + 8 + 16 + 8);
	f[MSG + 32] = 14;                       /* nonce (RFC 3971), two units */
	f[MSG + 33] = 2;
	f[MSG + 48] = 1;
	f[MSG + 49] = 1;
	memcpy(f + MSG + 50, other_mac, 6);
	fix_csum(f);
	assert_int_equal(parse(f, MSG + 56, &ns), 0);
	assert_memory_equal(ns.smac, guest_mac, 6);

	/* Ethernet padding after the packet is ignored. */
	n = build_guest_ns(f);
	memset(f + n, 0xee, 10);
	assert_int_equal(parse(f, n + 10, &ns), 0);

	/* The builder wants room for the whole frame. */
	n = build_guest_ns(f);
	assert_int_equal(parse(f, n, &ns), 0);
	memset(na, 0xa5, sizeof(na));
	assert_int_equal(net_nd_build_na(na, NA_LEN - 1, &ns, our_mac, our_ll), 0);
	assert_int_equal(na[0], 0xa5);
	assert_int_equal(net_nd_build_na(na, NA_LEN, &ns, our_mac, our_ll), NA_LEN);
}

/* Duplicate address detection: from ::, to the solicited-node group, no SLLA; answered to all nodes. */
static void test_dad(void **state)
{
	uint8_t f[128], na[128];
	struct net_nd_ns ns;
	size_t n;

	(void)state;
	n = build_ns(f, our_group_mac, unspecified, our_snode, our_ll, false);
	assert_int_equal(parse(f, n, &ns), 0);
	assert_true(ns.dad);
	assert_memory_equal(ns.src, unspecified, 16);
	check_na(na, net_nd_build_na(na, sizeof(na), &ns, our_mac, our_ll), all_nodes_mac, all_nodes, false);

	/* From :: with an SLLA, or to the unicast address: refused (RFC 4861 §7.1.1). */
	n = build_ns(f, our_group_mac, unspecified, our_snode, our_ll, true);
	assert_int_equal(parse(f, n, &ns), -EINVAL);
	n = build_ns(f, our_mac, unspecified, our_ll, our_ll, false);
	assert_int_equal(parse(f, n, &ns), -EINVAL);
}

/* ---- solicitations refused ------------------------------------------------------------ */

static void test_refused(void **state)
{
	static const uint8_t other_ll[16] = {
		0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x00, 0x53, 0xc0, 0xff, 0xfe, 0xa8, 0xc8, 0x02,
	};
	static const uint8_t same_group[16] = {     /* another address whose solicited-node group is ours */
		0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x12, 0x34, 0x56, 0xff, 0xfe, 0xa8, 0xc8, 0x01,
	};
	static const uint8_t mcast[16] = { 0xff, 0x02, [15] = 0x02 };
	uint8_t f[160];
	struct net_nd_ns ns;
	size_t n;

	(void)state;
	/* Hop limit other than 255: it crossed a router. */
	for (unsigned h = 0; h < 255; h += 63) {
		n = build_guest_ns(f);
		f[IP + 7] = (uint8_t)h;
		fix_csum(f);
		assert_int_equal(parse(f, n, &ns), -EINVAL);
	}
	/* A bad checksum (one bit anywhere in the message or the addresses), and a zero one. */
	for (size_t i = IP + 8; i < NS_LEN; i++) {
		n = build_guest_ns(f);
		f[i] ^= 0x10;
		assert_int_equal(parse(f, n, &ns), -EINVAL);
	}
	n = build_guest_ns(f);
	put16(f + MSG + 2, 0);
	assert_int_equal(parse(f, n, &ns), -EINVAL);
	/* Another target: one next to ours, one sharing our group, a multicast one. */
	assert_int_equal(parse(f, build_ns(f, our_group_mac, guest_ll, our_snode, other_ll, true), &ns), -EINVAL);
	assert_int_equal(parse(f, build_ns(f, our_group_mac, guest_ll, our_snode, same_group, true), &ns), -EINVAL);
	assert_int_equal(parse(f, build_ns(f, our_group_mac, guest_ll, our_snode, mcast, true), &ns), -EINVAL);
	/* To another group or another address. */
	assert_int_equal(parse(f, build_ns(f, all_nodes_mac, guest_ll, all_nodes, our_ll, true), &ns), -EINVAL);
	assert_int_equal(parse(f, build_ns(f, our_mac, guest_ll, other_ll, our_ll, true), &ns), -EINVAL);
	/* From a group, or from our own address. */
	assert_int_equal(parse(f, build_ns(f, our_group_mac, mcast, our_snode, our_ll, false), &ns), -EINVAL);
	assert_int_equal(parse(f, build_ns(f, our_group_mac, our_ll, our_snode, our_ll, false), &ns), -EINVAL);
	/* A group Ethernet source. */
	n = build_guest_ns(f);
	f[6] |= 1;
	assert_int_equal(parse(f, n, &ns), -EINVAL);
	/* Code 1; an advertisement; an echo request with a solicitation's body. */
	for (unsigned k = 0; k < 3; k++) {
		static const uint8_t type_code[3][2] = { { 135, 1 }, { 136, 0 }, { 128, 0 } };

		n = build_guest_ns(f);
		f[MSG] = type_code[k][0];
		f[MSG + 1] = type_code[k][1];
		fix_csum(f);
		assert_int_equal(parse(f, n, &ns), -EINVAL);
	}
	/* Not IPv6: the EtherType, the version. */
	n = build_guest_ns(f);
	put16(f + 12, 0x0800);
	assert_int_equal(parse(f, n, &ns), -EINVAL);
	n = build_guest_ns(f);
	f[IP] = 0x40;
	assert_int_equal(parse(f, n, &ns), -EINVAL);

	/* Options: length 0 (it would never advance), past the end, a stray byte, an SLLA of two units or a group MAC. */
	n = build_guest_ns(f);
	f[MSG + 25] = 0;
	fix_csum(f);
	assert_int_equal(parse(f, n, &ns), -EINVAL);
	n = build_guest_ns(f);
	f[MSG + 25] = 2;
	fix_csum(f);
	assert_int_equal(parse(f, n, &ns), -EINVAL);
	n = build_guest_ns(f);
	f[n] = 1;
	put16(f + IP + 4, 33);
	fix_csum(f);
	assert_int_equal(parse(f, n + 1, &ns), -EINVAL);
	n = build_guest_ns(f);
	memset(f + n, 0, 8);
	f[MSG + 25] = 2;
	put16(f + IP + 4, 40);
	fix_csum(f);
	assert_int_equal(parse(f, n + 8, &ns), -EINVAL);
	n = build_guest_ns(f);
	f[MSG + 26] |= 1;
	fix_csum(f);
	assert_int_equal(parse(f, n, &ns), -EINVAL);

	/* An ICMPv6 length under 24, the rest of the frame beyond the IPv6 payload. */
	n = build_guest_ns(f);
	put16(f + IP + 4, 20);
	fix_csum(f);
	assert_int_equal(parse(f, n, &ns), -EINVAL);
	/* A payload length past the frame. */
	n = build_guest_ns(f);
	put16(f + IP + 4, 33);
	assert_int_equal(parse(f, n, &ns), -EINVAL);

	/*
	 * An extension header before ICMPv6: hop-by-hop options (next header 0,
	 * eight bytes of PadN) carrying the same solicitation, checksum right.
	 * Refused: nothing here walks extension headers.
	 */
	n = build_guest_ns(f);
	memmove(f + MSG + 8, f + MSG, 32);
	memset(f + MSG, 0, 8);
	f[MSG] = 58;                    /* the next header after hop-by-hop */
	f[MSG + 2] = 1;                 /* PadN of four bytes */
	f[MSG + 3] = 4;
	f[IP + 6] = 0;
	put16(f + IP + 4, 40);
	{
		uint32_t s = sum16(0, f + IP + 8, 32) + 32 + 58;

		put16(f + MSG + 8 + 2, 0);
		put16(f + MSG + 8 + 2, fold(sum16(s, f + MSG + 8, 32)));
	}
	assert_int_equal(parse(f, n + 8, &ns), -EINVAL);
	/* The same with next header 58 (the hop-by-hop header read as ICMPv6): refused as well. */
	f[IP + 6] = 58;
	assert_int_equal(parse(f, n + 8, &ns), -EINVAL);
}

/*
 * Every prefix of a valid solicitation, as received (the payload length
 * then runs past it) and with the payload length and checksum made to fit
 * it: only the whole message, or the message without its option, is taken.
 */
static void test_truncated(void **state)
{
	uint8_t f[128], g[128], out[2048];
	struct net_nd_ns ns;
	size_t n = build_guest_ns(f);

	(void)state;
	for (size_t len = 0; len < n; len++) {
		uint8_t *copy = malloc(len ? len : 1);

		assert_non_null(copy);
		memcpy(copy, f, len);
		assert_int_equal(net_nd_parse_ns(copy, len, our_ll, &ns), -EINVAL);
		assert_int_equal(net_nd_is_ns_for(copy, len, our_ll), len >= MSG + 24);
		assert_int_equal(net_nd_echo_reply(out, sizeof(out), copy, len, our_mac, our_ll), 0);
		free(copy);
	}
	for (size_t mlen = 0; mlen <= 32; mlen++) {
		memcpy(g, f, n);
		put16(g + IP + 4, (uint32_t)mlen);
		if (mlen >= 4)
			fix_csum(g);
		assert_int_equal(parse(g, MSG + mlen, &ns), mlen == 32 || mlen == 24 ? 0 : -EINVAL);
	}
	assert_int_equal(net_nd_parse_ns(NULL, 0, our_ll, &ns), -EINVAL);
	assert_false(net_nd_is_ns_for(NULL, 0, our_ll));
	assert_int_equal(net_nd_echo_reply(out, sizeof(out), NULL, 0, our_mac, our_ll), 0);
}

/* ---- the switch filter ---------------------------------------------------------------- */

static void test_filter(void **state)
{
	uint8_t f[128];
	size_t n;

	(void)state;
	n = build_guest_ns(f);
	assert_true(net_nd_is_ns_for(f, n, our_ll));
	assert_true(net_nd_is_ns_for(f, MSG + 24, our_ll));      /* what says so is there: the rest is parse's */
	assert_false(net_nd_is_ns_for(f, MSG + 23, our_ll));
	/* Only the group form: a solicitation to our MAC passes the host's unicast filter instead. */
	assert_false(net_nd_is_ns_for(f, build_ns(f, our_mac, guest_ll, our_ll, our_ll, true), our_ll));
	assert_false(net_nd_is_ns_for(f, build_ns(f, all_nodes_mac, guest_ll, our_snode, our_ll, true), our_ll));
	/* Another host's address on the same group. */
	assert_false(net_nd_is_ns_for(f, build_guest_ns(f), guest_ll));
	n = build_guest_ns(f);
	f[MSG] = 136;
	assert_false(net_nd_is_ns_for(f, n, our_ll));
	n = build_guest_ns(f);
	f[IP + 6] = 0;
	assert_false(net_nd_is_ns_for(f, n, our_ll));
	n = build_guest_ns(f);
	put16(f + 12, 0x0800);
	assert_false(net_nd_is_ns_for(f, n, our_ll));
}

/* ---- echo --------------------------------------------------------------------------- */

static void test_echo(void **state)
{
	static const uint8_t data[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTU"; /* 57: odd */
	uint8_t f[256], out[256];
	size_t n, r;

	(void)state;
	n = build_echo(f, our_mac, guest_ll, our_ll, 0x1234, 7, data, 57);
	memset(out, 0xa5, sizeof(out));
	r = net_nd_echo_reply(out, sizeof(out), f, n, our_mac, our_ll);
	assert_int_equal(r, n);
	assert_memory_equal(out, guest_mac, 6);
	assert_memory_equal(out + 6, our_mac, 6);
	assert_int_equal(get16(out + 12), 0x86dd);
	assert_int_equal(get32(out + IP), 0x60000000u);
	assert_int_equal(get16(out + IP + 4), 8 + 57);
	assert_int_equal(out[IP + 6], 58);
	assert_int_equal(out[IP + 7], 64);
	assert_memory_equal(out + IP + 8, our_ll, 16);
	assert_memory_equal(out + IP + 24, guest_ll, 16);
	assert_int_equal(out[MSG], 129);
	assert_int_equal(out[MSG + 1], 0);
	assert_int_equal(get16(out + MSG + 4), 0x1234);
	assert_int_equal(get16(out + MSG + 6), 7);
	assert_memory_equal(out + MSG + 8, data, 57);
	assert_int_equal(icmp6_sum(out), 0);
	assert_int_equal(out[r], 0xa5);
	/* Empty data. */
	n = build_echo(f, our_mac, guest_ll, our_ll, 1, 2, data, 0);
	assert_int_equal(net_nd_echo_reply(out, sizeof(out), f, n, our_mac, our_ll), MSG + 8);
	assert_int_equal(icmp6_sum(out), 0);
	/* The reply must fit whole. */
	n = build_echo(f, our_mac, guest_ll, our_ll, 1, 2, data, 57);
	assert_int_equal(net_nd_echo_reply(out, n - 1, f, n, our_mac, our_ll), 0);
	assert_int_equal(net_nd_echo_reply(out, n, f, n, our_mac, our_ll), n);

	/* Refused: to another address, from ::, from a group, from us, a bad checksum, code 1, a reply. */
	n = build_echo(f, our_mac, guest_ll, guest_ll, 1, 2, data, 8);
	assert_int_equal(net_nd_echo_reply(out, sizeof(out), f, n, our_mac, our_ll), 0);
	n = build_echo(f, our_mac, unspecified, our_ll, 1, 2, data, 8);
	assert_int_equal(net_nd_echo_reply(out, sizeof(out), f, n, our_mac, our_ll), 0);
	n = build_echo(f, our_mac, all_nodes, our_ll, 1, 2, data, 8);
	assert_int_equal(net_nd_echo_reply(out, sizeof(out), f, n, our_mac, our_ll), 0);
	n = build_echo(f, our_mac, our_ll, our_ll, 1, 2, data, 8);
	assert_int_equal(net_nd_echo_reply(out, sizeof(out), f, n, our_mac, our_ll), 0);
	n = build_echo(f, our_mac, guest_ll, our_ll, 1, 2, data, 8);
	f[n - 1] ^= 1;
	assert_int_equal(net_nd_echo_reply(out, sizeof(out), f, n, our_mac, our_ll), 0);
	n = build_echo(f, our_mac, guest_ll, our_ll, 1, 2, data, 8);
	f[MSG + 1] = 1;
	fix_csum(f);
	assert_int_equal(net_nd_echo_reply(out, sizeof(out), f, n, our_mac, our_ll), 0);
	n = build_echo(f, our_mac, guest_ll, our_ll, 1, 2, data, 8);
	f[MSG] = 129;
	fix_csum(f);
	assert_int_equal(net_nd_echo_reply(out, sizeof(out), f, n, our_mac, our_ll), 0);
	/* A solicitation is not an echo request. */
	assert_int_equal(net_nd_echo_reply(out, sizeof(out), f, build_guest_ns(f), our_mac, our_ll), 0);
}

/* ---- through the in-band stack ---------------------------------------------------------- */

struct sent {
	unsigned n;
	size_t len;
	uint8_t d[2048];
};

static void record(void *ctx, const uint8_t *frame, size_t len)
{
	struct sent *s = ctx;

	s->n++;
	assert_true(len <= sizeof(s->d));
	s->len = len;
	memcpy(s->d, frame, len);
}

static void in(struct inet_host *t, const uint8_t *f, size_t len)
{
	uint8_t *copy = malloc(len ? len : 1);

	assert_non_null(copy);
	memcpy(copy, f, len);
	inet_input(t, copy, len, 1000);
	free(copy);
}

static void test_inet(void **state)
{
	static const uint8_t data[] = "ping over fe80::";
	struct sent s = { 0 };
	struct inet_config cfg = { .ip = 0xc0a8c801u };
	struct inet_ops ops = { .ctx = &s, .send_frame = record };
	struct inet_host *t;
	const struct inet_stats *st;
	uint8_t f[256];
	size_t n;

	(void)state;
	memcpy(cfg.mac, our_mac, 6);
	t = inet_new(&cfg, &ops);
	assert_non_null(t);
	st = inet_stats(t);

	/* The group solicitation passes the filter and gets exactly one advertisement. */
	n = build_guest_ns(f);
	assert_true(inet_wants_frame(t, f, n));
	in(t, f, n);
	assert_int_equal(s.n, 1);
	check_na(s.d, s.len, guest_mac, guest_ll, true);
	assert_int_equal(st->nd_answered, 1);
	assert_int_equal(st->frames_out, 1);
	/* The unicast one, and the DAD one. */
	in(t, f, build_ns(f, our_mac, guest_ll, our_ll, our_ll, true));
	assert_int_equal(s.n, 2);
	check_na(s.d, s.len, guest_mac, guest_ll, true);
	in(t, f, build_ns(f, our_group_mac, unspecified, our_snode, our_ll, false));
	assert_int_equal(s.n, 3);
	check_na(s.d, s.len, all_nodes_mac, all_nodes, false);
	assert_int_equal(st->nd_answered, 3);

	/* Echo to our address, sent to our MAC: answered. To our group MAC: not. */
	in(t, f, build_echo(f, our_mac, guest_ll, our_ll, 9, 1, data, sizeof(data)));
	assert_int_equal(s.n, 4);
	assert_int_equal(s.d[MSG], 129);
	assert_memory_equal(s.d + MSG + 8, data, sizeof(data));
	assert_int_equal(st->icmp6_echo_replies, 1);
	in(t, f, build_echo(f, our_group_mac, guest_ll, our_ll, 9, 1, data, sizeof(data)));
	assert_int_equal(s.n, 4);
	assert_int_equal(st->drop_bad_eth, 1);

	/* Other IPv6 (a bad solicitation, one for another address) is dropped as before. */
	n = build_guest_ns(f);
	f[IP + 7] = 64;
	fix_csum(f);
	assert_true(inet_wants_frame(t, f, n));        /* the filter only looks; the stack refuses */
	in(t, f, n);
	in(t, f, build_ns(f, our_mac, guest_ll, our_ll, guest_ll, true));
	assert_int_equal(s.n, 4);
	assert_int_equal(st->drop_bad_eth, 3);
	/* Our group MAC carries nothing else: an ARP request sent to it is not ours. */
	n = build_guest_ns(f);
	put16(f + 12, 0x0806);
	assert_false(inet_wants_frame(t, f, n));
	in(t, f, n);
	assert_int_equal(st->drop_not_mine, 1);
	/* A solicitation to another host's group does not reach us. */
	n = build_ns(f, (const uint8_t[6]){ 0x33, 0x33, 0xff, 0x12, 0x34, 0x56 }, guest_ll, our_snode, our_ll, true);
	assert_false(inet_wants_frame(t, f, n));
	in(t, f, n);
	assert_int_equal(st->drop_not_mine, 2);
	assert_int_equal(s.n, 4);
	assert_int_equal(st->nd_answered, 3);
	inet_free(t);
}

/* ---- through a host on the switch ---------------------------------------------------------- */

static void wire_deliver(void *ctx, const uint8_t *frame, size_t len)
{
	record(ctx, frame, len);
}

/*
 * The S3 endpoint's situation: a host on the segment with the guest's port
 * and the TAP's. The guest's group solicitation reaches the host, which
 * answers the guest alone, and still goes on to the TAP as any multicast
 * frame does (the host's kernel may have neighbours of its own to find).
 */
static void test_net_host(void **state)
{
	struct sent guest = { 0 }, tap = { 0 };
	struct net_port gp = { .name = "guest", .ctx = &guest, .deliver = wire_deliver };
	struct net_port tp = { .name = "tap", .ctx = &tap, .deliver = wire_deliver };
	struct net_host_config hc = { .name = "s3", .ip = 0xc0a8c801u };
	struct evloop *loop = evloop_new();
	struct net_switch *sw = net_switch_new();
	struct net_host *h;
	uint8_t f[128];
	char err[128];
	int g, tt;
	size_t n;

	(void)state;
	assert_non_null(loop);
	assert_non_null(sw);
	g = net_switch_attach(sw, &gp);
	tt = net_switch_attach(sw, &tp);
	assert_true(g >= 0 && tt >= 0);
	memcpy(hc.mac, our_mac, 6);
	h = net_host_new(&hc, loop, sw, err, sizeof(err));
	assert_non_null(h);

	n = build_guest_ns(f);
	net_switch_input(sw, g, f, n);
	assert_int_equal(guest.n, 1);
	check_na(guest.d, guest.len, guest_mac, guest_ll, true);
	assert_int_equal(tap.n, 1);
	assert_int_equal(tap.len, n);
	assert_memory_equal(tap.d, f, n);
	assert_int_equal(net_host_stats(h)->nd_answered, 1);
	assert_int_equal(net_switch_stats(sw)->to_endpoints, 1);
	assert_int_equal(net_switch_stats(sw)->flooded, 1);        /* the solicitation, on to the TAP */
	assert_int_equal(net_switch_stats(sw)->unicast, 1);        /* the answer, to the guest's port alone */

	/* Then the guest's unicast probe: to the host alone. */
	net_switch_input(sw, g, f, build_ns(f, our_mac, guest_ll, our_ll, our_ll, true));
	assert_int_equal(guest.n, 2);
	check_na(guest.d, guest.len, guest_mac, guest_ll, true);
	assert_int_equal(tap.n, 1);
	assert_int_equal(net_host_stats(h)->nd_answered, 2);

	net_host_free(h);
	net_switch_free(sw);
	evloop_free(loop);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ll_from_mac),
		cmocka_unit_test(test_na_exact),
		cmocka_unit_test(test_dad),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_filter),
		cmocka_unit_test(test_echo),
		cmocka_unit_test(test_inet),
		cmocka_unit_test(test_net_host),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
