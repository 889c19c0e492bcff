/*
 * vfio-user protocol server; see vfu_server.h.
 *
 * Tracks the vfio-user specification (QEMU docs/interop/vfio-user.rst) as
 * QEMU's vfio-user-pci client (10.1 and later) uses it. Every message is read
 * whole (header, then exactly the size it announces, bounded by
 * VFU_MAX_MSG_SIZE) before it is handled; each handler checks its own payload.
 * A message that breaks the rules gets an error reply; one that makes the
 * stream impossible to follow (a bad size, truncated descriptors) ends the
 * connection. The server itself never stops for a client's mistake.
 */
#include "vfio_user/vfu_server.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <json-c/json.h>

#include "util/evloop.h"
#include "util/log.h"
#include "vfio_user/dma_map.h"
#include "vfio_user/vfu_irq.h"
#include "vfio_user/vfu_proto.h"
#include "vfio_user/vfu_read.h"

_Static_assert((int)VFU_NUM_REGIONS == (int)VFU_PCI_NUM_REGIONS, "region count");
_Static_assert((int)VFU_NUM_IRQS == (int)VFU_PCI_NUM_IRQS, "irq count");

#define SEND_TIMEOUT_MS 5000
#define MSGS_PER_WAKEUP 64

struct vfu_conn {
	int fd;
	struct ev_watch *watch;
	struct vfu_in in;  /* the message being read, and what was read ahead (vfu_read.h) */
	bool negotiated;   /* VERSION done */
	uint64_t client_max_xfer;
	/* what the client sent, logged when it goes: messages, posted ones, WRITE_MULTI batches and their writes */
	uint64_t n_msgs, n_posted, n_multi, n_multi_writes;
};

struct vfu_server {
	struct evloop *loop;
	const struct vfu_device *dev;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int listen_fd;
	struct ev_watch *listen_watch;
	struct vfu_conn *conn;
	struct dma_map *dma;
	struct vfu_irqs irqs;
};

/* A reply at most this long (a doorbell's REGION_WRITE echo, a register read) needs no allocation. */
#define REPLY_SMALL 64

/* What one handler produced: a payload to send back (with descriptors, not owned), or an errno. */
struct reply {
	uint8_t *data;        /* small, or allocated when longer */
	size_t len;
	int err;
	int fds[1];
	unsigned nfds;
	uint8_t small[REPLY_SMALL];
};

/* ---- interrupts (the table: vfu_irq.c) ---- */

bool vfu_irq_signal(struct vfu_server *srv, enum vfu_irq_index index, uint32_t vector)
{
	return vfu_irqs_signal(&srv->irqs, index, vector);
}

bool vfu_irq_masked(const struct vfu_server *srv, enum vfu_irq_index index, uint32_t vector)
{
	return vfu_irqs_masked(&srv->irqs, index, vector);
}

bool vfu_server_connected(const struct vfu_server *srv)
{
	return srv->conn != NULL;
}

struct dma_map *vfu_server_dma(struct vfu_server *srv)
{
	return srv->dma;
}

/* ---- replies ---- */

static int reply_alloc(struct reply *r, size_t len)
{
	if (len <= sizeof(r->small)) {
		memset(r->small, 0, len);
		r->data = r->small;
		r->len = len;
		return 0;
	}
	r->data = calloc(1, len);
	if (r->data == NULL)
		return r->err = ENOMEM;
	r->len = len;
	return 0;
}

/* Send all of buf (with fds on the first byte), waiting for the socket at most SEND_TIMEOUT_MS. */
static int send_all(int fd, const void *buf, size_t len, const int *fds, unsigned nfds)
{
	const uint8_t *p = buf;

	while (len > 0) {
		union {
			char buf[CMSG_SPACE(sizeof(int) * VFU_MAX_MSG_FDS)];
			struct cmsghdr align;
		} ctl;
		struct iovec iov = { .iov_base = (void *)p, .iov_len = len };
		struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
		ssize_t n;

		if (nfds) {
			struct cmsghdr *c;

			msg.msg_control = ctl.buf;
			msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
			c = CMSG_FIRSTHDR(&msg);
			c->cmsg_level = SOL_SOCKET;
			c->cmsg_type = SCM_RIGHTS;
			c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
			memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
		}
		n = sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			struct pollfd pfd = { .fd = fd, .events = POLLOUT };

			if (poll(&pfd, 1, SEND_TIMEOUT_MS) <= 0)
				return -ETIMEDOUT;
			continue;
		}
		if (n <= 0)
			return n < 0 ? -errno : -EPIPE;
		p += n;
		len -= (size_t)n;
		nfds = 0;
	}
	return 0;
}

