/*
 * The key table of the RDMA LIF: memory regions and memory windows, one index
 * space (lkey = rkey = index << 8 | an 8-bit key), and everything done by key.
 *
 * - A memory region is registered at CREATE_MR (user MRs, the DMA MR) or, for a
 *   fast-registration MR (CREATE_MR without pages), by a REG_MR work request,
 *   and made unusable again by LOCAL_INV or a SEND with invalidate.
 * - A memory window (CREATE_MR with IONIC_MRF_IS_MW; type 2 when INV_EN is set
 *   too, as ionic_rdma's alloc_mw makes it) names nothing until a BIND_MW work
 *   request (libionic's, for ibv_bind_mw and IBV_WR_BIND_MW) binds it to a
 *   range of a memory region that allows binding, with its own remote access
 *   rights. The rules are those of the IBA (10.6.7, C10-72 to C10-75 and the
 *   o10-36/o10-37 items), as rdma_rxe implements them: a type 1 window is
 *   rebound at will and unbound by a bind of length 0, never invalidated; a
 *   type 2 window binds only while free, only on a QP of its PD, is then
 *   usable only through that QP, and goes back to free by invalidation
 *   (local or remote), deallocation or the destruction of that QP. A region
 *   with windows bound to it can be neither deregistered nor invalidated.
 * - Every access by key (rdma_mr_resolve) checks the key, the PD, the QP for a
 *   type 2 window, the rights and the range, and yields the region and the
 *   offset in it; a window is a remote key only.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ionic/ionic_rdma_priv.h"

#define REMOTE_RIGHTS (IONIC_MRF_REMOTE_READ | IONIC_MRF_REMOTE_WRITE | IONIC_MRF_REMOTE_ATOMIC)

static bool is_mw(const struct rdma_mr *m)
{
	return (m->flags & IONIC_MRF_IS_MW) != 0;
}

static bool is_mw2(const struct rdma_mr *m)
{
	return (m->flags & (IONIC_MRF_IS_MW | IONIC_MRF_INV_EN)) == (IONIC_MRF_IS_MW | IONIC_MRF_INV_EN);
}

/* The live entry whose current key is key, or NULL. */
static struct rdma_mr *key_entry(struct ionic_dev *dev, uint32_t key)
{
	uint32_t index = key >> 8;
	struct rdma_mr *m;

	if (index == 0 || index >= IONIC_RDMA_NMR)
		return NULL;
	m = &dev->rdma->mr[index];
	return m->valid && m->id == key ? m : NULL;
}

static uint32_t qp_index(struct ionic_dev *dev, const struct rdma_qp *qp)
{
	return qp ? (uint32_t)(qp - dev->rdma->qp) : RDMA_NO_QP;
}

/* ---- access by key ------------------------------------------------------------------------------------ */

/* Copy between buf and the guest pages of one MR, from byte off of the region. */
static int mr_copy_pages(struct ionic_dev *dev, const struct rdma_mr *mr, uint64_t off, void *buf, size_t len,
			 enum rdma_xfer dir)
{
	uint8_t *p = buf;

	if (mr->npages == 0) {
		uint64_t addr = mr->base + off;

		return dir == RDMA_TO_GUEST ? ionic_dma_write(dev, addr, p, len) : ionic_dma_read(dev, addr, p, len);
	}
	off += mr->first_page_off;
	while (len > 0) {
		uint64_t pg = off >> mr->page_shift, in = off & ((1ull << mr->page_shift) - 1);
		size_t n = (size_t)((1ull << mr->page_shift) - in);
		int rc;

		if (pg >= mr->npages)
			return -EFAULT;
		if (n > len)
			n = len;
		rc = dir == RDMA_TO_GUEST ? ionic_dma_write(dev, mr->pages[pg] + in, p, n)
					  : ionic_dma_read(dev, mr->pages[pg] + in, p, n);
		if (rc)
			return rc;
		p += n;
		off += n;
		len -= n;
	}
	return 0;
}

/* [va, va + len) inside a registration that starts at start and is length long: *off. */
static int in_range(uint64_t start, uint64_t length, uint64_t va, size_t len, uint64_t *off)
{
	if (va < start)
		return -EFAULT;
	*off = va - start;
	if (*off > length || len > length - *off)
		return -EFAULT;
	return 0;
}

