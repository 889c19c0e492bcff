/*
 * fuzz-roce-wire: hostile RoCEv2 frames from the wire into the whole receive
 * path of the roce backend: net_switch -> the guest node (roce_port.c: the
 * parser, demultiplexing, RC responder and requester, UD handler) -> the
 * glue (roce_glue.c) -> the device's RDMA engine (ionic_rdma_qp.c: MRs by
 * R_Key, receives, CQEs) -> guest memory. The device is the in-process one
 * of fuzz_guest.c (kept across inputs, reset after each); the glue has no
 * event loop and runs on a fake clock (roce_glue_run), so an input replays
 * the same way.
 *
 * Each input starts from this world (no header: every input gets it):
 *   the RDMA LIF as the driver's probe leaves it, its memory sealed as QEMU's
 *   memfd RAM is (so payloads the node sends leave in pieces from where they
 *   lie, through the switch to the wire port, which reads every byte of
 *   them); guest MAC 02:45:52:4e:49:43,
 *   IPv4 10.0.0.3; a fictitious remote host 10.0.0.9 (MAC 02:00:00:00:00:09)
 *   behind a wire port of the switch, which is where the frames come from;
 *   RC QPs 20, 21, 22 on the wire (MODIFY_QP with a header template) to
 *   remote QPs 0x100..0x102, path MTU 1024, 256, 4096, rq_psn 0x2000,
 *   0x7ff0 and 0xfffff8 (wraps), sq_psn 0x100, 0x5000, 0xfffffc, QP access
 *   all / remote read only / remote write and atomic; UD QP 23 (Q_Key
 *   0x11110023); QP 1 (GSI);
 *   MRs (PD 1): 0x101 [M1, 32 KiB) local write + remote write/read/atomic,
 *   0x202 [M2, 32 KiB) remote read only, 0x303 [M3, 128 KiB) local write
 *   only (receive buffers and the local side of the guest's sends),
 *   0x404 [M4, 16 KiB) local + remote write; 6 receives posted on each QP
 *   (8192 down to 64 bytes on the RC QPs, 40 + half that on UD).
 * Then operations (one byte, % FW_NOPS, then arguments; little-endian):
 *   0 RAW    fix:u8 len:u16 (% 4300) bytes[len]: a frame as given; fix & 1:
 *            Ethernet/IPv4/UDP addresses made the remote host's to the
 *            guest's, lengths, IPv4 checksum and ICRC corrected
 *   1 FRAME  qp:u8 op:u8 flags:u8 delta:u16 len:u16 key:u8 off:u16 imm:u32
 *            a packet built with roce_build() from the remote host to the
 *            QP: op % 25 any RC/UD opcode; PSN (flags >> 2 & 3): 0 what the
 *            QP expects (ePSN for a request, the oldest outstanding for a
 *            response) + delta % 4, 1 behind it by 1 + delta, 2 ahead by
 *            1 + delta, 3 delta << 8; payload len % (pmtu + 65) (flags & 0x10:
 *            exactly pmtu; 0x20: pmtu + 4, oversized); key % 6: R_Key 0x101,
 *            0x202, 0x303, 0x404, imm, 0x101 with another key byte, va the
 *            MR's base + off - 64; flags & 1 AckReq, & 2 SE; & 0x40 the
 *            ICRC broken; & 0x80 the frame cut short by (delta % 64) + 1.
 *            UD opcodes go to QP 23 or QP 1 (Q_Key right, or imm when
 *            delta & 1, to QP 1 when delta & 2); for responses imm's
 *            low byte is the AETH syndrome and the rest its MSN
 *   2 SEND   qp:u8 op:u8 len:u16 key:u8 off:u16: the guest posts a SEND,
 *            SEND_IMM, WRITE, READ, CMP_SWAP or FETCH_ADD (op % 6) of len
 *            % 8193 bytes from/to M3 with remote key like FRAME's, and rings
 *   3 RECV   qp:u8 len:u16: the guest posts a receive of len % 8193 bytes
 *            in M3 (when the RQ has room) and rings
 *   4 CLOCK  ms:u16: the fake clock moves (% 1000) ms (ACK timeouts, RNR)
 *   5 ERROR  qp:u8: the guest moves the QP to ERR (its receives flush)
 *   6 SUPER  n:u8, then (n % 8 + 2) FRAME argument lists: those packets
 *            merged into one UDP super-frame (IPv4 identifications 0, 1,
 *            ...), cut every first-packet's UDP payload bytes (op_super)
 * After each operation the node is pumped until it is idle and every CQ is
 * drained by the guest.
 *
 * Invariants (abort() on violation): guest memory outside the windows the
 * device may write (rings, CQs, M1, M3, M4) never changes: the guard pages
 * around every MR, the rest of the scratch area and all of M2 (nobody may
 * write it) keep their pattern; a frame whose BTH DestQP is not a QP with
 * remote write and atomic rights (QP 21, remote read only; the UD QPs; QPs
 * that do not exist; a frame too short for a BTH) changes neither M1 nor M4,
 * the MRs only remote WRITEs and atomics write (the guest's receives and
 * its READ and atomic results land in M3): both are compared with a copy
 * taken before such a frame; every receive CQE names the QP whose CQ it
 * is on and one of that QP's outstanding receives, each completing once (so
 * no QP completes more receives than were posted; the device's flush
 * marker, FLUSHED with wqe_id 0, is not a receive); and the server neither
 * crashes nor leaks (ASan/UBSan, libFuzzer's leak check).
 * FUZZ_ROCE_WIRE_STATS in the environment prints what an input reached.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fabric/roce_glue.h"
#include "fabric/roce_port.h"
#include "fabric/roce_wire.h"
#include "fuzz.h"
#include "fuzz_guest.h"
#include "fuzz_roce_wire.h"
#include "net/net_switch.h"
#include "util/backend_opts.h"
#include "util/inet_csum.h"

#define LOCAL_IP  0x0a000003u
#define REMOTE_IP 0x0a000009u
static const uint8_t guest_mac[6] = { 0x02, 0x45, 0x52, 0x4e, 0x49, 0x43 };
static const uint8_t remote_mac[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x09 };

/* Guest memory (bus addresses in the scratch area). */
#define S_CQ(i)   (RG_SCRATCH + 0x00000 + (uint64_t)(i) * 0x2000)     /* 2 per QP + spare: 256 x 32 B */
#define S_SQ(k)   (RG_SCRATCH + 0x20000 + (uint64_t)(k) * 0x4000)     /* 64 x 64 B */
#define S_RQ(k)   (S_SQ(k) + 0x2000)
#define S_TMPL    (RG_SCRATCH + 0x40000)
#define S_GUARD   (RG_SCRATCH + 0x50000)                               /* checked from here to the end */
#define M1        (RG_SCRATCH + 0x51000)
#define M1_LEN    0x8000u
#define M2        (RG_SCRATCH + 0x62000)
#define M2_LEN    0x8000u
#define M3        (RG_SCRATCH + 0x6b000)
#define M3_LEN    0x20000u
#define M4        (RG_SCRATCH + 0x8c000)
#define M4_LEN    0x4000u
#define S_END     (RG_SCRATCH + RG_SCRATCH_SIZE)