static int send_reply(struct vfu_conn *c, const struct vfu_hdr *req, const struct reply *r)
{
	struct vfu_hdr h = {
		.msg_id = req->msg_id,
		.command = req->command,
		.flags = VFU_F_TYPE_REPLY,
	};
	uint8_t small[sizeof(h) + REPLY_SMALL], *out = small;
	int rc;

	if (r->err) {
		h.flags |= VFU_F_ERROR;
		h.error_no = (uint32_t)r->err;
		h.size = sizeof(h);
		return send_all(c->fd, &h, sizeof(h), NULL, 0);
	}
	h.size = (uint32_t)(sizeof(h) + r->len);
	if (h.size > sizeof(small) && (out = malloc(h.size)) == NULL)
		return -ENOMEM;
	memcpy(out, &h, sizeof(h));
	if (r->len)
		memcpy(out + sizeof(h), r->data, r->len);
	rc = send_all(c->fd, out, h.size, r->fds, r->nfds);
	if (out != small)
		free(out);
	return rc;
}

/* ---- handlers: each gets the payload (after the header) and its length ---- */

struct msg {
	struct vfu_server *srv;
	struct vfu_conn *conn;
	const struct vfu_hdr *hdr;
	const uint8_t *p;
	size_t len;
	int *fds;          /* received descriptors; a handler that keeps one sets it to -1 */
	unsigned nfds;
};

static int handle_version(struct msg *m, struct reply *r)
{
	const struct vfu_version *v = (const void *)m->p;
	const char *json = (const char *)m->p + sizeof(*v);
	size_t jlen = m->len - sizeof(*v);
	struct json_object *root = NULL, *caps, *val;
	char out_json[256];
	struct vfu_version rv = { 0, 0 };
	int n;

	if (m->conn->negotiated)
		return EINVAL;
	if (v->major != 0)
		return ENOTSUP;
	m->conn->client_max_xfer = VFU_MAX_DATA_XFER;
	if (jlen > 0) {
		/* The capabilities string must be NUL-terminated inside the message. */
		if (memchr(json, '\0', jlen) == NULL)
			return EINVAL;
		if (json[0] != '\0') {
			root = json_tokener_parse(json);
			if (root == NULL || !json_object_is_type(root, json_type_object)) {
				json_object_put(root);
				return EINVAL;
			}
			if (json_object_object_get_ex(root, "capabilities", &caps)) {
				if (!json_object_is_type(caps, json_type_object)) {
					json_object_put(root);
					return EINVAL;
				}
				if (json_object_object_get_ex(caps, "max_data_xfer_size", &val)) {
					int64_t x = json_object_get_int64(val);

					if (!json_object_is_type(val, json_type_int) || x < 4096) {
						json_object_put(root);
						return EINVAL;
					}
					m->conn->client_max_xfer = (uint64_t)x;
				}
			}
			json_object_put(root);
		}
	}
	n = snprintf(out_json, sizeof(out_json),
		     "{\"capabilities\":{\"max_msg_fds\":%u,\"max_data_xfer_size\":%u,"
		     "\"pgsizes\":%u,\"max_dma_maps\":%u,\"write_multiple\":true}}",
		     VFU_MAX_MSG_FDS, VFU_MAX_DATA_XFER, VFU_PGSIZE, VFU_MAX_DMA_MAPS);
	if (reply_alloc(r, sizeof(rv) + (size_t)n + 1))
		return ENOMEM;
	memcpy(r->data, &rv, sizeof(rv));
	memcpy(r->data + sizeof(rv), out_json, (size_t)n + 1);
	m->conn->negotiated = true;
	LOG_DEBUG("vfio-user: version negotiated, client max transfer %llu",
		  (unsigned long long)m->conn->client_max_xfer);
	return 0;
}

static void unmap_host(void *host, uint64_t size, void *arg)
{
	(void)arg;
	if (host)
		munmap(host, (size_t)size);
}