/* A remote access through window w: the region it is bound to and the offset in it. */
static int mw_resolve(struct ionic_dev *dev, const struct rdma_mr *w, uint32_t pd, uint32_t qpid, uint64_t va,
		      size_t len, uint16_t need, const struct rdma_mr **out, uint64_t *off)
{
	const struct rdma_mr *mr;
	uint64_t woff;

	if (!(need & REMOTE_RIGHTS) || !w->registered)
		return -ENOKEY; /* a window is no local key, and an unbound one names nothing */
	if (w->pd != pd || (is_mw2(w) && w->mw_qp != qpid))
		return -EACCES;
	if ((w->flags & need) != need)
		return -EACCES;
	if (in_range((w->flags & IONIC_MRF_ZERO_BASED) ? 0 : w->va, w->length, va, len, &woff))
		return -EFAULT;
	mr = &dev->rdma->mr[w->mw_mr];
	if (!mr->valid || !mr->registered || mr->id != w->mw_mr_id) /* kept from happening by the bind rules */
		return -ENOKEY;
	*off = w->va - mr->va + woff;
	*out = mr;
	return 0;
}

int rdma_mr_resolve(struct ionic_dev *dev, const struct rdma_qp *qp, uint32_t key, uint64_t va, size_t len,
		    uint16_t need, const struct rdma_mr **out, uint64_t *off)
{
	const struct rdma_mr *mr;
	uint32_t pd;

	*out = NULL;
	if (key == 0) {
		if (!qp || !(qp->priv_flags & IONIC_QPF_PRIVILEGED) || (need & REMOTE_RIGHTS))
			return -ENOKEY;
		*off = va;
		return 0;
	}
	mr = key_entry(dev, key);
	if (!mr)
		return -ENOKEY;
	pd = qp ? qp->pd : mr->pd; /* without a QP (the S3 store's tokens) the key's own PD applies */
	if (is_mw(mr))
		return mw_resolve(dev, mr, pd, qp_index(dev, qp), va, len, need, out, off);
	if (!mr->registered)
		return -ENOKEY;
	if (mr->pd != pd)
		return -EACCES;
	if ((mr->flags & need) != need)
		return -EACCES;
	if (in_range((mr->flags & IONIC_MRF_ZERO_BASED) ? 0 : mr->va, mr->length, va, len, off))
		return -EFAULT;
	*out = mr;
	return 0;
}

int rdma_mr_xfer(struct ionic_dev *dev, const struct rdma_qp *qp, uint32_t key, uint64_t va, void *buf, size_t len,
		 enum rdma_xfer dir, uint16_t need)
{
	const struct rdma_mr *mr;
	uint64_t off;
	int rc = rdma_mr_resolve(dev, qp, key, va, len, need, &mr, &off);

	if (rc)
		return rc;
	if (!mr) /* key 0: a bus address */
		return dir == RDMA_TO_GUEST ? ionic_dma_write(dev, va, buf, len) : ionic_dma_read(dev, va, buf, len);
	if (len == 0)
		return 0;
	return mr_copy_pages(dev, mr, off, buf, len, dir);
}

/* ---- windows: binding and unbinding ----------------------------------------------------------------------- */

/* w no longer covers anything; its key stays. */
static void mw_unbind(struct ionic_dev *dev, struct rdma_mr *w)
{
	struct rdma_mr *mr;

	if (!w->registered)
		return;
	mr = &dev->rdma->mr[w->mw_mr];
	if (mr->valid && mr->id == w->mw_mr_id && mr->nmw > 0)
		mr->nmw--;
	if (is_mw2(w))
		dev->rdma->mw2_bound--;
	w->registered = false;
	w->va = w->length = 0;
	w->flags &= (uint16_t)~IONIC_MRF_ACCESS_MASK;
}

