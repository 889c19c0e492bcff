/*
 * fuzz-nvmeof-cm: IB CM MADs into the NVMe-oF connection manager
 * (nvmeof_cm.c) with the callbacks nvmeof-cm-unit uses: queues are real
 * allocations, so one destroyed twice or never is an ASan report.
 *
 * Each input gets a fresh CM for 192.168.200.1:4420 (4 I/O queues, 8
 * connections, QPNs 0xc00000.., time-wait 1 s, reply timeout 4 s). Records:
 *   flags:u8 dt:u8 mad[256]
 * The clock moves dt * 16 ms and the CM ticks; then the MAD (as many bytes
 * as the input still has, up to 256) is fed. The CM's comm IDs are salted,
 * so flags patch what a host would copy from the CM's last MAD:
 *   bit 0  remote comm ID (bytes 28..31) := the local comm ID of the CM's last MAD
 *   bit 1  DREQ remote QPN (bytes 32..34) := the local QPN of the CM's last REP
 *   bit 2  before the MAD: nvmeof_cm_established() on that QPN (the first capsule came)
 *   bit 3  before the MAD: nvmeof_cm_disconnect() on that QPN (the controller ends it)
 */
#include <stdlib.h>

#include "fuzz.h"
#include "nvmeof/ib_cm_wire.h"
#include "nvmeof/nvmeof_cm.h"
#include "util/log.h"

#define QUEUE_MAGIC 0x51554555u

struct queue {
	uint32_t magic;
	uint32_t ctrl_qpn;
};

static uint8_t last_mad[NVMEOF_CM_MAD_SIZE];
static uint32_t last_rep_qpn;
static unsigned creates, destroys;

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void cb_send(void *ctx, const uint8_t mad[NVMEOF_CM_MAD_SIZE], const uint8_t sgid[16], const uint8_t dgid[16])
{
	(void)ctx;
	(void)sgid;
	(void)dgid;
	memcpy(last_mad, mad, NVMEOF_CM_MAD_SIZE);
	/* REP: attribute 0x0013; its local QPN is the 24 high bits at message offset 12. */
	if (mad[16] == 0x00 && mad[17] == 0x13)
		last_rep_qpn = get32(mad + IB_CM_MSG + 12) >> 8;
}

static int cb_create(void *ctx, struct nvmeof_cm_conn *conn)
{
	struct queue *q = malloc(sizeof(*q));

	(void)ctx;
	if (q == NULL || conn->queue != NULL)
		abort();
	q->magic = QUEUE_MAGIC;
	q->ctrl_qpn = conn->ctrl_qpn;
	conn->queue = q;
	creates++;
	return 0;
}

static void cb_established(void *ctx, struct nvmeof_cm_conn *conn)
{
	struct queue *q = conn->queue;

	(void)ctx;
	if (q == NULL || q->magic != QUEUE_MAGIC)
		abort();
}

static void cb_destroy(void *ctx, struct nvmeof_cm_conn *conn)
{
	struct queue *q = conn->queue;

	(void)ctx;
	if (q == NULL || q->magic != QUEUE_MAGIC || q->ctrl_qpn != conn->ctrl_qpn)
		abort();
	q->magic = 0;
	free(q);
	destroys++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f = { data, size, 0 };
	struct nvmeof_cm_config cfg = {
		.ip = 0xc0a8c801u, .port = 4420, .max_qid = 4, .max_queue_size = 128, .max_admin_queue_size = 32,
		.max_conns = 8, .ca_guid = 0x0002c9fffe000002ull, .timewait_ms = 1000, .reply_timeout_ms = 4000,
	};
	struct nvmeof_cm_ops ops = {
		.send_mad = cb_send, .queue_create = cb_create, .queue_established = cb_established,
		.queue_destroy = cb_destroy,
	};
	struct nvmeof_cm *cm;
	uint64_t now = 1000000;

	log_set_level(LOG_LEVEL_ERROR);
	memset(last_mad, 0, sizeof(last_mad));
	last_rep_qpn = 0;
	creates = destroys = 0;
	cm = nvmeof_cm_create(&cfg, &ops);
	if (cm == NULL)
		abort();
	while (fz_more(&f)) {
		uint8_t flags = fz_u8(&f), mad[NVMEOF_CM_MAD_SIZE];
		size_t n;

		now += (uint64_t)fz_u8(&f) * 16;
		nvmeof_cm_tick(cm, now);
		n = fz_take(&f, mad, sizeof(mad));
		if (flags & 1)
			memcpy(mad + IB_CM_MSG + 4, last_mad + IB_CM_MSG, 4);
		if (flags & 2) {
			mad[IB_CM_MSG + 8] = (uint8_t)(last_rep_qpn >> 16);
			mad[IB_CM_MSG + 9] = (uint8_t)(last_rep_qpn >> 8);
			mad[IB_CM_MSG + 10] = (uint8_t)last_rep_qpn;
		}
		if (flags & 4)
			nvmeof_cm_established(cm, last_rep_qpn);
		if (flags & 8)
			nvmeof_cm_disconnect(cm, last_rep_qpn, now);
		nvmeof_cm_mad(cm, mad, n, now);
	}
	nvmeof_cm_destroy(cm);
	if (creates != destroys)
		abort(); /* a queue the CM created and never destroyed */
	return 0;
}