static int handle_dma_map(struct msg *m, struct reply *r)
{
	struct vfu_dma_map req;
	void *host = NULL;
	int prot = 0, rc;

	(void)r;
	memcpy(&req, m->p, sizeof(req));
	if (req.argsz < sizeof(req) || req.argsz > m->len || m->nfds > 1)
		return EINVAL;
	if (req.flags & ~(VFU_DMA_READ | VFU_DMA_WRITE) || req.flags == 0)
		return EINVAL;
	if (req.size == 0 || req.iova > UINT64_MAX - (req.size - 1) ||
	    req.iova % VFU_PGSIZE || req.size % VFU_PGSIZE || req.offset % VFU_PGSIZE ||
	    req.size > SIZE_MAX || req.offset > (uint64_t)INT64_MAX)
		return EINVAL;
	if (req.flags & VFU_DMA_READ)
		prot |= DMA_PROT_READ;
	if (req.flags & VFU_DMA_WRITE)
		prot |= DMA_PROT_WRITE;
	if (m->nfds == 1) {
		int mprot = (prot & DMA_PROT_READ ? PROT_READ : 0) | (prot & DMA_PROT_WRITE ? PROT_READ | PROT_WRITE : 0);
		struct stat st;
		/*
		 * A file sealed against shrinking (QEMU seals its memfd RAM by default) keeps at
		 * least the size fstat sees after the seals are read: no access can fault then.
		 */
		int seals = fcntl(m->fds[0], F_GET_SEALS);
		bool nofault = seals >= 0 && (seals & F_SEAL_SHRINK);

		/*
		 * Only memory that exists: a mapping past the end of its file would turn the
		 * device's first access there into SIGBUS. Guest RAM is a memfd or a regular file.
		 */
		if (fstat(m->fds[0], &st) < 0 || !S_ISREG(st.st_mode) || st.st_size < 0 ||
		    req.offset > (uint64_t)st.st_size || req.size > (uint64_t)st.st_size - req.offset) {
			LOG_WARN("vfio-user: DMA map [%#llx, +%#llx) at offset %#llx is not backed by its file",
				 (unsigned long long)req.iova, (unsigned long long)req.size,
				 (unsigned long long)req.offset);
			return EINVAL;
		}

		host = mmap(NULL, (size_t)req.size, mprot, MAP_SHARED, m->fds[0], (off_t)req.offset);
		if (host == MAP_FAILED) {
			rc = errno;
			LOG_WARN("vfio-user: DMA map [%#llx, +%#llx): mmap: %s",
				 (unsigned long long)req.iova, (unsigned long long)req.size, strerror(rc));
			return rc;
		}
		if (nofault)
			prot |= DMA_MAP_NOFAULT;
	} else {
		LOG_DEBUG("vfio-user: DMA map [%#llx, +%#llx) without memory; the device cannot reach it",
			  (unsigned long long)req.iova, (unsigned long long)req.size);
	}
	rc = dma_map_add(m->srv->dma, req.iova, req.size, host, prot);
	if (rc) {
		if (host)
			munmap(host, (size_t)req.size);
		return -rc;
	}
	LOG_DEBUG("vfio-user: DMA map [%#llx, +%#llx) flags %#x%s", (unsigned long long)req.iova,
		  (unsigned long long)req.size, req.flags, host ? "" : " (no fd)");
	return 0;
}

static int handle_dma_unmap(struct msg *m, struct reply *r)
{
	struct vfu_dma_unmap req;
	void *host;
	int rc;

	memcpy(&req, m->p, sizeof(req));
	if (req.argsz < sizeof(req) || req.argsz > m->len)
		return EINVAL;
	if (req.flags == VFU_DMA_UNMAP_ALL) {
		if (req.iova || req.size)
			return EINVAL;
		dma_map_clear(m->srv->dma, unmap_host, NULL);
	} else if (req.flags != 0) {
		return ENOTSUP; /* dirty bitmaps and vaddr updates are not offered */
	} else {
		rc = dma_map_remove(m->srv->dma, req.iova, req.size, &host);
		if (rc)
			return -rc;
		unmap_host(host, req.size, NULL);
	}
	LOG_DEBUG("vfio-user: DMA unmap [%#llx, +%#llx)%s", (unsigned long long)req.iova,
		  (unsigned long long)req.size, req.flags ? " all" : "");
	/* The reply echoes the request (argsz only: no bitmap). */
	if (reply_alloc(r, sizeof(req)))
		return ENOMEM;
	req.argsz = sizeof(req);
	memcpy(r->data, &req, sizeof(req));
	return 0;
}

