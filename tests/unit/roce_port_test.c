/*
 * roce-port-unit: two RoCEv2 nodes of src/fabric/roce_port.c, A
 * (192.168.200.11) and B (192.168.200.12), attached as endpoints to a real
 * segment switch (src/net/net_switch.c) with one recording wire port beside
 * them (what the guest or the TAP would get). The nodes resolve each other
 * with ARP and run an RC QP pair through the switch: SEND, WRITE with
 * immediate, READ and atomics, byte-exact. Each node's send path has a test
 * hook that checks every RoCE frame with roce_parse() and can drop chosen
 * ones (loss the requester recovers from); the wire port checks what it
 * gets too. Frames injected from the wire port check the drop causes.
 * Time is simulated: 1 us per busy turn, a jump to the next deadline when
 * both nodes are idle.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fabric/roce_port.h"
#include "net/net_arp.h"
#include "net/net_switch.h"
#include "roce_fake.h"
#include "util/inet_csum.h"

#define IP_A 0xc0a8c80bu        /* 192.168.200.11 */
#define IP_B 0xc0a8c80cu        /* 192.168.200.12 */
#define IP_X 0xc0a8c863u        /* 192.168.200.99: not a node */
#define QPN_A 0x000011
#define QPN_B 0x000022
#define MTU 1024
#define PKEY 0xffff
#define RKEY 0x4242
#define MR_VA 0x7000000000ull
#define MR_LEN 65536
#define TIMEOUT 10              /* 4.096 us * 1024 = 4195 us */
#define NWR 32
#define LBUF 8192
#define RQ_MAX 32
#define RQ_BUF 8192
#define NCOMP 64

static const uint8_t MAC_A[6] = { 0x02, 0x00, 0x00, 0xc8, 0x00, 0x0b };
static const uint8_t MAC_B[6] = { 0x02, 0x00, 0x00, 0xc8, 0x00, 0x0c };
static const uint8_t MAC_W[6] = { 0x02, 0x00, 0x00, 0xc8, 0x00, 0x01 };  /* the guest behind the wire port */
static const uint8_t MAC_X[6] = { 0x02, 0x00, 0x00, 0xc8, 0x00, 0x63 };  /* nobody */

struct comp {
	uint64_t wr_id;
	enum roce_rc_req_wc status;
	uint32_t byte_len;
	uint64_t orig;
};

/* What one node's owner holds: memory, receives and local buffers, and what completed. */
struct node {
	struct roce_port *port;
	uint32_t ip, qpn, peer_qpn;
	uint8_t mr[MR_LEN];
	struct roce_fake_mem mem;        /* the one region RKEY at MR_VA over mr */
	unsigned posted, taken;
	uint8_t rq_buf[RQ_MAX][RQ_BUF];
	struct roce_rc_recv_cqe rcqe[RQ_MAX];
	unsigned nrcqe;
	uint8_t lbuf[NWR][LBUF];
	unsigned peeks;         /* l_peek's calls: every other one answers, the rest leave the copy to l_read */
	struct comp comp[NCOMP];
	unsigned ncomp;
	/* the send-path hook */
	unsigned tx_frames, tx_roce, tx_arp, tx_cnp;
	bool drop_arp;                  /* drop every ARP frame the node sends */
	unsigned drop_mask;             /* drop its RoCE frames number i (from 0) with bit i set */
	bool (*drop_op)(const struct roce_pkt *p);      /* and RoCE frames this picks, once each */
	unsigned drop_op_left;
	unsigned dropped;
	/* ECN: frames seen ECN-capable, not, and (ce_mark) marked CE on their way as a congested switch would */
	unsigned tx_ect, tx_not_ect;
	bool ce_mark;
	/* 802.1Q: frames sent tagged, and the last tag's TCI */
	unsigned tx_tagged;
	uint16_t last_tci;
	/*
	 * Probes of its READs' reader (ICMP echo requests, roce_echo.h): each checked and kept, with
	 * the READ response frames it sent before it; held ones go no further (the test answers them).
	 */
	unsigned tx_read_resp;
	unsigned nprobe;
	uint8_t probe[64][64];
	unsigned probe_mark[64];
	bool hold_probes;
	/* merge: its SEND packets are kept in merged[] instead of sent (to enter again as one super-frame) */
	bool merge;
	unsigned nmerged;
	uint8_t merged[8][ROCE_PORT_FRAME_MAX];
	size_t merged_len[8];
};

struct world {
	struct net_switch *sw;
	int wire;
	struct node n[2];               /* [0]: A, [1]: B */
	uint64_t now;
	unsigned clock_reads;           /* the nodes' readings of the world's clock */
	unsigned (*shuttle)(void);      /* moves what is between switches each turn (test_pieces_link) */
	/* the wire port's record */
	unsigned w_frames, w_bcast, w_arp_req, w_arp_reply, w_roce;
	uint8_t w_last[128];
	size_t w_last_len;
};

static struct world *W;

static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
#define A (&W->n[0])
#define B (&W->n[1])

static bool is_roce(const uint8_t *f, size_t len)
{
	const struct net_eth_hdr *eh = (const struct net_eth_hdr *)f;
	const struct net_ip_hdr *ih = (const struct net_ip_hdr *)(f + sizeof(*eh));
	const struct net_udp_hdr *uh = (const struct net_udp_hdr *)(f + NET_ETH_IP_HLEN);

	return len >= ROCE_L2L4_LEN && be16_get(eh->type) == NET_ETHERTYPE_IPV4 && ih->proto == NET_IP_PROTO_UDP &&
	       be16_get(uh->dport) == ROCE_UDP_DPORT;
}

static bool is_arp(const uint8_t *f, size_t len)
{
	return len >= sizeof(struct net_eth_hdr) && be16_get(((const struct net_eth_hdr *)f)->type) == NET_ETHERTYPE_ARP;
}

static bool is_icmp(const uint8_t *f, size_t len)
{
	const struct net_ip_hdr *ih = (const struct net_ip_hdr *)(f + sizeof(struct net_eth_hdr));

	return len >= NET_ETH_IP_HLEN && be16_get(((const struct net_eth_hdr *)f)->type) == NET_ETHERTYPE_IPV4 &&
	       ih->proto == NET_IP_PROTO_ICMP;
}

/*
 * A node's probe, as its peer's host would see it: an ICMP echo request (RFC 792) from the node's
 * MAC and address to the peer's, checksums right, with data for the answer to echo. Kept.
 */
static void check_probe(struct node *n, const uint8_t *f, size_t len)
{
	const struct net_eth_hdr *eh = (const struct net_eth_hdr *)f;
	const struct net_ip_hdr *ih = (const struct net_ip_hdr *)(eh + 1);
	const struct net_icmp_echo *ic = (const struct net_icmp_echo *)(ih + 1);
	size_t tot = be16_get(ih->tot_len);

	assert_memory_equal(eh->src, n == A ? MAC_A : MAC_B, 6);
	assert_memory_equal(eh->dst, n == A ? MAC_B : MAC_A, 6);
	assert_int_equal(ih->ver_ihl, 0x45);
	assert_true(tot >= sizeof(*ih) + sizeof(*ic) + 8 && sizeof(*eh) + tot <= len && len <= 64);
	assert_int_equal(inet_csum_fold(inet_csum_add(0, ih, sizeof(*ih))), 0);
	assert_int_equal(be32_get(ih->src), n->ip);
	assert_int_equal(be32_get(ih->dst), n == A ? IP_B : IP_A);
	assert_int_equal(ic->type, NET_ICMP_ECHO_REQUEST);
	assert_int_equal(ic->code, 0);
	assert_int_equal(inet_csum_fold(inet_csum_add(0, ic, tot - sizeof(*ih))), 0);
	assert_int_equal(be16_get(ic->seq), n->nprobe); /* numbered from 0, one by one */
	assert_true(n->nprobe < 64);
	memset(n->probe[n->nprobe], 0, sizeof(n->probe[0]));
	memcpy(n->probe[n->nprobe], f, len);
	n->probe_mark[n->nprobe++] = n->tx_read_resp;
}

/*
 * What the peer's host answers to node n's probe i (RFC 792: the addresses swapped, type 0, the
 * rest echoed), from the wire port; id_xor changes its identifier (a ping of the guest's own),
 * bad_csum spoils its checksum.
 */
static void answer_probe(struct node *n, unsigned i, uint16_t id_xor, bool bad_csum)
{
	uint8_t f[64];
	struct net_eth_hdr *eh = (struct net_eth_hdr *)f;
	struct net_ip_hdr *ih = (struct net_ip_hdr *)(eh + 1);
	struct net_icmp_echo *ic = (struct net_icmp_echo *)(ih + 1);
	size_t tot;
	be32 a;

	assert_true(i < n->nprobe);
	memcpy(f, n->probe[i], sizeof(f));
	tot = be16_get(ih->tot_len);
	memcpy(eh->dst, n == A ? MAC_A : MAC_B, 6);
	memcpy(eh->src, MAC_W, 6);
	a = ih->src;
	ih->src = ih->dst;
	ih->dst = a;
	ih->csum = be16_set(0);
	ih->csum = be16_set(inet_csum_fold(inet_csum_add(0, ih, sizeof(*ih))));
	ic->type = NET_ICMP_ECHO_REPLY;
	ic->id = be16_set(be16_get(ic->id) ^ id_xor);
	ic->csum = be16_set(0);
	ic->csum = be16_set((uint16_t)(inet_csum_fold(inet_csum_add(0, ic, tot - sizeof(*ih))) ^ (bad_csum ? 1 : 0)));
	net_switch_input(W->sw, W->wire, f, sizeof(*eh) + tot < 60 ? 60 : sizeof(*eh) + tot);
}

/* ---- the wire port ---- */

static void wire_deliver(void *ctx, const uint8_t *f, size_t len)
{
	struct net_arp_info a;

	(void)ctx;
	W->w_frames++;
	W->w_last_len = len < sizeof(W->w_last) ? len : sizeof(W->w_last);
	memcpy(W->w_last, f, W->w_last_len);
	if (f[0] & 1)
		W->w_bcast++;
	if (is_arp(f, len)) {
		assert_int_equal(net_arp_parse(f + sizeof(struct net_eth_hdr), len - sizeof(struct net_eth_hdr), &a), 0);
		if (a.oper == NET_ARP_OP_REQUEST)
			W->w_arp_req++;
		else
			W->w_arp_reply++;
	}
	if (is_roce(f, len)) {
		struct roce_pkt p;

		W->w_roce++;
		assert_int_equal(roce_parse(f, len, MTU, &p), ROCE_OK);
	}
}

/* ---- the nodes' send-path hook: check, count, maybe drop ---- */

static bool tx_hook(void *ctx, const uint8_t *cf, size_t len)
{
	struct node *n = ctx;
	uint8_t *f = (uint8_t *)cf; /* the node's own transmit buffer: the hook may mark it */
	uint8_t plain[ROCE_PORT_FRAME_MAX];
	struct roce_pkt p;
	unsigned idx;

	n->tx_frames++;
	if (len >= 18 && f[12] == 0x81 && f[13] == 0x00) {
		/* tagged: the tag noted, the rest checked as an untagged frame */
		n->tx_tagged++;
		n->last_tci = (uint16_t)(f[14] << 8 | f[15]);
		assert_true(len - 4 <= sizeof(plain));
		memcpy(plain, f, 12);
		memcpy(plain + 12, f + 16, len - 16);
		f = plain;
		len -= 4;
	}
	if (is_arp(f, len)) {
		n->tx_arp++;
		if (n->drop_arp) {
			n->dropped++;
			return true;
		}
		return false;
	}
	if (is_icmp(f, len)) {
		check_probe(n, f, len);
		return n->hold_probes;
	}
	assert_true(is_roce(f, len));
	assert_int_equal(roce_parse(f, len, MTU, &p), ROCE_OK);
	n->tx_read_resp += p.bth->opcode >= ROCE_RC_RDMA_READ_RESPONSE_FIRST &&
			   p.bth->opcode <= ROCE_RC_RDMA_READ_RESPONSE_ONLY;
	/* addressing: the node's own MAC and IPv4, the peer's as destination, the QP's source port */
	assert_memory_equal(p.eth->src, n == A ? MAC_A : MAC_B, 6);
	assert_memory_equal(p.eth->dst, n == A ? MAC_B : MAC_A, 6);
	assert_int_equal(be32_get(p.ip->src), n->ip);
	assert_int_equal(be16_get(p.udp->sport), roce_port_sport(n->qpn, n->peer_qpn));
	assert_int_equal(roce_bth_dqpn(p.bth), n->peer_qpn);
	if (p.bth->opcode == ROCE_CNP) {
		/* annex A17.9.3: BECN set, PSN 0, to the sending QP; not itself ECN-capable */
		assert_true(roce_bth_becn(p.bth));
		assert_int_equal(roce_bth_psn(p.bth), 0);
		assert_int_equal(p.ip->tos & ROCE_ECN_MASK, 0);
		n->tx_cnp++;
	} else if ((p.ip->tos & ROCE_ECN_MASK) == ROCE_ECN_ECT0) {
		n->tx_ect++;
		if (n->ce_mark) {
			/* a congested switch: CE, the IPv4 checksum made right again (the ICRC leaves TOS out) */
			struct net_ip_hdr *ip = (struct net_ip_hdr *)(f + sizeof(struct net_eth_hdr));

			ip->tos |= ROCE_ECN_CE;
			ip->csum = be16_set(0);
			ip->csum = be16_set(inet_csum_fold(inet_csum_add(0, ip, sizeof(*ip))));
		}
	} else {
		n->tx_not_ect++;
	}
	if (n->merge && p.bth->opcode <= ROCE_RC_SEND_ONLY && n->nmerged < 8) {
		memcpy(n->merged[n->nmerged], f, len);
		n->merged_len[n->nmerged++] = len;
		return true;
	}
	idx = n->tx_roce++;
	if (idx < 32 && (n->drop_mask & (1u << idx)) != 0) {
		n->dropped++;
		return true;
	}
	if (n->drop_op != NULL && n->drop_op_left > 0 && n->drop_op(&p)) {
		n->drop_op_left--;
		n->dropped++;
		return true;
	}
	return false;
}

/* ---- the owners (ctx: the node) ---- */

static bool f_recv_take(void *ctx, uint64_t *h)
{
	struct node *n = ctx;

	if (n->taken == n->posted)
		return false;
	*h = n->taken++;
	return true;
}

static int f_recv_write(void *ctx, uint64_t h, uint32_t off, const void *data, uint32_t len)
{
	struct node *n = ctx;

	assert_true(h < n->taken);
	if (off > RQ_BUF || len > RQ_BUF - off)
		return -1;
	memcpy(n->rq_buf[h] + off, data, len);
	return 0;
}

static void f_recv_complete(void *ctx, uint64_t h, const struct roce_rc_recv_cqe *c)
{
	struct node *n = ctx;

	(void)h;
	assert_true(n->nrcqe < RQ_MAX);
	n->rcqe[n->nrcqe++] = *c;
}

static int f_mem_write(void *ctx, uint32_t rkey, uint64_t va, const void *data, uint32_t len)
{
	struct node *n = ctx;

	return roce_fake_mem_write(&n->mem, rkey, va, data, len);
}

static int f_mem_read(void *ctx, uint32_t rkey, uint64_t va, void *buf, uint32_t len)
{
	struct node *n = ctx;

	return roce_fake_mem_read(&n->mem, rkey, va, buf, len);
}

