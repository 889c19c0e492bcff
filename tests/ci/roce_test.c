/*
 * roce-ci: two servers, each with --backend roce and its own TAP, joined by
 * a Linux bridge inside a network namespace that tests/ci/roce-ci.sh makes.
 * This program drives both devices over vfio-user as the ionic_rdma driver
 * would (tests/lib/ionic_rdma_guest), connects an RC QP on server A to one
 * on server B with header templates naming each other's MAC and IPv4
 * address, and checks, byte for byte in guest memory, every operation over
 * the wire: SEND across several MTUs, SEND with immediate, RDMA WRITE and
 * WRITE with immediate, RDMA READ, compare-and-swap and fetch-and-add, a
 * SEND that meets no receive (RNR), both directions, a local error behind
 * work on the wire (completed in order), a reconnection through RESET, and a
 * bad R_Key (remote access error at the requester, the responder's QP in
 * error). UD datagrams between the two, and ones longer than the receive, to
 * a UD QP and to the GSI QP (LOCAL_LEN, nothing written past the receive, the
 * QP in error until it is reset). A packet
 * socket on server A's TAP sees every frame between the two and checks the
 * RoCEv2 headers the operations put on the wire (opcodes, QPNs, addresses,
 * consecutive PSNs, AETH syndromes). B's Ethernet receive queue, receiving
 * everything, must get none of the RoCEv2 frames, and a frame to another UDP
 * port sent to B's MAC from the bridge.
 *
 * With "lossy" as the fourth argument it runs rounds of every kind of
 * transfer while the bridge drops a tenth of the RoCEv2 frames (the wrapper
 * sets that up with nftables), checking that everything still completes,
 * once and byte for byte, and that retransmissions were seen.
 *
 * With "bulk" it moves 1 MiB and 16 MiB by WRITE, READ and SEND both ways at
 * a 4096-byte path MTU, byte for byte; the wrapper checks that nothing was
 * dropped at either TAP and nothing resent (the senders are paced).
 *
 * Usage: roce-ci-client SOCK_A SOCK_B TAP_A TAP_B [lossy|bulk] (run inside the namespace).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/virtio_net.h>
#include <net/if.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../lib/ionic_rdma_guest.h"
#include "../lib/vfu_client.h"

#define QPN      5
#define PD       1
#define SCQ      10
#define RCQ      11
#define ACCESS   (RG_QPF_REMOTE_WRITE | RG_QPF_REMOTE_READ | RG_QPF_REMOTE_ATOMIC)
#define PMTU     1024
#define TMPL     (RG_SCRATCH + 0x4000)
#define MR_IDX   3
#define MR_KEY   0x5a
#define LKEY     RG_KEY(MR_IDX, MR_KEY)
#define MR_BASE  (RG_SCRATCH + 0x10000)
#define MR_LEN   0x100000u
#define SRC      (MR_BASE + 0x00000) /* what a side sends or writes */
#define RECV     (MR_BASE + 0x20000) /* receive buffers */
#define TARGET   (MR_BASE + 0x40000) /* RDMA WRITE target / READ source */
#define READ_TO  (MR_BASE + 0x60000) /* RDMA READ destination */
#define ATOMIC   (MR_BASE + 0x80000) /* the remote 8 bytes */
#define RESULT   (MR_BASE + 0x80100) /* the original value comes back here */
#define CQE_MS   5000

/* RoCEv2 on the wire, from IBA Vol 1 ch. 9 (opcodes) and the RoCEv2 annex (UDP 4791). */
#define UDP_ROCE 4791
enum {
	OP_SEND_FIRST = 0x00, OP_SEND_MIDDLE = 0x01, OP_SEND_LAST = 0x02, OP_SEND_LAST_IMM = 0x03,
	OP_SEND_ONLY = 0x04, OP_SEND_ONLY_IMM = 0x05, OP_WRITE_FIRST = 0x06, OP_WRITE_MIDDLE = 0x07,
	OP_WRITE_LAST = 0x08, OP_WRITE_LAST_IMM = 0x09, OP_WRITE_ONLY = 0x0a, OP_READ_REQ = 0x0c,
	OP_READ_RESP_FIRST = 0x0d, OP_READ_RESP_MIDDLE = 0x0e, OP_READ_RESP_LAST = 0x0f, OP_READ_RESP_ONLY = 0x10,
	OP_ACK = 0x11, OP_ATOMIC_ACK = 0x12, OP_CMP_SWAP = 0x13, OP_FETCH_ADD = 0x14,
};

struct side {
	const char *sock;
	struct vfc c;
	struct ionic_guest g;
	struct rg_eq eq;
	struct rg_cq acq, scq, rcq;
	struct rg_aq aq;
	struct rg_qp qp;
	uint8_t mac[6];
	uint32_t ip;
	uint32_t sq_psn;
	uint64_t wqe_id;
};

static struct side A = { .mac = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x0a }, .ip = 0xc0a8c80a, .sq_psn = 0x100 };
/* B's first PSN is near the 24-bit wrap: the PSNs of the long messages cross it. */
static struct side B = { .mac = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x0b }, .ip = 0xc0a8c80b, .sq_psn = 0xfffff0 };
static const char *tap_name, *tap_b_name;
static int cap_fd = -1;

/* ---- frames on the wire -------------------------------------------------------------------- */

struct frame {
	uint8_t dmac[6], smac[6];
	uint32_t sip, dip;
	uint16_t dport;
	uint8_t opcode;
	uint32_t dqpn, psn;
	uint8_t syndrome;   /* AETH, when the opcode carries one */
	uint32_t payload;   /* bytes between the headers and the ICRC, pad included */
};

#define FRAMES_MAX 512
static struct frame frames[FRAMES_MAX];
static unsigned nframes;

static bool has_aeth(uint8_t op)
{
	return op == OP_ACK || op == OP_ATOMIC_ACK || op == OP_READ_RESP_FIRST || op == OP_READ_RESP_LAST ||
	       op == OP_READ_RESP_ONLY;
}

/* Extension header bytes after the BTH (RETH 16, AtomicETH 28, AETH 4, AtomicAckETH 8, ImmDt 4). */
static uint32_t ext_len(uint8_t op)
{
	if ((op & 0xe0) == 0x20)
		op &= 0x1f; /* a UC SEND or WRITE: its RC twin's headers */
	switch (op) {
	case OP_WRITE_FIRST: case OP_WRITE_ONLY: case OP_READ_REQ: return 16;
	case 0x0b: return 20; /* WRITE ONLY with immediate */
	case OP_CMP_SWAP: case OP_FETCH_ADD: return 28;
	case OP_ATOMIC_ACK: return 12;
	case OP_READ_RESP_FIRST: case OP_READ_RESP_LAST: case OP_READ_RESP_ONLY: case OP_ACK: return 4;
	case OP_SEND_LAST_IMM: case OP_SEND_ONLY_IMM: case OP_WRITE_LAST_IMM: return 4;
	case 0x64: return 8;  /* UD SEND ONLY: DETH */
	case 0x65: return 12; /* and ImmDt */
	default: return 0;
	}
}

/* Everything the packet socket holds now: the RoCEv2 frames into frames[] (nframes reset first). */
static void capture(void)
{
	static uint8_t b[10 + 14 + 65535]; /* a header and the largest super-frame */
	ssize_t n;

	struct tpacket_stats st;
	socklen_t sl = sizeof(st);

	nframes = 0;
	usleep(20000); /* the last ACKs are on their way */
	/*
	 * Behind the header the socket puts first (PACKET_VNET_HDR): where the kernel takes UDP
	 * segmentation, the servers write RoCEv2 packets of a flow merged, and the TAP shows them as
	 * one UDP super-frame (gso_type UDP_L4), each gso_size bytes of its payload a packet.
	 */
	while ((n = recv(cap_fd, b, sizeof(b), MSG_DONTWAIT)) > 0) {
		struct virtio_net_hdr vh;
		const uint8_t *e = b + sizeof(vh), *ip = e + 14, *udp = e + 34;
		size_t len = (size_t)n - sizeof(vh), seg, done = 0;

		memcpy(&vh, b, sizeof(vh));
		if ((size_t)n < sizeof(vh) + 42 + 12 + 4 || e[12] != 0x08 || e[13] != 0x00 || ip[9] != 17 ||
		    (ip[0] & 0xf) != 5 || rg_get_be16(udp + 2) != UDP_ROCE)
			continue;
		seg = vh.gso_type == 5 /* UDP_L4 */ ? vh.gso_size : len - 42;
		assert_true(vh.gso_type == 0 || (vh.gso_type == 5 && seg > 0));
		for (; done < len - 42 && nframes < FRAMES_MAX; done += seg) {
			struct frame *f = &frames[nframes];
			const uint8_t *bth = e + 42 + done;
			size_t plen = len - 42 - done < seg ? len - 42 - done : seg;

			assert_true(plen >= 12 + 4);
			memcpy(f->dmac, e, 6);
			memcpy(f->smac, e + 6, 6);
			f->sip = rg_get_be32(ip + 12);
			f->dip = rg_get_be32(ip + 16);
			f->dport = rg_get_be16(udp + 2);
			f->opcode = bth[0];
			f->dqpn = rg_get_be32(bth + 4) & 0xffffff;
			f->psn = rg_get_be32(bth + 8) & 0xffffff;
			f->syndrome = has_aeth(f->opcode) && plen >= 12 + 4 + 4 ? bth[12] : 0;
			f->payload = (uint32_t)(plen - 12 - ext_len(f->opcode) - 4);
			nframes++;
		}
	}
	/* Every frame was seen (the counters reset on reading): otherwise no check of the wire holds. */
	assert_int_equal(getsockopt(cap_fd, SOL_PACKET, PACKET_STATISTICS, &st, &sl), 0);
	assert_int_equal(st.tp_drops, 0);
}

/* What the last capture() saw, for a failed check of the wire. */
static void dump_frames(const char *when)
{
	print_message("%s: %u frames captured\n", when, nframes);
	for (unsigned i = 0; i < nframes; i++)
		print_message("  %08x -> %08x opcode %#04x dqpn %#x psn %#08x syndrome %#04x payload %u\n",
			      frames[i].sip, frames[i].dip, frames[i].opcode, frames[i].dqpn, frames[i].psn,
			      frames[i].syndrome, frames[i].payload);
}

/* Frame i of the capture repeats an earlier one: the same packet sent again (same direction,
 * opcode, destination QP, PSN and AETH syndrome). */
static bool resent(unsigned i)
{
	for (unsigned j = 0; j < i; j++)
		if (frames[j].sip == frames[i].sip && frames[j].dip == frames[i].dip &&
		    frames[j].opcode == frames[i].opcode && frames[j].dqpn == frames[i].dqpn &&
		    frames[j].psn == frames[i].psn && frames[j].syndrome == frames[i].syndrome)
			return true;
	return false;
}

/*
 * The frames from `from` to `to`, in order, into out[] (at most max); how many. Only first
 * transmissions: on a loaded machine an ACK may come after the requester's timer ran out, and the
 * packet it resent (or the answer to it) is the same packet again, which the checks of the wire
 * must not count twice. (test_rnr and test_lossy look at every frame themselves.)
 */