#define NQP FW_NQP
#define DEPTH_LOG2 6
#define NRECV0 6
static const uint32_t qp_id[NQP] = { 20, 21, 22, 23, 1 };
static const uint32_t remote_qpn[FW_NRC] = { 0x100, 0x101, 0x102 };
static const uint8_t pmtu_log2[FW_NRC] = { 10, 8, 12 };
static const uint32_t rq_psn[FW_NRC] = { 0x2000, 0x7ff0, 0xfffff8 };
static const uint32_t sq_psn[FW_NRC] = { 0x100, 0x5000, 0xfffffc };
static const uint16_t qp_access[FW_NRC] = {
	RG_QPF_REMOTE_WRITE | RG_QPF_REMOTE_READ | RG_QPF_REMOTE_ATOMIC, RG_QPF_REMOTE_READ,
	RG_QPF_REMOTE_WRITE | RG_QPF_REMOTE_ATOMIC,
};
/* The receives posted at the start: large ones first, so that well-formed SENDs find room. */
static const uint32_t recv0[NRECV0] = { 8192, 4096, 2048, 1024, 256, 64 };
#define UD_QKEY 0x11110023u
#define GSI_QKEY RG_QKEY_GSI

static const struct { uint64_t base; uint32_t len; uint32_t key; } mrs[4] = {
	{ M1, M1_LEN, 0x101 }, { M2, M2_LEN, 0x202 }, { M3, M3_LEN, 0x303 }, { M4, M4_LEN, 0x404 },
};

static struct net_switch *sw;
static struct roce_glue *glue;
static int wire_id;
static uint64_t now;            /* the fake clock, microseconds, never going back */
static uint64_t wire_frames;    /* frames the node sent to the remote host */
static uint64_t wire_pieces_seen; /* of them, in pieces (their payload where it lay in guest memory) */