static int f_atomic(void *ctx, uint32_t rkey, uint64_t va, bool cmp_swap, uint64_t swap_add, uint64_t compare,
		    uint64_t *orig)
{
	struct node *n = ctx;

	return roce_fake_mem_atomic(&n->mem, rkey, va, cmp_swap, swap_add, compare, orig);
}

static int f_invalidate(void *ctx, uint32_t rkey)
{
	(void)ctx;
	(void)rkey;
	return 0;
}

static int l_read(void *ctx, uint64_t wr_id, uint32_t off, void *buf, uint32_t len)
{
	struct node *n = ctx;

	assert_true(wr_id < NWR);
	if (off > LBUF || len > LBUF - off)
		return -1;
	memcpy(buf, n->lbuf[wr_id] + off, len);
	return 0;
}

static int l_write(void *ctx, uint64_t wr_id, uint32_t off, const void *data, uint32_t len)
{
	struct node *n = ctx;

	assert_true(wr_id < NWR);
	if (off > LBUF || len > LBUF - off)
		return -1;
	memcpy(n->lbuf[wr_id] + off, data, len);
	return 0;
}

/*
 * Every other payload read where it lies: the node sends it in pieces, and (the tests' hook set on
 * every node) joins them before the hook sees the frame; the others are copied (l_read).
 */
static const void *l_peek(void *ctx, uint64_t wr_id, uint32_t off, uint32_t len)
{
	struct node *n = ctx;

	assert_true(wr_id < NWR);
	if (n->peeks++ % 2 || off > LBUF || len > LBUF - off)
		return NULL;
	return n->lbuf[wr_id] + off;
}

static void l_complete(void *ctx, uint64_t wr_id, enum roce_rc_req_wc status, uint32_t byte_len, uint64_t orig)
{
	struct node *n = ctx;

	assert_true(n->ncomp < NCOMP);
	n->comp[n->ncomp++] = (struct comp){ wr_id, status, byte_len, orig };
}

static const struct roce_rc_ops resp_ops = {
	.recv_take = f_recv_take, .recv_write = f_recv_write, .recv_complete = f_recv_complete,
	.mem_write = f_mem_write, .mem_read = f_mem_read, .atomic = f_atomic, .invalidate = f_invalidate,
};

static const struct roce_rc_req_ops req_ops = {
	.local_read = l_read, .local_peek = l_peek, .local_write = l_write, .complete = l_complete,
};

/* ---- running ---- */

static bool idle(void)
{
	for (int i = 0; i < 2; i++) {
		const struct roce_rc_req *q = roce_port_qp_requester(W->n[i].port, W->n[i].qpn);

		if (q != NULL && roce_rc_req_queued(q) != 0)
			return false;
	}
	return true;
}

/* Pump both nodes until the requesters have nothing queued (or tmax). */
static void run_until(uint64_t tmax)
{
	for (unsigned turns = 0; turns < 1000000; turns++) {
		unsigned done = roce_port_pump(A->port, 16, W->now) + roce_port_pump(B->port, 16, W->now);
		uint64_t d;

		if (W->shuttle != NULL)
			done += W->shuttle();

		if (done != 0) {
			W->now++;
			roce_port_tick(A->port, W->now);
			roce_port_tick(B->port, W->now);
			continue;
		}
		if (idle() || W->now >= tmax)
			return;
		d = roce_port_next_deadline(A->port);
		if (roce_port_next_deadline(B->port) < d)
			d = roce_port_next_deadline(B->port);
		assert_true(d != UINT64_MAX);       /* something is queued, so a timer runs */
		if (d > W->now)
			W->now = d;
		roce_port_tick(A->port, W->now);
		roce_port_tick(B->port, W->now);
	}
	fail_msg("no end");
}

static void run(void) { run_until(UINT64_MAX - 1); }

/* Pump until both nodes are quiet (for ARP, which no requester waits on). */
static void settle(void)
{
	for (unsigned i = 0; i < 100; i++)
		if (roce_port_pump(A->port, 16, W->now) + roce_port_pump(B->port, 16, W->now) +
			    (W->shuttle != NULL ? W->shuttle() : 0) == 0)
			return;
	fail_msg("no settle");
}

/* ---- setup ---- */

static struct roce_port_qp_cfg qp_cfg(struct node *n)
{
	struct roce_port_qp_cfg c = {
		.remote_ip = n == A ? IP_B : IP_A, .remote_qpn = n->peer_qpn, .sq_psn = n == A ? 100 : 7000,
		.rq_psn = n == A ? 7000 : 100, .pkey = PKEY, .pmtu = MTU, .timeout = TIMEOUT, .retry_cnt = 7,
		.rnr_retry = 7, .max_rd_atomic = 4, .min_rnr_timer = 1,
		.resp_ops = &resp_ops, .resp_ctx = n, .req_ops = &req_ops, .req_ctx = n,
	};

	return c;
}

/* The nodes' clock: the world's simulated time. */
static uint64_t world_clock(void)
{
	W->clock_reads++;
	return W->now;
}

/* The switch, the wire port and both nodes; QPs only when qps. */
static void setup(bool qps)
{
	struct net_port wp = { .name = "wire", .deliver = wire_deliver };
	struct roce_port_cfg ca = { .name = "A", .ip = IP_A, .clock_us = world_clock },
			     cb = { .name = "B", .ip = IP_B, .clock_us = world_clock };

	memset(W, 0, sizeof(*W));
	W->sw = net_switch_new();
	assert_non_null(W->sw);
	W->wire = net_switch_attach(W->sw, &wp);
	memcpy(ca.mac, MAC_A, 6);
	memcpy(cb.mac, MAC_B, 6);
	A->port = roce_port_new(&ca, W->sw);
	B->port = roce_port_new(&cb, W->sw);
	assert_non_null(A->port);
	assert_non_null(B->port);
	A->ip = IP_A, A->qpn = QPN_A, A->peer_qpn = QPN_B;
	B->ip = IP_B, B->qpn = QPN_B, B->peer_qpn = QPN_A;
	for (int i = 0; i < 2; i++) {
		for (unsigned k = 0; k < MR_LEN; k++)
			W->n[i].mr[k] = (uint8_t)(k * 31 + 7 + i);
		assert_non_null(roce_fake_mem_attach(&W->n[i].mem, RKEY, MR_VA, W->n[i].mr, MR_LEN, ROCE_FAKE_ALL));
		roce_port_set_tx_hook(W->n[i].port, tx_hook, &W->n[i]);
	}
	if (qps) {
		struct roce_port_qp_cfg c = qp_cfg(A);

		assert_int_equal(roce_port_qp_create(A->port, QPN_A, &c, W->now), 0);
		c = qp_cfg(B);
		assert_int_equal(roce_port_qp_create(B->port, QPN_B, &c, W->now), 0);
		settle();
	}
}

static void teardown_world(void)
{
	roce_port_free(A->port);
	roce_port_free(B->port);
	net_switch_free(W->sw);
}

static void fill(struct node *n, uint64_t wr_id, uint32_t len, unsigned seed)
{
	for (uint32_t i = 0; i < len; i++)
		n->lbuf[wr_id][i] = (uint8_t)(i * 7 + seed * 13 + 1);
}

static int post(struct node *n, uint64_t wr_id, enum roce_rc_req_op op, uint32_t len, uint64_t mr_off)
{
	struct roce_rc_req_wr wr = {
		.wr_id = wr_id, .op = op, .signaled = true, .len = len, .va = MR_VA + mr_off, .rkey = RKEY,
		.imm = 0xabc00000u + (uint32_t)wr_id,
	};

	return roce_port_qp_post(n->port, n->qpn, &wr);
}

static void expect_comp(struct node *n, unsigned i, uint64_t wr_id, enum roce_rc_req_wc status, uint32_t byte_len)
{
	assert_true(i < n->ncomp);
	assert_int_equal(n->comp[i].wr_id, wr_id);
	assert_string_equal(roce_rc_req_wc_name(n->comp[i].status), roce_rc_req_wc_name(status));
	assert_int_equal(n->comp[i].byte_len, byte_len);
}

static uint64_t drops(struct node *n, enum roce_port_drop d)
{
	return roce_port_stats(n->port)->drops[d];
}

/* ---- tests ---- */

/* Creating the QPs resolves both neighbours; the requests flood the wire, the replies stay inside. */
static void test_arp(void **state)
{
	uint8_t mac[6];

	(void)state;
	setup(false);
	assert_false(roce_port_neigh_lookup(A->port, IP_B, mac));
	roce_port_arp_request(A->port, IP_B, 0);
	settle();
	assert_true(roce_port_neigh_lookup(A->port, IP_B, mac));
	assert_memory_equal(mac, MAC_B, 6);
	/* B learned A from the request that named it */
	assert_true(roce_port_neigh_lookup(B->port, IP_A, mac));
	assert_memory_equal(mac, MAC_A, 6);
	assert_int_equal(roce_port_stats(A->port)->arp_requests, 1);
	assert_int_equal(roce_port_stats(B->port)->arp_replies, 1);
	assert_int_equal(W->w_arp_req, 1);
	assert_int_equal(W->w_arp_reply, 0);
	assert_int_equal(W->w_frames, 1);
	/* an ARP request for an address nobody has: flooded, nobody learns or answers */
	roce_port_arp_request(A->port, IP_X, 0);
	settle();
	assert_int_equal(W->w_arp_req, 2);
	assert_false(roce_port_neigh_lookup(A->port, IP_X, mac));
	assert_int_equal(roce_port_stats(B->port)->arp_replies, 1);

	/* the guest asks for B: the reply goes back out of the wire port, unicast */
	{
		uint8_t f[64];
		size_t len = net_arp_build(f, sizeof(f), NET_ARP_OP_REQUEST, MAC_W, IP_X, NULL, IP_B);
		struct net_arp_info a;

		net_switch_input(W->sw, W->wire, f, len);
		settle();
		assert_int_equal(W->w_arp_reply, 1);
		assert_memory_equal(W->w_last, MAC_W, 6);
		assert_int_equal(net_arp_parse(W->w_last + 14, W->w_last_len - 14, &a), 0);
		assert_int_equal(a.spa, IP_B);
		assert_memory_equal(a.sha, MAC_B, 6);
		assert_true(roce_port_neigh_lookup(B->port, IP_X, mac));
		assert_memory_equal(mac, MAC_W, 6);
	}
	teardown_world();
}

/* A multi-packet SEND from A to B, and one back; nothing of it reaches the wire. */
static void test_send(void **state)
{
	uint32_t len = 3 * MTU + 500;
	unsigned w_before;

	(void)state;
	setup(true);
	w_before = W->w_frames;
	assert_int_equal(W->w_arp_req, 2);      /* one ARP request from each node, flooded */
	assert_int_equal(W->w_arp_reply, 0);
	B->posted = 2;
	A->posted = 1;
	fill(A, 1, len, 1);
	fill(B, 2, 700, 2);
	assert_int_equal(post(A, 1, ROCE_RC_REQ_SEND, len, 0), 0);
	assert_int_equal(post(A, 3, ROCE_RC_REQ_SEND_IMM, 0, 0), 0);
	assert_int_equal(post(B, 2, ROCE_RC_REQ_SEND, 700, 0), 0);
	run();
	assert_int_equal(A->ncomp, 2);
	expect_comp(A, 0, 1, ROCE_RC_REQ_WC_SUCCESS, len);
	expect_comp(A, 1, 3, ROCE_RC_REQ_WC_SUCCESS, 0);
	assert_int_equal(B->nrcqe, 2);
	assert_int_equal(B->rcqe[0].status, ROCE_RC_WC_SUCCESS);
	assert_int_equal(B->rcqe[0].byte_len, len);
	assert_memory_equal(B->rq_buf[0], A->lbuf[1], len);
	assert_true(B->rcqe[1].has_imm);
	assert_int_equal(B->rcqe[1].imm, 0xabc00003u);
	expect_comp(B, 0, 2, ROCE_RC_REQ_WC_SUCCESS, 700);
	assert_int_equal(A->nrcqe, 1);
	assert_memory_equal(A->rq_buf[0], B->lbuf[2], 700);
	/* 4 + 1 packets from A, 1 from B, plus the ACKs; none went out to the wire */
	assert_true(A->tx_roce >= 5);
	assert_int_equal(W->w_frames, w_before);
	assert_int_equal(W->w_roce, 0);
	assert_int_equal(roce_port_stats(B->port)->to_responder, 5);
	assert_int_equal(roce_port_stats(A->port)->to_responder, 1);
	for (int i = 0; i < 2; i++)
		for (int d = 0; d < ROCE_PORT_DROP_NUM; d++)
			assert_int_equal(drops(&W->n[i], (enum roce_port_drop)d), 0);
	teardown_world();
}

/* WRITE with immediate (multi-packet) and a READ across several responses. */
static void test_write_read(void **state)
{
	uint32_t wlen = 2 * MTU + 100, rlen = 2 * MTU + 300;

	(void)state;
	setup(true);
	B->posted = 1;
	fill(A, 1, wlen, 5);
	assert_int_equal(post(A, 1, ROCE_RC_REQ_WRITE_IMM, wlen, 4096), 0);
	assert_int_equal(post(A, 2, ROCE_RC_REQ_READ, rlen, 20000), 0);
	run();
	assert_int_equal(A->ncomp, 2);
	expect_comp(A, 0, 1, ROCE_RC_REQ_WC_SUCCESS, wlen);
	expect_comp(A, 1, 2, ROCE_RC_REQ_WC_SUCCESS, rlen);
	assert_memory_equal(B->mr + 4096, A->lbuf[1], wlen);
	assert_memory_equal(A->lbuf[2], B->mr + 20000, rlen);
	assert_int_equal(B->nrcqe, 1);
	assert_true(B->rcqe[0].has_imm);
	assert_int_equal(B->rcqe[0].imm, 0xabc00001u);
	assert_int_equal(B->rcqe[0].byte_len, wlen);
	/* the READ came back as FIRST, MIDDLE, LAST */
	assert_int_equal(roce_port_stats(A->port)->to_requester, 1 + 3);
	assert_int_equal(W->w_roce, 0);
	teardown_world();
}

static void test_atomics(void **state)
{
	uint64_t v = 1000, got;

	(void)state;
	setup(true);
	memcpy(B->mr + 64, &v, 8);
	{
		struct roce_rc_req_wr cs = { .wr_id = 1, .op = ROCE_RC_REQ_CMP_SWAP, .signaled = true,
					     .va = MR_VA + 64, .rkey = RKEY, .swap_add = 77, .compare = 1000 };
		struct roce_rc_req_wr fa = { .wr_id = 2, .op = ROCE_RC_REQ_FETCH_ADD, .signaled = true,
					     .va = MR_VA + 64, .rkey = RKEY, .swap_add = 5 };
		struct roce_rc_req_wr cs2 = cs;

		cs2.wr_id = 3;  /* compares 1000 with 82: no swap */
		assert_int_equal(roce_port_qp_post(A->port, QPN_A, &cs), 0);
		assert_int_equal(roce_port_qp_post(A->port, QPN_A, &fa), 0);
		assert_int_equal(roce_port_qp_post(A->port, QPN_A, &cs2), 0);
	}
	run();
	assert_int_equal(A->ncomp, 3);
	expect_comp(A, 0, 1, ROCE_RC_REQ_WC_SUCCESS, 8);
	expect_comp(A, 1, 2, ROCE_RC_REQ_WC_SUCCESS, 8);
	expect_comp(A, 2, 3, ROCE_RC_REQ_WC_SUCCESS, 8);
	assert_int_equal(A->comp[0].orig, 1000);
	assert_int_equal(A->comp[1].orig, 77);
	assert_int_equal(A->comp[2].orig, 82);
	memcpy(&got, B->mr + 64, 8);
	assert_int_equal(got, 82);
	teardown_world();
}