static unsigned frames_between(const struct side *from, const struct side *to, struct frame *out, unsigned max)
{
	unsigned k = 0;

	for (unsigned i = 0; i < nframes && k < max; i++)
		/* a CNP is a congestion signal between the nodes, not part of any message */
		if (frames[i].sip == from->ip && frames[i].dip == to->ip && !resent(i) && frames[i].opcode != 0x81)
			out[k++] = frames[i];
	return k;
}

/* Every frame of a message from `from` carries its addressing; PSNs consecutive from psn0. */
static void check_request(const struct frame *f, unsigned n, const struct side *from, const struct side *to,
			  uint32_t psn0)
{
	for (unsigned i = 0; i < n; i++) {
		assert_memory_equal(f[i].smac, from->mac, 6);
		assert_memory_equal(f[i].dmac, to->mac, 6);
		assert_int_equal(f[i].dport, UDP_ROCE);
		assert_int_equal(f[i].dqpn, to->qp.id);
		assert_int_equal(f[i].psn, (psn0 + i) & 0xffffff);
	}
}

/* ---- the two guests -------------------------------------------------------------------------- */

static void fill(uint8_t *p, size_t len, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 1;

	for (size_t i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = (uint8_t)(x >> 16);
	}
}

static uint8_t *gp(struct side *s, uint64_t bus)
{
	return guest_ptr(&s->g, bus);
}

static uint8_t pmtu_log2 = 10; /* the path MTU both QPs get: 1024, or 4096 in bulk mode */
static uint16_t vlan_tci;      /* vlan mode: both QPs' templates carry this 802.1Q tag (0: none) */

static void side_up(struct side *s, struct side *peer)
{
	uint8_t t[RG_ROCE4_VLAN_HDR_LEN];
	struct rg_qp_path path;

	assert_int_equal(vfc_connect(&s->c, s->sock, 20000), 0);
	assert_int_equal(vfc_negotiate(&s->c), 0);
	assert_int_equal(ionic_guest_setup(&s->g, &s->c), 0);
	assert_int_equal(rg_probe(&s->g, &s->eq, &s->acq, &s->aq, 8, 4), 0);
	memset(gp(s, RG_SCRATCH), 0, RG_SCRATCH_SIZE);
	assert_int_equal(rg_cq_create_aq(&s->g, &s->aq, &s->scq, SCQ, 0, 8, RG_CQ_RING(1)), RG_ASTS_OK);
	assert_int_equal(rg_cq_create_aq(&s->g, &s->aq, &s->rcq, RCQ, 0, 8, RG_CQ_RING(2)), RG_ASTS_OK);
	assert_int_equal(rg_mr_create(&s->g, &s->aq, MR_IDX, MR_KEY, PD, MR_BASE, MR_LEN, 1, MR_BASE,
				      RG_MRF_LOCAL_WRITE | RG_MRF_REMOTE_WRITE | RG_MRF_REMOTE_READ |
				      RG_MRF_REMOTE_ATOMIC, 12), RG_ASTS_OK);
	memset(&s->qp, 0, sizeof(s->qp));
	s->qp.id = QPN;
	s->qp.type = RG_QPT_RC;
	s->qp.pd = PD;
	s->qp.sq_cq = SCQ;
	s->qp.rq_cq = RCQ;
	s->qp.sq = RG_SCRATCH;
	s->qp.rq = RG_SCRATCH + 0x2000;
	s->qp.sq_depth_log2 = s->qp.rq_depth_log2 = 6;
	s->qp.sq_stride_log2 = s->qp.rq_stride_log2 = 7;
	assert_int_equal(rg_qp_create(&s->g, &s->aq, &s->qp), 0);
	if (vlan_tci)
		rg_roce4_template_vlan(t, peer->mac, s->mac, s->ip, peer->ip, 0, 64, vlan_tci);
	else
		rg_roce4_template(t, peer->mac, s->mac, s->ip, peer->ip, 0, 64);
	path = (struct rg_qp_path){ .tmpl = t, .len = vlan_tci ? RG_ROCE4_VLAN_HDR_LEN : RG_ROCE4_HDR_LEN, .at = TMPL,
				    .sq_psn = s->sq_psn, .rq_psn = peer->sq_psn, .pmtu_log2 = pmtu_log2 };
	assert_int_equal(rg_qp_to_rts_path(&s->g, &s->aq, &s->qp, QPN, ACCESS, &path), 0);
}

static int group_setup(void **state)
{
	struct ifreq ifr;
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL) };

	(void)state;
	ionic_guest_seal_memory(true);
	cap_fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
	if (cap_fd < 0)
		return -1;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", tap_name);
	sll.sll_ifindex = (int)if_nametoindex(tap_name);
	if (sll.sll_ifindex == 0 || bind(cap_fd, (struct sockaddr *)&sll, sizeof(sll)) < 0)
		return -1;
	/* Each frame behind a virtio_net_hdr: a UDP super-frame says how it is cut (capture()). */
	if (setsockopt(cap_fd, SOL_PACKET, PACKET_VNET_HDR, &(int){ 1 }, sizeof(int)) < 0)
		return -1;
	/* Room for every frame between two looks (the RNR test makes a storm of them); root may force it. */
	if (setsockopt(cap_fd, SOL_SOCKET, SO_RCVBUFFORCE, &(int){ 64 << 20 }, sizeof(int)) < 0)
		return -1;
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	if (cap_fd >= 0)
		close(cap_fd);
	return 0;
}

/* ---- work requests and completions --------------------------------------------------------------- */

static void recv_post(struct side *s, uint64_t id, uint64_t va, uint32_t len)
{
	struct rg_sge sge = { va, len, LKEY };

	rg_post_recv(&s->g, &s->qp, id, 0, &sge, 1);
	rg_rq_ring(&s->g, &s->qp);
}

static uint64_t send_post(struct side *s, uint8_t op, uint32_t imm, uint64_t va, uint32_t len)
{
	struct rg_sge sge = { va, len, LKEY };
	uint64_t id = ++s->wqe_id;

	rg_post_send(&s->g, &s->qp, id, op, RG_WQE_SIG, imm, 0, 0, 0, &sge, 1);
	rg_sq_ring(&s->g, &s->qp);
	return id;
}

static uint64_t rdma_post(struct side *s, uint8_t op, uint32_t imm, uint64_t remote, uint32_t rkey, uint64_t va,
			  uint32_t len)
{
	struct rg_sge sge = { va, len, LKEY };
	uint64_t id = ++s->wqe_id;

	rg_post_rdma(&s->g, &s->qp, id, op, RG_WQE_SIG, imm, remote, rkey, &sge, 1);
	rg_sq_ring(&s->g, &s->qp);
	return id;
}

/* The next CQE of cq: it must come within CQE_MS. */
static void cqe_get(struct side *s, struct rg_cq *cq, uint8_t cqe[RG_CQE_SIZE])
{
	assert_true(rg_cq_wait(&s->g, cq, cqe, CQE_MS));
	rg_cq_ack(&s->g, cq);
}

/* A successful send completion of s's QP. */
static void send_ok(struct side *s)
{
	uint8_t cqe[RG_CQE_SIZE];

	cqe_get(s, &s->scq, cqe);
	assert_int_equal(rg_cqe_type(cqe), RG_CQE_SEND_MSN);
	assert_int_equal(rg_cqe_qid(cqe), s->qp.id);
	assert_false(rg_cqe_error(cqe));
}

/* A successful receive completion: its wqe_id, op and length (and imm when has_imm). */
static void recv_ok(struct side *s, uint64_t id, uint32_t op, uint32_t len, const struct side *from,
		    uint32_t imm)
{
	uint8_t cqe[RG_CQE_SIZE];

	cqe_get(s, &s->rcq, cqe);
	assert_int_equal(rg_cqe_type(cqe), RG_CQE_RECV);
	assert_false(rg_cqe_error(cqe));
	assert_int_equal(rg_cqe_wqe_id(cqe), id);
	assert_int_equal(rg_cqe_src_qpn_op(cqe) & 0xffffff, from->qp.id);
	assert_int_equal(rg_cqe_src_qpn_op(cqe) >> 24 & 0xf, op);
	assert_int_equal(rg_cqe_status(cqe), len);
	if (op == RG_RECV_SEND_IMM || op == RG_RECV_RDMA_IMM)
		assert_int_equal(rg_cqe_imm(cqe), imm);
}

/* No completion on cq for ms. */
static void no_cqe(struct side *s, struct rg_cq *cq, int ms)
{
	uint8_t cqe[RG_CQE_SIZE];

	assert_false(rg_cq_wait(&s->g, cq, cqe, ms));
}

/* ---- the tests ------------------------------------------------------------------------------------ */

static void test_connect(void **state)
{
	(void)state;
	side_up(&A, &B);
	side_up(&B, &A);
	assert_int_equal(rg_qp_state(&A.g, &A.aq, QPN, RG_SCRATCH + 0x8000), RG_QPS_RTS);
	assert_int_equal(rg_qp_state(&B.g, &B.aq, QPN, RG_SCRATCH + 0x8000), RG_QPS_RTS);
	/* B's Ethernet queues too, receiving everything: what reaches them is checked below */
	assert_int_equal(ionic_guest_queues_up(&B.g), 0);
	capture(); /* nothing of interest yet; empties the socket */
}

/* An IPv4/UDP frame to B's MAC and address, from a host on the bridge, to UDP port dport. */
static size_t udp_frame(uint8_t *f, uint16_t dport)
{
	static const uint8_t smac[6] = { 0x02, 0, 0, 0, 0, 0x99 };
	uint8_t *ip = f + 14, *udp = f + 34;
	uint16_t sum;

	memset(f, 0, 100);
	memcpy(f, B.mac, 6);
	memcpy(f + 6, smac, 6);
	rg_be16(f + 12, 0x0800);
	ip[0] = 0x45;
	rg_be16(ip + 2, 20 + 8 + 44);
	ip[8] = 64;
	ip[9] = 17;
	rg_be32(ip + 12, 0xc0a8c863);
	rg_be32(ip + 16, B.ip);
	sum = (uint16_t)~rg_csum_fold(ip, 20);
	rg_be16(ip + 10, sum);
	rg_be16(udp + 0, 0xc000);
	rg_be16(udp + 2, dport);
	rg_be16(udp + 4, 8 + 44);
	udp[8] = OP_SEND_ONLY;      /* a BTH, for the RoCEv2 one: to a QPN B does not have */
	udp[15] = 0x99;
	return 14 + 20 + 8 + 44;
}

/*
 * B's Ethernet receive queue (receiving everything) got none of the RoCEv2 frames so far, nor a
 * RoCEv2 frame sent to B's MAC from the bridge; a frame to another UDP port does reach it.
 */
