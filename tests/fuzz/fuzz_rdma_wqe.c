/*
 * fuzz-rdma-wqe: send- and receive-queue WQE streams through the work-queue
 * engine (ionic_rdma_qp.c), against the device model in-process with the
 * loopback fabric: both QPs belong to the guest, so every SEND, RDMA and
 * atomic lands in the other QP and in guest memory through the MR table.
 *
 * Each input starts from a fresh RDMA LIF (fg_rdma_up) and an 8-byte header
 * that picks what to create before any WQE is posted:
 *   hdr[0], hdr[1]  type of QP 20 / QP 21 (% 3: RC, UC, UD)
 *   hdr[2]          SQ and RQ depth, log2 (% 7 + 2: 4 .. 256 WQEs)
 *   hdr[3]          SQ and RQ stride, log2 (% 3 + 6: 64 .. 256 bytes)
 *   hdr[4]          flags of MR 1 (low 4 bits: local write, remote write/read/atomic)
 *   hdr[5]          bit 0: MR 2 is a page list (else a fast-registration MR); bit 1: QP 20 privileged
 *   hdr[6]          QP access flags (remote write/read/atomic, low 3 bits)
 *   hdr[7]          page size of MR 2's list, log2 (% 5 + 12)
 * CQs 10..13 (256 entries: 20's send and receive, then 21's), QPs 20 and 21
 * in RTS (RC/UC connected to each other, UD with qkeys 0x11110000 + k),
 * PD 1, MR 1 = key 0x101 over BUF, MR 2 = key 0x202 (list of 16 pages at
 * LIST over BUF), AH 1 a RoCEv2 IPv4 template. Then operations:
 *   0 qp:u8 n:u8 wqe[n]            raw WQE at the SQ producer slot (no doorbell)
 *   1 qp:u8 n:u8 wqe[n]            raw WQE at the RQ producer slot
 *   2 qp:u8                        SQ doorbell with the producer index; the CQs drained
 *   3 qp:u8                        RQ doorbell
 *   4 off:u16 len:u8 bytes         guest memory
 *   5 page:u8 qtype:u8 qid:u32 ring:u8 index:u16   a raw doorbell
 *   6 op:u8 len:u16 n:u8 payload   an RDMA admin command (modify to ERR, more MRs, destroy ...)
 *   7 cq:u8 ring:u8 arm:u16        CQ doorbell: ack, or arm (any/solicited)
 */
#include <stdlib.h>

#include "fuzz.h"
#include "fuzz_guest.h"

static void drain(struct fg_wqe_world *w)
{
	uint8_t cqe[RG_CQE_SIZE];

	for (int i = 0; i < W_NCQ; i++) {
		unsigned n = 0;

		while (n < 1024 && rg_cq_poll(&w->r.g, &w->cq[i], cqe))
			n++;
		if (n)
			rg_cq_ack(&w->r.g, &w->cq[i]);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f = { data, size, 0 };
	struct fg_wqe_world w;
	size_t n, got;
	const uint8_t *p;

	if (fg_wqe_world_up(&w, &f))
		abort(); /* a fresh device refused the set-up the guest helpers are tested with */
	while (fz_more(&f)) {
		uint8_t op = fz_u8(&f) % 8;
		struct rg_qp *q;

		switch (op) {
		case 0:
		case 1:
			q = &w.qp[fz_u8(&f) & 1];
			n = fz_u8(&f);
			p = fz_ptr(&f, n, &got);
			if (got > (1u << q->sq_stride_log2))
				got = 1u << q->sq_stride_log2;
			if (op == 0)
				rg_post_sq_raw(&w.r.g, q, p, got);
			else
				rg_post_rq_raw(&w.r.g, q, p, got);
			break;
		case 2:
			rg_sq_ring(&w.r.g, &w.qp[fz_u8(&f) & 1]);
			drain(&w);
			break;
		case 3:
			rg_rq_ring(&w.r.g, &w.qp[fz_u8(&f) & 1]);
			drain(&w);
			break;
		case 4:
			fg_mem_write(&w.r.g, &f);
			break;
		case 5:
			fg_doorbell(&w.r.g, &f);
			drain(&w);
			break;
		case 6:
			fg_rdma_admin(&w.r, &f);
			break;
		case 7: {
			struct rg_cq *cq = &w.cq[fz_u8(&f) % W_NCQ];
			uint8_t ring = fz_u8(&f) % 3;
			uint16_t arm = fz_u16(&f);

			if (ring == 0)
				rg_cq_ack(&w.r.g, cq);
			else
				rg_cq_arm(&w.r.g, cq, ring, arm);
			break;
		}
		}
	}
	fg_rdma_down(&w.r);
	fg_close();
	return 0;
}
