/* Backend peers of the data path; see fabric.h. */
#include "fabric/fabric.h"

#include <stdio.h>
#include <stdlib.h>

#include "fabric/fabric_nvmeof.h"
#include "fabric/roce_glue.h"
#include "net/net_host.h"
#include "nvmeof/nvmeof_ns.h"
#include "util/parse_int.h"
#include "s3/s3_endpoint.h"
#include "s3/s3_target.h"
#include "ionic/ionic_dev.h"
#include "util/log.h"

struct fabric {
	const struct backend_config *cfg;
	struct nvmeof_ns ns; /* BACKEND_NVMEOF */
	struct s3_endpoint *s3; /* BACKEND_S3 */
	struct fabric_nvmeof *nvmeof; /* BACKEND_NVMEOF: the controller on the RDMA engine */
	struct net_host *nvmeof_host; /* BACKEND_NVMEOF: its address on the segment (ARP, ping) */
	struct roce_glue *roce; /* BACKEND_ROCE: the guest's RC QPs to other hosts, as RoCEv2 */
};

static void log_backend(const struct fabric *dp)
{
	const struct backend_config *cfg = dp->cfg;
	char ip[16];

	switch (cfg->kind) {
	case BACKEND_NONE:
		LOG_INFO("ionic_datapath: no backend");
		break;
	case BACKEND_LOOPBACK:
		LOG_INFO("ionic_datapath: loopback between the guest's own queue pairs");
		break;
	case BACKEND_S3: {
		uint8_t m[6];

		format_ipv4(cfg->s3.ip, ip);
		s3_endpoint_mac(cfg->s3.ip, m);
		LOG_INFO("ionic_datapath: s3 bucket '%s' %llu bytes at http://%s:%u/ mac "
			 "%02x:%02x:%02x:%02x:%02x:%02x",
			 cfg->s3.bucket, (unsigned long long)cfg->s3.size, ip, cfg->s3.port,
			 m[0], m[1], m[2], m[3], m[4], m[5]);
		LOG_INFO("ionic_datapath: s3 store limits: objects=%u maxpart=%llu",
			 cfg->s3.objects, (unsigned long long)cfg->s3.maxpart);
		LOG_INFO("ionic_datapath: s3 tcp window=%llu (per connection, for peers that scale)",
			 (unsigned long long)cfg->s3.window);
		break;
	}
	case BACKEND_ROCE:
		LOG_INFO("ionic_datapath: roce: RC queue pairs to other hosts speak RoCEv2 on the segment "
			 "(mtu<=%u, timeout>=%u, retry=%u when 0)", cfg->roce.mtu, cfg->roce.timeout, cfg->roce.retry);
		break;
	case BACKEND_NVMEOF: {
		uint8_t m[6];

		format_ipv4(cfg->nvmeof.ip, ip);
		nvmeof_host_mac(cfg->nvmeof.ip, m);
		LOG_INFO("ionic_datapath: nvmeof target '%s' %llu bytes bs=%u at %s:%u",
			 cfg->nvmeof.nqn, (unsigned long long)dp->ns.size, dp->ns.bs, ip,
			 cfg->nvmeof.port);
		LOG_INFO("ionic_datapath: nvmeof controller address %s answers ARP and ping as "
			 "%02x:%02x:%02x:%02x:%02x:%02x", ip, m[0], m[1], m[2], m[3], m[4], m[5]);
		LOG_INFO("ionic_datapath: nvmeof namespace nsid=%u on %s, queues=%u, model '%s', serial '%s'",
			 cfg->nvmeof.nsid, cfg->nvmeof.file[0] ? cfg->nvmeof.file : "RAM",
			 cfg->nvmeof.queues, cfg->nvmeof.model, cfg->nvmeof.serial);
		break;
	}
	}
}

struct fabric *fabric_create(const struct backend_config *cfg, struct evloop *loop,
			     struct net_switch *sw, char *err, size_t errlen)
{
	struct fabric *dp = calloc(1, sizeof(*dp));

	if (dp == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	dp->cfg = cfg;
	dp->ns.fd = -1;
	if (cfg->kind == BACKEND_NVMEOF && nvmeof_ns_open(&dp->ns, &cfg->nvmeof, err, errlen)) {
		free(dp);
		return NULL;
	}
	if (cfg->kind == BACKEND_NVMEOF) {
		/* The controller's address is a host on the segment: the guest resolves it by ARP. */
		struct net_host_config hc = { .name = "nvmeof", .ip = cfg->nvmeof.ip };

		nvmeof_host_mac(cfg->nvmeof.ip, hc.mac);
		dp->nvmeof = fabric_nvmeof_new(&cfg->nvmeof, &dp->ns, loop);
		if (dp->nvmeof == NULL) {
			snprintf(err, errlen, "nvmeof backend: out of memory");
			nvmeof_ns_close(&dp->ns);
			free(dp);
			return NULL;
		}
		dp->nvmeof_host = net_host_new(&hc, loop, sw, err, errlen);
		if (dp->nvmeof_host == NULL) {
			fabric_nvmeof_free(dp->nvmeof);
			nvmeof_ns_close(&dp->ns);
			free(dp);
			return NULL;
		}
	}
	if (cfg->kind == BACKEND_ROCE) {
		dp->roce = roce_glue_new(&cfg->roce, loop, sw, err, errlen);
		if (dp->roce == NULL) {
			free(dp);
			return NULL;
		}
	}
	if (cfg->kind == BACKEND_S3) {
		dp->s3 = s3_endpoint_new(&cfg->s3, loop, sw, err, errlen);
		if (dp->s3 == NULL) {
			free(dp);
			return NULL;
		}
	}
	log_backend(dp);
	return dp;
}

/* The S3 store's RDMA path: the token's rkey against the device's memory-region table. */
static int s3_dma_read(void *ctx, uint32_t key, uint64_t addr, void *dst, size_t len)
{
	return ionic_rdma_key_xfer(ctx, key, addr, dst, len, false);
}

static int s3_dma_write(void *ctx, uint32_t key, uint64_t addr, const void *src, size_t len)
{
	return ionic_rdma_key_xfer(ctx, key, addr, (void *)src, len, true);
}

static int s3_dma_check(void *ctx, uint32_t key, uint64_t addr, size_t len, bool write)
{
	return ionic_rdma_key_check(ctx, key, addr, len, write);
}

void fabric_attach(struct fabric *dp, struct ionic_dev *dev)
{
	if (dp == NULL)
		return;
	if (dp->nvmeof)
		fabric_nvmeof_attach(dp->nvmeof, dev);
	roce_glue_attach(dp->roce, dev);
	if (dp->s3) {
		struct dma_ops ops = { dev, s3_dma_read, s3_dma_write, s3_dma_check };

		s3_store_set_dma(s3_endpoint_store(dp->s3), dev ? &ops : NULL);
	}
}

void fabric_log_stats(const struct fabric *dp)
{
	if (dp == NULL)
		return;
	if (dp->roce != NULL)
		roce_glue_log_stats(dp->roce);
	s3_endpoint_log_stats(dp->s3);
}

void fabric_destroy(struct fabric *dp)
{
	if (dp == NULL)
		return;
	roce_glue_free(dp->roce);
	net_host_free(dp->nvmeof_host);
	fabric_nvmeof_free(dp->nvmeof);
	if (dp->cfg->kind == BACKEND_NVMEOF)
		nvmeof_ns_close(&dp->ns);
	s3_endpoint_free(dp->s3);
	free(dp);
}