static struct {
	struct fg_rdma r;
	struct rg_cq scq[NQP], rcq[NQP];
	struct rg_qp qp[NQP];
	uint64_t posted[NQP], completed[NQP];
	uint64_t out[NQP][1u << DEPTH_LOG2];    /* the receives posted and not completed, by wr_id */
	unsigned nout[NQP];
	uint64_t sposted[NQP], scompleted[NQP];
	uint64_t wr_id;
	uint32_t frames;                        /* FRAME operations so far (their payload bytes) */
} w;

static uint8_t *gm(uint64_t bus)
{
	return w.r.g.mem + (bus - GUEST_IOVA);
}

static void wire_deliver(void *ctx, const uint8_t *frame, size_t len)
{
	(void)ctx;
	(void)frame;
	if (len == 0 || len > ROCE_PORT_FRAME_MAX + 64)
		abort(); /* the node promised frames of its own buffer's size */
	wire_frames++;
}

/* The same as a wire port takes it with offloads (the node sends none) or in pieces (a payload in sealed guest memory). */
static void wire_offload(void *ctx, const uint8_t *frame, size_t len, const struct net_offload *off)
{
	(void)off;
	wire_deliver(ctx, frame, len);
}

static void wire_pieces(void *ctx, const struct iovec *piece, unsigned n, const struct net_offload *off)
{
	static uint8_t joined[ROCE_PORT_FRAME_MAX + 64];
	size_t len = 0;

	if (off != NULL || n == 0 || n > NET_SWITCH_MAX_PIECES)
		abort(); /* a node's packet in pieces has no offloads */
	for (unsigned i = 0; i < n; i++) {
		if (piece[i].iov_len > sizeof(joined) - len)
			abort();
		memcpy(joined + len, piece[i].iov_base, piece[i].iov_len); /* every byte readable */
		len += piece[i].iov_len;
	}
	wire_pieces_seen++;
	wire_deliver(ctx, joined, len);
}

/* The node's clock between runs: the fake one. */
static uint64_t fake_clock(void)
{
	return now;
}

static void once(void)
{
	static const struct roce_config cfg = { .mtu = 4096, .timeout = 8, .retry = 3 };
	struct net_port wp = { .name = "wire", .deliver = wire_deliver, .deliver_offload = wire_offload,
			       .deliver_pieces = wire_pieces };
	char err[128];

	sw = net_switch_new();
	if (sw == NULL)
		abort();
	wire_id = net_switch_attach(sw, &wp);
	glue = roce_glue_new(&cfg, NULL, sw, err, sizeof(err));
	if (wire_id < 0 || glue == NULL)
		abort();
	roce_glue_set_clock(glue, fake_clock);
}

/* A pattern that depends on the address, so a copy from elsewhere shows too (made once). */
static uint8_t pattern[S_END - S_GUARD];

static void fill(uint64_t from, uint64_t to)
{
	if (pattern[0] == 0)
		for (uint64_t a = S_GUARD; a < S_END; a++)
			pattern[a - S_GUARD] = (uint8_t)(a * 0x9d ^ a >> 8 ^ 0x5b) | 1;
	memcpy(gm(from), pattern + (from - S_GUARD), to - from);
}

static void check(uint64_t from, uint64_t to)
{
	if (memcmp(gm(from), pattern + (from - S_GUARD), to - from) != 0)
		abort(); /* the device wrote guest memory no MR with write rights covers */
}

/* Everything from S_GUARD on except M1, M3 and M4 (M2 is remote read only: never written). */
static void check_outside(void)
{
	check(S_GUARD, M1);
	check(M1 + M1_LEN, M3);
	check(M3 + M3_LEN, M4);
	check(M4 + M4_LEN, S_END);
}

/*
 * A receive CQE: one of the QP's outstanding receives, taken
 * off the list; or the device's flush marker (status FLUSHED, wqe_id 0: on
 * error the device writes one, and the driver flushes the rest itself).
 */
static void recv_completed(int k, const uint8_t *cqe)
{
	uint64_t id = rg_cqe_wqe_id(cqe);

	if (rg_cqe_error(cqe) && rg_cqe_status(cqe) == RG_STS_FLUSHED && id == 0)
		return;
	for (unsigned i = 0; i < w.nout[k]; i++) {
		if (w.out[k][i] == id) {
			w.out[k][i] = w.out[k][--w.nout[k]];
			w.completed[k]++;
			return;
		}
	}
	abort(); /* a receive completed that was never posted on this QP, or completed twice */
}