static int handle_get_info(struct msg *m, struct reply *r)
{
	struct vfu_device_info info;

	memcpy(&info, m->p, sizeof(info));
	if (info.argsz < sizeof(info))
		return EINVAL;
	info = (struct vfu_device_info){
		.argsz = sizeof(info),
		.flags = VFU_DEVICE_FLAGS_RESET | VFU_DEVICE_FLAGS_PCI,
		.num_regions = VFU_NUM_REGIONS,
		.num_irqs = VFU_NUM_IRQS,
	};
	if (reply_alloc(r, sizeof(info)))
		return ENOMEM;
	memcpy(r->data, &info, sizeof(info));
	return 0;
}

/* The region's mappable areas, or NULL when it has none. */
static const struct vfu_region_mmap *region_mmap(const struct vfu_region *reg)
{
	return reg->size && reg->mmap.nr_areas && reg->mmap.fd >= 0 ? &reg->mmap : NULL;
}

/*
 * GET_REGION_INFO. A mappable region answers MMAP | CAPS with a sparse-mmap
 * capability right after the info and its fd. When the client's argsz has no
 * room for the capability, the reply is the info alone with the argsz that
 * is needed and cap_offset 0 (the client asks again), as VFIO does; the fd
 * goes with both (QEMU closes the first one).
 */
static int handle_region_info(struct msg *m, struct reply *r)
{
	struct vfu_region_info in, info;
	const struct vfu_region *reg;
	const struct vfu_region_mmap *mm;
	size_t caps_len = 0;

	memcpy(&in, m->p, sizeof(in));
	if (in.argsz < sizeof(in) || in.index >= VFU_NUM_REGIONS)
		return EINVAL;
	reg = &m->srv->dev->regions[in.index];
	mm = region_mmap(reg);
	info = (struct vfu_region_info){
		.argsz = sizeof(info),
		.index = in.index,
		.flags = reg->size ? VFU_REGION_FLAG_READ | VFU_REGION_FLAG_WRITE : 0,
		.size = reg->size,
	};
	if (mm) {
		/*
		 * A client whose argsz has no room for the capability learns the
		 * argsz it needs and asks again; that first reply names no
		 * capability (QEMU refuses CAPS without a cap_offset inside the
		 * reply) and carries no fd (the second one does).
		 */
		caps_len = sizeof(struct vfu_region_info_cap_sparse_mmap) +
			   mm->nr_areas * sizeof(struct vfu_region_sparse_mmap_area);
		info.flags |= VFU_REGION_FLAG_MMAP;
		info.offset = mm->fd_offset;
		info.argsz = (uint32_t)(sizeof(info) + caps_len);
		if (in.argsz >= info.argsz) {
			info.flags |= VFU_REGION_FLAG_CAPS;
			info.cap_offset = sizeof(info);
			r->fds[0] = mm->fd;
			r->nfds = 1;
		} else {
			caps_len = 0;
		}
	}
	if (reply_alloc(r, sizeof(info) + caps_len))
		return ENOMEM;
	memcpy(r->data, &info, sizeof(info));
	if (caps_len) {
		struct vfu_region_info_cap_sparse_mmap cap = {
			.header = { .id = VFU_REGION_INFO_CAP_SPARSE_MMAP,
				    .version = VFU_REGION_INFO_CAP_SPARSE_MMAP_VERSION, .next = 0 },
			.nr_areas = mm->nr_areas,
		};
		uint8_t *p = r->data + sizeof(info);

		memcpy(p, &cap, sizeof(cap));
		p += sizeof(cap);
		for (uint32_t i = 0; i < mm->nr_areas; i++) {
			struct vfu_region_sparse_mmap_area a = { mm->areas[i].offset, mm->areas[i].size };

			memcpy(p, &a, sizeof(a));
			p += sizeof(a);
		}
	}
	return 0;
}

static int handle_irq_info(struct msg *m, struct reply *r)
{
	struct vfu_irq_info info;

	memcpy(&info, m->p, sizeof(info));
	if (info.argsz < sizeof(info) || info.index >= VFU_NUM_IRQS)
		return EINVAL;
	info = (struct vfu_irq_info){
		.argsz = sizeof(info),
		.index = info.index,
		.count = m->srv->irqs.idx[info.index].count,
		.flags = VFU_IRQ_INFO_EVENTFD | (info.index == VFU_IRQ_MSIX ? VFU_IRQ_INFO_MASKABLE : 0),
	};
	if (reply_alloc(r, sizeof(info)))
		return ENOMEM;
	memcpy(r->data, &info, sizeof(info));
	return 0;
}

