/*
 * The ionic device model: BAR0 registers (device info, dev_cmd, interrupt
 * control) and the BAR2 doorbell pages, as the stock Linux ionic driver
 * drives them. Knows nothing of vfio-user or PCI configuration: it is handed
 * an environment to raise interrupts and reach guest memory.
 */
#ifndef ERNIC_IONIC_IONIC_DEV_H
#define ERNIC_IONIC_IONIC_DEV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct dma_map;

#define IONIC_FW_VERSION   "1.0.0-ernic"
#define IONIC_NINTRS       32   /* MSI-X vectors, and interrupt control blocks */
#define IONIC_NDBPGS_PER_LIF 64 /* doorbell pages: page 0 the kernel's, 1.. user contexts */
#define IONIC_DB_PAGE_SIZE 4096 /* the guest's page size */
#define IONIC_BAR2_SIZE    (IONIC_NDBPGS_PER_LIF * IONIC_DB_PAGE_SIZE)
/*
 * QP ids of the RDMA LIF: what its identity advertises as the SQ and RQ
 * qtypes' qid_count, and the size of the device's QP table. Id 0 is never a
 * QP, so at most IONIC_DEV_RDMA_NQP - 1 exist. Public because a wire
 * transport (fabric/roce_glue.c) must hold as many.
 */
#define IONIC_DEV_RDMA_NQP 1024

/*
 * Mapped doorbell pages: when the client maps BAR2, guest stores land in
 * shared memory instead of trapping, and the device finds them by looking
 * (ionic_dev_doorbell_poll). An empty 8-byte slot holds IONIC_DB_EMPTY (no
 * driver writes it: doorbell bits 63:48 are always 0); the device takes a
 * doorbell by swapping it for IONIC_DB_EMPTY in one atomic step, so every
 * store it sees is taken once. See docs/ionic.md for what this can and
 * cannot guarantee.
 */
#define IONIC_DB_EMPTY UINT64_MAX

struct ionic_dev_env {
	void *ctx;
	void (*raise_irq)(void *ctx, uint32_t vector);
	struct dma_map *(*dma)(void *ctx);  /* the guest's memory; may be empty */
	/* A frame the guest transmitted (NULL: frames are dropped). */
	void (*tx_frame)(void *ctx, const uint8_t *frame, size_t len);
	/*
	 * The mapped doorbell pages (IONIC_BAR2_SIZE bytes shared with the
	 * client), or NULL when BAR2 traps. NULL callback: BAR2 always traps.
	 */
	uint64_t *(*db_pages)(void *ctx);
};

struct ionic_dev_config {
	uint8_t mac[6];
};

struct ionic_dev;

struct ionic_dev *ionic_dev_new(const struct ionic_dev_config *cfg, const struct ionic_dev_env *env);
void ionic_dev_free(struct ionic_dev *dev);

/* Power-on state: what a PCI reset or a new client sees. Bus mastering is left as it is (see below). */
void ionic_dev_reset(struct ionic_dev *dev);

/*
 * Bus mastering, as the PCI command register's Bus Master Enable grants it
 * (the PCI glue owns the register and calls this on every change, a reset
 * clearing it included). Off after ionic_dev_new.
 *
 * While it is off the device reaches no guest memory: every access fails
 * (ionic_dma_* is the one way in; counted in dma_refused), and so that no
 * work fails for that reason the device starts none. Registers keep working:
 * dev_cmd runs (a command that would write guest memory, such as LIF_INIT's
 * lif_info, leaves it unwritten). A doorbell is latched, not run: the device
 * keeps the last value per doorbell word, queue and ring (the index is
 * absolute, so the last one covers the earlier ones), at most
 * IONIC_DB_LATCH_MAX of them; mapped doorbell pages are not looked at (the
 * words keep what is stored). Frames for the guest are dropped
 * (rx_no_master). In-process RDMA peers find no receive to deliver into.
 *
 * Turning it on runs the latched doorbells in the order they first came,
 * then looks at the mapped pages, then tells the RDMA peers receives may be
 * there. Resets drop what was latched, with the queues it was for.
 */
#define IONIC_DB_LATCH_MAX 8192
void ionic_dev_set_bus_master(struct ionic_dev *dev, bool on);