static bool is_ack(const struct roce_pkt *p) { return p->bth->opcode == ROCE_RC_ACKNOWLEDGE; }
static bool is_read_mid(const struct roce_pkt *p) { return p->bth->opcode == ROCE_RC_RDMA_READ_RESPONSE_MIDDLE; }

/* Frames lost in A's and B's send paths: go-back-N and the ACK timeout recover, data exact. */
static void test_lossy(void **state)
{
	uint32_t len = 5 * MTU, rlen = 3 * MTU;
	const struct roce_rc_req *q;

	(void)state;
	setup(true);
	B->posted = 2;
	fill(A, 1, len, 3);
	fill(A, 2, len, 4);
	A->drop_mask = (1u << 1) | (1u << 6) | (1u << 9);       /* a SEND middle, the second SEND, ... */
	B->drop_op = is_ack;
	B->drop_op_left = 1;                                     /* the first ACK */
	assert_int_equal(post(A, 1, ROCE_RC_REQ_SEND, len, 0), 0);
	assert_int_equal(post(A, 2, ROCE_RC_REQ_SEND, len, 0), 0);
	assert_int_equal(post(A, 3, ROCE_RC_REQ_READ, rlen, 8192), 0);
	assert_int_equal(post(A, 4, ROCE_RC_REQ_WRITE, len, 30000), 0);
	run();
	assert_int_equal(A->ncomp, 4);
	expect_comp(A, 0, 1, ROCE_RC_REQ_WC_SUCCESS, len);
	expect_comp(A, 1, 2, ROCE_RC_REQ_WC_SUCCESS, len);
	expect_comp(A, 2, 3, ROCE_RC_REQ_WC_SUCCESS, rlen);
	expect_comp(A, 3, 4, ROCE_RC_REQ_WC_SUCCESS, len);
	assert_int_equal(B->nrcqe, 2);
	assert_memory_equal(B->rq_buf[0], A->lbuf[1], len);
	assert_memory_equal(B->rq_buf[1], A->lbuf[2], len);
	assert_memory_equal(A->lbuf[3], B->mr + 8192, rlen);
	assert_memory_equal(B->mr + 30000, A->lbuf[4], len);
	assert_int_equal(A->dropped, 3);
	assert_int_equal(B->dropped, 1);
	q = roce_port_qp_requester(A->port, QPN_A);
	assert_true(q->retransmits > 0);
	assert_true(q->stats[ROCE_RC_REQ_IN_SEQ_NAK] + q->timeouts > 0);
	assert_int_equal(drops(A, ROCE_PORT_DROP_TX_HOOK), 3);
	assert_int_equal(drops(B, ROCE_PORT_DROP_TX_HOOK), 1);
	teardown_world();
}

/* A lost READ response in the middle: re-requested for its remainder through the switch. */
static void test_lossy_read(void **state)
{
	uint32_t rlen = 4 * MTU;

	(void)state;
	setup(true);
	B->drop_op = is_read_mid;
	B->drop_op_left = 1;
	assert_int_equal(post(A, 1, ROCE_RC_REQ_READ, rlen, 1000), 0);
	run();
	assert_int_equal(A->ncomp, 1);
	expect_comp(A, 0, 1, ROCE_RC_REQ_WC_SUCCESS, rlen);
	assert_memory_equal(A->lbuf[1], B->mr + 1000, rlen);
	assert_int_equal(B->dropped, 1);
	assert_true(roce_port_qp_requester(A->port, QPN_A)->stats[ROCE_RC_REQ_IN_IMPLIED_NAK] +
		    roce_port_qp_requester(A->port, QPN_A)->timeouts > 0);
	teardown_world();
}

/*
 * A READ asked for again after its responses went is a late signal (roce_rate.h): the responder's
 * rate is cut to a quarter and the flow is late; the rate is remembered for the peer, so a new QP
 * toward the same address starts there, late, while one toward another address starts afresh.
 */
static void test_late_peer(void **state)
{
	uint32_t rlen = 4 * MTU;
	const struct roce_rate *rb;
	struct roce_port_qp_cfg c;
	uint64_t learned;

	(void)state;
	setup(true);
	B->drop_op = is_read_mid;
	B->drop_op_left = 1;
	assert_int_equal(post(A, 1, ROCE_RC_REQ_READ, rlen, 1000), 0);
	run();
	expect_comp(A, 0, 1, ROCE_RC_REQ_WC_SUCCESS, rlen);
	assert_memory_equal(A->lbuf[1], B->mr + 1000, rlen);
	rb = roce_port_qp_rate(B->port, QPN_B);
	assert_true(roce_port_qp_responder(B->port, QPN_B)->read_again > 0);
	assert_true(rb->late);
	assert_int_equal(roce_port_stats(B->port)->late_cuts, 1);
	assert_true(rb->rate <= ROCE_RATE_START / 4);
	/* ... and the pace of its READ responses starts over, a quarter lower (roce_reader.h). */
	assert_int_equal(roce_port_qp_reader(B->port, QPN_B)->restarts, 1);
	learned = rb->rate;
	/* A's requester saw no late signal: its rate is not late. */
	assert_false(roce_port_qp_rate(A->port, QPN_A)->late);

	/* Both QPs go; B's new one toward A's address starts at what it learned. */
	assert_int_equal(roce_port_qp_destroy(A->port, QPN_A), 0);
	c = qp_cfg(A);
	assert_int_equal(roce_port_qp_create(A->port, QPN_A, &c, W->now), 0);
	assert_int_equal(roce_port_qp_destroy(B->port, QPN_B), 0);
	c = qp_cfg(B);
	assert_int_equal(roce_port_qp_create(B->port, QPN_B, &c, W->now), 0);
	rb = roce_port_qp_rate(B->port, QPN_B);
	assert_true(rb->late);
	assert_int_equal(rb->rate, learned);
	assert_int_equal(roce_port_stats(B->port)->late_starts, 1);
	/* ... and it works: the READ again, no loss this time. */
	assert_int_equal(post(A, 2, ROCE_RC_REQ_READ, rlen, 2000), 0);
	run();
	expect_comp(A, 1, 2, ROCE_RC_REQ_WC_SUCCESS, rlen);
	assert_memory_equal(A->lbuf[2], B->mr + 2000, rlen);

	/* Toward another address: a fresh start. */
	assert_int_equal(roce_port_qp_destroy(B->port, QPN_B), 0);
	c = qp_cfg(B);
	c.remote_ip = IP_A + 100;
	assert_int_equal(roce_port_qp_create(B->port, QPN_B, &c, W->now), 0);
	rb = roce_port_qp_rate(B->port, QPN_B);
	assert_false(rb->late);
	assert_int_equal(rb->rate, ROCE_RATE_START);
	assert_int_equal(roce_port_stats(B->port)->late_starts, 1);
	teardown_world();
}

/*
 * READ responses leave at the pace of their reader (roce_reader.h): 32 READs of 8 KiB, 256 KiB,
 * twice the window, are held for it (counted) and take at least the time the pace (which rises
 * with each request that comes while responses leave) gives the bytes past the window, byte for
 * byte; a new QP toward the same address starts at the pace the old one
 * ended with.
 */
static void test_reader_pace(void **state)
{
	const struct roce_reader *rd;
	struct roce_port_qp_cfg c;
	uint64_t t0, pace, bytes = 0;

	(void)state;
	setup(true);
	for (unsigned i = 0; i < NWR; i++)
		assert_int_equal(post(A, i, ROCE_RC_REQ_READ, LBUF, (i * 1500) % (MR_LEN - LBUF)), 0);
	t0 = W->now;
	run();
	assert_int_equal(A->ncomp, NWR);
	for (unsigned i = 0; i < NWR; i++) {
		expect_comp(A, i, i, ROCE_RC_REQ_WC_SUCCESS, LBUF);
		assert_memory_equal(A->lbuf[i], B->mr + (i * 1500) % (MR_LEN - LBUF), LBUF);
		bytes += LBUF;
	}
	rd = roce_port_qp_reader(B->port, QPN_B);
	assert_non_null(rd);
	assert_true(roce_port_stats(B->port)->reader_held > 0);
	assert_int_equal(roce_port_stats(A->port)->reader_held, 0); /* A answered no READ */
	/* The pace only rose (each request came while responses were leaving): at most the last one's. */
	assert_true(rd->rises > 0);
	assert_int_equal(rd->falls, 0);
	assert_true((W->now - t0) * rd->rate * 11 / 10 >= (bytes - rd->window) * 1000000u);
	pace = rd->settled;
	assert_int_equal(roce_port_stats(B->port)->reader_starts, 0);
	/* B's QP goes and comes back: the pace is where it was. */
	assert_int_equal(roce_port_qp_destroy(B->port, QPN_B), 0);
	c = qp_cfg(B);
	assert_int_equal(roce_port_qp_create(B->port, QPN_B, &c, W->now), 0);
	assert_int_equal(roce_port_qp_reader(B->port, QPN_B)->rate, pace);
	assert_int_equal(roce_port_stats(B->port)->reader_starts, 1);
	assert_null(roce_port_qp_reader(B->port, 12345));
	teardown_world();
}

/* NWR READs of LBUF by A from B, all completed and their bytes checked; the offsets move with round. */
static void read_round(unsigned round)
{
	A->ncomp = 0;
	for (unsigned i = 0; i < NWR; i++)
		assert_int_equal(post(A, i, ROCE_RC_REQ_READ, LBUF, ((i + round) * 1500) % (MR_LEN - LBUF)), 0);
	run();
	assert_int_equal(A->ncomp, NWR);
	for (unsigned i = 0; i < NWR; i++) {
		expect_comp(A, i, i, ROCE_RC_REQ_WC_SUCCESS, LBUF);
		assert_memory_equal(A->lbuf[i], B->mr + ((i + round) * 1500) % (MR_LEN - LBUF), LBUF);
	}
}

/*
 * B answers A's READs and probes A's host (roce_echo.h), whose answers the test gives when it
 * chooses: unanswered, B goes by its model of the reader; once A's host answers, at most
 * ROCE_ECHO_WINDOW responses leave past the last frame answered for, and an answer lets the rest
 * go. Answers that match nothing, spoiled ones and a ping of the guest's own are told apart.
 */
static void test_echo_clock(void **state)
{
	const struct roce_port_stats *sb;
	unsigned frames = NWR * (LBUF / MTU), unwanted, probes;

	(void)state;
	setup(true);
	sb = roce_port_stats(B->port);
	B->hold_probes = true;
	read_round(0);
	/* a probe every 64 responses, none answered: the model of the reader paced them */
	assert_int_equal(B->tx_read_resp, frames);
	assert_int_equal(B->nprobe, frames / ROCE_ECHO_EVERY);
	for (unsigned i = 0; i < B->nprobe; i++)
		assert_int_equal(B->probe_mark[i], (i + 1) * ROCE_ECHO_EVERY);
	assert_int_equal(sb->echo_probes, B->nprobe);
	assert_int_equal(sb->echo_answers, 0);
	assert_true(sb->reader_held > 0);
	assert_int_equal(A->nprobe, 0); /* A answered no READ */
	/* A's host answers the last probe: every response so far has left its queue */
	answer_probe(B, B->nprobe - 1, 0, false);
	settle();
	assert_int_equal(sb->echo_answers, 1);
	/* the first probe's answer comes late: it matches nothing now */
	answer_probe(B, 0, 0, false);
	settle();
	assert_int_equal(sb->echo_strays, 1);
	/* a spoiled one is dropped and counted; a ping of the guest's own (another identifier) is not ours */
	answer_probe(B, 1, 0, true);
	settle();
	assert_int_equal(drops(B, ROCE_PORT_DROP_ECHO_BAD), 1);
	unwanted = net_switch_stats(W->sw)->dropped_unwanted;
	answer_probe(B, 1, 0x0101, false);
	settle();
	assert_int_equal(net_switch_stats(W->sw)->dropped_unwanted, unwanted + 1);
	assert_int_equal(sb->echo_strays, 1);
	assert_int_equal(drops(B, ROCE_PORT_DROP_ECHO_BAD), 1);
	/* two rounds fill the window exactly (2 x 256 = ROCE_ECHO_WINDOW): they go through */
	read_round(1);
	read_round(2);
	assert_int_equal(B->tx_read_resp, frames + ROCE_ECHO_WINDOW);
	assert_int_equal(sb->echo_held, 0);
	/* one READ more: held, for less than A's retry timer */
	A->ncomp = 0;
	assert_int_equal(post(A, 0, ROCE_RC_REQ_READ, LBUF, 0), 0);
	run_until(W->now + 1000);
	assert_int_equal(A->ncomp, 0);
	assert_int_equal(B->tx_read_resp, frames + ROCE_ECHO_WINDOW);
	assert_int_equal(sb->echo_held, 1);
	/* the answer for everything sent: the READ's responses go */
	assert_int_equal(B->probe_mark[B->nprobe - 1], frames + ROCE_ECHO_WINDOW);
	answer_probe(B, B->nprobe - 1, 0, false);
	run();
	assert_int_equal(A->ncomp, 1);
	expect_comp(A, 0, 0, ROCE_RC_REQ_WC_SUCCESS, LBUF);
	assert_memory_equal(A->lbuf[0], B->mr, LBUF);
	assert_int_equal(B->tx_read_resp, frames + ROCE_ECHO_WINDOW + LBUF / MTU);
	/*
	 * A's host falls silent: B holds at the window; A's retry timer runs out before B's wait
	 * for an answer (4 ms here, against 5 ms at least) and it asks for its READ again, which
	 * starts B's window over (not halved: nothing was lost). Every READ completes.
	 */
	read_round(3);
	read_round(4);
	read_round(5);
	assert_true(sb->echo_held > 1);
	assert_true(sb->echo_restarts > 0);
	assert_int_equal(roce_port_qp_responder(B->port, QPN_B)->read_again, 0);
	assert_int_equal(sb->echo_answers, 2);
	assert_int_equal(sb->echo_mutes, 0);
	/*
	 * A sends CNPs (B's frames marked CE on the way): a peer that tells of its queue itself is
	 * not probed any more, and its READs still complete.
	 */
	B->ce_mark = true;
	read_round(6);
	B->ce_mark = false;
	assert_true(sb->cnp_received > 0);
	assert_int_equal(sb->echo_off, 1);
	probes = B->nprobe;
	read_round(7);
	read_round(8);
	assert_int_equal(B->nprobe, probes);
	teardown_world();
}