/* A vector the client triggers itself: raised as the device would raise it, or signalled directly. */
static void set_irqs_trigger(void *ctx, enum vfu_irq_index index, uint32_t vector)
{
	struct vfu_server *srv = ctx;

	if (srv->dev->irq_trigger)
		srv->dev->irq_trigger(srv->dev->opaque, index, vector);
	else
		vfu_irqs_signal(&srv->irqs, index, vector);
}

static int handle_set_irqs(struct msg *m, struct reply *r)
{
	struct vfu_irq_set req;
	int err;

	(void)r;
	memcpy(&req, m->p, sizeof(req));
	err = vfu_irqs_set(&m->srv->irqs, &req, m->p, m->len, m->fds, m->nfds, set_irqs_trigger, m->srv);
	if (err == 0 && m->srv->dev->irq_changed)
		m->srv->dev->irq_changed(m->srv->dev->opaque, (enum vfu_irq_index)req.index);
	return err;
}

/* Check a region access and find its region; 0 or an errno. */
static int check_access(const struct vfu_server *srv, uint32_t region, uint64_t offset, uint64_t count,
			const struct vfu_region **out)
{
	const struct vfu_region *reg;

	if (region >= VFU_NUM_REGIONS)
		return EINVAL;
	reg = &srv->dev->regions[region];
	if (reg->size == 0 || reg->access == NULL)
		return EINVAL;
	if (count == 0 || count > VFU_MAX_DATA_XFER || offset > reg->size || count > reg->size - offset)
		return EINVAL;
	*out = reg;
	return 0;
}

static int handle_region_read(struct msg *m, struct reply *r)
{
	struct vfu_region_rw req;
	const struct vfu_region *reg;
	int rc;

	memcpy(&req, m->p, sizeof(req));
	if (m->len != sizeof(req))
		return EINVAL;
	rc = check_access(m->srv, req.region, req.offset, req.count, &reg);
	if (rc)
		return rc;
	if (req.count > m->conn->client_max_xfer)
		return E2BIG;
	if (reply_alloc(r, sizeof(req) + req.count))
		return ENOMEM;
	rc = reg->access(m->srv->dev->opaque, req.offset, r->data + sizeof(req), req.count, false);
	if (rc)
		return -rc;
	memcpy(r->data, &req, sizeof(req));
	return 0;
}

static int handle_region_write(struct msg *m, struct reply *r)
{
	struct vfu_region_rw req;
	const struct vfu_region *reg;
	int rc;

	memcpy(&req, m->p, sizeof(req));
	if (m->len - sizeof(req) != req.count)
		return EINVAL;
	rc = check_access(m->srv, req.region, req.offset, req.count, &reg);
	if (rc)
		return rc;
	rc = reg->access(m->srv->dev->opaque, req.offset, (void *)(m->p + sizeof(req)), req.count, true);
	if (rc)
		return -rc;
	if (reply_alloc(r, sizeof(req)))
		return ENOMEM;
	memcpy(r->data, &req, sizeof(req));
	return 0;
}

static int handle_write_multi(struct msg *m, struct reply *r)
{
	struct vfu_write_multi wm;

	(void)r;
	memcpy(&wm, m->p, sizeof(wm));
	if (wm.wr_cnt == 0 || wm.wr_cnt > VFU_MULTI_MAX ||
	    m->len - sizeof(wm) != wm.wr_cnt * sizeof(struct vfu_write_one))
		return EINVAL;
	for (uint64_t i = 0; i < wm.wr_cnt; i++) {
		struct vfu_write_one one;
		const struct vfu_region *reg;
		int rc;

		memcpy(&one, m->p + sizeof(wm) + i * sizeof(one), sizeof(one));
		if (one.count > VFU_MULTI_DATA)
			return EINVAL;
		rc = check_access(m->srv, one.region, one.offset, one.count, &reg);
		if (rc == 0)
			rc = -reg->access(m->srv->dev->opaque, one.offset, one.data, one.count, true);
		if (rc) {
			/* The batch is posted: nobody can be told, so log and go on with the rest. */
			LOG_WARN("vfio-user: write-multi entry %llu (region %u offset %#llx count %u): %s",
				 (unsigned long long)i, one.region, (unsigned long long)one.offset, one.count,
				 strerror(rc));
		}
	}
	return 0;
}

