/*
 * vfio-user wire format, as QEMU's vfio-user-pci client (QEMU >= 10.1) speaks
 * it: a 16-byte header in host byte order, then a command-specific payload.
 * Layouts follow the vfio-user specification (docs/interop/vfio-user.rst in
 * QEMU) and the VFIO ioctl structures it reuses. Only src/vfio_user includes
 * this file.
 */
#ifndef ERNIC_VFIO_USER_VFU_PROTO_H
#define ERNIC_VFIO_USER_VFU_PROTO_H

#include <stddef.h>
#include <stdint.h>

#pragma pack(push, 1)

struct vfu_hdr {
	uint16_t msg_id;
	uint16_t command;
	uint32_t size;      /* whole message, header included */
	uint32_t flags;
	uint32_t error_no;  /* replies with VFU_F_ERROR: a positive errno */
};
_Static_assert(sizeof(struct vfu_hdr) == 16, "vfu_hdr");

enum vfu_command {
	VFU_CMD_VERSION = 1,
	VFU_CMD_DMA_MAP = 2,
	VFU_CMD_DMA_UNMAP = 3,
	VFU_CMD_DEVICE_GET_INFO = 4,
	VFU_CMD_DEVICE_GET_REGION_INFO = 5,
	VFU_CMD_DEVICE_GET_REGION_IO_FDS = 6,
	VFU_CMD_DEVICE_GET_IRQ_INFO = 7,
	VFU_CMD_DEVICE_SET_IRQS = 8,
	VFU_CMD_REGION_READ = 9,
	VFU_CMD_REGION_WRITE = 10,
	VFU_CMD_DMA_READ = 11,
	VFU_CMD_DMA_WRITE = 12,
	VFU_CMD_DEVICE_RESET = 13,
	VFU_CMD_REGION_WRITE_MULTI = 15,
	VFU_CMD_DEVICE_FEATURE = 16,
	VFU_CMD_MAX,
};

#define VFU_F_TYPE_MASK    0xfu
#define VFU_F_TYPE_COMMAND 0x0u
#define VFU_F_TYPE_REPLY   0x1u
#define VFU_F_NO_REPLY     0x10u
#define VFU_F_ERROR        0x20u

struct vfu_version {
	uint16_t major;
	uint16_t minor;
	/* NUL-terminated JSON follows */
};
_Static_assert(sizeof(struct vfu_version) == 4, "vfu_version");

struct vfu_dma_map {
	uint32_t argsz;
	uint32_t flags;     /* VFU_DMA_READ | VFU_DMA_WRITE */
	uint64_t offset;    /* into the passed fd */
	uint64_t iova;
	uint64_t size;
};
_Static_assert(sizeof(struct vfu_dma_map) == 32, "vfu_dma_map");
#define VFU_DMA_READ  0x1u
#define VFU_DMA_WRITE 0x2u

struct vfu_dma_unmap {
	uint32_t argsz;
	uint32_t flags;
	uint64_t iova;
	uint64_t size;
};
_Static_assert(sizeof(struct vfu_dma_unmap) == 24, "vfu_dma_unmap");
#define VFU_DMA_UNMAP_GET_DIRTY_BITMAP 0x1u
#define VFU_DMA_UNMAP_ALL              0x2u

struct vfu_device_info {
	uint32_t argsz;
	uint32_t flags;
	uint32_t num_regions;
	uint32_t num_irqs;
};
_Static_assert(sizeof(struct vfu_device_info) == 16, "vfu_device_info");
#define VFU_DEVICE_FLAGS_RESET 0x1u
#define VFU_DEVICE_FLAGS_PCI   0x2u

struct vfu_region_info {
	uint32_t argsz;
	uint32_t flags;
	uint32_t index;
	uint32_t cap_offset;
	uint64_t size;
	uint64_t offset;
};
_Static_assert(sizeof(struct vfu_region_info) == 32, "vfu_region_info");
_Static_assert(offsetof(struct vfu_region_info, cap_offset) == 12, "vfu_region_info.cap_offset");
_Static_assert(offsetof(struct vfu_region_info, offset) == 24, "vfu_region_info.offset");
#define VFU_REGION_FLAG_READ  0x1u
#define VFU_REGION_FLAG_WRITE 0x2u
#define VFU_REGION_FLAG_MMAP  0x4u
#define VFU_REGION_FLAG_CAPS  0x8u

/*
 * Region info capabilities (VFIO's struct vfio_info_cap_header): a chain
 * that starts cap_offset bytes into the reply's vfu_region_info; next is the
 * offset of the following capability from the same start, 0 for the last.
 */