uint32_t rdma_bind_mw(struct ionic_dev *dev, uint32_t qpid, const struct rdma_qp *qp,
		      const struct ionic_v1_base_hdr *h, const void *body)
{
	struct ionic_v1_bind_mw_bdy b;
	struct rdma_mr *w = key_entry(dev, be32_get(h->imm_data_key)), *mr;
	uint16_t flags, rights;
	uint64_t va, len, unused;
	bool type2;

	memcpy(&b, body, sizeof(b));
	flags = be16_get(b.flags);
	rights = flags & (REMOTE_RIGHTS | IONIC_MRF_ZERO_BASED);
	va = be64_get(b.va);
	len = be64_get(b.length);
	if (!w || !is_mw(w) || w->pd != qp->pd)
		return IONIC_STS_MEM_MGMT_OPER_ERR;
	type2 = is_mw2(w);
	/* The request names the window's type as alloc_mw made it. */
	if (!(flags & IONIC_MRF_IS_MW) || ((flags & IONIC_MRF_INV_EN) != 0) != type2)
		return IONIC_STS_MEM_MGMT_OPER_ERR;
	if (type2 && (w->registered || len == 0)) /* o10-37.2.30, o10-37.2.40: only a free window, never to nothing */
		return IONIC_STS_MEM_MGMT_OPER_ERR;
	if (!type2 && (rights & IONIC_MRF_ZERO_BASED)) /* o10-36.2.2 */
		return IONIC_STS_MEM_MGMT_OPER_ERR;
	if (len == 0) { /* type 1: unbound, under its new key */
		mw_unbind(dev, w);
		w->id = (w->id & ~0xffu) | h->num_sge_key;
		return 0;
	}
	mr = key_entry(dev, be32_get(b.lkey));
	if (!mr || is_mw(mr) || !mr->registered || mr->pd != qp->pd || (mr->flags & IONIC_MRF_ZERO_BASED))
		return IONIC_STS_MEM_MGMT_OPER_ERR;
	if (!(mr->flags & IONIC_MRF_MW_BIND)) /* C10-73 */
		return IONIC_STS_MEM_MGMT_OPER_ERR;
	if ((rights & (IONIC_MRF_REMOTE_WRITE | IONIC_MRF_REMOTE_ATOMIC)) && !(mr->flags & IONIC_MRF_LOCAL_WRITE))
		return IONIC_STS_MEM_MGMT_OPER_ERR; /* C10-74 */
	if (in_range(mr->va, mr->length, va, (size_t)len, &unused) || len != (size_t)len) /* C10-75 */
		return IONIC_STS_MEM_MGMT_OPER_ERR;
	mw_unbind(dev, w); /* a type 1 window bound elsewhere moves */
	w->va = va;
	w->length = len;
	w->flags = (uint16_t)((w->flags & ~IONIC_MRF_ACCESS_MASK) | rights);
	w->mw_mr = mr->id >> 8;
	w->mw_mr_id = mr->id;
	w->mw_qp = type2 ? qpid : RDMA_NO_QP;
	w->id = (w->id & ~0xffu) | h->num_sge_key;
	w->registered = true;
	mr->nmw++;
	if (type2)
		dev->rdma->mw2_bound++;
	return 0;
}

void rdma_mw_qp_gone(struct ionic_dev *dev, uint32_t qpid)
{
	struct ionic_rdma *r = dev->rdma;

	for (uint32_t i = 1; i < r->mr_hw && r->mw2_bound > 0; i++)
		if (r->mr[i].valid && is_mw2(&r->mr[i]) && r->mr[i].registered && r->mr[i].mw_qp == qpid)
			mw_unbind(dev, &r->mr[i]);
}

int rdma_mr_release(struct ionic_dev *dev, uint32_t index)
{
	struct rdma_mr *m = &dev->rdma->mr[index];

	if (is_mw(m)) {
		mw_unbind(dev, m); /* deallocating a bound window unbinds it first */
	} else if (m->nmw > 0) {
		return -EBUSY; /* IBA 11.2.8.4: windows are bound to it */
	}
	if (m->pages) {
		dev->rdma->pts_used -= m->npages;
		free(m->pages);
	}
	memset(m, 0, sizeof(*m));
	return 0;
}

/* ---- invalidation ------------------------------------------------------------------------------------------ */

