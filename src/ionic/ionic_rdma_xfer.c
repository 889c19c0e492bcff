/*
 * The RDMA engine's bytes (ionic_rdma_engine.h): the SGL of a WQE, the next
 * posted receive, and copies between local SGLs and remote (key, va) ranges
 * that resolve every piece afresh and stop when the turn's budget is spent.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "ionic/ionic_rdma_engine.h"

/* ---- WQE parsing ---------------------------------------------------------------------------- */

/* The SGE list of a send or receive WQE of stride bytes; false if it cannot be one. */
bool rdma_parse_sgl(const uint8_t *wqe, uint32_t stride, unsigned int nsge, uint16_t flags, struct sgl *out)
{
	uint32_t off = (flags & (IONIC_V1_FLAG_SPEC16 | IONIC_V1_FLAG_SPEC32)) ? IONIC_V1_WQE_SPEC_SGE_OFFSET
									       : IONIC_V1_WQE_PLD_OFFSET;

	if (off > stride || nsge > (stride - off) / sizeof(struct ionic_sge))
		return false;
	out->n = nsge;
	out->total = 0;
	for (unsigned int i = 0; i < nsge; i++) {
		struct ionic_sge s;

		memcpy(&s, wqe + off + i * sizeof(s), sizeof(s));
		out->e[i].va = be64_get(s.va);
		out->e[i].len = be32_get(s.len);
		out->e[i].key = be32_get(s.lkey);
		out->total += out->e[i].len;
	}
	return out->total <= MSG_MAX;
}

/* ---- moving message bytes ------------------------------------------------------------------------ */

static uint8_t chunk_buf[CHUNK];

int rdma_ep_xfer(struct ionic_dev *dev, const struct endpoint *ep, struct cursor *c, uint64_t *roff, void *buf,
		 size_t len, enum rdma_xfer dir)
{
	uint8_t *p = buf;

	if (!ep->sgl) {
		int rc = rdma_mr_xfer(dev, ep->qp, ep->rkey, ep->rva + *roff, buf, len, dir, ep->need);

		*roff += len;
		return rc;
	}
	while (len > 0) {
		uint64_t left;
		size_t n;
		int rc;

		if (c->i >= ep->sgl->n)
			return -EFAULT;
		left = ep->sgl->e[c->i].len - c->off;
		if (left == 0) {
			c->i++;
			c->off = 0;
			continue;
		}
		n = left < len ? (size_t)left : len;
		rc = rdma_mr_xfer(dev, ep->qp, ep->sgl->e[c->i].key, ep->sgl->e[c->i].va + c->off, p, n, dir, ep->need);
		if (rc)
			return rc;
		p += n;
		c->off += n;
		len -= n;
	}
	return 0;
}

/*
 * The guest bus address of the next contiguous piece of ep at its cursor (at
 * most len bytes, within one SGE and one registered page): true and *bus, *n;
 * false when the access does not resolve (the caller's slow path then reports
 * which side failed).
 */
static bool ep_span(struct ionic_dev *dev, const struct endpoint *ep, struct cursor *c, uint64_t roff,
		    uint64_t len, uint64_t *bus, size_t *n)
{
	const struct rdma_mr *mr;
	uint64_t va, want, off;
	uint32_t key;

	if (!ep->sgl) {
		key = ep->rkey;
		va = ep->rva + roff;
		want = len;
	} else {
		while (c->i < ep->sgl->n && c->off == ep->sgl->e[c->i].len) {
			c->i++;
			c->off = 0;
		}
		if (c->i >= ep->sgl->n)
			return false;
		key = ep->sgl->e[c->i].key;
		va = ep->sgl->e[c->i].va + c->off;
		want = ep->sgl->e[c->i].len - c->off;
		if (want > len)
			want = len;
	}
	if (rdma_mr_resolve(dev, ep->qp, key, va, want, ep->need, &mr, &off))
		return false;
	if (!mr) {
		*bus = va;
	} else if (mr->npages == 0) {
		*bus = mr->base + off;
	} else {
		uint64_t o = off + mr->first_page_off, pg = o >> mr->page_shift, in = o & ((1ull << mr->page_shift) - 1);

		if (pg >= mr->npages)
			return false;
		if (want > (1ull << mr->page_shift) - in)
			want = (1ull << mr->page_shift) - in;
		*bus = mr->pages[pg] + in;
	}
	*n = (size_t)want;
	return true;
}