static int handle_reset(struct msg *m, struct reply *r)
{
	(void)r;
	LOG_INFO("vfio-user: device reset by the client");
	if (m->srv->dev->reset)
		m->srv->dev->reset(m->srv->dev->opaque);
	return 0;
}

struct handler {
	int (*fn)(struct msg *m, struct reply *r);
	size_t min_len; /* smallest payload the command can have */
	const char *name;
};

static const struct handler handlers[VFU_CMD_MAX] = {
	[VFU_CMD_VERSION] = { handle_version, sizeof(struct vfu_version), "VERSION" },
	[VFU_CMD_DMA_MAP] = { handle_dma_map, sizeof(struct vfu_dma_map), "DMA_MAP" },
	[VFU_CMD_DMA_UNMAP] = { handle_dma_unmap, sizeof(struct vfu_dma_unmap), "DMA_UNMAP" },
	[VFU_CMD_DEVICE_GET_INFO] = { handle_get_info, sizeof(struct vfu_device_info), "DEVICE_GET_INFO" },
	[VFU_CMD_DEVICE_GET_REGION_INFO] = { handle_region_info, sizeof(struct vfu_region_info), "GET_REGION_INFO" },
	[VFU_CMD_DEVICE_GET_IRQ_INFO] = { handle_irq_info, sizeof(struct vfu_irq_info), "GET_IRQ_INFO" },
	[VFU_CMD_DEVICE_SET_IRQS] = { handle_set_irqs, sizeof(struct vfu_irq_set), "SET_IRQS" },
	[VFU_CMD_REGION_READ] = { handle_region_read, sizeof(struct vfu_region_rw), "REGION_READ" },
	[VFU_CMD_REGION_WRITE] = { handle_region_write, sizeof(struct vfu_region_rw), "REGION_WRITE" },
	[VFU_CMD_DEVICE_RESET] = { handle_reset, 0, "DEVICE_RESET" },
	[VFU_CMD_REGION_WRITE_MULTI] = { handle_write_multi, sizeof(struct vfu_write_multi), "REGION_WRITE_MULTI" },
};

/* ---- connection ---- */


static void drop_client(struct vfu_server *srv, const char *why)
{
	struct vfu_conn *c = srv->conn;

	if (c == NULL)
		return;
	LOG_INFO("vfio-user: client disconnected (%s); resetting the device", why);
	LOG_INFO("vfio-user: the client sent %llu messages (%llu posted; %llu REGION_WRITE_MULTI batches of %llu "
		 "writes in all)",
		 (unsigned long long)c->n_msgs, (unsigned long long)c->n_posted, (unsigned long long)c->n_multi,
		 (unsigned long long)c->n_multi_writes);
	evloop_del_fd(srv->loop, c->watch);
	close(c->fd);
	vfu_in_free(&c->in);
	free(c);
	srv->conn = NULL;
	/* The spec keeps device state across a disconnect; a new client means a new guest, so reset. */
	dma_map_clear(srv->dma, unmap_host, NULL);
	vfu_irqs_reset(&srv->irqs);
	if (srv->dev->reset)
		srv->dev->reset(srv->dev->opaque);
	if (srv->dev->disconnected)
		srv->dev->disconnected(srv->dev->opaque);
}