static void test_eth_untouched(void **state)
{
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_halen = 6 };
	uint8_t f[2048];
	int fd, n, other = 0;
	size_t len;

	(void)state;
	fd = socket(AF_PACKET, SOCK_RAW, 0);
	assert_true(fd >= 0);
	sll.sll_ifindex = (int)if_nametoindex(tap_b_name);
	assert_true(sll.sll_ifindex > 0);
	memcpy(sll.sll_addr, B.mac, 6);
	len = udp_frame(f, UDP_ROCE);
	assert_int_equal(sendto(fd, f, len, 0, (struct sockaddr *)&sll, sizeof(sll)), (ssize_t)len);
	len = udp_frame(f, 5000);
	assert_int_equal(sendto(fd, f, len, 0, (struct sockaddr *)&sll, sizeof(sll)), (ssize_t)len);
	close(fd);
	while ((n = ionic_guest_rx(&B.g, f, sizeof(f), 500)) > 0) {
		bool udp4 = n >= 42 && f[12] == 0x08 && f[13] == 0x00 && f[23] == 17;

		assert_false(udp4 && rg_get_be16(f + 36) == UDP_ROCE);
		other += udp4 && rg_get_be16(f + 36) == 5000;
	}
	assert_int_equal(other, 1);
}

/* SEND of 5000 bytes at a 1024-byte MTU: FIRST, three MIDDLEs, LAST; one ACK back. */
static void test_send_multi_mtu(void **state)
{
	struct frame f[16];
	unsigned n;

	(void)state;
	fill(gp(&A, SRC), 5000, 1);
	memset(gp(&B, RECV), 0, 8192);
	recv_post(&B, 0x51, RECV, 8192);
	send_post(&A, RG_WR_SEND, 0, SRC, 5000);
	send_ok(&A);
	recv_ok(&B, 0x51, RG_RECV_SEND, 5000, &A, 0);
	assert_memory_equal(gp(&B, RECV), gp(&A, SRC), 5000);
	assert_int_equal(gp(&B, RECV)[5000], 0);
	capture();
	n = frames_between(&A, &B, f, 16);
	assert_int_equal(n, 5);
	check_request(f, n, &A, &B, A.sq_psn);
	assert_int_equal(f[0].opcode, OP_SEND_FIRST);
	assert_int_equal(f[1].opcode, OP_SEND_MIDDLE);
	assert_int_equal(f[3].opcode, OP_SEND_MIDDLE);
	assert_int_equal(f[4].opcode, OP_SEND_LAST);
	assert_int_equal(f[0].payload, PMTU);
	assert_int_equal(f[4].payload, 5000 - 4 * PMTU);
	n = frames_between(&B, &A, f, 16);
	assert_true(n >= 1);
	assert_int_equal(f[n - 1].opcode, OP_ACK);
	assert_int_equal(f[n - 1].syndrome >> 5, 0); /* an ACK */
	assert_int_equal(f[n - 1].psn, (A.sq_psn + 4) & 0xffffff);
	A.sq_psn += 5;
}

static void test_send_imm(void **state)
{
	struct frame f[4];

	(void)state;
	fill(gp(&A, SRC), 100, 2);
	recv_post(&B, 0x52, RECV, 4096);
	send_post(&A, RG_WR_SEND_IMM, 0x12345678, SRC, 100);
	send_ok(&A);
	recv_ok(&B, 0x52, RG_RECV_SEND_IMM, 100, &A, 0x12345678);
	assert_memory_equal(gp(&B, RECV), gp(&A, SRC), 100);
	capture();
	assert_int_equal(frames_between(&A, &B, f, 4), 1);
	assert_int_equal(f[0].opcode, OP_SEND_ONLY_IMM);
	A.sq_psn += 1;
}

/* RDMA WRITE of 3000 bytes, then WRITE with immediate of 2500: bytes in B's memory, B's receive for the immediate. */
static void test_write(void **state)
{
	struct frame f[16];
	unsigned n;

	(void)state;
	fill(gp(&A, SRC), 5500, 3);
	memset(gp(&B, TARGET), 0, 8192);
	rdma_post(&A, RG_WR_RDMA_WRITE, 0, TARGET, LKEY, SRC, 3000);
	send_ok(&A);
	assert_memory_equal(gp(&B, TARGET), gp(&A, SRC), 3000);
	assert_int_equal(gp(&B, TARGET)[3000], 0);
	no_cqe(&B, &B.rcq, 50); /* a plain WRITE takes no receive */
	recv_post(&B, 0x53, RECV, 16);
	rdma_post(&A, RG_WR_RDMA_WRITE_IMM, 0xcafe0001, TARGET + 3000, LKEY, SRC + 3000, 2500);
	send_ok(&A);
	recv_ok(&B, 0x53, RG_RECV_RDMA_IMM, 2500, &A, 0xcafe0001);
	assert_memory_equal(gp(&B, TARGET), gp(&A, SRC), 5500);
	capture();
	n = frames_between(&A, &B, f, 16);
	assert_int_equal(n, 6);
	check_request(f, n, &A, &B, A.sq_psn);
	assert_int_equal(f[0].opcode, OP_WRITE_FIRST);
	assert_int_equal(f[1].opcode, OP_WRITE_MIDDLE);
	assert_int_equal(f[2].opcode, OP_WRITE_LAST);
	assert_int_equal(f[3].opcode, OP_WRITE_FIRST);
	assert_int_equal(f[5].opcode, OP_WRITE_LAST_IMM);
	A.sq_psn += 6;
}

/* RDMA READ of 3500 bytes from B: one request, four responses FIRST, MIDDLE, MIDDLE, LAST. */
static void test_read(void **state)
{
	struct frame f[16];
	unsigned n;

	(void)state;
	fill(gp(&B, TARGET), 3500, 4);
	memset(gp(&A, READ_TO), 0, 8192);
	rdma_post(&A, RG_WR_RDMA_READ, 0, TARGET, LKEY, READ_TO, 3500);
	send_ok(&A);
	assert_memory_equal(gp(&A, READ_TO), gp(&B, TARGET), 3500);
	assert_int_equal(gp(&A, READ_TO)[3500], 0);
	capture();
	n = frames_between(&A, &B, f, 16);
	assert_int_equal(n, 1);
	check_request(f, 1, &A, &B, A.sq_psn);
	assert_int_equal(f[0].opcode, OP_READ_REQ);
	n = frames_between(&B, &A, f, 16);
	assert_int_equal(n, 4);
	assert_int_equal(f[0].opcode, OP_READ_RESP_FIRST);
	assert_int_equal(f[1].opcode, OP_READ_RESP_MIDDLE);
	assert_int_equal(f[3].opcode, OP_READ_RESP_LAST);
	for (unsigned i = 0; i < 4; i++) {
		assert_int_equal(f[i].psn, (A.sq_psn + i) & 0xffffff);
		assert_int_equal(f[i].dqpn, A.qp.id);
	}
	A.sq_psn += 4;
}

static void test_atomics(void **state)
{
	struct rg_sge res = { RESULT, 8, LKEY };
	struct frame f[8];
	uint64_t v0 = 0x1122334455667788ull;

	(void)state;
	rg_le64(gp(&B, ATOMIC), v0);
	memset(gp(&A, RESULT), 0xee, 8);
	/* compare-and-swap that hits */
	rg_post_atomic(&A.g, &A.qp, ++A.wqe_id, RG_WR_ATOMIC_CS, RG_WQE_SIG, ATOMIC, LKEY, 0xabcdef, v0, &res);
	rg_sq_ring(&A.g, &A.qp);
	send_ok(&A);
	assert_int_equal(rg_get_le64(gp(&A, RESULT)), v0);
	assert_int_equal(rg_get_le64(gp(&B, ATOMIC)), 0xabcdef);
	/* compare-and-swap that misses: the value stays, the original comes back */
	rg_post_atomic(&A.g, &A.qp, ++A.wqe_id, RG_WR_ATOMIC_CS, RG_WQE_SIG, ATOMIC, LKEY, 1, 2, &res);
	rg_sq_ring(&A.g, &A.qp);
	send_ok(&A);
	assert_int_equal(rg_get_le64(gp(&A, RESULT)), 0xabcdef);
	assert_int_equal(rg_get_le64(gp(&B, ATOMIC)), 0xabcdef);
	/* fetch-and-add */
	rg_post_atomic(&A.g, &A.qp, ++A.wqe_id, RG_WR_ATOMIC_FA, RG_WQE_SIG, ATOMIC, LKEY, 0x1000, 0, &res);
	rg_sq_ring(&A.g, &A.qp);
	send_ok(&A);
	assert_int_equal(rg_get_le64(gp(&A, RESULT)), 0xabcdef);
	assert_int_equal(rg_get_le64(gp(&B, ATOMIC)), 0xabcdef + 0x1000);
	capture();
	assert_int_equal(frames_between(&A, &B, f, 8), 3);
	check_request(f, 3, &A, &B, A.sq_psn);
	assert_int_equal(f[0].opcode, OP_CMP_SWAP);
	assert_int_equal(f[2].opcode, OP_FETCH_ADD);
	assert_int_equal(frames_between(&B, &A, f, 8), 3);
	assert_int_equal(f[0].opcode, OP_ATOMIC_ACK);
	A.sq_psn += 3;
}

/* Every frame from `from` to `to` that the last capture() saw, into the ring out[max] (*n counts all: the last max kept). */
static void keep_all(const struct side *from, const struct side *to, struct frame *out, unsigned max, unsigned *n)
{
	for (unsigned i = 0; i < nframes; i++) {
		if (frames[i].sip != from->ip || frames[i].dip != to->ip)
			continue;
		out[*n % max] = frames[i];
		(*n)++;
	}
}

/* A SEND that finds no receive: RNR NAKs, no completion, until B posts one; then it lands whole. */
static void test_rnr(void **state)
{
	struct frame f[64], req[256];
	unsigned n, rnr = 0, sent = 0;
	bool whole = false;

	(void)state;
	fill(gp(&A, SRC), 1500, 5);
	send_post(&A, RG_WR_SEND, 0, SRC, 1500);
	no_cqe(&A, &A.scq, 200);
	capture();
	n = frames_between(&B, &A, f, 64);
	for (unsigned i = 0; i < n; i++)
		if (f[i].opcode == OP_ACK && f[i].syndrome >> 5 == 1) /* RNR NAK */
			rnr++;
	assert_true(rnr >= 1);
	keep_all(&A, &B, req, 256, &sent);
	recv_post(&B, 0x55, RECV, 4096);
	send_ok(&A);
	recv_ok(&B, 0x55, RG_RECV_SEND, 1500, &A, 0);
	assert_memory_equal(gp(&B, RECV), gp(&A, SRC), 1500);
	/*
	 * The SEND went again from its first PSN, and B acknowledged its last. Over both looks at
	 * the wire, every request A sent is the SEND's FIRST or LAST at their PSNs, and at least once
	 * a FIRST went with its LAST right behind it. Which go succeeded, and whether a timer sent
	 * a packet once more on a loaded machine, the wire does not say; only that nothing else went.
	 */
	capture();
	keep_all(&A, &B, req, 256, &sent);
	assert_true(sent >= 2);
	for (unsigned i = sent > 256 ? sent - 256 : 0; i < sent; i++) {
		const struct frame *r = &req[i % 256], *next = &req[(i + 1) % 256];

		assert_true(r->opcode == OP_SEND_FIRST || r->opcode == OP_SEND_LAST);
		check_request(r, 1, &A, &B, (A.sq_psn + (r->opcode == OP_SEND_LAST)) & 0xffffff);
		whole |= i + 1 < sent && r->opcode == OP_SEND_FIRST && next->opcode == OP_SEND_LAST;
	}
	assert_true(whole);
	n = frames_between(&B, &A, f, 64);
	if (n == 0)
		dump_frames("test_rnr, after the SEND completed");
	assert_true(n >= 1);
	assert_int_equal(f[n - 1].opcode, OP_ACK);
	assert_int_equal(f[n - 1].syndrome >> 5, 0);
	assert_int_equal(f[n - 1].psn, (A.sq_psn + 1) & 0xffffff);
	A.sq_psn += 2;
}