/* The neighbour unresolved when the SEND goes out: dropped, ARP asked, the retransmission gets through. */
static void test_unresolved(void **state)
{
	struct roce_port_qp_cfg c;
	uint8_t mac[6];
	uint32_t len = 2 * MTU;

	(void)state;
	setup(false);
	A->drop_arp = B->drop_arp = true;       /* the ARP requests of QP creation are lost */
	c = qp_cfg(A);
	assert_int_equal(roce_port_qp_create(A->port, QPN_A, &c, W->now), 0);
	c = qp_cfg(B);
	assert_int_equal(roce_port_qp_create(B->port, QPN_B, &c, W->now), 0);
	settle();
	assert_false(roce_port_neigh_lookup(A->port, IP_B, mac));
	assert_int_equal(A->dropped + B->dropped, 2);
	A->drop_arp = B->drop_arp = false;
	B->posted = 1;
	fill(A, 1, len, 9);
	assert_int_equal(post(A, 1, ROCE_RC_REQ_SEND, len, 0), 0);
	run();
	assert_int_equal(A->ncomp, 1);
	expect_comp(A, 0, 1, ROCE_RC_REQ_WC_SUCCESS, len);
	assert_memory_equal(B->rq_buf[0], A->lbuf[1], len);
	assert_true(drops(A, ROCE_PORT_DROP_TX_UNRESOLVED) >= 2);      /* both packets, at least once */
	assert_true(roce_port_stats(A->port)->arp_requests >= 2);
	assert_true(roce_port_neigh_lookup(A->port, IP_B, mac));
	assert_memory_equal(mac, MAC_B, 6);
	assert_true(roce_port_qp_requester(A->port, QPN_A)->timeouts > 0);
	teardown_world();
}

/* A frame from the guest side, as A would send it to B (an ACK, harmless to the QP's state). */
static size_t guest_frame(uint8_t *buf, size_t cap, const uint8_t *dmac, uint32_t sip, uint32_t dip, uint32_t dqpn,
			  uint8_t opcode)
{
	struct roce_frame_desc d = {
		.src_ip = sip, .dst_ip = dip, .ttl = 64, .sport = 0xc123, .opcode = opcode, .pkey = PKEY,
		.dqpn = dqpn, .psn = 5, .aeth = { .syndrome = roce_syn_ack(31), .msn = 1 },
		.deth = { .qkey = 0x1234, .sqp = 7 },
	};
	size_t len = 0;

	memcpy(d.dst_mac, dmac, 6);
	memcpy(d.src_mac, MAC_W, 6);
	assert_int_equal(roce_build(&d, buf, cap, &len), ROCE_OK);
	return len;
}

static void test_drops(void **state)
{
	uint8_t f[256];
	size_t len;
	struct roce_pkt p;
	const struct roce_port_stats *sb;
	uint64_t in_a, in_b, unwanted;

	(void)state;
	setup(true);
	sb = roce_port_stats(B->port);
	/* bad ICRC, to B's QP */
	len = guest_frame(f, sizeof(f), MAC_B, IP_A, IP_B, QPN_B, ROCE_RC_ACKNOWLEDGE);
	f[len - 1] ^= 0x40;
	assert_int_equal(roce_parse(f, len, MTU, &p), ROCE_ERR_ICRC);
	net_switch_input(W->sw, W->wire, f, len);
	settle();
	assert_int_equal(drops(B, ROCE_PORT_DROP_PARSE), 1);
	assert_int_equal(sb->parse_err[ROCE_ERR_ICRC], 1);
	/* a valid packet to a QPN B does not have */
	len = guest_frame(f, sizeof(f), MAC_B, IP_A, IP_B, 0x999, ROCE_RC_ACKNOWLEDGE);
	net_switch_input(W->sw, W->wire, f, len);
	/* from an address that is not the QP's remote */
	len = guest_frame(f, sizeof(f), MAC_B, IP_X, IP_B, QPN_B, ROCE_RC_ACKNOWLEDGE);
	net_switch_input(W->sw, W->wire, f, len);
	/* to B's MAC but another IPv4 address */
	len = guest_frame(f, sizeof(f), MAC_B, IP_A, IP_X, QPN_B, ROCE_RC_ACKNOWLEDGE);
	net_switch_input(W->sw, W->wire, f, len);
	/* UD */
	len = guest_frame(f, sizeof(f), MAC_B, IP_A, IP_B, QPN_B, ROCE_UD_SEND_ONLY);
	net_switch_input(W->sw, W->wire, f, len);
	/* truncated below a BTH: a parse error */
	len = guest_frame(f, sizeof(f), MAC_B, IP_A, IP_B, QPN_B, ROCE_RC_ACKNOWLEDGE);
	net_switch_input(W->sw, W->wire, f, ROCE_L2L4_LEN + 4);
	settle();
	assert_int_equal(drops(B, ROCE_PORT_DROP_UNKNOWN_QP), 1);
	assert_int_equal(drops(B, ROCE_PORT_DROP_IP_SRC), 1);
	assert_int_equal(drops(B, ROCE_PORT_DROP_IP_DST), 1);
	assert_int_equal(drops(B, ROCE_PORT_DROP_UD), 1);
	assert_int_equal(drops(B, ROCE_PORT_DROP_PARSE), 2);
	assert_int_equal(sb->to_requester + sb->to_responder, 0);
	assert_int_equal(roce_port_qp_requester(B->port, QPN_B)->stats[ROCE_RC_REQ_IN_STALE], 0);

	/* a third party's RoCE (to a MAC that is neither node's): no node takes it */
	in_a = roce_port_stats(A->port)->frames_in;
	in_b = sb->frames_in;
	len = guest_frame(f, sizeof(f), MAC_X, IP_A, IP_B, QPN_B, ROCE_RC_ACKNOWLEDGE);
	net_switch_input(W->sw, W->wire, f, len);
	/* nor UDP to another port, sent to B's MAC: the switch drops it, nobody floods it */
	unwanted = net_switch_stats(W->sw)->dropped_unwanted;
	len = guest_frame(f, sizeof(f), MAC_B, IP_A, IP_B, QPN_B, ROCE_RC_ACKNOWLEDGE);
	f[ROCE_L2L4_LEN - 6] = 0x13;    /* UDP destination port 0x13b7, not 4791 (0x12b7) */
	net_switch_input(W->sw, W->wire, f, len);
	settle();
	assert_int_equal(roce_port_stats(A->port)->frames_in, in_a);
	assert_int_equal(sb->frames_in, in_b);
	assert_int_equal(net_switch_stats(W->sw)->dropped_unwanted, unwanted + 1);
	assert_int_equal(sb->to_requester + sb->to_responder, 0);

	/* and the QP still works */
	B->posted = 1;
	fill(A, 1, 100, 1);
	assert_int_equal(post(A, 1, ROCE_RC_REQ_SEND, 100, 0), 0);
	run();
	expect_comp(A, 0, 1, ROCE_RC_REQ_WC_SUCCESS, 100);
	teardown_world();
}

/* A request from A's address to B's QP (B expects PSN 100 from A): WRITE ONLY of len bytes at MR_VA + off. */
static size_t write_frame(uint8_t *buf, size_t cap, uint32_t psn, uint32_t rkey, uint64_t off, const void *pl,
			  uint32_t len)
{
	struct roce_frame_desc d = {
		.src_ip = IP_A, .dst_ip = IP_B, .ttl = 64, .sport = 0xc123, .opcode = ROCE_RC_RDMA_WRITE_ONLY,
		.ackreq = true, .pkey = PKEY, .dqpn = QPN_B, .psn = psn & ROCE_PSN_MASK,
		.reth = { .va = MR_VA + off, .rkey = rkey, .len = len }, .payload = pl, .payload_len = len,
		.pad = (uint8_t)((4 - len % 4) % 4),
	};
	size_t n = 0;

	memcpy(d.dst_mac, MAC_B, 6);
	memcpy(d.src_mac, MAC_A, 6);
	assert_int_equal(roce_build(&d, buf, cap, &n), ROCE_OK);
	return n;
}

/* Cut a frame to len bytes and make IPv4/UDP lengths, the IPv4 checksum and the ICRC agree with the cut. */
static void refit(uint8_t *f, size_t len)
{
	struct net_ip_hdr *ip = (struct net_ip_hdr *)(f + sizeof(struct net_eth_hdr));
	struct net_udp_hdr *udp = (struct net_udp_hdr *)(ip + 1);

	ip->tot_len = be16_set((uint16_t)(len - sizeof(struct net_eth_hdr)));
	ip->csum = be16_set(0);
	ip->csum = be16_set(inet_csum_fold(inet_csum_add(0, ip, sizeof(*ip))));
	udp->len = be16_set((uint16_t)(len - sizeof(struct net_eth_hdr) - sizeof(*ip)));
	roce_icrc_put(f + len - ROCE_ICRC_LEN,
		      roce_icrc(f + sizeof(struct net_eth_hdr), len - sizeof(struct net_eth_hdr) - ROCE_ICRC_LEN));
}

/*
 * Hostile frames at the port, to a live QP (docs/roce.md, "Hostile input"):
 * each is dropped and counted under its cause, or NAKed by the responder,
 * and none reaches B's memory, moves its ePSN or takes a receive. A payload
 * beyond the QP's path MTU; FIRST not full; longer than the node takes;
 * every truncation of a WRITE (plain, then with lengths and ICRC fixed so
 * that only a header is short); a PSN far ahead and one behind; an unknown
 * R_Key (the fatal NAK). The QP's ePSN is checked after each.
 */
static void test_hostile(void **state)
{
	static uint8_t pl[MTU + 64], f[ROCE_PORT_FRAME_MAX + 64], mr0[MR_LEN];
	const struct roce_port_stats *sb;
	const struct roce_rc_resp *rb;
	struct roce_pkt p;
	uint64_t parse0, in0;
	size_t len, full;

	(void)state;
	setup(true);
	sb = roce_port_stats(B->port);
	rb = roce_port_qp_responder(B->port, QPN_B);
	memcpy(mr0, B->mr, MR_LEN);
	for (size_t i = 0; i < sizeof(pl); i++)
		pl[i] = (uint8_t)(i ^ 0xa5);
	assert_int_equal(rb->epsn, 100);

	/* oversized: a WRITE ONLY of MTU + 4 bytes; then MTU + 1 .. 3 (with pad) */
	len = write_frame(f, sizeof(f), 100, RKEY, 0, pl, MTU + 4);
	net_switch_input(W->sw, W->wire, f, len);
	len = write_frame(f, sizeof(f), 100, RKEY, 0, pl, MTU + 1);
	net_switch_input(W->sw, W->wire, f, len);
	settle();
	assert_int_equal(sb->parse_err[ROCE_ERR_PAYLOAD_MTU], 2);
	assert_int_equal(drops(B, ROCE_PORT_DROP_PARSE), 2);
	/* a WRITE FIRST whose payload is short of the path MTU */
	{
		struct roce_frame_desc d = {
			.src_ip = IP_A, .dst_ip = IP_B, .ttl = 64, .sport = 0xc123, .opcode = ROCE_RC_RDMA_WRITE_FIRST,
			.pkey = PKEY, .dqpn = QPN_B, .psn = 100, .reth = { .va = MR_VA, .rkey = RKEY, .len = 2 * MTU },
			.payload = pl, .payload_len = MTU - 4,
		};

		memcpy(d.dst_mac, MAC_B, 6);
		memcpy(d.src_mac, MAC_A, 6);
		assert_int_equal(roce_build(&d, f, sizeof(f), &len), ROCE_OK);
		net_switch_input(W->sw, W->wire, f, len);
		settle();
		assert_int_equal(sb->parse_err[ROCE_ERR_PAYLOAD_NOT_FULL], 1);
	}
	/* longer than any frame a node takes: dropped before it is queued */
	len = write_frame(f, sizeof(f), 100, RKEY, 0, pl, 64);
	memset(f + len, 0, sizeof(f) - len);
	net_switch_input(W->sw, W->wire, f, ROCE_PORT_FRAME_MAX + 1);
	settle();
	assert_int_equal(drops(B, ROCE_PORT_DROP_RX_LONG), 1);
	assert_int_equal(sb->to_responder, 0);

	/* truncated: every prefix of a WRITE ONLY of 16 bytes; what B takes is a parse drop, nothing else */
	full = write_frame(f, sizeof(f), 100, RKEY, 0, pl, 16);
	parse0 = drops(B, ROCE_PORT_DROP_PARSE);
	in0 = sb->frames_in;
	for (size_t cut = 0; cut < full; cut++)
		net_switch_input(W->sw, W->wire, f, cut);
	settle();
	assert_true(sb->frames_in - in0 > 0);
	assert_int_equal(drops(B, ROCE_PORT_DROP_PARSE) - parse0, sb->frames_in - in0);
	/* ... and with the lengths and ICRC made to agree: the RETH cut short (or the BTH) is a header error */
	for (size_t cut = ROCE_L2L4_LEN + ROCE_ICRC_LEN; cut < ROCE_MIN_FRAME + 16; cut += 4) {
		enum roce_err want = cut < ROCE_MIN_FRAME ? ROCE_ERR_BTH_SHORT : ROCE_ERR_HDR_SHORT;

		full = write_frame(f, sizeof(f), 100, RKEY, 0, pl, 16);
		refit(f, cut);
		assert_int_equal(roce_parse(f, cut, MTU, &p), want);
		net_switch_input(W->sw, W->wire, f, cut);
	}
	settle();
	assert_true(sb->parse_err[ROCE_ERR_HDR_SHORT] >= 4);
	assert_true(sb->parse_err[ROCE_ERR_BTH_SHORT] >= 3);
	assert_int_equal(sb->to_responder, 0);
	assert_int_equal(rb->epsn, 100);
	assert_memory_equal(B->mr, mr0, MR_LEN);

	/* out of window: far ahead (a sequence NAK, nothing executed), behind (a duplicate, not executed again) */
	len = write_frame(f, sizeof(f), 100 + 0x10000, RKEY, 0, pl, 16);
	net_switch_input(W->sw, W->wire, f, len);
	len = write_frame(f, sizeof(f), 100 - 0x10000, RKEY, 0, pl, 16);
	net_switch_input(W->sw, W->wire, f, len);
	settle();
	assert_int_equal(sb->to_responder, 2);
	assert_int_equal(rb->epsn, 100);
	assert_false(rb->error);
	assert_memory_equal(B->mr, mr0, MR_LEN);

	/* a bad R_Key at ePSN, and a range past the region's end: the first is NAKed and the QP errs */
	len = write_frame(f, sizeof(f), 100, RKEY + 1, 0, pl, 16);
	net_switch_input(W->sw, W->wire, f, len);
	len = write_frame(f, sizeof(f), 100, RKEY, MR_LEN - 8, pl, 16);
	net_switch_input(W->sw, W->wire, f, len);
	settle();
	assert_true(rb->error);
	assert_int_equal(rb->epsn, 100);
	assert_int_equal(B->taken, 0);
	assert_memory_equal(B->mr, mr0, MR_LEN);
	teardown_world();
}

/* The receive ring is bounded: frames beyond it are dropped and counted, then the rest is handled. */
static void test_rx_full(void **state)
{
	uint8_t f[256];
	size_t len;

	(void)state;
	setup(true);
	len = guest_frame(f, sizeof(f), MAC_B, IP_A, IP_B, 0x999, ROCE_RC_ACKNOWLEDGE);
	for (unsigned i = 0; i < ROCE_PORT_RXQ + 3; i++)
		net_switch_input(W->sw, W->wire, f, len);
	assert_int_equal(drops(B, ROCE_PORT_DROP_RX_FULL), 3);
	settle();
	assert_int_equal(drops(B, ROCE_PORT_DROP_UNKNOWN_QP), ROCE_PORT_RXQ);
	teardown_world();
}

/*
 * A SEND of len bytes from A (pattern seed), its four packets kept instead of
 * sent, and packets from .. 3 merged into super as a TAP merges them: one
 * header, then each datagram's UDP payload (identifications count up by one);
 * *off describes it. Returns the super-frame's length.
 */