/* Register accesses inside BAR0 (below the MSI-X table) and BAR2. Always 0: MMIO never fails. */
int ionic_dev_bar0_access(void *dev, uint64_t offset, void *buf, size_t len, bool is_write);
int ionic_dev_bar2_access(void *dev, uint64_t offset, void *buf, size_t len, bool is_write);

/*
 * Take every doorbell stored in the mapped doorbell pages since the last
 * look and act on it as on a trapped one. Returns true if there was one.
 * Looks at the words queues ring: on the kernel's page 0 those of the
 * Ethernet queues and the RDMA admin queue, SQ, RQ and CQ; the SQ, RQ and
 * CQ words of the user pages (1..63) a queue was created on since reset.
 * Stores anywhere else are never seen.
 */
bool ionic_dev_doorbell_poll(struct ionic_dev *dev);

/*
 * Work in slices. A doorbell never makes the device work for long: the RDMA
 * engine moves at most about 2 MiB (a budget shared by everything the fds
 * bring between two calls of ionic_dev_work) and leaves the rest of a long
 * transfer, and the WQEs behind it, waiting. ionic_dev_work does one slice of
 * what waits with a fresh budget and gives the next doorbells a fresh one;
 * it returns true while work still waits (call it again soon, after looking
 * at the fds). Call it once per turn of the event loop, also when nothing
 * waits (ionic_dev_work_pending false): it renews the budget.
 */
bool ionic_dev_work(struct ionic_dev *dev);
bool ionic_dev_work_pending(const struct ionic_dev *dev);

/* Fill fresh doorbell pages (IONIC_BAR2_SIZE bytes) with empty slots. */
void ionic_db_pages_clear(uint64_t *pages);

/*
 * A frame from the segment for the guest: placed in the next posted RX buffer
 * of queue 0 when the LIF's receive mode and filters accept it; dropped and
 * counted otherwise (no buffer, queue not enabled, too long).
 */
void ionic_dev_rx_frame(struct ionic_dev *dev, const uint8_t *frame, size_t len);

/*
 * Simulate a firmware reset: the device forgets its LIF, queues and interrupt
 * state, reports its firmware not running for down_ms, then running again
 * with a new generation number. The stock driver's watchdog notices and runs
 * its firmware-down/firmware-up recovery (re-identify, re-init every queue).
 */
void ionic_dev_fw_reset(struct ionic_dev *dev, unsigned down_ms);

/*
 * In-process RDMA peers (the NVMe-oF controller): queue pairs that live in
 * the server, not in the guest's QP table. The work-queue engine hands them
 * what the guest sends their way; they answer through the functions below.
 */
struct ionic_rdma_peer_ops {
	void *ctx;
	/*
	 * A UD send of the guest's QP guest_qpn to dest_qpn at IPv4 address
	 * dst_ip (0: the AH is not IPv4). Return true if the peer took it (then it
	 * is not delivered to the guest's own QPs).
	 */
	bool (*ud_send)(void *ctx, uint32_t guest_qpn, uint32_t dst_ip, uint32_t dest_qpn, const void *payload,
			size_t len);
	/* Is dest_qpn one of the peer's connected QPs? */
	bool (*rc_owns)(void *ctx, uint32_t dest_qpn);
	/* A SEND (op IONIC_V1_OP_SEND*) from guest_qpn to the peer's QP. 0, or an IONIC_STS_* for the sender. */
	uint32_t (*rc_send)(void *ctx, uint32_t guest_qpn, uint32_t peer_qpn, const void *payload, size_t len);
	/* The guest posted receives on guest_qpn: messages that waited for one may go. May be NULL. */
	void (*rq_posted)(void *ctx, uint32_t guest_qpn);
	/*
	 * The guest destroyed QP guest_qpn or took it back to RESET (an admin
	 * command, never from inside a peer call): a connection on it is dead,
	 * and the number may be connected anew. May be NULL.
	 */
	void (*qp_gone)(void *ctx, uint32_t guest_qpn);
	/* The guest's RDMA state is gone (reset): drop every connection. May be NULL. */
	void (*reset)(void *ctx);
};
void ionic_dev_set_rdma_peer(struct ionic_dev *dev, const struct ionic_rdma_peer_ops *ops);