/* B to A: a SEND of 2100 bytes and a READ of A's memory; B's PSNs cross the 24-bit wrap. */
static void test_other_direction(void **state)
{
	struct frame f[16];
	unsigned n;

	(void)state;
	fill(gp(&B, SRC), 2100, 6);
	recv_post(&A, 0x61, RECV, 4096);
	send_post(&B, RG_WR_SEND, 0, SRC, 2100);
	send_ok(&B);
	recv_ok(&A, 0x61, RG_RECV_SEND, 2100, &B, 0);
	assert_memory_equal(gp(&A, RECV), gp(&B, SRC), 2100);
	fill(gp(&A, TARGET), 5000, 7);
	memset(gp(&B, READ_TO), 0, 8192);
	rdma_post(&B, RG_WR_RDMA_READ, 0, TARGET, LKEY, READ_TO, 5000);
	send_ok(&B);
	assert_memory_equal(gp(&B, READ_TO), gp(&A, TARGET), 5000);
	capture();
	n = frames_between(&B, &A, f, 16);
	assert_int_equal(n, 4); /* SEND FIRST, MIDDLE, LAST; READ request */
	check_request(f, n, &B, &A, B.sq_psn);
	n = frames_between(&A, &B, f, 16);
	assert_true(n >= 5); /* the SEND's ACK, five READ responses */
	B.sq_psn += 3 + 5;
}

/* Both QPs through RESET to RTS again with fresh PSNs (what a reconnection does), A's read depth
 * rrq_depth as ionic_modify_qp sends it (0: the default). */
static void reconnect_rrq(uint32_t psn_a, uint32_t psn_b, uint8_t rrq_depth)
{
	uint8_t t[RG_ROCE4_HDR_LEN];
	struct rg_qp_path path;
	struct side *s[2] = { &A, &B };

	A.sq_psn = psn_a;
	B.sq_psn = psn_b;
	for (int k = 0; k < 2; k++) {
		struct side *me = s[k], *peer = s[k ^ 1];
		uint8_t cqe[RG_CQE_SIZE];

		rg_roce4_template(t, peer->mac, me->mac, me->ip, peer->ip, 0, 64);
		path = (struct rg_qp_path){ .tmpl = t, .len = sizeof(t), .at = TMPL, .sq_psn = me->sq_psn,
					    .rq_psn = peer->sq_psn, .pmtu_log2 = 10,
					    .rrq_depth = me == &A ? rrq_depth : 0 };
		assert_int_equal(rg_qp_to_rts_path(&me->g, &me->aq, &me->qp, QPN, ACCESS, &path), 0);
		/* what the error left in the CQs (flush notices) is not this test's */
		while (rg_cq_poll(&me->g, &me->scq, cqe) || rg_cq_poll(&me->g, &me->rcq, cqe))
			;
		rg_cq_ack(&me->g, &me->scq);
		rg_cq_ack(&me->g, &me->rcq);
	}
}

static void reconnect(uint32_t psn_a, uint32_t psn_b)
{
	reconnect_rrq(psn_a, psn_b, 0);
}

/*
 * A SEND with a bad lkey behind two good ones: the device refuses it itself, but its error
 * completion comes only after the two before it have completed over the wire, in order. Then the
 * QPs are connected again (through RESET) and work.
 */
static void test_local_error_in_order(void **state)
{
	struct rg_sge sge = { SRC, 64, RG_KEY(MR_IDX + 2, 0x11) };
	uint8_t cqe[RG_CQE_SIZE];

	(void)state;
	fill(gp(&A, SRC), 4000, 9);
	recv_post(&B, 0x71, RECV, 4096);
	recv_post(&B, 0x72, RECV + 4096, 4096);
	send_post(&A, RG_WR_SEND, 0, SRC, 3000);
	send_post(&A, RG_WR_SEND, 0, SRC + 3000, 1000);
	rg_post_send(&A.g, &A.qp, ++A.wqe_id, RG_WR_SEND, RG_WQE_SIG, 0, 0, 0, 0, &sge, 1);
	rg_sq_ring(&A.g, &A.qp);
	send_ok(&A);
	send_ok(&A);
	cqe_get(&A, &A.scq, cqe);
	assert_true(rg_cqe_error(cqe));
	assert_int_equal(rg_cqe_status(cqe), RG_STS_LOCAL_PROT);
	recv_ok(&B, 0x71, RG_RECV_SEND, 3000, &A, 0);
	recv_ok(&B, 0x72, RG_RECV_SEND, 1000, &A, 0);
	assert_memory_equal(gp(&B, RECV), gp(&A, SRC), 3000);
	assert_memory_equal(gp(&B, RECV + 4096), gp(&A, SRC + 3000), 1000);
	assert_int_equal(rg_qp_state(&A.g, &A.aq, QPN, RG_SCRATCH + 0x8000), RG_QPS_ERR);
	assert_int_equal(rg_qp_state(&B.g, &B.aq, QPN, RG_SCRATCH + 0x8000), RG_QPS_RTS);

	reconnect(0x777000, 0x10);
	fill(gp(&A, SRC), 2000, 10);
	recv_post(&B, 0x73, RECV, 4096);
	send_post(&A, RG_WR_SEND, 0, SRC, 2000);
	send_ok(&A);
	recv_ok(&B, 0x73, RG_RECV_SEND, 2000, &A, 0);
	assert_memory_equal(gp(&B, RECV), gp(&A, SRC), 2000);
	A.sq_psn += 2;
	capture();
}

/* B's BIND_MW of window mw_rkey (new key byte) over [va, va + len) of its MR 6: completes on its own. */
#define MW_MR    RG_KEY(MR_IDX + 3, 0x66)
static void mw_bind(uint32_t mw_rkey, uint8_t key, uint64_t va, uint32_t len, uint16_t flags)
{
	uint8_t cqe[RG_CQE_SIZE];
	uint64_t id = ++B.wqe_id;

	rg_post_bind_mw(&B.g, &B.qp, id, RG_WQE_SIG, mw_rkey, key, va, len, MW_MR, flags);
	rg_sq_ring(&B.g, &B.qp);
	cqe_get(&B, &B.scq, cqe);
	assert_int_equal(rg_cqe_type(cqe), RG_CQE_SEND_NPG);
	assert_int_equal(rg_cqe_npg_id(cqe), id);
	assert_false(rg_cqe_error(cqe));
}

/* A's next send completion is an error with status sts; both QPs end in ERR. */
static void both_in_error(uint32_t sts)
{
	uint8_t cqe[RG_CQE_SIZE];

	cqe_get(&A, &A.scq, cqe);
	assert_true(rg_cqe_error(cqe));
	assert_int_equal(rg_cqe_status(cqe), sts);
	assert_int_equal(rg_qp_state(&A.g, &A.aq, QPN, RG_SCRATCH + 0x8000), RG_QPS_ERR);
	assert_int_equal(rg_qp_state(&B.g, &B.aq, QPN, RG_SCRATCH + 0x8000), RG_QPS_ERR);
}

/*
 * Memory windows across the wire: B binds a type 2 window (bound to its QP) on a region of its
 * own; A's multi-packet WRITE and READ go through the window's rkey, byte-exact, and a SEND
 * with invalidate naming it frees it, after which a WRITE through it is NAKed (remote access
 * error). Then a type 1 window: a WRITE through it works, and a SEND with invalidate naming it
 * is an invalid request (a type 1 window cannot be invalidated), NAKed.
 */
static void test_mw(void **state)
{
	const uint64_t win = TARGET + 0x1000;
	uint32_t w2 = RG_KEY(9, 0x91), w1 = RG_KEY(10, 0xa1);
	const uint16_t rw = RG_MRF_LOCAL_WRITE | RG_MRF_REMOTE_WRITE | RG_MRF_REMOTE_READ;
	uint8_t cqe[RG_CQE_SIZE];
	struct frame f[16];
	unsigned n;

	(void)state;
	assert_int_equal(rg_mr_create(&B.g, &B.aq, MR_IDX + 3, 0x66, PD, TARGET, 0x10000, 1, TARGET,
				      RG_MRF_LOCAL_WRITE | RG_MRF_MW_BIND, 12), RG_ASTS_OK);
	assert_int_equal(rg_mr_create(&B.g, &B.aq, 9, 0x90, PD, 0, 0, 0, 0, RG_MRF_MW2, 0), RG_ASTS_OK);
	assert_int_equal(rg_mr_create(&B.g, &B.aq, 10, 0xa0, PD, 0, 0, 0, 0, RG_MRF_MW1, 0), RG_ASTS_OK);
	mw_bind(RG_KEY(9, 0x90), 0x91, win, 0x2000, rw | RG_MRF_MW2);
	fill(gp(&A, SRC), 3000, 21);
	memset(gp(&B, TARGET), 0, 0x4000);
	rdma_post(&A, RG_WR_RDMA_WRITE, 0, win + 0x100, w2, SRC, 3000);
	send_ok(&A);
	assert_memory_equal(gp(&B, win + 0x100), gp(&A, SRC), 3000);
	assert_int_equal(gp(&B, win + 0xff)[0], 0);
	assert_int_equal(gp(&B, win + 0x100 + 3000)[0], 0);
	fill(gp(&B, win + 0x1000), 2000, 22);
	memset(gp(&A, READ_TO), 0, 4096);
	rdma_post(&A, RG_WR_RDMA_READ, 0, win + 0x1000, w2, READ_TO, 2000);
	send_ok(&A);
	assert_memory_equal(gp(&A, READ_TO), gp(&B, win + 0x1000), 2000);
	/* SEND with invalidate naming it: B's receive reports the key; the window is free. */
	recv_post(&B, 0x81, RECV, 64);
	send_post(&A, RG_WR_SEND_INV, w2, SRC, 16);
	send_ok(&A);
	recv_ok(&B, 0x81, RG_RECV_SEND_INV, 16, &A, 0);
	rdma_post(&A, RG_WR_RDMA_WRITE, 0, win + 0x100, w2, SRC + 100, 64);
	both_in_error(RG_STS_REMOTE_ACC);
	assert_memory_equal(gp(&B, win + 0x100), gp(&A, SRC), 64); /* unchanged */
	capture();
	n = frames_between(&B, &A, f, 16);
	assert_true(n >= 1);
	assert_int_equal(f[n - 1].opcode, OP_ACK);
	assert_int_equal(f[n - 1].syndrome, 0x60 | 2); /* NAK: remote access error */

	reconnect(0x3000, 0x4000);
	mw_bind(RG_KEY(10, 0xa0), 0xa1, win, 0x100, rw | RG_MRF_MW1);
	rdma_post(&A, RG_WR_RDMA_WRITE, 0, win + 0x80, w1, SRC + 200, 0x80);
	send_ok(&A);
	assert_memory_equal(gp(&B, win + 0x80), gp(&A, SRC + 200), 0x80);
	recv_post(&B, 0x82, RECV, 64);
	send_post(&A, RG_WR_SEND_INV, w1, SRC, 16);
	both_in_error(RG_STS_REMOTE_INV_REQ);
	cqe_get(&B, &B.rcq, cqe);
	assert_true(rg_cqe_error(cqe));
	capture();
	n = frames_between(&B, &A, f, 16);
	assert_true(n >= 1);
	assert_int_equal(f[n - 1].opcode, OP_ACK);
	assert_int_equal(f[n - 1].syndrome, 0x60 | 1); /* NAK: invalid request */
	reconnect(0x5000, 0x6000);
	assert_int_equal(rg_mr_destroy(&B.g, &B.aq, RG_KEY(MR_IDX + 3, 0x66)), RG_ASTS_BAD_STATE); /* w1 bound */
	assert_int_equal(rg_mr_destroy(&B.g, &B.aq, w1), RG_ASTS_OK);
	assert_int_equal(rg_mr_destroy(&B.g, &B.aq, RG_KEY(9, 0x91)), RG_ASTS_OK);
	assert_int_equal(rg_mr_destroy(&B.g, &B.aq, RG_KEY(MR_IDX + 3, 0x66)), RG_ASTS_OK);
}