static size_t merged_send(uint8_t *super, struct net_offload *off, uint32_t len, unsigned seed, unsigned from)
{
	size_t at = ROCE_L2L4_LEN;

	B->posted = 1;
	fill(A, 1, len, seed);
	A->merge = true;
	assert_int_equal(post(A, 1, ROCE_RC_REQ_SEND, len, 0), 0);
	for (unsigned i = 0; i < 100 && A->nmerged < 4; i++)
		roce_port_pump(A->port, 16, W->now);
	A->merge = false;
	assert_int_equal(A->nmerged, 4);
	memcpy(super, A->merged[from], ROCE_L2L4_LEN);
	for (unsigned i = from; i < 4; i++) {
		assert_int_equal(get16(A->merged[i] + 18), (uint16_t)(get16(A->merged[0] + 18) + i));
		memcpy(super + at, A->merged[i] + ROCE_L2L4_LEN, A->merged_len[i] - ROCE_L2L4_LEN);
		at += A->merged_len[i] - ROCE_L2L4_LEN;
	}
	*off = (struct net_offload){ .gso_udp = true, .hdr_len = ROCE_L2L4_LEN,
				     .gso_size = (uint16_t)(A->merged_len[from] - ROCE_L2L4_LEN), .pkt_len = (uint32_t)at };
	put16(super + 16, (uint16_t)(at - 14));
	put16(super + 38, (uint16_t)(at - 34));
	return at;
}

/*
 * A UDP super-frame from the wire (what another server's TAP merged): a SEND's
 * four packets from A, kept by the hook, enter B as one frame with UDP
 * segmentation, B takes it whole (super_in) and, its ring empty, handles
 * each datagram as it is cut (rx_in_place), and the SEND completes byte for
 * byte. The same super-frame cut at the wrong size first: every
 * datagram is refused by the parser, nothing is received; a datagram longer
 * than the node's frames is dropped as such.
 */
static void test_udp_super_in(void **state)
{
	static uint8_t super[NET_MAX_FRAME];
	uint32_t len = 3 * MTU + 500;
	struct net_offload off;
	size_t at, wrong;
	unsigned reads;

	(void)state;
	setup(true);
	at = merged_send(super, &off, len, 3, 0);
	/* Cut at the wrong size: datagrams that are no valid packet. */
	off.gso_size -= 4;
	net_switch_input_offload(W->sw, W->wire, super, at, &off);
	/* handled as cut (the ring was empty), before any pump */
	wrong = (at - ROCE_L2L4_LEN + off.gso_size - 1) / off.gso_size;
	assert_int_equal(drops(B, ROCE_PORT_DROP_PARSE), wrong);
	assert_int_equal(roce_port_stats(B->port)->rx_in_place, wrong);
	settle();
	assert_int_equal(roce_port_stats(B->port)->super_in, 1);
	assert_int_equal(B->nrcqe, 0);
	off.gso_size += 4;
	reads = W->clock_reads;
	net_switch_input_offload(W->sw, W->wire, super, at, &off);
	assert_int_equal(roce_port_stats(B->port)->rx_in_place, wrong + 4);
	/* four datagrams handled where they lie, one reading of the clock: they came together */
	assert_int_equal(W->clock_reads, reads + 1);
	run();
	assert_int_equal(roce_port_stats(B->port)->super_in, 2);
	assert_int_equal(B->nrcqe, 1);
	assert_int_equal(B->rcqe[0].status, ROCE_RC_WC_SUCCESS);
	assert_int_equal(B->rcqe[0].byte_len, len);
	assert_memory_equal(B->rq_buf[0], A->lbuf[1], len);
	assert_int_equal(A->ncomp, 1);
	expect_comp(A, 0, 1, ROCE_RC_REQ_WC_SUCCESS, len);
	assert_int_equal(net_switch_stats(W->sw)->udp_whole, 2);
	/* One datagram longer than any frame the node takes: cut, then dropped as too long. */
	memset(super + ROCE_L2L4_LEN, 0x5a, ROCE_PORT_FRAME_MAX);
	off.gso_size = (uint16_t)ROCE_PORT_FRAME_MAX;
	off.pkt_len = ROCE_L2L4_LEN + ROCE_PORT_FRAME_MAX;
	net_switch_input_offload(W->sw, W->wire, super, off.pkt_len, &off);
	assert_int_equal(drops(B, ROCE_PORT_DROP_RX_LONG), 1);
	assert_int_equal(roce_port_stats(B->port)->super_in, 3);
	teardown_world();
}

/*
 * A SEND's first packet entered alone and not yet pumped (in B's ring), then
 * its other three as one super-frame: B handles what waits in its ring first,
 * then the three datagrams where they lie, in order, so the receive completes
 * within that one delivery (out of order, the MIDDLE packets would have been
 * NAKed as a sequence error and nothing would have completed), byte for byte.
 */
static void test_udp_super_behind_ring(void **state)
{
	static uint8_t super[NET_MAX_FRAME];
	uint32_t len = 3 * MTU + 500;
	struct net_offload off;
	size_t at;
	uint64_t in0, place0;

	(void)state;
	setup(true);
	at = merged_send(super, &off, len, 5, 1); /* the second, third and fourth packets merged */
	in0 = roce_port_stats(B->port)->frames_in;
	place0 = roce_port_stats(B->port)->rx_in_place;
	net_switch_input(W->sw, W->wire, A->merged[0], A->merged_len[0]);
	assert_int_equal(roce_port_stats(B->port)->frames_in, in0 + 1);
	assert_int_equal(B->nrcqe, 0);
	net_switch_input_offload(W->sw, W->wire, super, at, &off);
	assert_int_equal(roce_port_stats(B->port)->super_in, 1);
	assert_int_equal(roce_port_stats(B->port)->frames_in, in0 + 4);
	assert_int_equal(roce_port_stats(B->port)->rx_in_place, place0 + 3);
	assert_int_equal(B->nrcqe, 1);
	assert_int_equal(B->rcqe[0].status, ROCE_RC_WC_SUCCESS);
	assert_int_equal(B->rcqe[0].byte_len, len);
	assert_memory_equal(B->rq_buf[0], A->lbuf[1], len);
	run();
	assert_int_equal(B->nrcqe, 1);
	expect_comp(A, 0, 1, ROCE_RC_REQ_WC_SUCCESS, len);
	assert_int_equal(roce_port_qp_responder(B->port, QPN_B)->stats[ROCE_RC_IN_SEQ_NAK], 0);
	assert_int_equal(roce_port_qp_responder(B->port, QPN_B)->stats[ROCE_RC_IN_EXECUTED], 4);
	teardown_world();
}

/* B's resp_fatal: the owner lets the QP go from inside the call, as the device does. */
static int fatal_destroy_rc;
static bool fatal_busy;

static void fatal_destroy(void *ctx)
{
	struct node *n = ctx;

	fatal_busy = roce_port_busy(n->port);
	fatal_destroy_rc = roce_port_qp_destroy(n->port, n->qpn);
}

/*
 * A WRITE with a bad R_Key in a super-frame, handled where it lies: the
 * responder NAKs it and the QP goes to error; the owner, told so from inside
 * that handling, finds the node busy and its destroy refused (-EBUSY: the
 * node still holds the QP), and destroys it once the handling is over.
 */
static void test_udp_super_fatal(void **state)
{
	static uint8_t f[ROCE_PORT_FRAME_MAX], pl[16];
	struct net_offload off = { .gso_udp = true, .hdr_len = ROCE_L2L4_LEN };
	struct roce_port_qp_cfg c;
	size_t len;

	(void)state;
	setup(true);
	assert_int_equal(roce_port_qp_destroy(B->port, QPN_B), 0);
	c = qp_cfg(B);
	c.resp_fatal = fatal_destroy;
	assert_int_equal(roce_port_qp_create(B->port, QPN_B, &c, W->now), 0);
	fatal_destroy_rc = 1;
	len = write_frame(f, sizeof(f), 100, RKEY + 1, 0, pl, sizeof(pl));
	off.gso_size = (uint16_t)(len - ROCE_L2L4_LEN);
	off.pkt_len = (uint32_t)len;
	assert_false(roce_port_busy(B->port));
	net_switch_input_offload(W->sw, W->wire, f, len, &off);
	assert_int_equal(roce_port_stats(B->port)->rx_in_place, 1);
	assert_true(fatal_busy);
	assert_int_equal(fatal_destroy_rc, -EBUSY);
	assert_false(roce_port_busy(B->port));
	assert_true(roce_port_qp_responder(B->port, QPN_B)->error);
	assert_int_equal(roce_port_qp_destroy(B->port, QPN_B), 0);
	for (unsigned k = 0; k < MR_LEN; k++)
		assert_int_equal(B->mr[k], (uint8_t)(k * 31 + 7 + 1)); /* the bad key wrote nothing */
	teardown_world();
}

/* ---- a guest node: A stands for the guest behind the wire port (MAC_A, IP_A) ---- */

static unsigned tap_frames;

static void tap_deliver(void *ctx, const uint8_t *f, size_t len)
{
	(void)ctx, (void)f, (void)len;
	tap_frames++;
}

/*
 * The guest's own RoCE function: node A is a guest node with the guest's MAC
 * (the guest's Ethernet is the wire port) and no address of its own. It
 * answers no ARP and sends none, takes only RoCEv2 sent to the guest's MAC
 * (so such frames never reach the guest's port) and leaves everything else
 * to the guest, whose MAC the switch keeps on the guest's port although the
 * node sends with it. B is an ordinary node told A's MAC (no ARP either).
 */
static void test_guest_node(void **state)
{
	struct net_port tp = { .name = "tap", .deliver = tap_deliver };
	struct roce_port_cfg ca = { .name = "guest", .guest = true }, cb = { .name = "B", .ip = IP_B };
	struct roce_port_qp_cfg c;
	uint8_t f[256];
	size_t len;
	unsigned w0;
	int tap;

	(void)state;
	setup(false);
	roce_port_free(A->port);
	memcpy(ca.mac, MAC_A, 6);
	A->port = roce_port_new(&ca, W->sw);
	assert_non_null(A->port);
	roce_port_set_tx_hook(A->port, tx_hook, A);
	tap = net_switch_attach(W->sw, &tp);
	assert_true(tap >= 0);
	tap_frames = 0;
	/* a guest node without an address is fine; an ordinary one is not */
	cb.ip = 0;
	memcpy(cb.mac, MAC_X, 6);
	assert_null(roce_port_new(&cb, W->sw));

	/* The guest asks for B from its own port: B's reply goes to the guest, not to the node. */
	len = net_arp_build(f, sizeof(f), NET_ARP_OP_REQUEST, MAC_A, IP_A, NULL, IP_B);
	net_switch_input(W->sw, W->wire, f, len);
	settle();
	assert_int_equal(W->w_arp_reply, 1);
	assert_memory_equal(W->w_last, MAC_A, 6);
	assert_int_equal(roce_port_stats(A->port)->frames_in, 0);
	/* B asks for the guest's address: flooded to the guest's port, the node does not answer. */
	roce_port_arp_request(B->port, IP_A, W->now);
	settle();
	assert_int_equal(W->w_arp_req, 1);
	assert_int_equal(roce_port_stats(A->port)->frames_in, 0);
	assert_int_equal(roce_port_stats(A->port)->arp_replies, 0);

	/* QPs: the guest node needs the remote MAC and a local address; then neither side sends ARP. */
	c = qp_cfg(A);
	assert_int_equal(roce_port_qp_create(A->port, QPN_A, &c, W->now), -EINVAL); /* no local address */
	c.local_ip = IP_A;
	assert_int_equal(roce_port_qp_create(A->port, QPN_A, &c, W->now), -EINVAL); /* no remote MAC */
	memcpy(c.remote_mac, MAC_B, 6);
	assert_int_equal(roce_port_qp_create(A->port, QPN_A, &c, W->now), 0);
	c = qp_cfg(B);
	memcpy(c.remote_mac, MAC_A, 6);
	assert_int_equal(roce_port_qp_create(B->port, QPN_B, &c, W->now), 0);
	settle();
	assert_int_equal(roce_port_stats(A->port)->arp_requests, 0);
	assert_int_equal(roce_port_stats(B->port)->arp_requests, 1); /* only the one asked for above */

	/* A SEND each way and a READ of the guest's memory, byte for byte; no RoCE on the guest's port. */
	w0 = W->w_frames;
	A->posted = 1;
	B->posted = 1;
	fill(A, 1, 2 * MTU + 10, 3);
	fill(B, 2, 300, 4);
	assert_int_equal(post(A, 1, ROCE_RC_REQ_SEND, 2 * MTU + 10, 0), 0);
	assert_int_equal(post(B, 2, ROCE_RC_REQ_SEND, 300, 0), 0);
	assert_int_equal(post(B, 3, ROCE_RC_REQ_READ, MTU + 1, 64), 0);
	run();
	expect_comp(A, 0, 1, ROCE_RC_REQ_WC_SUCCESS, 2 * MTU + 10);
	expect_comp(B, 0, 2, ROCE_RC_REQ_WC_SUCCESS, 300);
	expect_comp(B, 1, 3, ROCE_RC_REQ_WC_SUCCESS, MTU + 1);
	assert_memory_equal(B->rq_buf[0], A->lbuf[1], 2 * MTU + 10);
	assert_memory_equal(A->rq_buf[0], B->lbuf[2], 300);
	assert_memory_equal(B->lbuf[3], A->mr + 64, MTU + 1);
	assert_int_equal(W->w_frames, w0);
	assert_int_equal(W->w_roce, 0);
	assert_true(A->tx_roce >= 3);
	assert_int_equal(A->tx_arp, 0);

	/* From the TAP side: RoCEv2 to the guest's MAC is the node's (here for no QP it has), ... */
	len = guest_frame(f, sizeof(f), MAC_A, IP_B, IP_A, 0x999, ROCE_RC_ACKNOWLEDGE);
	net_switch_input(W->sw, tap, f, len);
	settle();
	assert_int_equal(drops(A, ROCE_PORT_DROP_UNKNOWN_QP), 1);
	assert_int_equal(W->w_frames, w0);
	/* ... other UDP to the guest's MAC is the guest's: the switch still has its MAC on its port. */
	f[ROCE_L2L4_LEN - 6] = 0x13;    /* UDP destination port 0x13b7, not 4791 */
	net_switch_input(W->sw, tap, f, len);
	settle();
	assert_int_equal(W->w_frames, w0 + 1);
	/* everything the node took: the frame for no QP, and the ones it handed on */
	assert_int_equal(roce_port_stats(A->port)->frames_in,
			 1 + roce_port_stats(A->port)->to_requester + roce_port_stats(A->port)->to_responder);
	/* and an ARP frame to the guest's MAC is the guest's too */
	len = net_arp_build(f, sizeof(f), NET_ARP_OP_REPLY, MAC_W, IP_X, MAC_A, IP_A);
	net_switch_input(W->sw, tap, f, len);
	settle();
	assert_int_equal(W->w_frames, w0 + 2);
	assert_int_equal(W->w_arp_reply, 2);
	assert_int_equal(net_switch_stats(W->sw)->dropped_unwanted, 0);
	assert_int_equal(tap_frames, 2); /* the tap saw the two ARP floods, never a RoCE frame */
	net_switch_detach(W->sw, tap);
	teardown_world();
}

/* UD datagrams: sent at once to the given MAC; a node with a handler gets them as parsed, one without drops them. */
static struct {
	unsigned n;
	uint32_t sqp, dqpn, qkey, imm, len;
	bool has_imm, se, vlan;
	uint16_t tci;
	uint8_t payload[64];
} ud_got;

