/*
 * One emulated PCI Express function: configuration space, memory BARs and
 * MSI-X, served through the vfio-user server.
 *
 * The configuration space is built once from the description (identity,
 * BARs, capabilities: power management, PCI Express endpoint, MSI-X) into an
 * init image plus per-byte write masks; reset copies the image back.
 *
 * MSI-X: the table and PBA live in one of the BARs. A vector is delivered
 * through the server's eventfd unless it is masked (the function mask in the
 * MSI-X control word, a mask set through SET_IRQS, or the vector's mask bit
 * in the table once the client writes the table itself) or has no eventfd;
 * then its PBA bit is set, and it is delivered as soon as that changes.
 * QEMU keeps its own copy of the table and masks in front of the server, so
 * for QEMU the server mostly sees unmasked vectors.
 *
 * Bus mastering: an MSI-X message is a memory write by the function, so
 * none is sent while Bus Master Enable (PCI_COMMAND bit 2) is clear; the
 * vector stays pending in the PBA and goes out when the bit is set again.
 * The device is told of every change of the bit (pci_function.bus_master)
 * and must itself stop touching guest memory while it is clear. The bit is
 * clear after reset, as on real PCI: drivers set it (pci_set_master).
 */
#ifndef ERNIC_PCI_PCI_DEV_H
#define ERNIC_PCI_PCI_DEV_H

#include <stdbool.h>
#include <stdint.h>

#include "vfio_user/vfu_server.h"

struct pci_bar {
	uint64_t size;          /* power of two >= 4096, or 0 for none */
	bool prefetchable;      /* all BARs are 64-bit memory BARs */
	vfu_access_fn access;   /* the device's registers (MSI-X ranges are handled here) */
};

struct pci_function {
	uint16_t vendor_id, device_id;
	uint16_t subsys_vendor_id, subsys_id;
	uint32_t class_code;    /* class, subclass, prog-if */
	uint8_t revision;
	struct pci_bar bars[6]; /* even indexes only: 64-bit BARs take two slots */
	uint32_t msix_vectors;  /* 1..2048 */
	unsigned msix_bar;
	uint32_t msix_table_offset, msix_pba_offset;
	void *opaque;           /* passed to the BAR access functions and the callbacks below */
	void (*reset)(void *opaque);
	/* Before each client message: catch up with what the client wrote to mapped BAR areas. May be NULL. */
	void (*sync)(void *opaque);
	/* The client is gone (after reset): hand out fresh mapped memory (pci_dev_set_bar_mmap). May be NULL. */
	void (*disconnected)(void *opaque);
	/*
	 * Bus Master Enable changed: set or cleared by a configuration write, or
	 * cleared by a reset (called before `reset`). May be NULL.
	 */
	void (*bus_master)(void *opaque, bool enabled);
};

struct pci_dev;

struct pci_dev *pci_dev_new(const struct pci_function *fn);
void pci_dev_free(struct pci_dev *pd);

/* The description the vfio-user server serves. */
const struct vfu_device *pci_dev_vfu(struct pci_dev *pd);

/* Connect to the server that delivers interrupts (NULL to detach). */
void pci_dev_set_server(struct pci_dev *pd, struct vfu_server *srv);

/*
 * Raise MSI-X vector vec: delivered (at once, or at the end of the loop's batch when gathering), or
 * left pending in the PBA (masked, no eventfd, no bus mastering) when it would be delivered.
 */
void pci_msix_notify(struct pci_dev *pd, uint32_t vec);
/*
 * Gather the vectors raised during one batch of loop's events and send each one's message once, at
 * the batch's end (evloop_defer), as the mask, the eventfd and bus mastering stand then: a vector
 * raised several times in a turn costs one eventfd write, and the driver one interrupt. NULL: each
 * raise is sent at once (the default).
 */
struct evloop;
void pci_dev_set_loop(struct pci_dev *pd, struct evloop *loop);
bool pci_msix_pending(const struct pci_dev *pd, uint32_t vec);

/* Whether Bus Master Enable is set in the command register. */
bool pci_dev_bus_master(const struct pci_dev *pd);

/*
 * Let the client map areas of BAR `bar` (offsets inside the BAR) backed by
 * mm->fd, or stop offering it (mm NULL). The areas may not cover the MSI-X
 * table or PBA. Takes effect at the client's next GET_REGION_INFO. 0 or -EINVAL.
 */
int pci_dev_set_bar_mmap(struct pci_dev *pd, unsigned bar, const struct vfu_region_mmap *mm);

/* Reset config space and MSI-X state, then the device (as the client's DEVICE_RESET does). */
void pci_dev_reset(struct pci_dev *pd);

#endif