/*
 * The initiator depth the driver asked for holds on the wire: with max_rd_atomic 1 (ionic_modify_qp
 * sends rrq_depth = order_base_2(1 + 2) - 1 = 1, and reads back 2^1 - 1 = 1) three READs of three
 * responses each go one at a time: no READ request leaves A before the last response of the one
 * before it has come in. A peer that granted one outstanding READ never sees two.
 */
static void test_max_rd_atomic(void **state)
{
	struct frame f[64];
	unsigned n, reqs = 0, lasts = 0;

	(void)state;
	reconnect_rrq(0x7000, 0x8000, 1);
	fill(gp(&B, TARGET), 3 * 2500, 31);
	memset(gp(&A, READ_TO), 0, 3 * 2500);
	for (int i = 0; i < 3; i++)
		rdma_post(&A, RG_WR_RDMA_READ, 0, TARGET + 2500u * i, LKEY, READ_TO + 2500u * i, 2500);
	for (int i = 0; i < 3; i++)
		send_ok(&A);
	assert_memory_equal(gp(&A, READ_TO), gp(&B, TARGET), 3 * 2500);
	capture();
	/* In the order A's TAP saw them, both ways: each request after the previous one's LAST. */
	n = 0;
	for (unsigned i = 0; i < nframes && n < 64; i++)
		if (!resent(i))
			f[n++] = frames[i];
	for (unsigned i = 0; i < n; i++) {
		if (f[i].sip == A.ip && f[i].opcode == OP_READ_REQ) {
			if (reqs != lasts)
				dump_frames("test_max_rd_atomic");
			assert_int_equal(reqs, lasts); /* the one before it is complete */
			reqs++;
		} else if (f[i].sip == B.ip && f[i].opcode == OP_READ_RESP_LAST) {
			lasts++;
		}
	}
	assert_int_equal(reqs, 3);
	assert_int_equal(lasts, 3);
	reconnect(0x9000, 0xa000);
}

#define UD_QPN  7
#define UD_CQ   12
#define UD_QKEY 0x1234u
#define UD_AH   2
#define OP_UD_SEND_ONLY     0x64
#define OP_UD_SEND_ONLY_IMM 0x65

/* QP id of type on side s, on one CQ, rings at sq and rq of 2^depth_log2 WQEs of 128 bytes, created. */
static void qp_make(struct side *s, struct rg_qp *q, uint32_t id, uint8_t type, uint32_t priv_flags, uint32_t cq,
		    uint64_t sq, uint64_t rq, unsigned depth_log2)
{
	memset(q, 0, sizeof(*q));
	q->id = id;
	q->type = type;
	q->priv_flags = priv_flags;
	q->pd = PD;
	q->sq_cq = q->rq_cq = cq;
	q->sq = sq;
	q->rq = rq;
	q->sq_depth_log2 = q->rq_depth_log2 = depth_log2;
	q->sq_stride_log2 = q->rq_stride_log2 = 7;
	assert_int_equal(rg_qp_create(&s->g, &s->aq, q), 0);
}

/* ---- UC ---- */

#define UC_QPN  9
#define UC_SQ   (MR_BASE + 0xc0000) /* rings of the UC QPs, in a part of the region nothing else uses */
#define UC_RQ   (MR_BASE + 0xc2000)
#define UC_CQ   13
#define UC_CQR  (MR_BASE + 0xc4000)  /* its own CQ: the RC CQs may hold the flushes of test_bad_rkey */

static struct rg_qp uc_qp[2];
static struct rg_cq uc_cq[2];

/* A UC QP on side s, connected to the peer's, in RTS with PSN psn (the peer sends from rq_psn). */
static void uc_up(struct side *s, struct side *peer, struct rg_qp *q, struct rg_cq *cq, uint32_t psn,
		  uint32_t rq_psn)
{
	uint8_t t[RG_ROCE4_HDR_LEN];
	struct rg_qp_path path;

	assert_int_equal(rg_cq_create_aq(&s->g, &s->aq, cq, UC_CQ, 0, 8, UC_CQR), RG_ASTS_OK);
	qp_make(s, q, UC_QPN, RG_QPT_UC, 0, UC_CQ, UC_SQ, UC_RQ, 4);
	rg_roce4_template(t, peer->mac, s->mac, s->ip, peer->ip, 0, 64);
	path = (struct rg_qp_path){ .tmpl = t, .len = sizeof(t), .at = TMPL, .sq_psn = psn, .rq_psn = rq_psn,
				    .pmtu_log2 = 10 };
	assert_int_equal(rg_qp_to_rts_path(&s->g, &s->aq, q, UC_QPN, RG_QPF_REMOTE_WRITE, &path), 0);
}

/* The next completion on cq: successful, of UC_QPN, of the given type. */
static void uc_cqe_ok(struct side *s, struct rg_cq *cq, uint8_t type, uint8_t cqe[RG_CQE_SIZE])
{
	cqe_get(s, cq, cqe);
	assert_int_equal(rg_cqe_type(cqe), type);
	assert_int_equal(rg_cqe_qid(cqe), UC_QPN);
	assert_false(rg_cqe_error(cqe));
}

/*
 * UC between the two servers: a three-packet SEND and a two-packet RDMA WRITE with immediate
 * from A, each complete at A at once, B's receive and memory holding the bytes; on the wire the
 * UC opcodes (0x20..), consecutive PSNs, no AckReq, and nothing at all from B back to A's UC QP.
 */
static void test_uc(void **state)
{
	struct frame f[16];
	struct rg_sge sge;
	uint8_t cqe[RG_CQE_SIZE];
	unsigned n;

	(void)state;
	uc_up(&A, &B, &uc_qp[0], &uc_cq[0], 0x500, 0x600);
	uc_up(&B, &A, &uc_qp[1], &uc_cq[1], 0x600, 0x500);
	capture(); /* what came before is not this test's */
	fill(gp(&A, SRC), 5000, 11);
	memset(gp(&B, RECV), 0, 8192);
	memset(gp(&B, TARGET), 0, 4096);
	sge = (struct rg_sge){ RECV, 8192, LKEY };
	rg_post_recv(&B.g, &uc_qp[1], 0x71, 0, &sge, 1);
	rg_rq_ring(&B.g, &uc_qp[1]);
	sge = (struct rg_sge){ RECV + 8192, 64, LKEY };
	rg_post_recv(&B.g, &uc_qp[1], 0x72, 0, &sge, 1);
	rg_rq_ring(&B.g, &uc_qp[1]);
	sge = (struct rg_sge){ SRC, 3000, LKEY };
	rg_post_send(&A.g, &uc_qp[0], 0x81, RG_WR_SEND, RG_WQE_SIG, 0, 0, 0, 0, &sge, 1);
	sge = (struct rg_sge){ SRC + 3000, 2000, LKEY };
	rg_post_rdma(&A.g, &uc_qp[0], 0x82, RG_WR_RDMA_WRITE_IMM, RG_WQE_SIG, 0xbeef0001, TARGET, LKEY, &sge, 1);
	rg_sq_ring(&A.g, &uc_qp[0]);
	uc_cqe_ok(&A, &uc_cq[0], RG_CQE_SEND_MSN, cqe);
	uc_cqe_ok(&A, &uc_cq[0], RG_CQE_SEND_MSN, cqe);
	uc_cqe_ok(&B, &uc_cq[1], RG_CQE_RECV, cqe);
	assert_int_equal(rg_cqe_wqe_id(cqe), 0x71);
	assert_int_equal(rg_cqe_status(cqe), 3000);
	assert_int_equal(rg_cqe_src_qpn_op(cqe) >> 24 & 0xf, RG_RECV_SEND);
	uc_cqe_ok(&B, &uc_cq[1], RG_CQE_RECV, cqe);
	assert_int_equal(rg_cqe_wqe_id(cqe), 0x72);
	assert_int_equal(rg_cqe_src_qpn_op(cqe) >> 24 & 0xf, RG_RECV_RDMA_IMM);
	assert_int_equal(rg_cqe_imm(cqe), 0xbeef0001);
	assert_memory_equal(gp(&B, RECV), gp(&A, SRC), 3000);
	assert_int_equal(gp(&B, RECV)[3000], 0);
	assert_memory_equal(gp(&B, TARGET), gp(&A, SRC) + 3000, 2000);
	assert_int_equal(gp(&B, TARGET)[2000], 0);
	capture();
	n = frames_between(&A, &B, f, 16);
	if (n != 5)
		dump_frames("test_uc");
	assert_int_equal(n, 5);
	for (unsigned i = 0; i < n; i++) {
		assert_int_equal(f[i].dqpn, UC_QPN);
		assert_int_equal(f[i].psn, 0x500 + i);
	}
	assert_int_equal(f[0].opcode, 0x20); /* UC SEND FIRST */
	assert_int_equal(f[1].opcode, 0x21); /* MIDDLE */
	assert_int_equal(f[2].opcode, 0x22); /* LAST */
	assert_int_equal(f[3].opcode, 0x26); /* UC RDMA WRITE FIRST */
	assert_int_equal(f[4].opcode, 0x29); /* LAST with immediate */
	assert_int_equal(f[0].payload, PMTU);
	assert_int_equal(f[2].payload, 3000 - 2 * PMTU);
	/* UC answers nothing */
	assert_int_equal(frames_between(&B, &A, f, 16), 0);
}