static void drain(void)
{
	uint8_t cqe[RG_CQE_SIZE];

	for (int k = 0; k < NQP; k++) {
		unsigned n = 0;

		while (n < 1024 && rg_cq_poll(&w.r.g, &w.scq[k], cqe)) {
			if (rg_cqe_type(cqe) == RG_CQE_SEND_MSN || rg_cqe_type(cqe) == RG_CQE_SEND_NPG)
				w.scompleted[k]++; /* MSN CQEs may stand for several: only a bound on the SQ */
			n++;
		}
		if (n)
			rg_cq_ack(&w.r.g, &w.scq[k]);
		n = 0;
		while (n < 1024 && rg_cq_poll(&w.r.g, &w.rcq[k], cqe)) {
			if (rg_cqe_type(cqe) == RG_CQE_RECV) {
				if (rg_cqe_qid(cqe) != qp_id[k])
					abort(); /* a receive completion on another QP's CQ */
				recv_completed(k, cqe);
			}
			n++;
		}
		if (n)
			rg_cq_ack(&w.r.g, &w.rcq[k]);
	}
}

static void run(void)
{
	for (int i = 0; i < 256; i++) {
		unsigned n = roce_glue_run(glue, now);

		for (int j = 0; fg_dev() != NULL && j < 1000 && ionic_dev_work_pending(fg_dev()); j++)
			ionic_dev_work(fg_dev());
		if (fg_dev() != NULL)
			drain();
		if (n == 0)
			break;
		now += 10;
	}
}

static void post_recv(int k, uint32_t len)
{
	struct rg_qp *q = &w.qp[k];
	uint64_t off = ((uint64_t)(w.wr_id * 0x1240) % (M3_LEN - 8192)) & ~63ull;
	struct rg_sge s = { M3 + off, len, k == 4 ? 0 : 0x303 }; /* QP 1 is privileged: bus addresses */

	if (w.nout[k] >= (1u << DEPTH_LOG2) - 2)
		return;
	rg_post_recv(&w.r.g, q, ++w.wr_id, 0, &s, 1);
	w.out[k][w.nout[k]++] = w.wr_id;
	w.posted[k]++;
}

static int world_up(void)
{
	uint8_t t[RG_ROCE4_HDR_LEN];

	/* guest RAM sealed, as QEMU's memfd backend gives it: payloads leave in pieces from where they lie */
	ionic_guest_seal_memory(true);
	if (fg_rdma_up(&w.r, fg_open()))
		return -1;
	roce_glue_attach(glue, fg_dev());
	memset(gm(RG_SCRATCH), 0, S_GUARD - RG_SCRATCH);
	fill(S_GUARD, S_END);
	for (int k = 0; k < NQP; k++) {
		if (rg_cq_create(&w.r.g, &w.scq[k], 10 + 2 * (uint32_t)k, 0, 8, S_CQ(2 * k)) ||
		    rg_cq_create(&w.r.g, &w.rcq[k], 11 + 2 * (uint32_t)k, 0, 8, S_CQ(2 * k + 1)))
			return -2;
	}
	for (int i = 0; i < 4; i++) {
		uint16_t fl = i == 0 ? RG_MRF_LOCAL_WRITE | RG_MRF_REMOTE_WRITE | RG_MRF_REMOTE_READ | RG_MRF_REMOTE_ATOMIC
			      : i == 1 ? RG_MRF_REMOTE_READ
			      : i == 2 ? RG_MRF_LOCAL_WRITE
				       : RG_MRF_LOCAL_WRITE | RG_MRF_REMOTE_WRITE;

		if (rg_mr_create(&w.r.g, &w.r.aq, mrs[i].key >> 8, (uint8_t)mrs[i].key, 1, mrs[i].base, mrs[i].len, 1,
				 mrs[i].base, fl, 12))
			return -3;
	}
	for (int k = 0; k < NQP; k++) {
		struct rg_qp *q = &w.qp[k];

		*q = (struct rg_qp){
			.id = qp_id[k], .type = k < FW_NRC ? RG_QPT_RC : RG_QPT_UD, .pd = 1,
			.priv_flags = k == 4 ? RG_QPF_PRIVILEGED : 0, .sq_cq = 10 + 2 * (uint32_t)k,
			.rq_cq = 11 + 2 * (uint32_t)k, .sq = S_SQ(k), .rq = S_RQ(k), .sq_depth_log2 = DEPTH_LOG2,
			.rq_depth_log2 = DEPTH_LOG2, .sq_stride_log2 = 6, .rq_stride_log2 = 6,
		};
		if (rg_qp_create(&w.r.g, &w.r.aq, q))
			return -4;
		if (k < FW_NRC) {
			struct rg_qp_path p;

			rg_roce4_template(t, remote_mac, guest_mac, LOCAL_IP, REMOTE_IP, 0, 64);
			p = (struct rg_qp_path){ .tmpl = t, .len = sizeof(t), .at = S_TMPL + 0x100 * (uint64_t)k,
						 .sq_psn = sq_psn[k], .rq_psn = rq_psn[k], .pmtu_log2 = pmtu_log2[k] };
			if (rg_qp_to_rts_path(&w.r.g, &w.r.aq, q, remote_qpn[k], qp_access[k], &p))
				return -5;
		} else if (rg_qp_to_rts(&w.r.g, &w.r.aq, q, k == 3 ? UD_QKEY : GSI_QKEY, 0)) {
			return -6;
		}
		for (int i = 0; i < NRECV0; i++)
			post_recv(k, k < FW_NRC ? recv0[i] : 40 + recv0[i] / 2);
		rg_rq_ring(&w.r.g, q);
	}
	if (roce_glue_port(glue) == NULL)
		return -7;
	for (int k = 0; k < FW_NRC; k++)
		if (roce_port_qp_responder(roce_glue_port(glue), qp_id[k]) == NULL)
			return -8; /* the QP did not go on the wire */
	return 0;
}