/*
 * A message from a peer QP (src_qpn) into the guest QP guest_qpn's next
 * receive: as a SEND, or with invalidate (inv_rkey != 0: that key of the
 * guest QP's PD stops working), with a 40-byte GRH area first when grh is
 * given (UD/GSI receives; smac then names the sender). Returns 0, -EAGAIN
 * when no receive is posted (try again after rq_posted), or -errno (the QP
 * is not there or not ready; a receive too small completes in error).
 */
int ionic_rdma_peer_deliver(struct ionic_dev *dev, uint32_t guest_qpn, uint32_t src_qpn, const void *payload,
			    size_t len, uint32_t inv_rkey, const uint8_t *grh, const uint8_t smac[6]);

/*
 * RDMA READ (write false) or WRITE by a peer connected to guest_qpn, against
 * guest memory named by (rkey, addr) in that QP's PD. 0 or -ENOKEY/-EACCES/-EFAULT.
 */
int ionic_rdma_peer_xfer(struct ionic_dev *dev, uint32_t guest_qpn, uint32_t rkey, uint64_t addr, void *buf,
			 size_t len, bool write);
/*
 * Where the len bytes a peer READs at (rkey, addr) lie in this process, to be
 * read in place until the loop turns: when the READ is allowed and they are
 * one piece of memory that cannot fault (sealed); else NULL, and the
 * transport copies them with ionic_rdma_peer_xfer (which says what is wrong).
 */
const void *ionic_rdma_peer_peek(struct ionic_dev *dev, uint32_t guest_qpn, uint32_t rkey, uint64_t addr,
				 uint32_t len);

/*
 * RDMA READ (write false) or WRITE against guest memory named by an rkey
 * alone, with no connected QP: the S3 store's token path. The key must be a
 * registration (never key 0) granting remote read or write. 0 or
 * -ENOKEY/-EACCES/-EFAULT.
 */
int ionic_rdma_key_xfer(struct ionic_dev *dev, uint32_t rkey, uint64_t addr, void *buf, size_t len, bool write);
/* What ionic_rdma_key_xfer would answer for the same key, range and direction, moving nothing. */
int ionic_rdma_key_check(struct ionic_dev *dev, uint32_t rkey, uint64_t addr, size_t len, bool write);

/*
 * The wire: RC and UC queue pairs whose destination is another host, carried by a
 * transport outside the device model (the roce backend, fabric/roce_glue.h).
 * The device tells the transport about such QPs and their send WQEs through
 * these ops; the transport calls back through the ionic_rdma_wire_* entry
 * points below. A QP the transport does not take stays on the loopback
 * fabric. No op is called from inside an entry point's call except
 * qp_detach (a QP the transport's callback moved to error), which the
 * transport must then defer until it has returned.
 */

/* An RC or UC QP's path and parameters, from MODIFY_QP (the header template and the attributes). */
struct ionic_rdma_wire_path {
	uint8_t smac[6], dmac[6];
	uint32_t sip, dip;       /* IPv4, host order */
	uint8_t tos, ttl;
	uint16_t sport;          /* UDP source port of the template; 0 when it has none */
	bool vlan;               /* the template carries an 802.1Q tag (a GID of a VLAN netdev) */
	uint16_t tci;            /* its TCI: priority (3 bits), DEI, VLAN ID (12 bits) */
	uint32_t dest_qpn;
	uint32_t sq_psn, rq_psn;
	uint32_t pmtu;           /* bytes: 256..4096 */
	uint8_t timeout;         /* local ACK timeout code (4.096 us * 2^timeout; 0: none) */
	uint8_t retry_cnt, rnr_retry;
	uint8_t max_rd_atomic;   /* READs/atomics this QP may have outstanding (1..16) */
	uint8_t min_rnr_timer;
	bool rts;                /* the QP reached RTS: the send parameters are meant */
	bool uc;                 /* an unreliable connected QP (else RC) */
};

enum ionic_rdma_wire_op {
	IONIC_WIRE_SEND = 0,
	IONIC_WIRE_SEND_IMM,
	IONIC_WIRE_SEND_INV,
	IONIC_WIRE_WRITE,
	IONIC_WIRE_WRITE_IMM,
	IONIC_WIRE_READ,
	IONIC_WIRE_CMP_SWAP,
	IONIC_WIRE_FETCH_ADD,
};