static struct rg_qp ud_qp[2], gsi_qp[2];
static struct rg_cq ud_cq[2];

/* A UD QP id on side s, rings at sq and rq of 2^depth_log2 WQEs, on UD_CQ, taken to RTS with qkey. */
static void ud_qp_up(struct side *s, struct rg_qp *q, uint32_t id, uint32_t priv_flags, uint64_t sq, uint64_t rq,
		     unsigned depth_log2, uint32_t qkey)
{
	qp_make(s, q, id, RG_QPT_UD, priv_flags, UD_CQ, sq, rq, depth_log2);
	assert_int_equal(rg_qp_to_rts(&s->g, &s->aq, q, qkey, 0), 0);
}

static void ud_up(struct side *s, int k)
{
	assert_int_equal(rg_cq_create_aq(&s->g, &s->aq, &ud_cq[k], UD_CQ, 0, 8, RG_CQ_RING(3)), RG_ASTS_OK);
	ud_qp_up(s, &ud_qp[k], UD_QPN, 0, RG_SCRATCH + 0xa000, RG_SCRATCH + 0xc000, 6, UD_QKEY);
}

/*
 * UD from A to B through an address handle naming B: SEND with immediate and plain SEND as UD
 * SEND ONLY datagrams with a DETH; B's receive gets the 40-byte GRH area (the datagram's IPv4
 * header in its last 20 bytes), the payload, A's QPN and MAC. A datagram with the wrong Q_Key is
 * dropped and leaves B's receive for the next one.
 */
static void test_ud(void **state)
{
	uint8_t t[RG_ROCE4_HDR_LEN], cqe[RG_CQE_SIZE], *grh;
	struct rg_sge sge = { SRC, 600, LKEY }, rsge = { RECV, 40 + 600, LKEY };
	struct frame f[8];
	unsigned n;

	(void)state;
	ud_up(&A, 0);
	ud_up(&B, 1);
	rg_roce4_template(t, B.mac, A.mac, A.ip, B.ip, 0, 64);
	assert_int_equal(rg_ah_create(&A.g, &A.aq, UD_AH, PD, RG_SCRATCH + 0x9000, t, sizeof(t)), RG_ASTS_OK);
	fill(gp(&A, SRC), 600, 11);
	memset(gp(&B, RECV), 0, 1024);
	rg_post_recv(&B.g, &ud_qp[1], 0x81, 0, &rsge, 1);
	rg_rq_ring(&B.g, &ud_qp[1]);

	/* the wrong Q_Key: dropped at B, A's send completes all the same (UD is unreliable) */
	rg_post_ud(&A.g, &ud_qp[0], 0x90, RG_WR_SEND, RG_WQE_SIG, 0, UD_AH, UD_QPN, 0x9999, &sge, 1);
	rg_sq_ring(&A.g, &ud_qp[0]);
	cqe_get(&A, &ud_cq[0], cqe);
	assert_int_equal(rg_cqe_type(cqe), RG_CQE_SEND_NPG);
	assert_false(rg_cqe_error(cqe));
	assert_false(rg_cq_wait(&B.g, &ud_cq[1], cqe, 200));

	rg_post_ud(&A.g, &ud_qp[0], 0x91, RG_WR_SEND_IMM, RG_WQE_SIG, 0xfeed0001, UD_AH, UD_QPN, UD_QKEY, &sge, 1);
	rg_sq_ring(&A.g, &ud_qp[0]);
	cqe_get(&A, &ud_cq[0], cqe);
	assert_int_equal(rg_cqe_type(cqe), RG_CQE_SEND_NPG);
	assert_false(rg_cqe_error(cqe));
	assert_int_equal(rg_cqe_npg_id(cqe), 0x91);
	cqe_get(&B, &ud_cq[1], cqe);
	assert_int_equal(rg_cqe_type(cqe), RG_CQE_RECV);
	assert_false(rg_cqe_error(cqe));
	assert_int_equal(rg_cqe_wqe_id(cqe), 0x81);
	assert_int_equal(rg_cqe_src_qpn_op(cqe) & 0xffffff, UD_QPN);
	assert_int_equal(rg_cqe_src_qpn_op(cqe) >> 24 & 0xf, RG_RECV_SEND_IMM);
	assert_true(rg_cqe_src_qpn_op(cqe) & RG_RECV_IPV4);
	assert_int_equal(rg_cqe_imm(cqe), 0xfeed0001);
	assert_int_equal(rg_cqe_status(cqe), 40 + 600);
	assert_memory_equal(cqe + 12, A.mac, 6);
	grh = gp(&B, RECV);
	assert_int_equal(grh[20], 0x45);
	assert_int_equal(grh[29], 17);
	assert_int_equal(rg_get_be32(grh + 32), A.ip);
	assert_int_equal(rg_get_be32(grh + 36), B.ip);
	assert_int_equal(rg_csum_fold(grh + 20, 20), 0xffff);
	assert_memory_equal(grh + 40, gp(&A, SRC), 600);
	capture();
	n = frames_between(&A, &B, f, 8);
	assert_int_equal(n, 2);
	assert_int_equal(f[0].opcode, OP_UD_SEND_ONLY);
	assert_int_equal(f[1].opcode, OP_UD_SEND_ONLY_IMM);
	assert_int_equal(f[1].dqpn, UD_QPN);
	assert_memory_equal(f[1].dmac, B.mac, 6);
	assert_int_equal(frames_between(&B, &A, f, 8), 0); /* no acknowledgement on UD */
}

/*
 * vlan mode: a UD datagram through an address handle whose template carries the 802.1Q tag. B's
 * receive completion says it came tagged (bit 30 of src_qpn_op) and gives the TCI (vlan_tag at
 * byte 18), as ionic_rdma reads them to find the GID of the VLAN netdev; the payload is exact.
 */
static void test_ud_vlan(void **state)
{
	uint8_t t[RG_ROCE4_VLAN_HDR_LEN], cqe[RG_CQE_SIZE];
	struct rg_sge sge = { SRC, 300, LKEY }, rsge = { RECV, 40 + 300, LKEY };

	(void)state;
	ud_up(&A, 0);
	ud_up(&B, 1);
	rg_roce4_template_vlan(t, B.mac, A.mac, A.ip, B.ip, 0, 64, vlan_tci);
	assert_int_equal(rg_ah_create(&A.g, &A.aq, UD_AH, PD, RG_SCRATCH + 0x9000, t, sizeof(t)), RG_ASTS_OK);
	fill(gp(&A, SRC), 300, 21);
	memset(gp(&B, RECV), 0, 1024);
	rg_post_recv(&B.g, &ud_qp[1], 0x82, 0, &rsge, 1);
	rg_rq_ring(&B.g, &ud_qp[1]);
	rg_post_ud(&A.g, &ud_qp[0], 0x92, RG_WR_SEND, RG_WQE_SIG, 0, UD_AH, UD_QPN, UD_QKEY, &sge, 1);
	rg_sq_ring(&A.g, &ud_qp[0]);
	cqe_get(&A, &ud_cq[0], cqe);
	assert_false(rg_cqe_error(cqe));
	cqe_get(&B, &ud_cq[1], cqe);
	assert_int_equal(rg_cqe_type(cqe), RG_CQE_RECV);
	assert_false(rg_cqe_error(cqe));
	assert_true(rg_cqe_src_qpn_op(cqe) & (1u << 30));
	assert_int_equal(rg_get_be16(cqe + 18), vlan_tci);
	assert_int_equal(rg_cqe_status(cqe), 40 + 300);
	assert_memory_equal(gp(&B, RECV) + 40, gp(&A, SRC), 300);
}

#define UD_RBUF  (RECV + 0x1000) /* the receives of the over-long tests, in a 4 KiB guard of GUARD */
#define GUARD    0x5a
#define GSI_QPN  1
#define GSI_SQ   (RG_SCRATCH + 0xe000)

/* All of B's 4 KiB at UD_RBUF still GUARD from byte `from` on: nothing was written there. */
static void guard_intact(uint32_t from)
{
	const uint8_t *p = gp(&B, UD_RBUF);

	for (uint32_t i = from; i < 0x1000; i++)
		if (p[i] != GUARD)
			fail_msg("byte %u of B's receive area written (%#x)", i, p[i]);
}

/* A UD send of A's QP q to QP dqpn at B (through UD_AH), completed successfully at A. */
static void ud_send_ok(struct rg_qp *q, uint64_t id, uint32_t dqpn, uint32_t qkey, uint32_t len)
{
	struct rg_sge sge = { SRC, len, LKEY };
	uint8_t cqe[RG_CQE_SIZE];

	rg_post_ud(&A.g, q, id, RG_WR_SEND, RG_WQE_SIG, 0, UD_AH, dqpn, qkey, &sge, 1);
	rg_sq_ring(&A.g, q);
	cqe_get(&A, &ud_cq[0], cqe);
	assert_int_equal(rg_cqe_type(cqe), RG_CQE_SEND_NPG);
	assert_int_equal(rg_cqe_qid(cqe), q->id);
	assert_false(rg_cqe_error(cqe));
	assert_int_equal(rg_cqe_npg_id(cqe), id);
}

static void ud_recv_post(struct rg_qp *q, uint64_t id, uint64_t va, uint32_t len)
{
	struct rg_sge sge = { va, len, LKEY };

	rg_post_recv(&B.g, q, id, 0, &sge, 1);
	rg_rq_ring(&B.g, q);
}

/*
 * A datagram from A's QP `from` on the wire, longer than B's receive (40 bytes of GRH area + rlen < 40 + len),
 * to B's QP q: the receive completes with LOCAL_LEN (the CQE format of ionic_rdma, as the loopback
 * UD path in ionic-rdma-ci), nothing is written into the receive nor past it, and the QP goes to
 * the error state with its flush notices (receive and send queue), as the driver expects of any
 * receive error. A valid datagram behind it is not delivered: the second receive posted stays
 * untouched. Then the QP back through RESET to RTS takes datagrams again.
 */