static uint32_t pick_key(uint8_t sel, uint32_t imm, uint64_t *base)
{
	sel %= 6;
	if (sel < 4) {
		*base = mrs[sel].base;
		return mrs[sel].key;
	}
	*base = M1;
	return sel == 4 ? imm : 0x1ff; /* MR 1 with a key byte it does not have */
}

/* Ethernet, IPv4 and UDP of a raw frame made the remote host's to the guest's, lengths and checksums right. */
static void fix_frame(uint8_t *f, size_t len)
{
	struct net_eth_hdr *eth = (struct net_eth_hdr *)f;
	struct net_ip_hdr *ip = (struct net_ip_hdr *)(f + sizeof(*eth));
	struct net_udp_hdr *udp = (struct net_udp_hdr *)(ip + 1);

	if (len < ROCE_L2L4_LEN)
		return;
	memcpy(eth->dst, guest_mac, 6);
	memcpy(eth->src, remote_mac, 6);
	eth->type = be16_set(NET_ETHERTYPE_IPV4);
	ip->ver_ihl = 0x45;
	ip->tot_len = be16_set((uint16_t)(len - sizeof(*eth)));
	ip->frag = be16_set(0x4000);
	ip->proto = NET_IP_PROTO_UDP;
	ip->src = be32_set(REMOTE_IP);
	ip->dst = be32_set(LOCAL_IP);
	ip->csum = be16_set(0);
	ip->csum = be16_set(inet_csum_fold(inet_csum_add(0, ip, sizeof(*ip))));
	udp->dport = be16_set(ROCE_UDP_DPORT);
	udp->len = be16_set((uint16_t)(len - sizeof(*eth) - sizeof(*ip)));
	if (len >= ROCE_MIN_FRAME)
		roce_icrc_put(f + len - ROCE_ICRC_LEN,
			      roce_icrc(f + sizeof(*eth), len - sizeof(*eth) - ROCE_ICRC_LEN));
}

/*
 * Whether a frame may change M1 or M4 (the MRs with remote rights the guest
 * also writes nothing into itself): only when its BTH names QP 20 or 22, the
 * QPs with remote write and atomic rights. The node takes IPv4 without options
 * and no VLAN tag only, so the BTH of every frame it accepts is at the same
 * place; this reads it there, by itself, not through the node's parser. A
 * frame too short for a BTH is dropped and may change nothing.
 */
static bool may_write_remote(const uint8_t *frame, size_t len)
{
	const uint8_t *bth = frame + ROCE_L2L4_LEN;
	uint32_t dqpn;

	if (len < ROCE_L2L4_LEN + sizeof(struct roce_bth))
		return false;
	dqpn = (uint32_t)bth[5] << 16 | (uint32_t)bth[6] << 8 | bth[7]; /* BTH bytes 5..7: DestQP */
	for (int k = 0; k < FW_NRC; k++)
		if (dqpn == qp_id[k])
			return (qp_access[k] & (RG_QPF_REMOTE_WRITE | RG_QPF_REMOTE_ATOMIC)) != 0;
	return false;
}