/* Takes every datagram, or (ctx non-NULL) refuses every one, as the device does one it has no QP for. */
static bool ud_handler(void *ctx, const struct roce_pkt *p)
{
	assert_non_null(p->deth);
	ud_got.n++;
	ud_got.sqp = be32_get(p->deth->sqp) & ROCE_QPN_MASK;
	ud_got.qkey = be32_get(p->deth->qkey);
	ud_got.dqpn = roce_bth_dqpn(p->bth);
	ud_got.has_imm = p->imm != NULL;
	ud_got.imm = p->imm ? be32_get(p->imm->imm) : 0;
	ud_got.se = roce_bth_se(p->bth);
	ud_got.len = p->payload_len;
	ud_got.vlan = p->vlan;
	ud_got.tci = p->vlan_tci;
	memcpy(ud_got.payload, p->payload, p->payload_len < 64 ? p->payload_len : 64);
	return ctx == NULL;
}

/* Both nodes up, nothing received yet; d a UD datagram from A's QP to B's with immediate, msg its payload. */
static void ud_setup(struct roce_port_ud *d, uint8_t *msg, size_t len)
{
	*d = (struct roce_port_ud){ .src_ip = IP_A, .dst_ip = IP_B, .src_qpn = QPN_A, .dst_qpn = QPN_B, .qkey = 0x1234,
				    .has_imm = true, .imm = 0xfeedbeef, .solicited = true };
	setup(false);
	memset(&ud_got, 0, sizeof(ud_got));
	memcpy(d->src_mac, MAC_A, 6);
	memcpy(d->dst_mac, MAC_B, 6);
	for (size_t i = 0; i < len; i++)
		msg[i] = (uint8_t)(i * 3 + 1);
}

static void test_ud(void **state)
{
	struct roce_port_ud d;
	uint8_t msg[61];

	(void)state;
	ud_setup(&d, msg, sizeof(msg));
	/* B without a handler drops it as UD */
	assert_int_equal(roce_port_ud_send(A->port, &d, msg, sizeof(msg)), 0);
	settle();
	assert_int_equal(drops(B, ROCE_PORT_DROP_UD), 1);
	roce_port_set_ud_handler(B->port, ud_handler, NULL);
	assert_int_equal(roce_port_ud_send(A->port, &d, msg, sizeof(msg)), 0);
	d.has_imm = false;
	d.solicited = false;
	assert_int_equal(roce_port_ud_send(A->port, &d, msg, 4), 0);
	settle();
	assert_int_equal(ud_got.n, 2);
	assert_int_equal(ud_got.sqp, QPN_A);
	assert_int_equal(ud_got.dqpn, QPN_B);
	assert_int_equal(ud_got.qkey, 0x1234);
	assert_false(ud_got.has_imm);
	assert_false(ud_got.se);
	assert_int_equal(ud_got.len, 4);
	assert_false(ud_got.vlan);
	assert_int_equal(roce_port_stats(B->port)->ud_in, 2);
	assert_int_equal(roce_port_stats(A->port)->ud_out, 3);
	assert_int_equal(A->tx_arp, 0); /* no ARP: the MAC was given */
	assert_int_equal(W->w_roce, 0);
	assert_int_equal(drops(B, ROCE_PORT_DROP_UD_REFUSED), 0);
	/* a datagram the handler refuses (no such QP, a wrong Q_Key) is counted as dropped */
	roce_port_set_ud_handler(B->port, ud_handler, B);
	assert_int_equal(roce_port_ud_send(A->port, &d, msg, 4), 0);
	settle();
	assert_int_equal(ud_got.n, 3);
	assert_int_equal(roce_port_stats(B->port)->ud_in, 3);
	assert_int_equal(drops(B, ROCE_PORT_DROP_UD_REFUSED), 1);
	roce_port_set_ud_handler(B->port, ud_handler, NULL);
	/* 802.1Q: sent tagged, handed over with the tag it came with */
	d.vlan = true;
	d.tci = 2u << 13 | 300;
	assert_int_equal(roce_port_ud_send(A->port, &d, msg, 4), 0);
	settle();
	assert_int_equal(ud_got.n, 4);
	assert_true(ud_got.vlan);
	assert_int_equal(ud_got.tci, 2u << 13 | 300);
	assert_int_equal(A->last_tci, 2u << 13 | 300);
	assert_memory_equal(ud_got.payload, msg, 4);
	d.vlan = false;
	/* refusals */
	assert_int_equal(roce_port_ud_send(A->port, &d, msg, 4097), -EINVAL);
	d.dst_qpn = 1u << 24;
	assert_int_equal(roce_port_ud_send(A->port, &d, msg, 4), -EINVAL);
	d.dst_qpn = QPN_B;
	d.dst_mac[0] = 0x01;
	assert_int_equal(roce_port_ud_send(A->port, &d, msg, 4), -EINVAL);
	memset(d.dst_mac, 0, 6);
	assert_int_equal(roce_port_ud_send(A->port, &d, msg, 4), -EINVAL);
	teardown_world();
}

static void test_ud_imm(void **state)
{
	struct roce_port_ud d;
	uint8_t msg[61];

	(void)state;
	ud_setup(&d, msg, sizeof(msg));
	roce_port_set_ud_handler(B->port, ud_handler, NULL);
	assert_int_equal(roce_port_ud_send(A->port, &d, msg, sizeof(msg)), 0);
	settle();
	assert_int_equal(ud_got.n, 1);
	assert_true(ud_got.has_imm);
	assert_int_equal(ud_got.imm, 0xfeedbeef);
	assert_true(ud_got.se);
	assert_int_equal(ud_got.len, sizeof(msg));
	assert_memory_equal(ud_got.payload, msg, sizeof(msg));
	teardown_world();
}

static void test_api(void **state)
{
	struct roce_port_qp_cfg c;
	struct roce_port_cfg bad = { .name = "bad", .ip = IP_X, .mac = { 0x01, 0, 0, 0, 0, 1 } };
	unsigned in_range = 0;
	uint16_t s0;

	(void)state;
	setup(true);
	assert_null(roce_port_new(&bad, W->sw));
	c = qp_cfg(A);
	assert_int_equal(roce_port_qp_create(A->port, QPN_A, &c, 0), -EEXIST);
	assert_int_equal(roce_port_qp_create(A->port, 0, &c, 0), -EINVAL);
	c.pmtu = 1000;
	assert_int_equal(roce_port_qp_create(A->port, 0x33, &c, 0), -EINVAL);
	c = qp_cfg(A);
	c.req_ops = NULL;
	assert_int_equal(roce_port_qp_create(A->port, 0x33, &c, 0), -EINVAL);
	c = qp_cfg(A);
	c.remote_ip = IP_A;
	assert_int_equal(roce_port_qp_create(A->port, 0x33, &c, 0), -EINVAL);
	c = qp_cfg(A);
	for (uint32_t q = 0x100; q < 0x100 + ROCE_PORT_MAX_QPS - 1; q++)
		assert_int_equal(roce_port_qp_create(A->port, q, &c, 0), 0);
	assert_int_equal(roce_port_qp_create(A->port, 0x33, &c, 0), -ENOSPC);
	assert_int_equal(roce_port_qp_destroy(A->port, 0x100), 0);
	assert_int_equal(roce_port_qp_destroy(A->port, 0x100), -ENOENT);
	assert_int_equal(roce_port_qp_create(A->port, 0x33, &c, 0), 0);
	assert_int_equal(post(A, 1, ROCE_RC_REQ_SEND, 1, 0), 0);
	assert_int_equal(roce_port_qp_destroy(A->port, QPN_A), 0);
	expect_comp(A, 0, 1, ROCE_RC_REQ_WC_FLUSH_ERR, 0);
	assert_int_equal(roce_port_qp_post(A->port, QPN_A, &(struct roce_rc_req_wr){ .op = ROCE_RC_REQ_SEND }),
			 -ENOENT);
	assert_null(roce_port_qp_requester(A->port, QPN_A));
	assert_null(roce_port_qp_responder(A->port, QPN_A));
	assert_int_equal(roce_port_qp_sport(A->port, QPN_A), 0);
	assert_int_equal(roce_port_qp_sport(B->port, QPN_B), roce_port_sport(QPN_B, QPN_A));
	/* source ports: in 49152..65535, and spread */
	s0 = roce_port_sport(1, 2);
	for (uint32_t q = 1; q < 1000; q++) {
		uint16_t s = roce_port_sport(q, q + 1);

		assert_true(s >= 49152);
		in_range += s != s0;
	}
	assert_true(in_range > 990);
	assert_int_not_equal(roce_port_sport(1, 2), roce_port_sport(2, 1));
	/* names: one per cause, distinct */
	for (int i = 0; i < ROCE_PORT_DROP_NUM; i++) {
		assert_non_null(roce_port_drop_name((enum roce_port_drop)i));
		assert_string_not_equal(roce_port_drop_name((enum roce_port_drop)i), "?");
		for (int j = 0; j < i; j++)
			assert_string_not_equal(roce_port_drop_name((enum roce_port_drop)i),
						roce_port_drop_name((enum roce_port_drop)j));
	}
	assert_string_equal(roce_port_drop_name(ROCE_PORT_DROP_NUM), "?");
	teardown_world();
}

/* ---- many QP pairs: each QP's owner is an entry of its own ---- */

#define NPAIR 300
#define MQ_BUF 2500             /* a SEND of up to three packets at MTU */

/* One QP's owner: a receive buffer, a send buffer, and what completed. */
struct mq {
	uint32_t qpn;
	unsigned rq_posted, rq_taken, nrcqe;
	struct roce_rc_recv_cqe rcqe;
	uint8_t rbuf[MQ_BUF];
	uint8_t lbuf[MQ_BUF];
	unsigned ncomp;
	enum roce_rc_req_wc status;
};

static struct mq *mq_a, *mq_b;  /* [NPAIR]: pair i is mq_a[i] on A and mq_b[i] on B */
/*
 * [NPAIR][ROCE_PORT_FRAME_MAX]: A's SEND ONLY on each pair whose first SEND
 * was one packet. (A SEND FIRST to a QPN the node does not have is parsed at
 * the largest MTU, and its payload is then short of it: a parse drop.)
 */
static uint8_t *mq_frame;
static size_t mq_frame_len[NPAIR];

static bool m_recv_take(void *ctx, uint64_t *h)
{
	struct mq *q = ctx;

	if (q->rq_taken == q->rq_posted)
		return false;
	*h = q->rq_taken++;
	return true;
}

static int m_recv_write(void *ctx, uint64_t h, uint32_t off, const void *data, uint32_t len)
{
	struct mq *q = ctx;

	(void)h;
	if (off > MQ_BUF || len > MQ_BUF - off)
		return -1;
	memcpy(q->rbuf + off, data, len);
	return 0;
}

static void m_recv_complete(void *ctx, uint64_t h, const struct roce_rc_recv_cqe *c)
{
	struct mq *q = ctx;

	(void)h;
	q->nrcqe++;
	q->rcqe = *c;
}

static int m_mem_write(void *ctx, uint32_t rkey, uint64_t va, const void *data, uint32_t len)
{
	(void)ctx, (void)rkey, (void)va, (void)data, (void)len;
	return -1;
}

static int m_mem_read(void *ctx, uint32_t rkey, uint64_t va, void *buf, uint32_t len)
{
	(void)ctx, (void)rkey, (void)va, (void)buf, (void)len;
	return -1;
}

static int m_atomic(void *ctx, uint32_t rkey, uint64_t va, bool cmp_swap, uint64_t swap_add, uint64_t compare,
		    uint64_t *orig)
{
	(void)ctx, (void)rkey, (void)va, (void)cmp_swap, (void)swap_add, (void)compare, (void)orig;
	return -1;
}

static int m_local_read(void *ctx, uint64_t wr_id, uint32_t off, void *buf, uint32_t len)
{
	struct mq *q = ctx;

	(void)wr_id;
	if (off > MQ_BUF || len > MQ_BUF - off)
		return -1;
	memcpy(buf, q->lbuf + off, len);
	return 0;
}

static int m_local_write(void *ctx, uint64_t wr_id, uint32_t off, const void *data, uint32_t len)
{
	(void)ctx, (void)wr_id, (void)off, (void)data, (void)len;
	return -1;
}

static void m_complete(void *ctx, uint64_t wr_id, enum roce_rc_req_wc status, uint32_t byte_len, uint64_t orig)
{
	struct mq *q = ctx;

	(void)wr_id, (void)byte_len, (void)orig;
	q->ncomp++;
	q->status = status;
}

static const struct roce_rc_ops m_resp_ops = {
	.recv_take = m_recv_take, .recv_write = m_recv_write, .recv_complete = m_recv_complete,
	.mem_write = m_mem_write, .mem_read = m_mem_read, .atomic = m_atomic, .invalidate = f_invalidate,
};

static const struct roce_rc_req_ops m_req_ops = {
	.local_read = m_local_read, .local_write = m_local_write, .complete = m_complete,
};

/* Every frame must parse and go to the other node; A's first frame on each pair is kept for a replay. */
static bool m_tx_hook(void *ctx, const uint8_t *f, size_t len)
{
	struct node *n = ctx;
	struct roce_pkt p;

	n->tx_frames++;
	if (is_arp(f, len) || is_icmp(f, len))
		return false; /* a probe of a reader (roce_echo.h): no peer here answers it */
	assert_true(is_roce(f, len));
	assert_int_equal(roce_parse(f, len, MTU, &p), ROCE_OK);
	assert_memory_equal(p.eth->dst, n == A ? MAC_B : MAC_A, 6);
	if (n == A && p.bth->opcode == ROCE_RC_SEND_ONLY) {
		for (unsigned i = 0; i < NPAIR; i++)
			if (mq_b[i].qpn == roce_bth_dqpn(p.bth) && mq_frame_len[i] == 0) {
				assert_true(len <= ROCE_PORT_FRAME_MAX);
				memcpy(mq_frame + (size_t)i * ROCE_PORT_FRAME_MAX, f, len);
				mq_frame_len[i] = len;
			}
	}
	return false;
}

/* Pair i's QPNs: spread over the 24 bits, and not in the same order on both sides. */
static uint32_t mq_qpn_a(unsigned i) { return 0x100 + i * 3; }
static uint32_t mq_qpn_b(unsigned i) { return 0xfff000 - i * 4099; }

static void mq_create(struct node *n, struct mq *q, uint32_t peer_qpn)
{
	struct roce_port_qp_cfg c = qp_cfg(n);

	c.remote_qpn = peer_qpn;
	c.resp_ops = &m_resp_ops;
	c.resp_ctx = q;
	c.req_ops = &m_req_ops;
	c.req_ctx = q;
	assert_int_equal(roce_port_qp_create(n->port, q->qpn, &c, W->now), 0);
}

/* A SEND of len bytes on pair i from A to B, B's receive posted first. */
static void mq_send(unsigned i, uint32_t len, unsigned seed)
{
	struct roce_rc_req_wr wr = { .wr_id = i, .op = ROCE_RC_REQ_SEND, .signaled = true, .len = len };

	for (uint32_t k = 0; k < len; k++)
		mq_a[i].lbuf[k] = (uint8_t)(k * 11 + i * 5 + seed);
	mq_b[i].rq_posted++;
	assert_int_equal(roce_port_qp_post(A->port, mq_a[i].qpn, &wr), 0);
}