static void ud_too_long(struct rg_qp *from, struct rg_qp *q, uint32_t qkey, uint32_t rlen, uint32_t len, uint64_t id0)
{
	uint8_t cqe[RG_CQE_SIZE];
	struct frame f[8];
	unsigned n;

	assert_true(40 + len <= 0x800 && len <= 4096 && rlen < len);
	memset(gp(&B, UD_RBUF), GUARD, 0x1000);
	ud_recv_post(q, id0, UD_RBUF, 40 + rlen);
	ud_recv_post(q, id0 + 1, UD_RBUF + 0x800, 40 + len);
	fill(gp(&A, SRC), len, (uint32_t)id0);
	capture(); /* empties the socket */
	ud_send_ok(from, id0, q->id, qkey, len);
	cqe_get(&B, &ud_cq[1], cqe);
	assert_int_equal(rg_cqe_type(cqe), RG_CQE_RECV);
	assert_int_equal(rg_cqe_qid(cqe), q->id);
	assert_true(rg_cqe_error(cqe));
	assert_int_equal(rg_cqe_status(cqe), RG_STS_LOCAL_LEN);
	assert_int_equal(rg_cqe_wqe_id(cqe), id0);
	assert_int_equal(rg_cqe_src_qpn_op(cqe) & 0xffffff, q->id);
	/* the QP in error: its flush notices, receive queue then send queue */
	cqe_get(&B, &ud_cq[1], cqe);
	assert_int_equal(rg_cqe_type(cqe), RG_CQE_RECV);
	assert_int_equal(rg_cqe_qid(cqe), q->id);
	assert_int_equal(rg_cqe_status(cqe), RG_STS_FLUSHED);
	cqe_get(&B, &ud_cq[1], cqe);
	assert_int_equal(rg_cqe_type(cqe), RG_CQE_SEND_NPG);
	assert_int_equal(rg_cqe_qid(cqe), q->id);
	assert_int_equal(rg_cqe_status(cqe), RG_STS_FLUSHED);
	assert_int_equal(rg_qp_state(&B.g, &B.aq, q->id, RG_SCRATCH + 0x8000), RG_QPS_ERR);
	guard_intact(0);

	/* a datagram that would fit: dropped, the second receive is not consumed */
	ud_send_ok(from, id0 + 2, q->id, qkey, rlen);
	assert_false(rg_cq_wait(&B.g, &ud_cq[1], cqe, 200));
	guard_intact(0);
	capture();
	n = frames_between(&A, &B, f, 8);
	assert_int_equal(n, 2); /* both datagrams went on the wire, whole */
	for (unsigned i = 0; i < n; i++) {
		assert_int_equal(f[i].opcode, OP_UD_SEND_ONLY);
		assert_int_equal(f[i].dqpn, q->id);
	}
	assert_int_equal(f[0].payload, len);
	assert_int_equal(f[1].payload, rlen);

	/* the server still serves: the QP through RESET to RTS takes the same datagram whole */
	assert_int_equal(rg_qp_to_rts(&B.g, &B.aq, q, qkey, 0), 0);
	ud_recv_post(q, id0 + 3, UD_RBUF, 40 + len);
	ud_send_ok(from, id0 + 4, q->id, qkey, len);
	cqe_get(&B, &ud_cq[1], cqe);
	assert_int_equal(rg_cqe_type(cqe), RG_CQE_RECV);
	assert_false(rg_cqe_error(cqe));
	assert_int_equal(rg_cqe_qid(cqe), q->id);
	assert_int_equal(rg_cqe_wqe_id(cqe), id0 + 3);
	assert_int_equal(rg_cqe_src_qpn_op(cqe) & 0xffffff, q->id);
	assert_int_equal(rg_cqe_status(cqe), 40 + len);
	assert_memory_equal(gp(&B, UD_RBUF + 40), gp(&A, SRC), len);
	guard_intact(40 + len);
}

/* UD from A to B: 600 bytes to a receive of 40 + 100 (after test_ud, which made both UD QPs and the AH). */
static void test_ud_too_long(void **state)
{
	(void)state;
	ud_too_long(&ud_qp[0], &ud_qp[1], UD_QKEY, 100, 600, 0xa0);
	assert_int_equal(rg_qp_state(&A.g, &A.aq, UD_QPN, RG_SCRATCH + 0x8000), RG_QPS_RTS);
}

/* The same to the GSI QP (QP 1, privileged, the GSI Q_Key): 256 bytes to a receive of 40 + 64. */
static void test_gsi_too_long(void **state)
{
	struct side *s[2] = { &A, &B };

	(void)state;
	for (int k = 0; k < 2; k++)
		ud_qp_up(s[k], &gsi_qp[k], GSI_QPN, RG_QPF_PRIVILEGED, GSI_SQ, GSI_SQ + 0x800, 4, RG_QKEY_GSI);
	/* The GSI Q_Key has its top bit set: the sender's own, which for A's QP 1 is the GSI Q_Key. */
	ud_too_long(&gsi_qp[0], &gsi_qp[1], RG_QKEY_GSI, 64, 256, 0xb0);
	/* B's other UD QP is not concerned */
	assert_int_equal(rg_qp_state(&B.g, &B.aq, UD_QPN, RG_SCRATCH + 0x8000), RG_QPS_RTS);
}

/* A WRITE with an R_Key B never gave: remote access error at A, B's QP in error, and the NAK on the wire. */
static void test_bad_rkey(void **state)
{
	uint8_t cqe[RG_CQE_SIZE];
	struct frame f[8];
	unsigned n;

	(void)state;
	fill(gp(&A, SRC), 64, 8);
	memset(gp(&B, TARGET), 0, 64);
	rdma_post(&A, RG_WR_RDMA_WRITE, 0, TARGET, RG_KEY(MR_IDX + 1, 0x77), SRC, 64);
	cqe_get(&A, &A.scq, cqe);
	assert_true(rg_cqe_error(cqe));
	assert_int_equal(rg_cqe_status(cqe), RG_STS_REMOTE_ACC);
	for (int i = 0; i < 8; i++)
		assert_int_equal(gp(&B, TARGET)[i], 0);
	assert_int_equal(rg_qp_state(&B.g, &B.aq, QPN, RG_SCRATCH + 0x8000), RG_QPS_ERR);
	assert_int_equal(rg_qp_state(&A.g, &A.aq, QPN, RG_SCRATCH + 0x8000), RG_QPS_ERR);
	capture();
	n = frames_between(&B, &A, f, 8);
	assert_true(n >= 1);
	assert_int_equal(f[n - 1].opcode, OP_ACK);
	assert_int_equal(f[n - 1].syndrome, 0x60 | 2); /* NAK: remote access error */
}

/* A->B frames of the last capture that carry a PSN an earlier one carried: retransmissions seen. */
static unsigned resent_seen(void)
{
	unsigned dup = 0;

	for (unsigned i = 0; i < nframes; i++)
		dup += frames[i].sip == A.ip && frames[i].dip == B.ip && resent(i);
	return dup;
}

/*
 * Lossy mode (the bridge drops a tenth of the RoCEv2 frames it forwards, both ways): rounds of a
 * SEND of 20000 bytes, a WRITE and a READ of 30000 and a fetch-and-add from A, and a SEND from B,
 * every one complete, successful and byte-exact; retransmissions must have been seen on the wire.
 */
static void test_lossy(void **state)
{
	struct rg_sge res = { RESULT, 8, LKEY };
	uint64_t sum = 0;
	unsigned resent = 0;

	(void)state;
	rg_le64(gp(&B, ATOMIC), 0);
	for (uint32_t r = 0; r < 12; r++) {
		fill(gp(&A, SRC), 20000, 100 + r);
		fill(gp(&A, SRC + 0x8000), 30000, 200 + r);
		fill(gp(&B, TARGET + 0x10000), 30000, 300 + r);
		fill(gp(&B, SRC), 5000, 400 + r);
		recv_post(&B, 0x1000 + r, RECV, 0x8000);
		recv_post(&A, 0x2000 + r, RECV, 0x8000);
		send_post(&A, RG_WR_SEND, 0, SRC, 20000);
		rdma_post(&A, RG_WR_RDMA_WRITE, 0, TARGET, LKEY, SRC + 0x8000, 30000);
		rdma_post(&A, RG_WR_RDMA_READ, 0, TARGET + 0x10000, LKEY, READ_TO, 30000);
		rg_post_atomic(&A.g, &A.qp, ++A.wqe_id, RG_WR_ATOMIC_FA, RG_WQE_SIG, ATOMIC, LKEY, r + 1, 0, &res);
		rg_sq_ring(&A.g, &A.qp);
		send_post(&B, RG_WR_SEND, 0, SRC, 5000);
		for (int i = 0; i < 4; i++)
			send_ok(&A);
		send_ok(&B);
		recv_ok(&B, 0x1000 + r, RG_RECV_SEND, 20000, &A, 0);
		recv_ok(&A, 0x2000 + r, RG_RECV_SEND, 5000, &B, 0);
		assert_memory_equal(gp(&B, RECV), gp(&A, SRC), 20000);
		assert_memory_equal(gp(&B, TARGET), gp(&A, SRC + 0x8000), 30000);
		assert_memory_equal(gp(&A, READ_TO), gp(&B, TARGET + 0x10000), 30000);
		assert_memory_equal(gp(&A, RECV), gp(&B, SRC), 5000);
		assert_int_equal(rg_get_le64(gp(&A, RESULT)), sum); /* each add executed exactly once */
		sum += r + 1;
		assert_int_equal(rg_get_le64(gp(&B, ATOMIC)), sum);
		capture();
		resent += resent_seen();
	}
	print_message("retransmissions seen on the wire: %u\n", resent);
	assert_true(resent > 0);
}

/*
 * Server A runs with ip=192.168.200.10 (A's address): a QP whose template names another source
 * address goes to error at RTS instead of onto the wire, a UD datagram through an address handle
 * naming another source is not sent (the send completes, as UD may lose it), a datagram from B
 * to another of A's would-be addresses is not delivered, and no frame from that address appears.
 * (Every other test shows that A's own address is carried as before.)
 */