/* Handle the complete message in c->in. Returns 0, or -1 if the connection must end. */
static int dispatch(struct vfu_server *srv, struct vfu_conn *c)
{
	const struct vfu_hdr *h = &c->in.hdr;
	struct msg m = {
		.srv = srv, .conn = c, .hdr = h,
		.p = c->in.buf + sizeof(*h), .len = h->size - sizeof(*h),
		.fds = c->in.fds, .nfds = c->in.nfds,
	};
	struct reply r = { 0 };
	bool no_reply = (h->flags & VFU_F_NO_REPLY) != 0;
	const struct handler *hd = h->command < VFU_CMD_MAX ? &handlers[h->command] : NULL;
	int rc = 0;

	c->n_msgs++;
	c->n_posted += no_reply;
	if (h->command == VFU_CMD_REGION_WRITE_MULTI && m.len >= sizeof(struct vfu_write_multi)) {
		struct vfu_write_multi wm;

		memcpy(&wm, m.p, sizeof(wm));
		c->n_multi++;
		c->n_multi_writes += wm.wr_cnt <= VFU_MULTI_MAX ? wm.wr_cnt : 0;
	}
	if ((h->flags & VFU_F_TYPE_MASK) != VFU_F_TYPE_COMMAND) {
		LOG_WARN("vfio-user: message %u is not a command (flags %#x)", h->msg_id, h->flags);
		r.err = EINVAL;
	} else if (hd == NULL || hd->fn == NULL) {
		LOG_DEBUG("vfio-user: command %u not supported", h->command);
		r.err = ENOTSUP;
	} else if (m.len < hd->min_len) {
		LOG_WARN("vfio-user: %s payload of %zu bytes is too short", hd->name, m.len);
		r.err = EINVAL;
	} else if (c->in.fds_overflow) {
		r.err = EINVAL;
	} else if (!c->negotiated && h->command != VFU_CMD_VERSION) {
		LOG_WARN("vfio-user: %s before VERSION", hd->name);
		r.err = EINVAL;
	} else {
		if (srv->dev->sync)
			srv->dev->sync(srv->dev->opaque);
		r.err = hd->fn(&m, &r);
		if (r.err)
			LOG_DEBUG("vfio-user: %s failed: %s", hd->name, strerror(r.err));
	}
	if (!no_reply) {
		if (srv->dev->before_reply)
			srv->dev->before_reply(srv->dev->opaque);
		rc = send_reply(c, h, &r);
	} else if (r.err && h->command != VFU_CMD_REGION_WRITE_MULTI)
		LOG_WARN("vfio-user: posted %s failed: %s", hd && hd->name ? hd->name : "command", strerror(r.err));
	if (r.data != r.small)
		free(r.data);
	return rc ? -1 : 0;
}


static void on_client(void *arg, uint32_t events)
{
	struct vfu_server *srv = arg;
	struct vfu_conn *c = srv->conn;
	const char *why = "hang-up";

	vfu_read_woken(&c->in);
	/* Messages already read ahead are all handled: nothing would wake the loop for them. */
	for (int i = 0; i < MSGS_PER_WAKEUP || vfu_read_pending(&c->in); i++) {
		int rc = vfu_read_next(&c->in, &why);

		if (rc == 0) {
			if ((events & (EPOLLHUP | EPOLLERR)) && !(events & EPOLLIN))
				break;
			return;
		}
		if (rc < 0)
			break;
		rc = dispatch(srv, c);
		vfu_read_done(&c->in);
		if (rc < 0) {
			why = "reply could not be sent";
			break;
		}
		if (i >= MSGS_PER_WAKEUP - 1 && !vfu_read_pending(&c->in))
			return; /* level-triggered: the loop comes back for the rest */
	}
	drop_client(srv, why);
}

static void on_listen(void *arg, uint32_t events)
{
	struct vfu_server *srv = arg;
	struct vfu_conn *c;
	int fd;

	(void)events;
	fd = accept4(srv->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0) {
		if (errno != EAGAIN && errno != EINTR)
			LOG_WARN("vfio-user: accept: %m");
		return;
	}
	if (srv->conn) {
		/* A client that already hung up (QEMU restarted at once) makes room for the new one. */
		struct pollfd pfd = { .fd = srv->conn->fd, .events = POLLRDHUP };

		if (poll(&pfd, 1, 0) == 1 && (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR)))
			drop_client(srv, "hung up");
	}
	if (srv->conn) {
		LOG_WARN("vfio-user: a second client was turned away (one client at a time)");
		close(fd);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (c == NULL) {
		close(fd);
		return;
	}
	c->fd = fd;
	c->watch = vfu_in_init(&c->in, fd) == 0 ? evloop_add_fd(srv->loop, fd, EPOLLIN, on_client, srv) : NULL;
	if (c->watch == NULL) {
		close(fd);
		vfu_in_free(&c->in);
		free(c);
		return;
	}
	srv->conn = c;
	LOG_INFO("vfio-user: client connected");
}

/* ---- socket path and life cycle ---- */

/*
 * Make the path free for bind(): nothing there, or a socket nobody answers on
 * (left by a server that died), which is removed.
 */
