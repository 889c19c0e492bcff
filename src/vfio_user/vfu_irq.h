/*
 * The server's interrupt table (inside src/vfio_user): per index (INTx, MSI, MSI-X, ERR, REQ), an
 * eventfd and a mask bit per vector, as the client's DEVICE_SET_IRQS leaves them. Writing a
 * vector's eventfd is how the device's interrupt reaches the guest.
 */
#ifndef ERNIC_VFIO_USER_VFU_IRQ_H
#define ERNIC_VFIO_USER_VFU_IRQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vfio_user/vfu_proto.h"
#include "vfio_user/vfu_server.h"

struct vfu_irq {
	int *fds;         /* per vector, -1 when unassigned */
	uint8_t *masked;  /* per vector, set by ACTION_MASK */
	uint32_t count;
};

struct vfu_irqs {
	struct vfu_irq idx[VFU_NUM_IRQS];
};

/* count[i] vectors for index i (at most VFU_MAX_IRQ_VECTORS): 0, or an errno (EINVAL, ENOMEM). */
int vfu_irqs_init(struct vfu_irqs *t, const uint32_t count[VFU_NUM_IRQS]);
void vfu_irqs_free(struct vfu_irqs *t);
/* Every eventfd closed and every mask cleared: the state a new client finds. */
void vfu_irqs_reset(struct vfu_irqs *t);
/* Write the vector's eventfd: false when it has none, is masked, or the index or vector does not exist. */
bool vfu_irqs_signal(struct vfu_irqs *t, enum vfu_irq_index index, uint32_t vector);
bool vfu_irqs_masked(const struct vfu_irqs *t, enum vfu_irq_index index, uint32_t vector);

/*
 * DEVICE_SET_IRQS: req (its header, already copied out of the message) and the len bytes of the
 * whole payload p, with the nfds descriptors that came with it. Eventfds taken are set to -1 in
 * fds (the table owns them). Triggers are raised through trigger(ctx, index, vector). 0, or the
 * errno to answer with (nothing is changed then).
 */
int vfu_irqs_set(struct vfu_irqs *t, const struct vfu_irq_set *req, const uint8_t *p, size_t len, int *fds,
		 unsigned nfds, void (*trigger)(void *ctx, enum vfu_irq_index index, uint32_t vector), void *ctx);

#endif