void rdma_xfer_init(struct xfer *x, const struct endpoint *src, const struct endpoint *dst, uint64_t len)
{
	/* Field by field: a memset of the whole struct showed in profiles of small WQEs. */
	x->src = *src;
	x->dst = *dst;
	x->cs = (struct cursor){ .sgl = src->sgl };
	x->cd = (struct cursor){ .sgl = dst->sgl };
	x->rs = x->rd = 0;
	x->left = len;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * The slice is over: its budget is spent, or (bounded work only) it has been
 * copying for SLICE_NS; then the rest of the budget goes too.
 */
static bool slice_over(struct ionic_rdma *r, bool bounded)
{
	uint64_t now;

	if (!bounded)
		return false;
	if (r->budget == 0)
		return true;
	/*
	 * Reading the clock costs about as much as a small WQE's other work
	 * (a tenth of a 4 KiB WRITE): it is read at the slice's first piece,
	 * then once CLOCK_BYTES have been charged or CLOCK_PIECES pieces gone
	 * since it was last read.
	 */
	if (r->slice_t0 != 0 && ++r->slice_unclocked < CLOCK_PIECES &&
	    r->slice_clocked_budget - r->budget < CLOCK_BYTES)
		return false;
	r->slice_unclocked = 0;
	r->slice_clocked_budget = r->budget;
	now = mono_ns();
	if (r->slice_t0 == 0)
		r->slice_t0 = now;
	else if (now - r->slice_t0 >= SLICE_NS)
		r->budget = 0;
	return r->budget == 0;
}

/*
 * Move x's bytes until they are all moved (XFER_DONE), the slice is over
 * (XFER_MORE; only when bounded: then the engine's budget is charged what
 * moved, and the last piece may overshoot it by up to PIECE_MAX) or a side
 * fails (XFER_SRC_FAULT, XFER_DST_FAULT; bytes before the failing piece have
 * moved, as on a wire).
 * Guest to guest in one copy while both sides resolve to mapped guest
 * memory; a piece that does not (a fault, or a piece spanning two mappings)
 * goes through the bounce buffer, which tells which side failed. Every piece
 * resolves its keys and guest addresses afresh, so a registration or a
 * mapping that goes away between two slices stops the copy there, and
 * nothing is ever written through a stale translation.
 */
int rdma_xfer_step(struct ionic_dev *dev, struct xfer *x, bool bounded)
{
	struct ionic_rdma *r = dev->rdma;

	while (x->left > 0) {
		uint64_t want = x->left < PIECE_MAX ? x->left : PIECE_MAX, sbus, dbus;
		struct cursor ts = x->cs, td = x->cd;
		size_t ns, nd, n;
		bool fast;

		if (slice_over(r, bounded))
			return XFER_MORE;
		fast = ep_span(dev, &x->src, &ts, x->rs, want, &sbus, &ns) &&
		       ep_span(dev, &x->dst, &td, x->rd, want, &dbus, &nd);
		if (fast) {
			n = ns < nd ? ns : nd;
			fast = ionic_dma_copy(dev, dbus, sbus, n) == 0;
		}
		if (fast) {
			x->cs = ts;
			x->cd = td;
			if (x->src.sgl)
				x->cs.off += n;
			else
				x->rs += n;
			if (x->dst.sgl)
				x->cd.off += n;
			else
				x->rd += n;
		} else {
			n = want < CHUNK ? (size_t)want : CHUNK;
			if (rdma_ep_xfer(dev, &x->src, &x->cs, &x->rs, chunk_buf, n, RDMA_FROM_GUEST))
				return XFER_SRC_FAULT;
			if (rdma_ep_xfer(dev, &x->dst, &x->cd, &x->rd, chunk_buf, n, RDMA_TO_GUEST))
				return XFER_DST_FAULT;
		}
		x->left -= n;
		rdma_charge(r, n);
	}
	return XFER_DONE;
}

/*
 * Move len bytes from src to dst at once (a UD message: at most 4 KiB), the
 * budget charged afterwards. 0, or -1 with which side failed in *src_failed.
 */
int rdma_move_bytes(struct ionic_dev *dev, const struct endpoint *src, const struct endpoint *dst, uint64_t len,
		    bool *src_failed)
{
	struct xfer x;
	int rc;

	rdma_xfer_init(&x, src, dst, len);
	rc = rdma_xfer_step(dev, &x, false);
	if (rc == XFER_DONE)
		return 0;
	*src_failed = rc == XFER_SRC_FAULT;
	return -1;
}
/* ---- the receive side ------------------------------------------------------------------------------ */

/*
 * Read the next posted receive WQE of qp without taking it: its id and SGL.
 * -EAGAIN if none is posted, -EFAULT if its slot cannot be read, -EINVAL if
 * it is malformed (*wqe_id is then set).
 */
int rdma_rq_peek(struct ionic_dev *dev, struct rdma_qp *qp, le64 *wqe_id, struct sgl *sgl)
{
	uint8_t wqe[WQE_MAX];
	uint32_t stride = 1u << qp->rq.ring.stride_log2, mask = (1u << qp->rq.ring.depth_log2) - 1;
	struct ionic_v1_base_hdr h;
	uint64_t addr;

	if (!qp->rq.present || (qp->rq.head & mask) == qp->rq.prod)
		return -EAGAIN;
	if (stride > WQE_MAX || rdma_ring_addr(&qp->rq.ring, qp->rq.head, &addr) ||
	    ionic_dma_read(dev, addr, wqe, stride))
		return -EFAULT;
	memcpy(&h, wqe, sizeof(h));
	*wqe_id = h.wqe_id;
	if (!rdma_parse_sgl(wqe, stride, h.num_sge_key, be16_get(h.flags), sgl))
		return -EINVAL;
	return 0;
}

/* Take the next posted receive WQE of qp, as rq_peek; a malformed one is taken too. */
int rdma_rq_take(struct ionic_dev *dev, struct rdma_qp *qp, le64 *wqe_id, struct sgl *sgl)
{
	int rc = rdma_rq_peek(dev, qp, wqe_id, sgl);

	if (rc == 0 || rc == -EINVAL)
		qp->rq.head++;
	return rc;
}

/* A cursor at offset of sgl, for len bytes there; false when they are not all inside it. */
static bool sgl_seek(const struct sgl *sgl, uint64_t offset, uint32_t len, struct cursor *c)
{
	if (offset > sgl->total || len > sgl->total - offset)
		return false;
	*c = (struct cursor){ sgl, 0, 0 };
	while (c->i < sgl->n && offset >= sgl->e[c->i].len) {
		offset -= sgl->e[c->i].len;
		c->i++;
	}
	c->off = offset;
	return true;
}

/* Bytes at offset of a local SGL, copied to or from buf. 0 or -errno. */
int rdma_sgl_copy_at(struct ionic_dev *dev, struct rdma_qp *qp, const struct sgl *sgl, uint64_t offset,
		     void *buf, uint32_t len, enum rdma_xfer dir, uint16_t need)
{
	struct endpoint ep = { .qp = qp, .sgl = sgl, .need = need };
	struct cursor c;
	uint64_t unused = 0;

	if (!sgl_seek(sgl, offset, len, &c))
		return -EFAULT;
	if (len == 0)
		return 0;
	rdma_charge(dev->rdma, len);
	return rdma_ep_xfer(dev, &ep, &c, &unused, buf, len, dir);
}

/*
 * The len bytes of ep at cursor c, read in place: one SGE (or the key's
 * range), one registered page, one mapping that cannot fault; else NULL and
 * the caller copies. Charged to the budget as a copy would be.
 */
static const void *ep_peek(struct ionic_dev *dev, const struct endpoint *ep, struct cursor *c, uint32_t len)
{
	const void *p;
	uint64_t bus;
	size_t n;

	if (len == 0 || !ep_span(dev, ep, c, 0, len, &bus, &n) || n != len || (p = ionic_dma_peek(dev, bus, len)) == NULL)
		return NULL;
	rdma_charge(dev->rdma, len);
	return p;
}

const void *rdma_key_peek(struct ionic_dev *dev, struct rdma_qp *qp, uint32_t key, uint64_t va, uint32_t len,
			  uint16_t need)
{
	struct endpoint ep = { .qp = qp, .rkey = key, .rva = va, .need = need };
	struct cursor c = { NULL, 0, 0 };

	return ep_peek(dev, &ep, &c, len);
}

const void *rdma_sgl_peek_at(struct ionic_dev *dev, struct rdma_qp *qp, const struct sgl *sgl, uint64_t offset,
			     uint32_t len)
{
	struct endpoint ep = { .qp = qp, .sgl = sgl, .need = 0 };
	struct cursor c;

	return sgl_seek(sgl, offset, len, &c) ? ep_peek(dev, &ep, &c, len) : NULL;
}