static int claim_path(const struct sockaddr_un *sa, char *err, size_t errlen)
{
	struct stat st;
	int fd, rc;

	if (lstat(sa->sun_path, &st) < 0) {
		if (errno == ENOENT)
			return 0;
		return err_set(err, errlen, "cannot use socket path %s: %s", sa->sun_path, strerror(errno));
	}
	if (!S_ISSOCK(st.st_mode))
		return err_set(err, errlen, "%s exists and is not a socket", sa->sun_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return err_set(err, errlen, "socket: %s", strerror(errno));
	rc = connect(fd, (const struct sockaddr *)sa, sizeof(*sa));
	close(fd);
	if (rc == 0)
		return err_set(err, errlen, "another server is listening on %s", sa->sun_path);
	if (unlink(sa->sun_path) < 0 && errno != ENOENT)
		return err_set(err, errlen, "cannot remove stale socket %s: %s", sa->sun_path, strerror(errno));
	LOG_INFO("vfio-user: replaced stale socket %s", sa->sun_path);
	return 0;
}

/* The device's mappable areas must be page-aligned and inside their regions. */
static int check_mmaps(const struct vfu_device *dev, char *err, size_t errlen)
{
	for (int i = 0; i < VFU_NUM_REGIONS; i++) {
		const struct vfu_region *reg = &dev->regions[i];

		if (reg->mmap.nr_areas > VFU_MAX_SPARSE_AREAS || reg->mmap.fd_offset % VFU_PGSIZE)
			return err_set(err, errlen, "region %d: bad mmap description", i);
		for (uint32_t a = 0; a < reg->mmap.nr_areas; a++) {
			const struct vfu_mmap_area *ar = &reg->mmap.areas[a];

			if (ar->size == 0 || ar->offset % VFU_PGSIZE || ar->size % VFU_PGSIZE ||
			    ar->offset > reg->size || ar->size > reg->size - ar->offset)
				return err_set(err, errlen, "region %d: mmap area %u is not pages inside the region", i, a);
		}
	}
	return 0;
}

struct vfu_server *vfu_server_start(struct evloop *loop, const char *path,
				    const struct vfu_device *dev, char *err, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct vfu_server *srv;

	if (path[0] == '\0' || strlen(path) >= sizeof(sa.sun_path)) {
		err_set(err, errlen, "socket path '%s' is empty or longer than %zu bytes", path,
		     sizeof(sa.sun_path) - 1);
		return NULL;
	}
	strcpy(sa.sun_path, path);
	if (check_mmaps(dev, err, errlen) || claim_path(&sa, err, errlen))
		return NULL;

	srv = calloc(1, sizeof(*srv));
	if (srv == NULL) {
		err_set(err, errlen, "out of memory");
		return NULL;
	}
	srv->loop = loop;
	srv->dev = dev;
	srv->listen_fd = -1;
	strcpy(srv->path, path);
	srv->dma = dma_map_new(VFU_MAX_DMA_MAPS);
	if (srv->dma == NULL) {
		err_set(err, errlen, "out of memory");
		goto out_free;
	}
	switch (vfu_irqs_init(&srv->irqs, dev->irq_count)) {
	case 0:
		break;
	case EINVAL:
		err_set(err, errlen, "too many vectors for an irq index (at most %d)", VFU_MAX_IRQ_VECTORS);
		goto out_free;
	default:
		err_set(err, errlen, "out of memory");
		goto out_free;
	}
	srv->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (srv->listen_fd < 0) {
		err_set(err, errlen, "socket: %s", strerror(errno));
		goto out_free;
	}
	if (bind(srv->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		err_set(err, errlen, "cannot bind %s: %s", path, strerror(errno));
		goto out_free;
	}
	if (listen(srv->listen_fd, 8) < 0) {
		err_set(err, errlen, "listen on %s: %s", path, strerror(errno));
		goto out_unlink;
	}
	srv->listen_watch = evloop_add_fd(loop, srv->listen_fd, EPOLLIN, on_listen, srv);
	if (srv->listen_watch == NULL) {
		err_set(err, errlen, "cannot watch %s", path);
		goto out_unlink;
	}
	LOG_INFO("vfio-user: listening on %s", path);
	return srv;

out_unlink:
	unlink(path);
out_free:
	if (srv->listen_fd >= 0)
		close(srv->listen_fd);
	vfu_irqs_free(&srv->irqs);
	dma_map_free(srv->dma);
	free(srv);
	return NULL;
}

void vfu_server_stop(struct vfu_server *srv)
{
	if (srv == NULL)
		return;
	if (srv->conn)
		drop_client(srv, "server stopping");
	evloop_del_fd(srv->loop, srv->listen_watch);
	close(srv->listen_fd);
	if (unlink(srv->path) < 0 && errno != ENOENT)
		LOG_WARN("vfio-user: cannot remove %s: %m", srv->path);
	vfu_irqs_free(&srv->irqs);
	dma_map_free(srv->dma);
	free(srv);
}
