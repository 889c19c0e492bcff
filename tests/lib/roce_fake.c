/* roce_fake: fake memory regions by R_Key for the RoCE RC tests (see roce_fake.h). */
#include "roce_fake.h"

#include <stdlib.h>
#include <string.h>

#include "fabric/roce_wire.h"

static struct roce_fake_mr *mem_new(struct roce_fake_mem *m, uint32_t rkey, uint64_t va, uint32_t len,
				    uint8_t access)
{
	struct roce_fake_mr *r;

	if (m->n >= ROCE_FAKE_NMR)
		return NULL;
	r = &m->mr[m->n];
	memset(r, 0, sizeof(*r));
	r->rkey = rkey;
	r->va = va;
	r->len = len;
	r->access = access;
	r->valid = true;
	return r;
}

struct roce_fake_mr *roce_fake_mem_add(struct roce_fake_mem *m, uint32_t rkey, uint64_t va, uint32_t len,
				       uint8_t access)
{
	struct roce_fake_mr *r = mem_new(m, rkey, va, len, access);

	if (r == NULL)
		return NULL;
	r->buf = malloc(len ? len : 1);
	if (r->buf == NULL)
		return NULL;
	r->owned = true;
	m->n++;
	return r;
}

struct roce_fake_mr *roce_fake_mem_attach(struct roce_fake_mem *m, uint32_t rkey, uint64_t va, uint8_t *buf,
					  uint32_t len, uint8_t access)
{
	struct roce_fake_mr *r = mem_new(m, rkey, va, len, access);

	if (r == NULL)
		return NULL;
	r->buf = buf;
	m->n++;
	return r;
}

void roce_fake_mem_free(struct roce_fake_mem *m)
{
	for (unsigned i = 0; i < m->n; i++)
		if (m->mr[i].owned)
			free(m->mr[i].buf);
	memset(m, 0, sizeof(*m));
}

uint8_t *roce_fake_mem_at(struct roce_fake_mem *m, uint32_t rkey, uint64_t va, uint32_t len, uint8_t need)
{
	for (unsigned i = 0; i < m->n; i++) {
		struct roce_fake_mr *r = &m->mr[i];

		if (!r->valid || r->rkey != rkey)
			continue;
		if (!(r->access & need))
			return NULL;
		if (va < r->va || va - r->va > r->len || len > r->len - (va - r->va))
			return NULL;
		return r->buf + (va - r->va);
	}
	return NULL;
}

int roce_fake_mem_write(struct roce_fake_mem *m, uint32_t rkey, uint64_t va, const void *data, uint32_t len)
{
	uint8_t *p = roce_fake_mem_at(m, rkey, va, len, ROCE_FAKE_WRITE);

	if (p == NULL)
		return -1;
	memcpy(p, data, len);
	return 0;
}

int roce_fake_mem_read(struct roce_fake_mem *m, uint32_t rkey, uint64_t va, void *buf, uint32_t len)
{
	uint8_t *p = roce_fake_mem_at(m, rkey, va, len, ROCE_FAKE_READ);

	if (p == NULL)
		return -1;
	memcpy(buf, p, len);
	return 0;
}

int roce_fake_mem_atomic(struct roce_fake_mem *m, uint32_t rkey, uint64_t va, bool cmp_swap, uint64_t swap_add,
			 uint64_t compare, uint64_t *orig)
{
	uint8_t *p = roce_fake_mem_at(m, rkey, va, 8, ROCE_FAKE_ATOMIC);
	uint64_t v;

	if (p == NULL)
		return -1;
	memcpy(&v, p, 8);
	*orig = v;
	if (cmp_swap) {
		if (v == compare)
			v = swap_add;
	} else {
		v += swap_add;
	}
	memcpy(p, &v, 8);
	return 0;
}

int roce_fake_mem_invalidate(struct roce_fake_mem *m, uint32_t rkey)
{
	for (unsigned i = 0; i < m->n; i++) {
		struct roce_fake_mr *r = &m->mr[i];

		if (r->valid && r->rkey == rkey && (r->access & ROCE_FAKE_INVAL)) {
			r->valid = false;
			return 0;
		}
	}
	return -1;
}

size_t roce_fake_join(uint8_t *buf, size_t cap, const uint8_t *hdr, size_t hlen, const void *payload, size_t plen,
		      const uint8_t *trailer, size_t tlen)
{
	if (hlen <= ROCE_L2L4_LEN || hlen != roce_payload_offset(hdr[ROCE_L2L4_LEN]) || plen == 0 ||
	    tlen < ROCE_ICRC_LEN || tlen > ROCE_TRAILER_MAX || (plen + tlen - ROCE_ICRC_LEN) % 4 != 0 ||
	    hlen + plen + tlen > cap)
		return 0;
	memcpy(buf, hdr, hlen);
	memcpy(buf + hlen, payload, plen);
	memcpy(buf + hlen + plen, trailer, tlen);
	return hlen + plen + tlen;
}