/* Pump and tick both nodes until every pair in use has as many completions as want[] says. */
static void mq_run(const bool *live, unsigned want)
{
	for (unsigned turns = 0; turns < 200000; turns++) {
		unsigned done = roce_port_pump(A->port, 64, W->now) + roce_port_pump(B->port, 64, W->now);
		bool all = true;

		for (unsigned i = 0; i < NPAIR && all; i++)
			all = !live[i] || (mq_a[i].ncomp >= want && mq_b[i].nrcqe >= want);
		if (all && done == 0)
			return;
		W->now += done != 0 ? 1 : 100;
		roce_port_tick(A->port, W->now);
		roce_port_tick(B->port, W->now);
	}
	fail_msg("no end");
}

static void mq_check(unsigned i, uint32_t len, unsigned n)
{
	assert_int_equal(mq_a[i].ncomp, n);
	assert_string_equal(roce_rc_req_wc_name(mq_a[i].status), roce_rc_req_wc_name(ROCE_RC_REQ_WC_SUCCESS));
	assert_int_equal(mq_b[i].nrcqe, n);
	assert_int_equal(mq_b[i].rcqe.status, ROCE_RC_WC_SUCCESS);
	assert_int_equal(mq_b[i].rcqe.byte_len, len);
	assert_memory_equal(mq_b[i].rbuf, mq_a[i].lbuf, len);
}

/*
 * Far more than the old 16 QPs per node: NPAIR pairs between A and B over
 * the switch, a SEND of one to three packets on each, byte for byte; half
 * destroyed in a scattered order (both ends), the rest still carrying, and
 * frames for the gone QPNs dropped as unknown_qp; then A filled up to
 * ROCE_PORT_MAX_QPS, the next refused, and a pair still working with the
 * DestQP hash that full.
 */
static void test_many_qps(void **state)
{
	static bool live[NPAIR];
	struct mq filler = { 0 };
	uint64_t unknown_a, unknown_b;
	unsigned nlive = NPAIR, extra = 0, replayed = 0;
	uint8_t f[256];
	size_t len;

	(void)state;
	mq_a = calloc(NPAIR, sizeof(*mq_a));
	mq_b = calloc(NPAIR, sizeof(*mq_b));
	mq_frame = calloc(NPAIR, ROCE_PORT_FRAME_MAX);
	assert_non_null(mq_a);
	assert_non_null(mq_b);
	assert_non_null(mq_frame);
	memset(mq_frame_len, 0, sizeof(mq_frame_len));
	setup(false);
	roce_port_set_tx_hook(A->port, m_tx_hook, A);
	roce_port_set_tx_hook(B->port, m_tx_hook, B);
	roce_port_arp_request(A->port, IP_B, W->now);
	settle();
	for (unsigned i = 0; i < NPAIR; i++) {
		mq_a[i].qpn = mq_qpn_a(i);
		mq_b[i].qpn = mq_qpn_b(i);
		mq_create(A, &mq_a[i], mq_b[i].qpn);
		mq_create(B, &mq_b[i], mq_a[i].qpn);
		live[i] = true;
	}
	for (unsigned i = 0; i < NPAIR; i++)
		mq_send(i, 1 + (i * 37) % MQ_BUF, 1);
	mq_run(live, 1);
	for (unsigned i = 0; i < NPAIR; i++) {
		mq_check(i, 1 + (i * 37) % MQ_BUF, 1);
		assert_true((mq_frame_len[i] > 0) == (1 + (i * 37) % MQ_BUF <= MTU));
	}
	assert_int_equal(drops(A, ROCE_PORT_DROP_UNKNOWN_QP), 0);
	assert_int_equal(drops(B, ROCE_PORT_DROP_UNKNOWN_QP), 0);

	/* Half gone, taken in a scattered order (37 and NPAIR share no factor: every pair comes up once). */
	for (unsigned k = 0; k < NPAIR; k += 2) {
		unsigned i = (k * 37) % NPAIR;

		assert_int_equal(roce_port_qp_destroy(A->port, mq_a[i].qpn), 0);
		assert_int_equal(roce_port_qp_destroy(B->port, mq_b[i].qpn), 0);
		live[i] = false;
		nlive--;
	}
	assert_int_equal(nlive, NPAIR / 2);
	unknown_a = drops(A, ROCE_PORT_DROP_UNKNOWN_QP);
	unknown_b = drops(B, ROCE_PORT_DROP_UNKNOWN_QP);
	for (unsigned i = 0; i < NPAIR; i++) {
		if (live[i]) {
			assert_non_null(roce_port_qp_requester(A->port, mq_a[i].qpn));
			assert_non_null(roce_port_qp_responder(B->port, mq_b[i].qpn));
			mq_send(i, 1 + (i * 53) % MQ_BUF, 2);
			continue;
		}
		assert_null(roce_port_qp_requester(A->port, mq_a[i].qpn));
		assert_null(roce_port_qp_responder(B->port, mq_b[i].qpn));
		assert_int_equal(roce_port_qp_post(A->port, mq_a[i].qpn,
						   &(struct roce_rc_req_wr){ .op = ROCE_RC_REQ_SEND }), -ENOENT);
		/* the SEND A sent on it before, again, and an ACK to A's end */
		if (mq_frame_len[i] > 0) {
			uint8_t *g = mq_frame + (size_t)i * ROCE_PORT_FRAME_MAX;

			/* from the guest's MAC (outside the ICRC), so the switch keeps A's where it is */
			memcpy(((struct net_eth_hdr *)g)->src, MAC_W, 6);
			net_switch_input(W->sw, W->wire, g, mq_frame_len[i]);
			replayed++;
		}
		len = guest_frame(f, sizeof(f), MAC_A, IP_B, IP_A, mq_a[i].qpn, ROCE_RC_ACKNOWLEDGE);
		net_switch_input(W->sw, W->wire, f, len);
		/* the rings hold ROCE_PORT_RXQ frames: let them through as they fill */
		settle();
	}
	mq_run(live, 2);
	for (unsigned i = 0; i < NPAIR; i++) {
		if (live[i]) {
			mq_check(i, 1 + (i * 53) % MQ_BUF, 2);
		} else {
			assert_int_equal(mq_a[i].ncomp, 1);
			assert_int_equal(mq_b[i].nrcqe, 1); /* nothing flushed: no receive was waiting */
		}
	}
	assert_int_equal(drops(B, ROCE_PORT_DROP_UNKNOWN_QP) - unknown_b, replayed);
	assert_true(replayed > NPAIR / 8);
	assert_int_equal(drops(A, ROCE_PORT_DROP_UNKNOWN_QP) - unknown_a, NPAIR / 2);
	assert_int_equal(drops(A, ROCE_PORT_DROP_RX_FULL) + drops(B, ROCE_PORT_DROP_RX_FULL), 0);

	/* A filled up: the first QP past ROCE_PORT_MAX_QPS is refused, one destroyed makes room again. */
	for (uint32_t q = 0x200000; nlive + extra < ROCE_PORT_MAX_QPS; q++, extra++) {
		filler.qpn = q;
		mq_create(A, &filler, 0x77);
	}
	{
		struct roce_port_qp_cfg c = qp_cfg(A);

		c.resp_ctx = c.req_ctx = &filler;
		c.resp_ops = &m_resp_ops;
		c.req_ops = &m_req_ops;
		assert_int_equal(roce_port_qp_create(A->port, 0x300000, &c, W->now), -ENOSPC);
		assert_int_equal(roce_port_qp_create(A->port, 0x200000, &c, W->now), -EEXIST);
		assert_int_equal(roce_port_qp_destroy(A->port, 0x200000 + extra / 2), 0);
		assert_int_equal(roce_port_qp_create(A->port, 0x300000, &c, W->now), 0);
		assert_int_equal(roce_port_qp_create(A->port, 0x300001, &c, W->now), -ENOSPC);
	}
	/* every pair left still finds its QPs with the hash full */
	for (unsigned i = 0; i < NPAIR; i++)
		if (live[i])
			mq_send(i, 1 + (i * 71) % MQ_BUF, 3);
	mq_run(live, 3);
	for (unsigned i = 0; i < NPAIR; i++)
		if (live[i])
			mq_check(i, 1 + (i * 71) % MQ_BUF, 3);
	teardown_world();
	free(mq_a);
	free(mq_b);
	free(mq_frame);
}

/*
 * A guest node's QPs with local MACs other than the node's: up to
 * ROCE_PORT_LOCAL_MACS distinct ones, shared by any number of QPs, the
 * filter taking RoCE to each; one more distinct MAC is refused until the
 * last QP of another is gone.
 */
/* Pump node n alone until it has nothing more to do at this time; frames handled or sent. */
static unsigned pump_alone(struct node *n)
{
	unsigned total = 0, k;

	while ((k = roce_port_pump(n->port, 16, W->now)) != 0)
		total += k;
	return total;
}

/*
 * Congestion control between two nodes (roce_rate.h, DCQCN's reaction point and a notification
 * point that answers its own backlog). A sends 64 packets while B is not pumped: a batch, which
 * earns no CNP; then packets that arrive while the segment is behind (net_switch_behind) earn A
 * one CNP (at most one per ROCE_PORT_CNP_GAP_US per QP), which halves A's rate and empties its
 * tokens. Then A lets out only what its rate earns: nothing at the same instant, about rate x dt
 * over dt, and every packet waits, none is lost; a quiet stretch of sending raises the rate again.
 */
static void test_congestion(void **state)
{
	const struct roce_rate *ra;
	uint64_t rate0, frames0, bytes, dt = 100;
	unsigned sent;

	(void)state;
	setup(true);
	ra = roce_port_qp_rate(A->port, QPN_A);
	assert_non_null(ra);
	rate0 = ra->rate;
	assert_int_equal(rate0, ROCE_RATE_START);
	for (unsigned i = 0; i < 8; i++) {
		fill(A, i, LBUF, i);
		assert_int_equal(post(A, i, ROCE_RC_REQ_WRITE, LBUF, (uint64_t)i * LBUF), 0);
	}
	/*
	 * 64 packets leave A at once (within a burst's worth of tokens), none handled by B yet: a
	 * batch, as one TAP wakeup brings, fewer than ROCE_PORT_BACKLOG: no CNP when B takes them.
	 */
	sent = A->tx_roce;
	pump_alone(A);
	assert_int_equal(A->tx_roce - sent, 64);
	assert_int_equal(B->tx_cnp, 0);
	pump_alone(B);
	assert_int_equal(B->tx_cnp, 0);
	run();
	for (unsigned i = 0; i < 8; i++) {
		expect_comp(A, i, i, ROCE_RC_REQ_WC_SUCCESS, LBUF);
		assert_memory_equal(B->mr + (size_t)i * LBUF, A->lbuf[i], LBUF);
	}
	assert_int_equal(roce_port_stats(A->port)->rate_cuts, 0);
	/*
	 * The same while the segment is behind (a TAP whose reads ended at their budget wakeup after
	 * wakeup): the packets that arrive so earn A one CNP (not one per packet: at most one per
	 * ROCE_PORT_CNP_GAP_US per QP).
	 */
	W->now += ROCE_PORT_CNP_GAP_US;
	for (unsigned i = 0; i < 8; i++) {
		fill(A, i, LBUF, i + 100);
		assert_int_equal(post(A, i, ROCE_RC_REQ_WRITE, LBUF, (uint64_t)i * LBUF), 0);
	}
	sent = A->tx_roce;
	net_switch_set_behind(W->sw, true);
	pump_alone(A);
	net_switch_set_behind(W->sw, false);
	assert_int_equal(A->tx_roce - sent, 64);
	pump_alone(B);
	assert_int_equal(B->tx_cnp, 1);
	assert_int_equal(roce_port_stats(B->port)->cnp_sent, 1);
	/* A takes it: rate halved, tokens gone */
	pump_alone(A);
	assert_int_equal(roce_port_stats(A->port)->cnp_received, 1);
	assert_int_equal(roce_port_stats(A->port)->rate_cuts, 1);
	assert_int_equal(ra->rate, rate0 / 2); /* alpha starts at 1: the first cut halves */
	assert_true(ra->tokens <= 0);
	run();
	for (unsigned i = 0; i < 8; i++) {
		expect_comp(A, 8 + i, i, ROCE_RC_REQ_WC_SUCCESS, LBUF);
		assert_memory_equal(B->mr + (size_t)i * LBUF, A->lbuf[i], LBUF);
	}
	/* Paced: nothing leaves at the instant of the cut... */
	W->now += ROCE_RATE_CUT_GAP_US;
	assert_true(roce_rate_signal((struct roce_rate *)ra, W->now)); /* (the test's hand: another cut) */
	for (unsigned i = 0; i < 6; i++) {
		fill(A, i + 8, LBUF, i + 8);
		assert_int_equal(post(A, i + 8, ROCE_RC_REQ_WRITE, LBUF, (uint64_t)i * LBUF), 0);
	}
	frames0 = A->tx_roce;
	pump_alone(A);
	assert_int_equal(A->tx_roce - frames0, 0);
	assert_true(roce_port_stats(A->port)->paced > 0);
	/* ... the node's deadline says when it may go on ... */
	assert_true(roce_port_next_deadline(A->port) > W->now);
	assert_true(roce_port_next_deadline(A->port) <= W->now + 2);
	/* ... and over dt only what the rate earns (a packet may overdraw by one) */
	W->now += dt;
	pump_alone(A);
	bytes = (A->tx_roce - frames0) * (uint64_t)(MTU + 62);
	assert_true(A->tx_roce - frames0 >= 1);
	assert_true(bytes <= ra->rate * dt / 1000000 + 2 * (MTU + 62));
	run();
	for (unsigned i = 8; i < 14; i++)
		expect_comp(A, 8 + i, i, ROCE_RC_REQ_WC_SUCCESS, LBUF);
	assert_int_equal(A->dropped + B->dropped, 0);
	assert_int_equal(drops(A, ROCE_PORT_DROP_RX_FULL) + drops(B, ROCE_PORT_DROP_RX_FULL), 0);
	teardown_world();
}

/*
 * ECN: every frame of a QP leaves ECN-capable (ECT(0)), CNPs excepted; a frame that arrives marked
 * CE (a congested switch on the way, here B's send hook) earns its sender a CNP as a backlog does,
 * at most one per ROCE_PORT_CNP_GAP_US, and the sender's rate is cut. The transfer is exact.
 */
static void test_ecn(void **state)
{
	const struct roce_rate *ra;
	uint64_t rate0;

	(void)state;
	setup(true);
	ra = roce_port_qp_rate(A->port, QPN_A);
	rate0 = ra->rate;
	fill(A, 1, LBUF, 1);
	assert_int_equal(post(A, 1, ROCE_RC_REQ_WRITE, LBUF, 0), 0);
	run();
	expect_comp(A, 0, 1, ROCE_RC_REQ_WC_SUCCESS, LBUF);
	assert_true(A->tx_ect > 0);
	assert_true(B->tx_ect > 0); /* its ACKs too */
	assert_int_equal(A->tx_not_ect + B->tx_not_ect, 0);
	assert_int_equal(roce_port_stats(B->port)->ce_received, 0);
	assert_int_equal(B->tx_cnp, 0);

	/* Marked CE on the way from A to B. */
	A->ce_mark = true;
	fill(A, 2, LBUF, 2);
	assert_int_equal(post(A, 2, ROCE_RC_REQ_WRITE, LBUF, LBUF), 0);
	run();
	expect_comp(A, 1, 2, ROCE_RC_REQ_WC_SUCCESS, LBUF);
	assert_memory_equal(B->mr + LBUF, A->lbuf[2], LBUF);
	assert_true(roce_port_stats(B->port)->ce_received > 0);
	assert_true(B->tx_cnp >= 1);
	assert_true(B->tx_cnp <= roce_port_stats(B->port)->ce_received);
	assert_int_equal(roce_port_stats(A->port)->cnp_received, B->tx_cnp);
	assert_true(roce_port_stats(A->port)->rate_cuts >= 1);
	assert_true(ra->rate < rate0);
	assert_int_equal(A->dropped + B->dropped, 0);
	teardown_world();
}