/* One send WQE for the transport; wr_id is the device's and comes back with every callback. */
struct ionic_rdma_wire_wr {
	uint64_t wr_id;
	enum ionic_rdma_wire_op op;
	bool solicited;
	uint32_t len;            /* the local SGL's bytes (atomics: 8) */
	uint64_t va;             /* remote */
	uint32_t rkey;
	uint32_t imm;            /* SEND_IMM/WRITE_IMM, host order of the wire's big-endian value */
	uint32_t inv_rkey;       /* SEND_INV */
	uint64_t swap_add, compare;
};

/* How a send WQE or a receive ended (the device maps it to its IONIC_STS_* codes). */
enum ionic_rdma_wire_status {
	IONIC_WIRE_OK = 0,
	IONIC_WIRE_LOC_LEN_ERR,
	IONIC_WIRE_LOC_QP_OP_ERR,
	IONIC_WIRE_LOC_PROT_ERR,
	IONIC_WIRE_LOC_ACCESS_ERR,
	IONIC_WIRE_REM_INV_REQ_ERR,
	IONIC_WIRE_REM_ACCESS_ERR,
	IONIC_WIRE_REM_OP_ERR,
	IONIC_WIRE_BAD_RESP_ERR,
	IONIC_WIRE_RETRY_EXC_ERR,
	IONIC_WIRE_RNR_RETRY_EXC_ERR,
	IONIC_WIRE_FLUSH_ERR,
};

/* A UD datagram's transport fields (both directions). */
struct ionic_rdma_wire_ud {
	uint32_t src_qpn, dest_qpn, qkey;
	bool has_imm, solicited;
	uint32_t imm;
	bool vlan;               /* received: it came 802.1Q tagged with tci (the CQE says so) */
	uint16_t tci;
};

struct ionic_rdma_wire_ops {
	void *ctx;
	/*
	 * RC QP qpn reached RTR or RTS (path->rts) with an IPv4 header
	 * template. 1: the transport carries it (called again at RTS: the send
	 * parameters now apply); 0: not a wire destination (it stays on
	 * loopback); -errno: it should be but cannot (the QP goes to error).
	 */
	int (*qp_attach)(void *ctx, uint32_t qpn, const struct ionic_rdma_wire_path *path);
	/* A send WQE of an attached QP. 0; -ENOSPC (try again after a completion); other -errno: failed. */
	int (*post)(void *ctx, uint32_t qpn, const struct ionic_rdma_wire_wr *wr);
	/* The QP left service (error, reset, destroy): forget it; its callbacks stop. */
	void (*qp_detach)(void *ctx, uint32_t qpn);
	/* The guest's RDMA state is gone (reset): forget every QP. May be NULL. */
	void (*reset)(void *ctx);
	/*
	 * A UD send whose address handle names another host (path: the AH's
	 * template; dest_qpn/sq_psn etc. unused). May be NULL (UD stays on
	 * loopback). UD is unreliable: the result is not reported to the guest.
	 */
	void (*ud_send)(void *ctx, const struct ionic_rdma_wire_path *path, const struct ionic_rdma_wire_ud *ud,
			const void *payload, uint32_t len);
};
void ionic_dev_set_rdma_wire(struct ionic_dev *dev, const struct ionic_rdma_wire_ops *ops);

/*
 * Entry points for the transport. Each names the QP; a QP that is not
 * attached (any more) is refused (-ENOTCONN) or ignored. Every access to
 * guest memory goes through the QP's PD and the registration's rights.
 */
/* Copy len bytes at offset of send WQE wr_id's local SGL to buf (to_guest false) or from buf into it. */
int ionic_rdma_wire_local(struct ionic_dev *dev, uint32_t qpn, uint64_t wr_id, uint32_t offset, void *buf,
			  uint32_t len, bool to_guest);
/*
 * Where len bytes at offset of send WQE wr_id's local SGL lie in this
 * process, to be read in place until the loop turns: when they are one
 * piece of memory that cannot fault (sealed); else NULL, and the transport
 * copies them with ionic_rdma_wire_local (which also says what is wrong).
 */
const void *ionic_rdma_wire_local_peek(struct ionic_dev *dev, uint32_t qpn, uint64_t wr_id, uint32_t offset,
				       uint32_t len);
/* Send WQE wr_id is done, in posting order (atomics: orig is the remote value before). */
void ionic_rdma_wire_send_done(struct ionic_dev *dev, uint32_t qpn, uint64_t wr_id,
			       enum ionic_rdma_wire_status st, uint64_t orig);
