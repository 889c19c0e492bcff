/*
 * The vfio-user server: one UNIX socket, one client at a time.
 *
 * vfu_server_start() claims the socket path (replacing a stale socket file
 * left by a server that is gone, refusing a path another live server listens
 * on or that is not a socket) and serves the device described by a
 * struct vfu_device from the event loop. When the client goes away, its DMA
 * mappings and interrupt eventfds are dropped, the device is reset, and the
 * server waits for the next client.
 *
 * Nothing outside src/vfio_user knows the wire protocol: the device sees
 * region accesses, resets, and the interrupt and guest-memory functions below.
 * A region may offer areas the client maps (struct vfu_region_mmap); QEMU's
 * client then stops posting trapped writes for the whole device (it cannot
 * order them against stores to the mapping), so every trapped write waits
 * for its reply.
 */
#ifndef ERNIC_VFIO_USER_VFU_SERVER_H
#define ERNIC_VFIO_USER_VFU_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct evloop;
struct vfu_server;
struct dma_map;

/* VFIO PCI region indexes and interrupt indexes. */
enum vfu_region_index {
	VFU_REGION_BAR0 = 0,
	VFU_REGION_BAR1,
	VFU_REGION_BAR2,
	VFU_REGION_BAR3,
	VFU_REGION_BAR4,
	VFU_REGION_BAR5,
	VFU_REGION_ROM,
	VFU_REGION_CONFIG,
	VFU_REGION_VGA,
	VFU_NUM_REGIONS,
};

enum vfu_irq_index {
	VFU_IRQ_INTX = 0,
	VFU_IRQ_MSI,
	VFU_IRQ_MSIX,
	VFU_IRQ_ERR,
	VFU_IRQ_REQ,
	VFU_NUM_IRQS,
};

#define VFU_MAX_IRQ_VECTORS 2048

/*
 * A region access: len bytes at offset (already checked against the region's
 * size). Returns 0, or -errno, which goes back to the client as the reply's
 * error. Reads must fill buf.
 */
typedef int (*vfu_access_fn)(void *opaque, uint64_t offset, void *buf, size_t len, bool is_write);

/*
 * Memory the client may map instead of trapping (sparse mmap): areas of the
 * region backed by a file. GET_REGION_INFO then carries the MMAP and CAPS
 * flags, a sparse-mmap capability listing the areas and the fd (the server
 * sends a copy; the fd stays the owner's). Areas are page-aligned and lie
 * inside the region. Accesses through REGION_READ/WRITE still reach the
 * access function, mapped areas included. nr_areas 0: not mappable.
 */
#define VFU_MAX_SPARSE_AREAS 8
struct vfu_mmap_area {
	uint64_t offset;
	uint64_t size;
};
struct vfu_region_mmap {
	int fd;
	uint64_t fd_offset;     /* where the region's byte 0 lies in fd (page-aligned) */
	uint32_t nr_areas;
	struct vfu_mmap_area areas[VFU_MAX_SPARSE_AREAS];
};

struct vfu_region {
	uint64_t size;          /* 0: the region does not exist */
	vfu_access_fn access;
	struct vfu_region_mmap mmap; /* read at every GET_REGION_INFO: the fd may change between clients */
};

struct vfu_device {
	void *opaque;
	struct vfu_region regions[VFU_NUM_REGIONS];
	uint32_t irq_count[VFU_NUM_IRQS];
	/* Return the device to its power-on state: DEVICE_RESET and client departure. */
	void (*reset)(void *opaque);
	/* Vectors of an index got or lost eventfds, or were masked or unmasked. */
	void (*irq_changed)(void *opaque, enum vfu_irq_index index);
	/*
	 * The client triggered a vector itself (SET_IRQS, ACTION_TRIGGER without
	 * eventfds): raise it as the device would. NULL: signal it directly.
	 */
	void (*irq_trigger)(void *opaque, enum vfu_irq_index index, uint32_t vector);
	/*
	 * Called before each message is handled: the client may have written
	 * mapped areas before it sent the message, and a later access must not
	 * pass those writes (as a PCI read does not pass posted writes). May be NULL.
	 */
	void (*sync)(void *opaque);
	/*
	 * Called before a reply goes to the client: the device sends the
	 * interrupts it raised and still holds, so a completion does not pass the
	 * messages raised before it (as a PCI completion does not pass a posted
	 * write, an MSI). Posted messages get no reply and do not call it. May be NULL.
	 */
	void (*before_reply)(void *opaque);
	/*
	 * The client is gone (after reset): whatever it mapped it may still
	 * write, so the device gives the next client fresh memory (a new fd in
	 * the regions' mmap). May be NULL.
	 */
	void (*disconnected)(void *opaque);
};

/* Returns the server, or NULL with a one-line reason in err. dev must outlive it. */
struct vfu_server *vfu_server_start(struct evloop *loop, const char *path,
				    const struct vfu_device *dev, char *err, size_t errlen);
void vfu_server_stop(struct vfu_server *srv);

/* A client is connected. */
bool vfu_server_connected(const struct vfu_server *srv);

/* The current client's guest memory (empty while no client is connected). */
struct dma_map *vfu_server_dma(struct vfu_server *srv);

/*
 * Signal vector `vector` of `index` to the client. Returns true if it was
 * delivered, false when no eventfd is assigned to it or it is masked
 * through SET_IRQS; the caller keeps it pending.
 */
bool vfu_irq_signal(struct vfu_server *srv, enum vfu_irq_index index, uint32_t vector);

/* The vector is masked through SET_IRQS (ACTION_MASK). */
bool vfu_irq_masked(const struct vfu_server *srv, enum vfu_irq_index index, uint32_t vector);

#endif