/*
 * 802.1Q: a QP with a tag sends every frame tagged with its TCI and takes only frames of its VLAN
 * (the priority may differ); a peer on another VLAN drops them all (`vlan`), so the requester
 * retries and fails with retry exceeded, nothing written.
 */
static void test_vlan(void **state)
{
	struct roce_port_qp_cfg c;

	(void)state;
	setup(false);
	c = qp_cfg(A);
	c.vlan = true;
	c.tci = 5u << 13 | 100;
	assert_int_equal(roce_port_qp_create(A->port, QPN_A, &c, W->now), 0);
	c = qp_cfg(B);
	c.vlan = true;
	c.tci = 3u << 13 | 100;
	assert_int_equal(roce_port_qp_create(B->port, QPN_B, &c, W->now), 0);
	settle();
	fill(A, 1, LBUF, 1);
	assert_int_equal(post(A, 1, ROCE_RC_REQ_WRITE, LBUF, 0), 0);
	run();
	expect_comp(A, 0, 1, ROCE_RC_REQ_WC_SUCCESS, LBUF);
	assert_memory_equal(B->mr, A->lbuf[1], LBUF);
	assert_true(A->tx_tagged > 0 && B->tx_tagged > 0); /* B's ACKs too */
	assert_int_equal(A->last_tci, 5u << 13 | 100);
	assert_int_equal(B->last_tci, 3u << 13 | 100);
	assert_int_equal(drops(A, ROCE_PORT_DROP_VLAN) + drops(B, ROCE_PORT_DROP_VLAN), 0);
	assert_int_equal(roce_port_stats(A->port)->vlan_out, A->tx_tagged);
	assert_int_equal(roce_port_stats(B->port)->vlan_in, A->tx_tagged);

	/* B on VLAN 200. */
	assert_int_equal(roce_port_qp_destroy(A->port, QPN_A), 0);
	assert_int_equal(roce_port_qp_destroy(B->port, QPN_B), 0);
	c = qp_cfg(A);
	c.vlan = true;
	c.tci = 100;
	assert_int_equal(roce_port_qp_create(A->port, QPN_A, &c, W->now), 0);
	c = qp_cfg(B);
	c.vlan = true;
	c.tci = 200;
	assert_int_equal(roce_port_qp_create(B->port, QPN_B, &c, W->now), 0);
	memset(B->mr + 2 * LBUF, 0, LBUF);
	fill(A, 2, LBUF, 2);
	assert_int_equal(post(A, 2, ROCE_RC_REQ_WRITE, LBUF, 2 * LBUF), 0);
	run();
	expect_comp(A, 1, 2, ROCE_RC_REQ_WC_RETRY_EXC_ERR, 0);
	assert_true(drops(B, ROCE_PORT_DROP_VLAN) > 0);
	for (unsigned i = 0; i < LBUF; i++)
		assert_int_equal(B->mr[2 * LBUF + i], 0);
	teardown_world();
}

static void test_guest_local_macs(void **state)
{
	struct roce_port_cfg ca = { .name = "guest", .guest = true };
	struct roce_port_qp_cfg c;
	uint8_t f[256];
	size_t len;

	(void)state;
	setup(false);
	roce_port_free(A->port);
	memcpy(ca.mac, MAC_A, 6);
	A->port = roce_port_new(&ca, W->sw);
	assert_non_null(A->port);
	c = qp_cfg(A);
	c.local_ip = IP_A;
	memcpy(c.remote_mac, MAC_B, 6);
	for (unsigned i = 0; i < ROCE_PORT_LOCAL_MACS; i++) {
		uint8_t mac[6] = { 0x02, 0x11, 0x22, 0x33, 0x44, (uint8_t)i };

		memcpy(c.local_mac, mac, 6);
		assert_int_equal(roce_port_qp_create(A->port, 0x500 + i, &c, W->now), 0);
		assert_int_equal(roce_port_qp_create(A->port, 0x600 + i, &c, W->now), 0); /* the same MAC again */
	}
	c.local_mac[5] = ROCE_PORT_LOCAL_MACS;
	assert_int_equal(roce_port_qp_create(A->port, 0x700, &c, W->now), -ENOSPC);
	memset(c.local_mac, 0, 6); /* the node's own: not counted */
	assert_int_equal(roce_port_qp_create(A->port, 0x701, &c, W->now), 0);
	/* RoCE to a QP's local MAC is taken (an unknown QPN: counted there); to a gone MAC, not */
	len = guest_frame(f, sizeof(f), (const uint8_t[6]){ 0x02, 0x11, 0x22, 0x33, 0x44, 3 }, IP_B, IP_A, 0x999,
			  ROCE_RC_ACKNOWLEDGE);
	net_switch_input(W->sw, W->wire, f, len);
	settle();
	assert_int_equal(drops(A, ROCE_PORT_DROP_UNKNOWN_QP), 1);
	assert_int_equal(roce_port_qp_destroy(A->port, 0x503), 0);
	net_switch_input(W->sw, W->wire, f, len);
	settle();
	assert_int_equal(drops(A, ROCE_PORT_DROP_UNKNOWN_QP), 2); /* QP 0x603 still sends with it */
	memcpy(c.local_mac, (const uint8_t[6]){ 0x02, 0x11, 0x22, 0x33, 0x44, ROCE_PORT_LOCAL_MACS }, 6);
	assert_int_equal(roce_port_qp_create(A->port, 0x700, &c, W->now), -ENOSPC);
	assert_int_equal(roce_port_qp_destroy(A->port, 0x603), 0);
	net_switch_input(W->sw, W->wire, f, len);
	settle();
	assert_int_equal(drops(A, ROCE_PORT_DROP_UNKNOWN_QP), 2);
	assert_int_equal(roce_port_stats(A->port)->frames_in, 2);
	assert_int_equal(roce_port_qp_create(A->port, 0x700, &c, W->now), 0);
	teardown_world();
}

/*
 * ---- two switches joined by a link: two servers' TAPs on one bridge, in one process ----
 * What A's switch hands the link goes into B's switch at the next turn, and back, as a bridge
 * carries it. The link takes frames in pieces as a TAP does (deliver_pieces) and joins them.
 */
#define LINK_Q 64
static struct link {
	struct net_switch *sw[2];       /* [0]: W->sw, A's; [1]: B's */
	int id[2];                      /* the link's port on each */
	unsigned nq[2];                 /* frames waiting to enter sw[i] */
	uint8_t q[2][LINK_Q][ROCE_PORT_FRAME_MAX];
	size_t len[2][LINK_Q];
	unsigned pieces, whole;         /* RoCEv2 frames taken from A's switch in pieces, and whole */
	unsigned monitored;             /* A's RoCEv2 frames its switch showed its monitor */
} *L;

static bool link_is_a(void *ctx) { return ctx == &L->id[0]; }

static void link_queue(int to, const uint8_t *f, size_t len)
{
	assert_true(L->nq[to] < LINK_Q);
	assert_true(len <= ROCE_PORT_FRAME_MAX);
	memcpy(L->q[to][L->nq[to]], f, len);
	L->len[to][L->nq[to]++] = len;
}

/* A's RoCEv2 frame as the wire must carry it: valid to its ICRC, ECN-capable, its IPv4 checksum right. */
static void link_check(const uint8_t *f, size_t len)
{
	const struct net_ip_hdr *ip = (const struct net_ip_hdr *)(f + sizeof(struct net_eth_hdr));
	struct roce_pkt p;

	assert_int_equal(roce_parse(f, len, MTU, &p), ROCE_OK);
	assert_int_equal(ip->tos & ROCE_ECN_MASK, ROCE_ECN_ECT0);
	assert_int_equal(inet_csum_fold(inet_csum_add(0, ip, sizeof(*ip))), 0);
}

static void link_deliver(void *ctx, const uint8_t *f, size_t len)
{
	if (link_is_a(ctx) && is_roce(f, len)) {
		L->whole++;
		link_check(f, len);
	}
	link_queue(link_is_a(ctx) ? 1 : 0, f, len);
}

static void link_deliver_offload(void *ctx, const uint8_t *f, size_t len, const struct net_offload *off)
{
	(void)off; /* RoCEv2 only here: no offloads reach the link */
	link_deliver(ctx, f, len);
}

/* Pieces joined, and the joined frame checked as the wire would (its ICRC over every piece). */
static void link_deliver_pieces(void *ctx, const struct iovec *piece, unsigned n, const struct net_offload *off)
{
	uint8_t f[ROCE_PORT_FRAME_MAX];
	size_t len = 0;

	assert_null(off);
	assert_true(link_is_a(ctx));
	for (unsigned i = 0; i < n; i++) {
		assert_true(piece[i].iov_len <= sizeof(f) - len);
		memcpy(f + len, piece[i].iov_base, piece[i].iov_len);
		len += piece[i].iov_len;
	}
	assert_true(is_roce(f, len));
	link_check(f, len);
	L->pieces++;
	link_queue(1, f, len);
}

static void link_monitor(void *ctx, const uint8_t *f, size_t len)
{
	(void)ctx;
	if (is_roce(f, len) && memcmp(f + 6, MAC_A, 6) == 0)
		L->monitored++;
}

/* What waits on the link, into the switch on its other side. */
static unsigned link_shuttle(void)
{
	unsigned moved = 0;

	for (int to = 0; to < 2; to++) {
		unsigned n = L->nq[to];

		L->nq[to] = 0;
		for (unsigned i = 0; i < n; i++)
			net_switch_input(L->sw[to], L->id[to], L->q[to][i], L->len[to][i]);
		moved += n;
	}
	return moved;
}

/*
 * A's payloads read where they lie go to B over the link in pieces; where A's switch must see
 * the frame whole (a capture on it, or B's MAC not learnt so it floods), the node joins the
 * pieces and the frame goes as any other. Every way, every byte lands and every frame on the
 * link is whole and valid.
 */
static void pieces_link(bool monitor, bool flood)
{
	struct net_port l0 = { .name = "link", .ctx = &L->id[0], .deliver = link_deliver,
			       .deliver_offload = link_deliver_offload, .deliver_pieces = link_deliver_pieces,
			       .no_learn = flood /* B's MAC never learnt on A's side: A's frames flood */ },
			l1 = { .name = "link", .ctx = &L->id[1], .deliver = link_deliver };
	struct roce_port_cfg cb = { .name = "B", .ip = IP_B, .clock_us = world_clock };
	uint32_t wlen = 5 * MTU + 200, slen = 3 * MTU;
	struct roce_port_qp_cfg c;
	uint64_t in_pieces;

	setup(false);
	memset(L, 0, sizeof(*L));
	roce_port_free(B->port);
	L->sw[0] = W->sw;
	L->sw[1] = net_switch_new();
	assert_non_null(L->sw[1]);
	memcpy(cb.mac, MAC_B, 6);
	B->port = roce_port_new(&cb, L->sw[1]);
	assert_non_null(B->port);
	L->id[0] = net_switch_attach(L->sw[0], &l0);
	L->id[1] = net_switch_attach(L->sw[1], &l1);
	assert_true(L->id[0] >= 0 && L->id[1] >= 0);
	W->shuttle = link_shuttle;
	if (monitor)
		net_switch_set_monitor(L->sw[0], link_monitor, NULL);
	roce_port_set_tx_hook(A->port, NULL, NULL); /* no hook: the node may send in pieces */
	roce_port_set_tx_hook(B->port, NULL, NULL);
	c = qp_cfg(A);
	assert_int_equal(roce_port_qp_create(A->port, QPN_A, &c, W->now), 0);
	c = qp_cfg(B);
	assert_int_equal(roce_port_qp_create(B->port, QPN_B, &c, W->now), 0);
	settle();

	B->posted = 1;
	fill(A, 1, wlen, 11);
	fill(A, 2, slen, 12);
	assert_int_equal(post(A, 1, ROCE_RC_REQ_WRITE, wlen, 1000), 0);
	assert_int_equal(post(A, 2, ROCE_RC_REQ_SEND, slen, 0), 0);
	run();
	assert_int_equal(A->ncomp, 2);
	expect_comp(A, 0, 1, ROCE_RC_REQ_WC_SUCCESS, wlen);
	expect_comp(A, 1, 2, ROCE_RC_REQ_WC_SUCCESS, slen);
	assert_memory_equal(B->mr + 1000, A->lbuf[1], wlen);
	assert_memory_equal(B->rq_buf[0], A->lbuf[2], slen);
	assert_true(A->peeks >= 9);             /* every packet's payload was asked for in place */
	in_pieces = roce_port_stats(A->port)->frames_in_pieces;
	assert_int_equal(L->pieces, in_pieces);
	if (monitor || flood) {
		/* the switch refused the pieces: joined, and sent whole (the monitor saw each) */
		assert_int_equal(in_pieces, 0);
		assert_true(L->whole >= 9);
		if (monitor)
			assert_int_equal(L->monitored, L->whole);
		/* a flood reaches the wire port too (which checks each); a unicast does not */
		assert_true(flood ? W->w_roce >= 9 : W->w_roce == 0);
	} else {
		assert_true(in_pieces >= 4);            /* every other payload read in place */
		assert_true(L->whole >= 4);             /* the rest copied, as before: 9 packets */
		assert_int_equal(W->w_roce, 0);
		assert_int_equal(net_switch_stats(L->sw[0])->pieces_passed, in_pieces);
	}
	W->shuttle = NULL;
	roce_port_free(B->port);
	B->port = NULL;
	net_switch_detach(L->sw[0], L->id[0]);
	net_switch_free(L->sw[1]);
	roce_port_free(A->port);
	net_switch_free(W->sw);
}

static void test_pieces_link(void **state)
{
	(void)state;
	L = calloc(1, sizeof(*L));
	assert_non_null(L);
	pieces_link(false, false);
	pieces_link(true, false);
	pieces_link(false, true);
	free(L);
	L = NULL;
}

static int group_setup(void **state)
{
	(void)state;
	W = calloc(1, sizeof(*W));
	return W == NULL ? -1 : 0;
}

static int group_teardown(void **state)
{
	(void)state;
	free(W);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_arp),
		cmocka_unit_test(test_send),
		cmocka_unit_test(test_write_read),
		cmocka_unit_test(test_atomics),
		cmocka_unit_test(test_lossy),
		cmocka_unit_test(test_lossy_read),
		cmocka_unit_test(test_late_peer),
		cmocka_unit_test(test_reader_pace),
		cmocka_unit_test(test_echo_clock),
		cmocka_unit_test(test_unresolved),
		cmocka_unit_test(test_drops),
		cmocka_unit_test(test_hostile),
		cmocka_unit_test(test_rx_full),
		cmocka_unit_test(test_udp_super_in),
		cmocka_unit_test(test_udp_super_behind_ring),
		cmocka_unit_test(test_udp_super_fatal),
		cmocka_unit_test(test_guest_node),
		cmocka_unit_test(test_ud),
		cmocka_unit_test(test_ud_imm),
		cmocka_unit_test(test_api),
		cmocka_unit_test(test_many_qps),
		cmocka_unit_test(test_guest_local_macs),
		cmocka_unit_test(test_congestion),
		cmocka_unit_test(test_ecn),
		cmocka_unit_test(test_vlan),
		cmocka_unit_test(test_pieces_link),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