int rdma_key_invalidate(struct ionic_dev *dev, const struct rdma_qp *qp, uint32_t key, bool remote)
{
	struct rdma_mr *m = key_entry(dev, key);

	/* Only a key of the QP's PD that allows invalidation: fast-registration MRs and type 2 windows. */
	if (!m || m->pd != qp->pd || !(m->flags & IONIC_MRF_INV_EN))
		return -EINVAL;
	if (is_mw(m)) {
		/* A free window cannot be invalidated; a remote one must arrive on the QP it is bound to. */
		if (!m->registered || (remote && m->mw_qp != qp_index(dev, qp)))
			return -EINVAL;
		mw_unbind(dev, m);
		return 0;
	}
	if (m->nmw > 0)
		return -EBUSY;
	m->registered = false;
	return 0;
}

/* ---- fast registration --------------------------------------------------------------------------------------- */

uint32_t rdma_reg_mr(struct ionic_dev *dev, const struct rdma_qp *qp, const struct ionic_v1_base_hdr *h,
		     const void *body)
{
	struct ionic_v1_reg_mr_bdy b;
	uint32_t lkey = be32_get(h->imm_data_key), index = lkey >> 8, map_count;
	struct rdma_mr *mr;
	uint64_t *pages = NULL;
	bool reused = false;
	uint8_t shift;

	memcpy(&b, body, sizeof(b));
	if (index == 0 || index >= IONIC_RDMA_NMR)
		return IONIC_STS_MEM_MGMT_OPER_ERR;
	mr = &dev->rdma->mr[index];
	if (!mr->valid || !mr->fast_reg || mr->pd != qp->pd || mr->registered)
		return IONIC_STS_MEM_MGMT_OPER_ERR;
	map_count = be32_get(b.map_count);
	shift = b.page_size_log2;
	if (map_count == 0 || shift < 12 || shift > 30)
		return IONIC_STS_MEM_MGMT_OPER_ERR;
	if (map_count > 1) {
		uint64_t off = be64_get(b.offset), length = be64_get(b.length);

		if (off >= (1ull << shift) || length > ((uint64_t)map_count << shift) - off)
			return IONIC_STS_MEM_MGMT_OPER_ERR;
		/* The driver's table stays mapped until the MR goes; its contents are read now, into the
		 * MR's own array when it is large enough (no allocation per registration). */
		rdma_charge(dev->rdma, (uint64_t)map_count * sizeof(*pages));
		if (mr->pages && mr->pages_cap >= map_count) {
			if (map_count > mr->npages &&
			    map_count - mr->npages > IONIC_RDMA_NPTS - dev->rdma->pts_used)
				return IONIC_STS_MEM_MGMT_OPER_ERR;
			if (ionic_dma_read(dev, be64_get(b.dma_addr), mr->pages, (size_t)map_count * sizeof(uint64_t)))
				return IONIC_STS_MEM_MGMT_OPER_ERR;
			for (uint32_t i = 0; i < map_count; i++)
				mr->pages[i] = le64toh(mr->pages[i]);
			reused = true;
		} else if (rdma_pages_copy(dev, be64_get(b.dma_addr), map_count, &pages)) {
			return IONIC_STS_MEM_MGMT_OPER_ERR;
		}
	}
	dev->rdma->pts_used -= mr->npages; /* the previous registration's entries */
	if (reused) {
		dev->rdma->pts_used += map_count;
	} else if (pages) {                /* a new array, already counted */
		free(mr->pages);
		mr->pages = pages;
		mr->pages_cap = map_count;
	}
	mr->npages = map_count > 1 ? map_count : 0;
	mr->base = map_count > 1 ? 0 : be64_get(b.dma_addr);
	mr->page_shift = shift;
	mr->first_page_off = map_count > 1 ? be64_get(b.offset) : 0;
	mr->va = be64_get(b.va);
	mr->length = be64_get(b.length);
	mr->flags = (uint16_t)((mr->flags & ~IONIC_MRF_ACCESS_MASK) | (be16_get(b.flags) & IONIC_MRF_ACCESS_MASK));
	mr->id = index << 8 | h->num_sge_key;
	mr->registered = true;
	return 0;
}