/*
 * A frame from the remote host (with off: a UDP super-frame; may_write: one of
 * its packets is for a QP with remote write rights), then the node run and
 * the invariants checked.
 */
static void inject_offload(const uint8_t *frame, size_t len, const struct net_offload *off, bool may_write)
{
	static uint8_t m1[M1_LEN], m4[M4_LEN];
	/* an exact-size copy, so a read past the frame is an ASan report */
	uint8_t *f = malloc(len ? len : 1);

	if (f == NULL)
		abort();
	memcpy(f, frame, len);
	if (!may_write) {
		memcpy(m1, gm(M1), M1_LEN);
		memcpy(m4, gm(M4), M4_LEN);
	}
	net_switch_input_offload(sw, wire_id, f, len, off);
	free(f);
	run();
	check(S_GUARD, M1); /* the cheap part after every frame; all of it at the end */
	check(M2, M2 + M2_LEN);
	if (!may_write && (memcmp(m1, gm(M1), M1_LEN) != 0 || memcmp(m4, gm(M4), M4_LEN) != 0))
		abort(); /* a WRITE or atomic on a QP without those rights (or to no such QP) changed an MR */
}

static void inject(const uint8_t *frame, size_t len)
{
	inject_offload(frame, len, NULL, may_write_remote(frame, len));
}

static void op_raw(struct fz *f)
{
	uint8_t fix = fz_u8(f), buf[4400];
	size_t len = fz_u16(f) % 4300;

	len = fz_take(f, buf, len);
	if (fix & 1)
		fix_frame(buf, len);
	inject(buf, len);
}

/*
 * A FRAME operation's packet into buf (ROCE_PORT_FRAME_MAX + 256 bytes), its
 * IPv4 identification ip_id; its length, or 0 when roce_build() refused it.
 */
static size_t frame_build(struct fz *f, uint8_t *buf, uint16_t ip_id)
{
	static uint8_t payload[4096 + 128];
	uint8_t k = fz_u8(f) % NQP, opsel = fz_u8(f) % FW_NOPCODES, flags = fz_u8(f);
	uint16_t delta = fz_u16(f), plen = fz_u16(f);
	uint8_t key = fz_u8(f);
	uint16_t off = fz_u16(f);
	uint32_t imm = fz_u32(f), psn, pmtu, base_psn = 0, rkey;
	const struct roce_port *port = roce_glue_port(glue);
	struct roce_frame_desc d = { 0 };
	uint64_t base;
	size_t len = 0;
	const struct roce_opcode_info *oi;

	/* Each frame of an input its own bytes: a WRITE that lands where an earlier one did shows too. */
	w.frames++;
	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 7 + 1 + w.frames * 0x35);
	d.opcode = fw_opcodes[opsel];
	oi = roce_opcode_info(d.opcode);
	if ((d.opcode & ROCE_TRANSPORT_MASK) == ROCE_TRANSPORT_UD) {
		k = (delta & 2) ? 4 : 3;
		d.deth.qkey = (delta & 1) ? imm : k == 3 ? UD_QKEY : GSI_QKEY;
		d.deth.sqp = 0x200 + (delta >> 8);
		pmtu = 4096;
		d.dqpn = qp_id[k];
	} else {
		const struct roce_rc_resp *resp;
		const struct roce_rc_req *req;

		if (k >= FW_NRC)
			k = (uint8_t)(k % FW_NRC);
		resp = roce_port_qp_responder(port, qp_id[k]);
		req = roce_port_qp_requester(port, qp_id[k]);
		if (oi->request && resp != NULL)
			base_psn = resp->epsn;
		else if (!oi->request && req != NULL)
			base_psn = req->una;
		pmtu = 1u << pmtu_log2[k];
		d.dqpn = qp_id[k];
	}
	switch (flags >> 2 & 3) {
	case 0: psn = base_psn + delta % 4; break;
	case 1: psn = base_psn - 1 - delta; break;
	case 2: psn = base_psn + 1 + delta; break;
	default: psn = (uint32_t)delta << 8; break;
	}
	d.psn = psn & ROCE_PSN_MASK;
	memcpy(d.dst_mac, guest_mac, 6);
	memcpy(d.src_mac, remote_mac, 6);
	d.src_ip = REMOTE_IP;
	d.dst_ip = LOCAL_IP;
	d.ttl = 64;
	d.df = true;
	d.ip_id = ip_id;
	d.sport = 0xc000 | k;
	d.pkey = 0xffff;
	d.ackreq = flags & 1;
	d.se = flags & 2;
	rkey = pick_key(key, imm, &base);
	d.reth.rkey = d.atomic.rkey = d.ieth_rkey = rkey;
	d.reth.va = d.atomic.va = base + off - 64;
	d.reth.len = (flags & 0x10) ? pmtu : plen;
	d.atomic.swap_add = imm;
	d.atomic.compare = delta;
	d.aeth.syndrome = (uint8_t)imm;
	d.aeth.msn = imm >> 8 & ROCE_AETH_MSN_MASK;
	d.atomic_orig = imm;
	d.imm = imm;
	if (oi->payload) {
		d.payload_len = (flags & 0x20) ? pmtu + 4 : (flags & 0x10) ? pmtu : plen % (pmtu + 65);
		if (oi->seg == ROCE_SEG_FIRST || oi->seg == ROCE_SEG_MIDDLE)
			d.payload_len = (flags & 0x20) ? d.payload_len : pmtu;
		if (d.payload_len > 4096 + 64)
			d.payload_len = 4096 + 64;
		d.payload = payload;
		d.pad = (uint8_t)((4 - d.payload_len % 4) % 4);
	}
	if (roce_build(&d, buf, ROCE_PORT_FRAME_MAX + 256, &len) != ROCE_OK)
		return 0;
	if (flags & 0x40)
		buf[len - 1] ^= 0x01;
	if (flags & 0x80) {
		size_t cut = delta % 64 + 1u;

		len = len > cut ? len - cut : 0;
	}
	return len;
}

