/*
 * fuzz-roce: the RoCEv2 frame parser and the ICRC (src/fabric/roce_wire.c),
 * as a frame from the wire reaches them.
 *
 * input: sel:u8 frame[...]; the path MTU is 256 << ((sel & 0x7f) % 5), and
 * sel bit 7 makes the target correct the frame's IPv4 header checksum and
 * ICRC first (where the frame is long enough to hold them), so mutations
 * get past those two checks to everything behind them. The parser
 * must never read outside the frame (ASan sees the exact-size copy). A frame
 * it accepts is checked against the builder: the views lie inside the
 * frame, the ICRC recomputes, and roce_build() from the parsed fields
 * writes the same bytes, except those the builder chooses itself (IPv4 and
 * UDP checksums, reserved bits, pad bytes and so the ICRC).
 */
#include <stdlib.h>

#include "fabric/roce_wire.h"
#include "fuzz.h"
#include "util/inet_csum.h"

#define INSIDE(p, n) ((const uint8_t *)(p) >= frame && (size_t)((const uint8_t *)(p) - frame) + (n) <= len)

static void check_accepted(const uint8_t *frame, size_t len, uint32_t mtu, const struct roce_pkt *p)
{
	static uint8_t out[8192];
	struct roce_frame_desc d = { 0 };
	const struct roce_bth *bth = p->bth;
	size_t olen = 0, bth_off = ROCE_L2L4_LEN, icrc_off = len - ROCE_ICRC_LEN;
	unsigned pad = roce_bth_pad(bth);

	if (!INSIDE(p->payload, p->payload_len + pad + ROCE_ICRC_LEN) || p->payload_len > mtu ||
	    p->payload + p->payload_len + pad + ROCE_ICRC_LEN != frame + len)
		abort();
	if ((p->reth && !INSIDE(p->reth, sizeof(*p->reth))) || (p->aeth && !INSIDE(p->aeth, sizeof(*p->aeth))) ||
	    (p->deth && !INSIDE(p->deth, sizeof(*p->deth))) || (p->atomic && !INSIDE(p->atomic, sizeof(*p->atomic))))
		abort();
	if (roce_icrc(frame + sizeof(struct net_eth_hdr), len - sizeof(struct net_eth_hdr) - ROCE_ICRC_LEN) != p->icrc)
		abort();

	memcpy(d.dst_mac, p->eth->dst, sizeof(d.dst_mac));
	memcpy(d.src_mac, p->eth->src, sizeof(d.src_mac));
	d.src_ip = be32_get(p->ip->src);
	d.dst_ip = be32_get(p->ip->dst);
	d.tos = p->ip->tos;
	d.ttl = p->ip->ttl;
	d.ip_id = be16_get(p->ip->id);
	d.df = be16_get(p->ip->frag) & NET_IP_FLAG_DF;
	d.sport = be16_get(p->udp->sport);
	d.opcode = bth->opcode;
	d.se = roce_bth_se(bth);
	d.m = roce_bth_m(bth);
	d.fecn = roce_bth_fecn(bth);
	d.becn = roce_bth_becn(bth);
	d.ackreq = roce_bth_ackreq(bth);
	d.pad = (uint8_t)pad;
	d.pkey = roce_bth_pkey(bth);
	d.dqpn = roce_bth_dqpn(bth);
	d.psn = roce_bth_psn(bth);
	if (p->deth) {
		d.deth.qkey = be32_get(p->deth->qkey);
		d.deth.sqp = be32_get(p->deth->sqp) & ROCE_QPN_MASK;
	}
	if (p->reth) {
		d.reth.va = be64_get(p->reth->va);
		d.reth.rkey = be32_get(p->reth->rkey);
		d.reth.len = be32_get(p->reth->dma_len);
	}
	if (p->atomic) {
		d.atomic.va = be64_get(p->atomic->va);
		d.atomic.rkey = be32_get(p->atomic->rkey);
		d.atomic.swap_add = be64_get(p->atomic->swap_add);
		d.atomic.compare = be64_get(p->atomic->compare);
	}
	if (p->aeth) {
		d.aeth.syndrome = roce_aeth_syndrome(p->aeth);
		d.aeth.msn = roce_aeth_msn(p->aeth);
	}
	if (p->atomic_ack)
		d.atomic_orig = be64_get(p->atomic_ack->orig);
	if (p->imm)
		d.imm = be32_get(p->imm->imm);
	if (p->ieth)
		d.ieth_rkey = be32_get(p->ieth->rkey);
	d.payload = p->payload;
	d.payload_len = p->payload_len;
	if (roce_build(&d, out, sizeof(out), &olen) != ROCE_OK || olen != len)
		abort();
	for (size_t i = 0; i < len; i++) {
		uint8_t keep = 0xff;

		if (i == 24 || i == 25 ||                               /* IPv4 checksum */
		    i == bth_off - 2 || i == bth_off - 1 ||             /* UDP checksum */
		    i >= icrc_off - pad)                                /* pad, ICRC */
			keep = 0;
		else if (i == bth_off + 4)                              /* FECN, BECN, resv6 */
			keep = 0xc0;
		else if (i == bth_off + 8)                              /* AckReq, resv7 */
			keep = 0x80;
		else if (p->deth && frame + i == (const uint8_t *)p->deth + 4) /* DETH resv8 */
			keep = 0;
		else if (bth->opcode == ROCE_CNP && i >= bth_off + sizeof(*bth) &&
			 i < bth_off + sizeof(*bth) + ROCE_CNP_RSVD_LEN)         /* CNP's reserved 16 bytes */
			keep = 0;
		if ((frame[i] ^ out[i]) & keep)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct roce_pkt pkt;
	enum roce_err err;
	uint32_t mtu;
	uint8_t *frame;

	if (size < 1)
		return 0;
	mtu = 256u << ((data[0] & 0x7f) % 5);
	/* an exact-size copy, so a read past the frame is an ASan report */
	frame = malloc(size - 1 ? size - 1 : 1);
	if (frame == NULL)
		abort();
	memcpy(frame, data + 1, size - 1);
	if ((data[0] & 0x80) && size - 1 >= ROCE_L2L4_LEN) {
		struct net_ip_hdr *ip = (struct net_ip_hdr *)(frame + sizeof(struct net_eth_hdr));

		ip->csum = be16_set(0);
		ip->csum = be16_set(inet_csum_fold(inet_csum_add(0, ip, sizeof(*ip))));
		if (size - 1 >= ROCE_MIN_FRAME)
			roce_icrc_put(frame + size - 1 - ROCE_ICRC_LEN,
				      roce_icrc(frame + sizeof(struct net_eth_hdr),
						size - 1 - sizeof(struct net_eth_hdr) - ROCE_ICRC_LEN));
	}
	err = roce_parse(frame, size - 1, mtu, &pkt);
	if (err == ROCE_OK)
		check_accepted(frame, size - 1, mtu, &pkt);
	/*
	 * The same frame in two exact-size pieces, as a super-frame's datagram is
	 * handled: the same verdict, and the views at the same places.
	 */
	if (size - 1 >= ROCE_L2L4_LEN) {
		size_t l4len = size - 1 - ROCE_L2L4_LEN;
		uint8_t *hdr = malloc(ROCE_L2L4_LEN), *l4 = malloc(l4len ? l4len : 1);
		struct roce_pkt sp;
		enum roce_err serr;

		if (hdr == NULL || l4 == NULL)
			abort();
		memcpy(hdr, frame, ROCE_L2L4_LEN);
		memcpy(l4, frame + ROCE_L2L4_LEN, l4len);
		serr = roce_parse_split(hdr, l4, l4len, mtu, &sp);
		if (serr != err)
			abort();
		if (err == ROCE_OK &&
		    (sp.op != pkt.op || sp.payload_len != pkt.payload_len || sp.icrc != pkt.icrc ||
		     (const uint8_t *)sp.ip != hdr + ((const uint8_t *)pkt.ip - frame) ||
		     sp.payload != l4 + (pkt.payload - frame - ROCE_L2L4_LEN) ||
		     (sp.reth != NULL) != (pkt.reth != NULL) || (sp.aeth != NULL) != (pkt.aeth != NULL)))
			abort();
		free(hdr);
		free(l4);
	}
	/* the ICRC routine alone, over whatever length it is given */
	if (size > 1)
		(void)roce_icrc(frame, size - 1);
	free(frame);
	return 0;
}