struct vfu_info_cap_header {
	uint16_t id;
	uint16_t version;
	uint32_t next;
};
_Static_assert(sizeof(struct vfu_info_cap_header) == 8, "vfu_info_cap_header");

/* VFIO_REGION_INFO_CAP_SPARSE_MMAP: the parts of a region the client may mmap (the rest traps). */
#define VFU_REGION_INFO_CAP_SPARSE_MMAP 1
#define VFU_REGION_INFO_CAP_SPARSE_MMAP_VERSION 1
struct vfu_region_sparse_mmap_area {
	uint64_t offset;    /* inside the region; the fd is mapped at vfu_region_info.offset + offset */
	uint64_t size;
};
_Static_assert(sizeof(struct vfu_region_sparse_mmap_area) == 16, "vfu_region_sparse_mmap_area");

struct vfu_region_info_cap_sparse_mmap {
	struct vfu_info_cap_header header;
	uint32_t nr_areas;
	uint32_t reserved;
	/* nr_areas struct vfu_region_sparse_mmap_area follow */
};
_Static_assert(sizeof(struct vfu_region_info_cap_sparse_mmap) == 16, "vfu_region_info_cap_sparse_mmap");
_Static_assert(offsetof(struct vfu_region_info_cap_sparse_mmap, nr_areas) == 8, "sparse mmap nr_areas");

struct vfu_irq_info {
	uint32_t argsz;
	uint32_t flags;
	uint32_t index;
	uint32_t count;
};
_Static_assert(sizeof(struct vfu_irq_info) == 16, "vfu_irq_info");
#define VFU_IRQ_INFO_EVENTFD  0x1u
#define VFU_IRQ_INFO_MASKABLE 0x2u
#define VFU_IRQ_INFO_AUTOMASKED 0x4u
#define VFU_IRQ_INFO_NORESIZE 0x8u

struct vfu_irq_set {
	uint32_t argsz;
	uint32_t flags;
	uint32_t index;
	uint32_t start;
	uint32_t count;
	/* DATA_BOOL: count bytes follow; DATA_EVENTFD: the fds travel as SCM_RIGHTS */
};
_Static_assert(sizeof(struct vfu_irq_set) == 20, "vfu_irq_set");
#define VFU_IRQ_SET_DATA_NONE      0x01u
#define VFU_IRQ_SET_DATA_BOOL      0x02u
#define VFU_IRQ_SET_DATA_EVENTFD   0x04u
#define VFU_IRQ_SET_ACTION_MASK    0x08u
#define VFU_IRQ_SET_ACTION_UNMASK  0x10u
#define VFU_IRQ_SET_ACTION_TRIGGER 0x20u
#define VFU_IRQ_SET_DATA_MASK      0x07u
#define VFU_IRQ_SET_ACTION_MASK_ALL 0x38u

struct vfu_region_rw {
	uint64_t offset;
	uint32_t region;
	uint32_t count;
	/* data follows (writes, and read replies) */
};
_Static_assert(sizeof(struct vfu_region_rw) == 16, "vfu_region_rw");

#define VFU_MULTI_DATA 8
#define VFU_MULTI_MAX  200
struct vfu_write_one {
	uint64_t offset;
	uint32_t region;
	uint32_t count;
	uint8_t data[VFU_MULTI_DATA];
};
_Static_assert(sizeof(struct vfu_write_one) == 24, "vfu_write_one");

struct vfu_write_multi {
	uint64_t wr_cnt;
	/* wr_cnt struct vfu_write_one follow */
};
_Static_assert(sizeof(struct vfu_write_multi) == 8, "vfu_write_multi");

#pragma pack(pop)

/* VFIO PCI region and IRQ indexes. */
enum {
	VFU_PCI_BAR0_REGION = 0,
	VFU_PCI_BAR5_REGION = 5,
	VFU_PCI_ROM_REGION = 6,
	VFU_PCI_CONFIG_REGION = 7,
	VFU_PCI_VGA_REGION = 8,
	VFU_PCI_NUM_REGIONS = 9,
};
enum {
	VFU_PCI_INTX_IRQ = 0,
	VFU_PCI_MSI_IRQ = 1,
	VFU_PCI_MSIX_IRQ = 2,
	VFU_PCI_ERR_IRQ = 3,
	VFU_PCI_REQ_IRQ = 4,
	VFU_PCI_NUM_IRQS = 5,
};

/* What this server accepts and advertises. */
#define VFU_MAX_MSG_FDS       16
#define VFU_MAX_DATA_XFER     (1u << 20)
#define VFU_MAX_MSG_SIZE      (VFU_MAX_DATA_XFER + 4096u)
#define VFU_PGSIZE            4096u
#define VFU_MAX_DMA_MAPS      8192u

#endif