static void op_frame(struct fz *f)
{
	uint8_t buf[ROCE_PORT_FRAME_MAX + 256];
	size_t len = frame_build(f, buf, 0);

	if (len > 0)
		inject(buf, len);
}

/*
 * SUPER: 2..9 FRAME packets merged as another server's TAP merges them: the
 * first's Ethernet, IPv4 and UDP headers, then every packet's UDP payload,
 * handed to the switch as one UDP super-frame cut every gso_size bytes (the
 * first packet's UDP payload; packets of other sizes are cut wrongly, as a
 * hostile sender may make them). Their IPv4 identifications count up from
 * 0, as the cut numbers them, so well-formed ones keep their ICRC. The node
 * handles each datagram where it lies, its two pieces apart.
 */
static void op_super(struct fz *f)
{
	static uint8_t super[NET_MAX_FRAME];
	unsigned n = fz_u8(f) % 8 + 2;
	uint8_t buf[ROCE_PORT_FRAME_MAX + 256];
	struct net_offload off = { .gso_udp = true, .csum_partial = true, .hdr_len = ROCE_L2L4_LEN,
				   .csum_start = sizeof(struct net_eth_hdr) + sizeof(struct net_ip_hdr), .csum_offset = 6 };
	size_t at = 0;
	bool may_write = false;

	for (unsigned i = 0; i < n; i++) {
		size_t len = frame_build(f, buf, (uint16_t)i);

		if (len <= ROCE_L2L4_LEN || at + len > sizeof(super))
			continue;
		may_write |= may_write_remote(buf, len);
		if (at == 0) {
			memcpy(super, buf, len);
			off.gso_size = (uint16_t)(len - ROCE_L2L4_LEN);
			at = len;
		} else {
			memcpy(super + at, buf + ROCE_L2L4_LEN, len - ROCE_L2L4_LEN);
			at += len - ROCE_L2L4_LEN;
		}
	}
	if (at == 0 || at - sizeof(struct net_eth_hdr) > UINT16_MAX)
		return;
	off.pkt_len = (uint32_t)at;
	/* the merged packet's IPv4 and UDP lengths (the cut gives each datagram its own) */
	super[16] = (uint8_t)((at - 14) >> 8), super[17] = (uint8_t)(at - 14);
	super[38] = (uint8_t)((at - 34) >> 8), super[39] = (uint8_t)(at - 34);
	inject_offload(super, at, &off, may_write);
}