/* Take the QP's next posted receive into *handle: 0, -EAGAIN (none posted), -errno. */
int ionic_rdma_wire_recv_take(struct ionic_dev *dev, uint32_t qpn, uint64_t *handle);
/* Copy data to offset of the held receive's buffers: 0 or -errno (does not fit, bad key). */
int ionic_rdma_wire_recv_write(struct ionic_dev *dev, uint32_t qpn, uint64_t handle, uint32_t offset,
			       const void *data, uint32_t len);
struct ionic_rdma_wire_recv {
	enum ionic_rdma_wire_status status;
	uint32_t byte_len;
	bool write_imm;          /* an RDMA WRITE with immediate (else a SEND) */
	bool has_imm, has_inv, solicited;
	uint32_t imm, inv_rkey;
};
/* The held receive is complete. */
void ionic_rdma_wire_recv_done(struct ionic_dev *dev, uint32_t qpn, uint64_t handle,
			       const struct ionic_rdma_wire_recv *rv);
/* An 8-byte atomic at an 8-byte aligned va by rkey in the QP's PD; *orig the value before. 0 or -errno. */
int ionic_rdma_wire_atomic(struct ionic_dev *dev, uint32_t qpn, uint32_t rkey, uint64_t va, bool cmp_swap,
			   uint64_t swap_add, uint64_t compare, uint64_t *orig);
/* SEND with invalidate: rkey of the QP's PD stops working. 0 or -errno. */
int ionic_rdma_wire_invalidate(struct ionic_dev *dev, uint32_t qpn, uint32_t rkey);
/* The transport's responder found a fatal error (access: remote access, else invalid request): QP to error. */
void ionic_rdma_wire_qp_fatal(struct ionic_dev *dev, uint32_t qpn, bool access);
/* Remote READ/WRITE by rkey: ionic_rdma_peer_xfer() above. */
/*
 * A UD datagram from the wire for QP ud->dest_qpn: delivered into its next
 * receive after a 40-byte GRH area whose last 20 bytes are ip_hdr (the
 * datagram's IPv4 header), when the QP is a UD QP in RTR/RTS and the Q_Key
 * is its own (the GSI key for QP 1). 0; -ENOENT (no such QP or wrong Q_Key),
 * -EAGAIN (no receive posted), -EMSGSIZE or -EFAULT (the receive completed in
 * error): the datagram is dropped in every case but 0, as UD may be.
 */
int ionic_rdma_wire_ud_recv(struct ionic_dev *dev, const struct ionic_rdma_wire_ud *ud, const uint8_t ip_hdr[20],
			    const uint8_t smac[6], const void *payload, uint32_t len);

/* The NIC's own MAC (--mac): the guest's station address unless its driver sets another. */
void ionic_dev_mac(const struct ionic_dev *dev, uint8_t mac[6]);

/* Counters for tests and logs. */
struct ionic_dev_stats {
	uint64_t dev_cmds;
	uint64_t dev_cmd_errors;
	uint64_t doorbells;       /* trapped and mapped */
	uint64_t db_mapped;       /* of which taken from the mapped pages */
	uint64_t db_latched;      /* of which rung while bus mastering was off (run when it came back) */
	uint64_t dma_refused;     /* guest-memory accesses refused: bus mastering off */
	uint64_t guest_errors;
	uint64_t tx_frames, tx_bytes, tx_errors;
	uint64_t rx_frames, rx_bytes, rx_no_buffer, rx_filtered, rx_too_long;
	uint64_t interrupts;      /* MSI-X messages sent to the guest */
	/* RDMA: commands on the RDMA admin queues; doorbells by queue type (CQ: consumer index
	 * updates and arms apart); work requests taken; completion and event entries written. */
	uint64_t rdma_admin_cmds, rdma_admin_errors;
	uint64_t rdma_db_aq, rdma_db_sq, rdma_db_rq, rdma_db_cq, rdma_db_arm;
	uint64_t rdma_wqes, rdma_cqes, rdma_eqes;
	uint64_t rx_no_master;    /* frames dropped: bus mastering off */
};
const struct ionic_dev_stats *ionic_dev_stats(const struct ionic_dev *dev);

#endif
