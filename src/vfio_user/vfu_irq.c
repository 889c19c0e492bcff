/* The server's interrupt table and DEVICE_SET_IRQS; see vfu_irq.h. */
#include "vfio_user/vfu_irq.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/log.h"

static void close_vectors(struct vfu_irq *irq, uint32_t start, uint32_t count)
{
	for (uint32_t v = start; v < start + count; v++) {
		if (irq->fds[v] >= 0)
			close(irq->fds[v]);
		irq->fds[v] = -1;
	}
}

int vfu_irqs_init(struct vfu_irqs *t, const uint32_t count[VFU_NUM_IRQS])
{
	memset(t, 0, sizeof(*t));
	for (int i = 0; i < VFU_NUM_IRQS; i++) {
		struct vfu_irq *irq = &t->idx[i];
		uint32_t n = count[i];

		if (n > VFU_MAX_IRQ_VECTORS)
			return EINVAL;
		irq->count = n;
		irq->fds = malloc(sizeof(int) * (n ? n : 1));
		irq->masked = calloc(n ? n : 1, 1);
		if (irq->fds == NULL || irq->masked == NULL)
			return ENOMEM;
		for (uint32_t v = 0; v < n; v++)
			irq->fds[v] = -1;
	}
	return 0;
}

void vfu_irqs_free(struct vfu_irqs *t)
{
	for (int i = 0; i < VFU_NUM_IRQS; i++) {
		struct vfu_irq *irq = &t->idx[i];

		if (irq->fds)
			close_vectors(irq, 0, irq->count);
		free(irq->fds);
		free(irq->masked);
		irq->fds = NULL;
		irq->masked = NULL;
	}
}

void vfu_irqs_reset(struct vfu_irqs *t)
{
	for (int i = 0; i < VFU_NUM_IRQS; i++) {
		struct vfu_irq *irq = &t->idx[i];

		close_vectors(irq, 0, irq->count);
		memset(irq->masked, 0, irq->count);
	}
}

bool vfu_irqs_signal(struct vfu_irqs *t, enum vfu_irq_index index, uint32_t vector)
{
	static const uint64_t one = 1;
	struct vfu_irq *irq;

	if ((unsigned)index >= VFU_NUM_IRQS)
		return false;
	irq = &t->idx[index];
	if (vector >= irq->count || irq->fds[vector] < 0 || irq->masked[vector])
		return false;
	/* An eventfd counter only overflows after 2^64 - 2 unconsumed signals; EAGAIN still means "raised". */
	if (write(irq->fds[vector], &one, sizeof(one)) < 0 && errno != EAGAIN) {
		LOG_WARN("vfio-user: irq %d/%u eventfd: %m", index, vector);
		return false;
	}
	return true;
}

bool vfu_irqs_masked(const struct vfu_irqs *t, enum vfu_irq_index index, uint32_t vector)
{
	if ((unsigned)index >= VFU_NUM_IRQS || vector >= t->idx[index].count)
		return false;
	return t->idx[index].masked[vector] != 0;
}

int vfu_irqs_set(struct vfu_irqs *t, const struct vfu_irq_set *req, const uint8_t *p, size_t len, int *fds,
		 unsigned nfds, void (*trigger)(void *ctx, enum vfu_irq_index index, uint32_t vector), void *ctx)
{
	struct vfu_irq *irq;
	uint32_t data, action;
	const uint8_t *bools = NULL;

	if (req->argsz < sizeof(*req) || req->argsz > len || req->index >= VFU_NUM_IRQS)
		return EINVAL;
	irq = &t->idx[req->index];
	data = req->flags & VFU_IRQ_SET_DATA_MASK;
	action = req->flags & VFU_IRQ_SET_ACTION_MASK_ALL;
	if ((req->flags & ~(VFU_IRQ_SET_DATA_MASK | VFU_IRQ_SET_ACTION_MASK_ALL)) ||
	    __builtin_popcount(data) != 1 || __builtin_popcount(action) != 1)
		return EINVAL;
	if (req->start > irq->count || req->count > irq->count - req->start)
		return EINVAL;
	if (data == VFU_IRQ_SET_DATA_BOOL) {
		if (len - sizeof(*req) < req->count)
			return EINVAL;
		bools = p + sizeof(*req);
	}
	if (data != VFU_IRQ_SET_DATA_EVENTFD && nfds)
		return EINVAL;

	switch (action) {
	case VFU_IRQ_SET_ACTION_TRIGGER:
		if (data == VFU_IRQ_SET_DATA_EVENTFD) {
			/* Either one descriptor per vector, or none: de-assign. */
			if (nfds != 0 && nfds != req->count)
				return EINVAL;
			close_vectors(irq, req->start, req->count);
			for (uint32_t i = 0; i < nfds; i++) {
				irq->fds[req->start + i] = fds[i];
				fds[i] = -1;
			}
		} else if (data == VFU_IRQ_SET_DATA_NONE && req->count == 0) {
			/* count 0 with no data turns the whole index off. */
			close_vectors(irq, 0, irq->count);
		} else {
			for (uint32_t i = 0; i < req->count; i++)
				if (!bools || bools[i])
					trigger(ctx, (enum vfu_irq_index)req->index, req->start + i);
		}
		break;
	case VFU_IRQ_SET_ACTION_MASK:
	case VFU_IRQ_SET_ACTION_UNMASK:
		if (req->index != VFU_IRQ_MSIX || data == VFU_IRQ_SET_DATA_EVENTFD)
			return EINVAL;
		for (uint32_t i = 0; i < req->count; i++)
			if (!bools || bools[i])
				irq->masked[req->start + i] = action == VFU_IRQ_SET_ACTION_MASK;
		break;
	}
	LOG_DEBUG("vfio-user: SET_IRQS index %u start %u count %u flags %#x fds %u", req->index, req->start,
		  req->count, req->flags, nfds);
	return 0;
}