#define SPOOF_QPN 11
#define SPOOF_IP  0xc0a8c863 /* 192.168.200.99 */
static void test_ip_pinned(void **state)
{
	uint8_t t[RG_ROCE4_HDR_LEN];
	struct rg_qp_path path;
	struct rg_qp q;
	struct frame f[4];
	struct side fake = B;

	(void)state;
	fake.ip = SPOOF_IP;
	qp_make(&A, &q, SPOOF_QPN, RG_QPT_RC, 0, UC_CQ, MR_BASE + 0xc8000, MR_BASE + 0xca000, 4);
	rg_roce4_template(t, B.mac, A.mac, SPOOF_IP, B.ip, 0, 64);
	path = (struct rg_qp_path){ .tmpl = t, .len = sizeof(t), .at = TMPL, .sq_psn = 0x700, .rq_psn = 0x800,
				    .pmtu_log2 = 10 };
	assert_int_equal(rg_qp_to_rts_path(&A.g, &A.aq, &q, QPN, ACCESS, &path), 0);
	assert_int_equal(rg_qp_state(&A.g, &A.aq, SPOOF_QPN, RG_SCRATCH + 0x8000), RG_QPS_ERR);
	fill(gp(&A, SRC), 64, 12);
	{
		struct rg_sge sge = { SRC, 64, LKEY };

		rg_post_send(&A.g, &q, 0x91, RG_WR_SEND, RG_WQE_SIG, 0, 0, 0, 0, &sge, 1);
		rg_sq_ring(&A.g, &q);
	}
	/* UD out: an address handle whose source is 192.168.200.99 */
	{
		struct rg_sge sge = { SRC, 64, LKEY }, rsge = { RECV, 40 + 64, LKEY };
		uint8_t cqe[RG_CQE_SIZE];

		rg_roce4_template(t, B.mac, A.mac, SPOOF_IP, B.ip, 0, 64);
		assert_int_equal(rg_ah_create(&A.g, &A.aq, UD_AH + 1, PD, RG_SCRATCH + 0x9100, t, sizeof(t)),
				 RG_ASTS_OK);
		rg_post_ud(&A.g, &ud_qp[0], 0x92, RG_WR_SEND, RG_WQE_SIG, 0, UD_AH + 1, UD_QPN, UD_QKEY, &sge, 1);
		rg_sq_ring(&A.g, &ud_qp[0]);
		cqe_get(&A, &ud_cq[0], cqe);
		assert_int_equal(rg_cqe_npg_id(cqe), 0x92);
		assert_false(rg_cqe_error(cqe));
		assert_false(rg_cq_wait(&B.g, &ud_cq[1], cqe, 200));
		/* UD in: B sends to A's MAC but to 192.168.200.98, not A's pinned address */
		rg_post_recv(&A.g, &ud_qp[0], 0x93, 0, &rsge, 1);
		rg_rq_ring(&A.g, &ud_qp[0]);
		rg_roce4_template(t, A.mac, B.mac, B.ip, SPOOF_IP - 1, 0, 64);
		assert_int_equal(rg_ah_create(&B.g, &B.aq, UD_AH + 1, PD, RG_SCRATCH + 0x9100, t, sizeof(t)),
				 RG_ASTS_OK);
		rg_post_ud(&B.g, &ud_qp[1], 0x94, RG_WR_SEND, RG_WQE_SIG, 0, UD_AH + 1, UD_QPN, UD_QKEY, &sge, 1);
		rg_sq_ring(&B.g, &ud_qp[1]);
		cqe_get(&B, &ud_cq[1], cqe);
		assert_int_equal(rg_cqe_npg_id(cqe), 0x94);
		assert_false(rg_cq_wait(&A.g, &ud_cq[0], cqe, 200));
	}
	capture();
	assert_int_equal(frames_between(&fake, &B, f, 4), 0);
	/* B's datagram did go out: A's node refused it, not the wire */
	fake = A;
	fake.ip = SPOOF_IP - 1;
	assert_int_equal(frames_between(&B, &fake, f, 4), 1);
}

/* ---- bulk: large transfers through the pacing (roce-ci.sh checks nothing was dropped or resent) ---- */

/*
 * Each side maps a memfd of BULK_SIZE beside the client's 4 MiB (MAP_NORESERVE: pages exist once
 * touched) and registers it as one MR: a 16 MiB source, a 16 MiB target and a 16 MiB receive area.
 */
#define BULK_IOVA   0x40000000ull
#define BULK_MAX    (16u << 20)
#define BULK_SIZE   (3ull * BULK_MAX)
#define BULK_SRC    BULK_IOVA
#define BULK_DST    (BULK_IOVA + BULK_MAX)
#define BULK_RECV   (BULK_IOVA + 2ull * BULK_MAX)
#define BULK_IDX    9
#define BULK_KEY    0x9b
#define BULK_LKEY   RG_KEY(BULK_IDX, BULK_KEY)
#define BULK_CQE_MS 120000

static uint8_t *bulk_mem[2];

static uint8_t *bulk_at(struct side *s, uint64_t iova)
{
	return bulk_mem[s == &B] + (iova - BULK_IOVA);
}

static void bulk_map(struct side *s)
{
	struct vfu_dma_map m = { .argsz = sizeof(m), .flags = VFU_DMA_READ | VFU_DMA_WRITE, .iova = BULK_IOVA,
				 .size = BULK_SIZE };
	uint8_t rep[16];
	size_t rlen;
	uint32_t err = 1;
	int fd = memfd_create("roce-ci-bulk", MFD_CLOEXEC);
	void *p;

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)BULK_SIZE), 0);
	p = mmap(NULL, BULK_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
	assert_true(p != MAP_FAILED);
	assert_int_equal(vfc_call(&s->c, VFU_CMD_DMA_MAP, &m, sizeof(m), &fd, 1, rep, sizeof(rep), &rlen, &err), 0);
	assert_int_equal(err, 0);
	close(fd);
	bulk_mem[s == &B] = p;
	assert_int_equal(rg_mr_create(&s->g, &s->aq, BULK_IDX, BULK_KEY, PD, BULK_IOVA, BULK_SIZE, 1, BULK_IOVA,
				      RG_MRF_LOCAL_WRITE | RG_MRF_REMOTE_WRITE | RG_MRF_REMOTE_READ, 12), RG_ASTS_OK);
}

static void test_bulk_connect(void **state)
{
	(void)state;
	pmtu_log2 = 12; /* what ib_read_bw and ib_write_bw use */
	side_up(&A, &B);
	side_up(&B, &A);
	bulk_map(&A);
	bulk_map(&B);
}

/* The next completion of cq, successful, within BULK_CQE_MS (16 MiB may take long on a loaded host). */
static void bulk_cqe(struct side *s, struct rg_cq *cq, uint8_t type)
{
	uint8_t cqe[RG_CQE_SIZE];

	assert_true(rg_cq_wait(&s->g, cq, cqe, BULK_CQE_MS));
	rg_cq_ack(&s->g, cq);
	assert_false(rg_cqe_error(cqe));
	assert_int_equal(rg_cqe_type(cqe), type);
}

/* from WRITEs len bytes into to, READs them back, then SENDs them: byte for byte each time. */
static void bulk_round(struct side *from, struct side *to, uint32_t len, uint32_t seed)
{
	struct rg_sge sge = { BULK_SRC, len, BULK_LKEY };

	fill(bulk_at(from, BULK_SRC), len, seed);
	memset(bulk_at(to, BULK_DST), 0, len);
	rg_post_rdma(&from->g, &from->qp, ++from->wqe_id, RG_WR_RDMA_WRITE, RG_WQE_SIG, 0, BULK_DST, BULK_LKEY,
		     &sge, 1);
	rg_sq_ring(&from->g, &from->qp);
	bulk_cqe(from, &from->scq, RG_CQE_SEND_MSN);
	assert_memory_equal(bulk_at(to, BULK_DST), bulk_at(from, BULK_SRC), len);
	/* READ it back into from's receive area */
	fill(bulk_at(to, BULK_DST), len, seed + 1);
	sge = (struct rg_sge){ BULK_RECV, len, BULK_LKEY };
	rg_post_rdma(&from->g, &from->qp, ++from->wqe_id, RG_WR_RDMA_READ, RG_WQE_SIG, 0, BULK_DST, BULK_LKEY,
		     &sge, 1);
	rg_sq_ring(&from->g, &from->qp);
	bulk_cqe(from, &from->scq, RG_CQE_SEND_MSN);
	assert_memory_equal(bulk_at(from, BULK_RECV), bulk_at(to, BULK_DST), len);
	/* SEND into a receive of the same size */
	fill(bulk_at(from, BULK_SRC), len, seed + 2);
	sge = (struct rg_sge){ BULK_RECV, len, BULK_LKEY };
	rg_post_recv(&to->g, &to->qp, 0xb0, 0, &sge, 1);
	rg_rq_ring(&to->g, &to->qp);
	sge = (struct rg_sge){ BULK_SRC, len, BULK_LKEY };
	rg_post_send(&from->g, &from->qp, ++from->wqe_id, RG_WR_SEND, RG_WQE_SIG, 0, 0, 0, 0, &sge, 1);
	rg_sq_ring(&from->g, &from->qp);
	bulk_cqe(from, &from->scq, RG_CQE_SEND_MSN);
	bulk_cqe(to, &to->rcq, RG_CQE_RECV);
	assert_memory_equal(bulk_at(to, BULK_RECV), bulk_at(from, BULK_SRC), len);
}

static void test_bulk_1m(void **state)
{
	(void)state;
	bulk_round(&A, &B, 1u << 20, 51);
	bulk_round(&B, &A, 1u << 20, 61);
}

static void test_bulk_16m(void **state)
{
	(void)state;
	bulk_round(&A, &B, BULK_MAX, 71);
	bulk_round(&B, &A, BULK_MAX, 81);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest bulk[] = {
		cmocka_unit_test(test_bulk_connect),
		cmocka_unit_test(test_bulk_1m),
		cmocka_unit_test(test_bulk_16m),
	};
	const struct CMUnitTest pcap[] = {
		cmocka_unit_test(test_connect),
		cmocka_unit_test(test_write),
	};
	const struct CMUnitTest vlan[] = {
		cmocka_unit_test(test_connect),
		cmocka_unit_test(test_write),
		cmocka_unit_test(test_ud_vlan),
	};
	const struct CMUnitTest lossy[] = {
		cmocka_unit_test(test_connect),
		cmocka_unit_test(test_lossy),
	};
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_connect),
		cmocka_unit_test(test_send_multi_mtu),
		cmocka_unit_test(test_eth_untouched),
		cmocka_unit_test(test_send_imm),
		cmocka_unit_test(test_write),
		cmocka_unit_test(test_read),
		cmocka_unit_test(test_atomics),
		cmocka_unit_test(test_rnr),
		cmocka_unit_test(test_other_direction),
		cmocka_unit_test(test_local_error_in_order),
		cmocka_unit_test(test_mw),
		cmocka_unit_test(test_max_rd_atomic),
		cmocka_unit_test(test_ud),
		cmocka_unit_test(test_ud_too_long),
		cmocka_unit_test(test_gsi_too_long),
		cmocka_unit_test(test_bad_rkey),
		cmocka_unit_test(test_uc),
		cmocka_unit_test(test_ip_pinned),
	};

	if (argc < 5) {
		fprintf(stderr, "usage: %s SOCK_A SOCK_B TAP_A TAP_B [lossy|bulk|pcap|vlan]\n", argv[0]);
		return 2;
	}
	A.sock = argv[1];
	B.sock = argv[2];
	tap_name = argv[3];
	tap_b_name = argv[4];
	if (argc > 5 && strcmp(argv[5], "lossy") == 0)
		return cmocka_run_group_tests_name("roce-ci-lossy", lossy, group_setup, group_teardown);
	if (argc > 5 && strcmp(argv[5], "pcap") == 0) /* pcap-ci: a few frames to decode */
		return cmocka_run_group_tests_name("roce-ci-pcap", pcap, group_setup, group_teardown);
	if (argc > 5 && strcmp(argv[5], "vlan") == 0) {
		/* the same over VLAN 100 at priority 5: the kernel's packet socket sees the frames untagged */
		vlan_tci = 5u << 13 | 100;
		return cmocka_run_group_tests_name("roce-ci-vlan", vlan, group_setup, group_teardown);
	}
	if (argc > 5 && strcmp(argv[5], "bulk") == 0)
		return cmocka_run_group_tests_name("roce-ci-bulk", bulk, group_setup, group_teardown);
	return cmocka_run_group_tests_name("roce-ci", tests, group_setup, group_teardown);
}