static void op_send(struct fz *f)
{
	static const uint8_t ops[6] = { RG_WR_SEND, RG_WR_SEND_IMM, RG_WR_RDMA_WRITE, RG_WR_RDMA_READ,
					RG_WR_ATOMIC_CS, RG_WR_ATOMIC_FA };
	uint8_t k = fz_u8(f) % FW_NRC, op = ops[fz_u8(f) % 6];
	uint32_t len = fz_u16(f) % 8193u;
	uint8_t key = fz_u8(f);
	uint16_t off = fz_u16(f);
	struct rg_qp *q = &w.qp[k];
	uint64_t base, loc = M3 + (((uint64_t)w.wr_id * 0x1040) % (M3_LEN - 8192) & ~7ull);
	uint32_t rkey = pick_key(key, off, &base);
	struct rg_sge s = { loc, len, 0x303 };

	if (w.sposted[k] - w.scompleted[k] >= (1u << DEPTH_LOG2) - 2)
		return;
	w.sposted[k]++;
	if (op == RG_WR_ATOMIC_CS || op == RG_WR_ATOMIC_FA) {
		s.len = 8;
		rg_post_atomic(&w.r.g, q, ++w.wr_id, op, RG_WQE_SIG, base + (off & ~7u), rkey, off, 0, &s);
	} else if (op == RG_WR_RDMA_WRITE || op == RG_WR_RDMA_READ) {
		rg_post_rdma(&w.r.g, q, ++w.wr_id, op, RG_WQE_SIG, 0, base + off, rkey, &s, 1);
	} else {
		rg_post_send(&w.r.g, q, ++w.wr_id, op, RG_WQE_SIG, off, 0, 0, 0, &s, 1);
	}
	rg_sq_ring(&w.r.g, q);
	run();
}

/* FUZZ_ROCE_WIRE_STATS set: what an input reached (the node's counters are cumulative), on stderr. */
static void print_stats(void)
{
	const struct roce_port_stats *st = roce_port_stats(roce_glue_port(glue));

	fprintf(stderr, "in %" PRIu64 " (in place %" PRIu64 ") out %" PRIu64 " to_resp %" PRIu64 " to_req %" PRIu64
		" ud %" PRIu64 " wire %" PRIu64 " (in pieces %" PRIu64 ")",
		st->frames_in, st->rx_in_place, st->frames_out, st->to_responder, st->to_requester, st->ud_in, wire_frames,
		wire_pieces_seen);
	for (int i = 0; i < ROCE_PORT_DROP_NUM; i++)
		if (st->drops[i])
			fprintf(stderr, " %s %" PRIu64, roce_port_drop_name(i), st->drops[i]);
	for (int i = 0; i < ROCE_ERR_NUM; i++)
		if (st->parse_err[i])
			fprintf(stderr, " %s %" PRIu64, roce_strerror(i), st->parse_err[i]);
	for (int k = 0; k < NQP; k++)
		fprintf(stderr, " qp%u %" PRIu64 "/%" PRIu64, qp_id[k], w.completed[k], w.posted[k]);
	for (int k = 0; k < FW_NRC; k++) {
		const struct roce_rc_resp *r = roce_port_qp_responder(roce_glue_port(glue), qp_id[k]);

		if (r != NULL)
			fprintf(stderr, " epsn%u %#x pmtu %u", qp_id[k], r->epsn, r->pmtu);
	}
	fprintf(stderr, "\n");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f = { data, size, 0 };
	int rc;

	if (sw == NULL)
		once();
	memset(&w, 0, sizeof(w));
	rc = world_up();
	if (rc)
		abort(); /* a fresh device refused the set-up roce-ci drives the same way */
	run();
	while (fz_more(&f)) {
		uint8_t op = fz_u8(&f) % FW_NOPS, k;

		switch (op) {
		case FW_RAW:
			op_raw(&f);
			break;
		case FW_FRAME:
			op_frame(&f);
			break;
		case FW_SEND:
			op_send(&f);
			break;
		case FW_RECV:
			k = fz_u8(&f) % NQP;
			post_recv(k, fz_u16(&f) % 8193u);
			rg_rq_ring(&w.r.g, &w.qp[k]);
			run();
			break;
		case FW_CLOCK:
			now += (uint64_t)(fz_u16(&f) % 1000) * 1000;
			run();
			break;
		case FW_ERROR:
			k = fz_u8(&f) % NQP;
			rg_qp_modify(&w.r.g, &w.r.aq, &w.qp[k], RG_QPS_ERR, RG_QPS_RTS, 0, 0);
			run();
			break;
		case FW_SUPER:
			op_super(&f);
			break;
		}
	}
	/* a second's worth of timers, so that the requesters' retries and their give-up run too */
	for (int i = 0; i < 8; i++) {
		now += 200000;
		run();
	}
	check_outside();
	if (getenv("FUZZ_ROCE_WIRE_STATS") != NULL)
		print_stats();
	fg_rdma_down(&w.r);
	fg_close();
	run(); /* the reset detached every QP: whatever the node still held is dropped */
	now += 1000000;
	return 0;
}
