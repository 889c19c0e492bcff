/*
 * The --backend grammar (see backend_opts.h): a table of options per backend,
 * each naming the field it fills and the rule its value must pass.
 */
#include "util/backend_opts.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util/log.h"
#include "util/parse_int.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define OPTS_MAX 16 /* more options than any backend has */

#define NVMEOF_DISCOVERY_NQN "nqn.2014-08.org.nvmexpress.discovery"

enum opt_type {
	OPT_SIZE,      /* uint64_t, parse_size, within [min, max] */
	OPT_U32,       /* uint32_t decimal within [min, max] */
	OPT_PORT,      /* uint16_t decimal 1..65535 */
	OPT_IPV4,      /* uint32_t host order, a unicast address */
	OPT_BLOCKSIZE, /* uint32_t, one of 512, 1024, 2048, 4096 */
	OPT_BUCKET,    /* char[], a DNS label */
	OPT_TEXT,      /* char[], min..max printable ASCII characters */
	OPT_NQN,       /* char[], 1..223 printable non-space characters */
	OPT_PATH,      /* char[], non-empty, shorter than the field */
	OPT_PMTU,      /* uint32_t, one of 256, 512, 1024, 2048, 4096 */
};

struct opt_desc {
	const char *key;
	enum opt_type type;
	size_t off;     /* offset of the field in the backend's config */
	size_t fsize;   /* size of that field */
	uint64_t min, max;
	size_t seen_off; /* offset of a "was given" flag, or 0 for none */
};

#define FIELD(type, f) offsetof(type, f), sizeof(((type *)0)->f)

static const struct opt_desc s3_opts[] = {
	{ "bucket",  OPT_BUCKET, FIELD(struct s3_config, bucket), 3, S3_BUCKET_MAX, 0 },
	{ "size",    OPT_SIZE,   FIELD(struct s3_config, size), 1, UINT64_MAX, 0 },
	{ "objects", OPT_U32,    FIELD(struct s3_config, objects), 1, S3_OBJECTS_MAX, 0 },
	{ "ip",      OPT_IPV4,   FIELD(struct s3_config, ip), 0, 0, 0 },
	{ "port",    OPT_PORT,   FIELD(struct s3_config, port), 1, 65535, 0 },
	{ "maxpart", OPT_SIZE,   FIELD(struct s3_config, maxpart), 1, UINT64_MAX, 0 },
	{ "window",  OPT_SIZE,   FIELD(struct s3_config, window), S3_WINDOW_MIN, S3_WINDOW_MAX, 0 },
	{ "dir",     OPT_PATH,   FIELD(struct s3_config, dir), 1, S3_DIR_MAX - 1, 0 },
	{ "buckets", OPT_U32,    FIELD(struct s3_config, buckets), 1, S3_BUCKETS_MAX, 0 },
};

static const struct opt_desc nvmeof_opts[] = {
	{ "size",   OPT_SIZE,      FIELD(struct nvmeof_config, size), 1, UINT64_MAX,
	  offsetof(struct nvmeof_config, size_set) },
	{ "bs",     OPT_BLOCKSIZE, FIELD(struct nvmeof_config, bs), 0, 0, 0 },
	{ "file",   OPT_PATH,      FIELD(struct nvmeof_config, file), 1, NVMEOF_PATH_MAX - 1, 0 },
	{ "nqn",    OPT_NQN,       FIELD(struct nvmeof_config, nqn), 1, NVMEOF_NQN_MAX, 0 },
	{ "ip",     OPT_IPV4,      FIELD(struct nvmeof_config, ip), 0, 0, 0 },
	{ "port",   OPT_PORT,      FIELD(struct nvmeof_config, port), 1, 65535, 0 },
	{ "queues", OPT_U32,       FIELD(struct nvmeof_config, queues), 1, NVMEOF_QUEUES_MAX, 0 },
	/* 0xffffffff is the broadcast NSID, never a namespace's own. */
	{ "nsid",   OPT_U32,       FIELD(struct nvmeof_config, nsid), 1, 0xfffffffeu, 0 },
	{ "model",  OPT_TEXT,      FIELD(struct nvmeof_config, model), 1, NVMEOF_MODEL_MAX, 0 },
	{ "serial", OPT_TEXT,      FIELD(struct nvmeof_config, serial), 1, NVMEOF_SERIAL_MAX, 0 },
};

static const struct opt_desc roce_opts[] = {
	{ "mtu",     OPT_PMTU, FIELD(struct roce_config, mtu), 0, 0, 0 },
	{ "timeout", OPT_U32,  FIELD(struct roce_config, timeout), 0, ROCE_TIMEOUT_MAX, 0 },
	{ "retry",   OPT_U32,  FIELD(struct roce_config, retry), 0, ROCE_RETRY_MAX, 0 },
	{ "ip",      OPT_IPV4, FIELD(struct roce_config, ip), 0, 0, 0 },
};

struct backend_desc {
	const char *name;
	enum backend_kind kind;
	const struct opt_desc *opts;
	size_t nopts;
};

static const struct backend_desc backends[] = {
	{ "none",     BACKEND_NONE,     NULL, 0 },
	{ "loopback", BACKEND_LOOPBACK, NULL, 0 },
	{ "s3",       BACKEND_S3,       s3_opts, ARRAY_SIZE(s3_opts) },
	{ "nvmeof",   BACKEND_NVMEOF,   nvmeof_opts, ARRAY_SIZE(nvmeof_opts) },
	{ "roce",     BACKEND_ROCE,     roce_opts, ARRAY_SIZE(roce_opts) },
};

_Static_assert(ARRAY_SIZE(s3_opts) <= OPTS_MAX, "OPTS_MAX too small");
_Static_assert(ARRAY_SIZE(nvmeof_opts) <= OPTS_MAX, "OPTS_MAX too small");

const char *backend_kind_name(enum backend_kind kind)
{
	for (size_t i = 0; i < ARRAY_SIZE(backends); i++)
		if (backends[i].kind == kind)
			return backends[i].name;
	return "?";
}

static void set_defaults(struct backend_config *cfg)
{
	switch (cfg->kind) {
	case BACKEND_S3: {
		struct s3_config *c = &cfg->s3;

		strcpy(c->bucket, "ernic");
		c->size = 256ull << 20;
		c->objects = 256;
		c->ip = 0xc0a8c801; /* 192.168.200.1 */
		c->port = 9000;
		c->maxpart = 256ull << 20;
		c->window = S3_WINDOW_DEFAULT;
		c->buckets = 1;
		break;
	}
	case BACKEND_NVMEOF: {
		struct nvmeof_config *c = &cfg->nvmeof;

		c->size = 64ull << 20;
		c->size_set = false;
		c->bs = 512;
		c->file[0] = '\0';
		strcpy(c->nqn, "nvmet-test");
		c->ip = 0xc0a8c801;
		c->port = 4420;
		c->queues = 8;
		c->nsid = 1;
		strcpy(c->model, "rocm-ernic NVMe-oF target");
		strcpy(c->serial, "ERNIC0000000000001");
		break;
	}
	case BACKEND_ROCE:
		cfg->roce.mtu = ROCE_MTU_DEFAULT;
		cfg->roce.timeout = ROCE_TIMEOUT_DEFAULT;
		cfg->roce.retry = ROCE_RETRY_DEFAULT;
		break;
	case BACKEND_NONE:
	case BACKEND_LOOPBACK:
		break;
	}
}

/* A DNS label as S3 bucket names use it: [a-z0-9.-], not starting or ending with '.' or '-'. */
static bool bucket_ok(const char *v, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		char c = v[i];

		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-'))
			return false;
	}
	return v[0] != '.' && v[0] != '-' && v[len - 1] != '.' && v[len - 1] != '-';
}

static bool printable(const char *v, size_t len, bool allow_space)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)v[i];

		if (c < 0x20 || c > 0x7e || (c == ' ' && !allow_space))
			return false;
	}
	return true;
}

/* A unicast address a host can answer on: not 0/8, not loopback, not multicast or above. */
static bool ipv4_usable(uint32_t a)
{
	uint8_t top = (uint8_t)(a >> 24);

	return top != 0 && top != 127 && top < 224;
}

/* Store one value into its field. Returns 0, or -1 if the value breaks the option's rule. */
static int apply_value(const struct opt_desc *d, const char *val, void *base)
{
	void *field = (char *)base + d->off;
	size_t len = strlen(val);
	uint64_t u;
	uint32_t ip;

	switch (d->type) {
	case OPT_SIZE:
		if (parse_size(val, &u) || u < d->min || u > d->max)
			return -1;
		*(uint64_t *)field = u;
		break;
	case OPT_U32:
	case OPT_PORT:
		if (parse_u64_range(val, d->min, d->max, &u))
			return -1;
		if (d->type == OPT_PORT)
			*(uint16_t *)field = (uint16_t)u;
		else
			*(uint32_t *)field = (uint32_t)u;
		break;
	case OPT_IPV4:
		if (parse_ipv4(val, &ip) || !ipv4_usable(ip))
			return -1;
		*(uint32_t *)field = ip;
		break;
	case OPT_BLOCKSIZE:
		if (parse_u64(val, &u) || (u != 512 && u != 1024 && u != 2048 && u != 4096))
			return -1;
		*(uint32_t *)field = (uint32_t)u;
		break;
	case OPT_PMTU:
		if (parse_u64(val, &u) || (u != 256 && u != 512 && u != 1024 && u != 2048 && u != 4096))
			return -1;
		*(uint32_t *)field = (uint32_t)u;
		break;
	case OPT_BUCKET:
	case OPT_TEXT:
	case OPT_NQN:
	case OPT_PATH:
		if (len < d->min || len > d->max || len >= d->fsize)
			return -1;
		if (d->type == OPT_BUCKET && !bucket_ok(val, len))
			return -1;
		if (d->type == OPT_TEXT && !printable(val, len, true))
			return -1;
		if (d->type == OPT_NQN &&
		    (!printable(val, len, false) || strcmp(val, NVMEOF_DISCOVERY_NQN) == 0))
			return -1;
		memcpy(field, val, len + 1);
		break;
	}
	if (d->seen_off)
		*(bool *)((char *)base + d->seen_off) = true;
	return 0;
}

/* Rules that involve more than one option, checked once all are in. */
static int check_combination(struct backend_config *cfg, char *err, size_t errlen)
{
	if (cfg->kind == BACKEND_NVMEOF) {
		const struct nvmeof_config *c = &cfg->nvmeof;

		/* Without size= an existing image keeps its own size; that is checked at creation. */
		if ((c->size_set || c->file[0] == '\0') && c->size % c->bs != 0)
			return err_set(err, errlen,
				    "nvmeof backend: size %llu is not a whole number of %u-byte blocks",
				    (unsigned long long)c->size, c->bs);
	}
	return 0;
}

int backend_config_parse(const char *spec, struct backend_config *cfg, char *err, size_t errlen)
{
	const struct backend_desc *b = NULL;
	const char *colon = strchr(spec, ':');
	size_t namelen = colon ? (size_t)(colon - spec) : strlen(spec);
	bool seen[OPTS_MAX] = { false };
	struct backend_config tmp;
	void *base;
	const char *p;

	for (size_t i = 0; i < ARRAY_SIZE(backends); i++) {
		if (strlen(backends[i].name) == namelen && strncmp(spec, backends[i].name, namelen) == 0)
			b = &backends[i];
	}
	if (b == NULL)
		return err_set(err, errlen, "unknown backend '%.*s'", (int)namelen, spec);

	memset(&tmp, 0, sizeof(tmp));
	tmp.kind = b->kind;
	set_defaults(&tmp);
	base = b->kind == BACKEND_S3     ? (void *)&tmp.s3
	       : b->kind == BACKEND_ROCE ? (void *)&tmp.roce
					 : (void *)&tmp.nvmeof;

	for (p = colon; p != NULL;) {
		const char *item = p + 1;
		const char *end = strchr(item, ',');
		size_t itemlen = end ? (size_t)(end - item) : strlen(item);
		char buf[NVMEOF_PATH_MAX + 64];
		const struct opt_desc *d = NULL;
		size_t di = 0;
		char *eq;

		p = end;
		if (itemlen == 0)
			return err_set(err, errlen, "%s backend: empty option", b->name);
		if (itemlen >= sizeof(buf))
			return err_set(err, errlen, "%s backend: option too long '%.32s...'", b->name, item);
		memcpy(buf, item, itemlen);
		buf[itemlen] = '\0';
		eq = strchr(buf, '=');
		if (eq)
			*eq = '\0';
		for (size_t i = 0; i < b->nopts; i++) {
			if (strcmp(buf, b->opts[i].key) == 0) {
				d = &b->opts[i];
				di = i;
			}
		}
		if (d == NULL)
			return err_set(err, errlen, "%s backend: unknown option '%s'", b->name, buf);
		if (eq == NULL)
			return err_set(err, errlen, "%s backend: option '%s' needs a value", b->name, buf);
		if (seen[di])
			return err_set(err, errlen, "%s backend: duplicate option '%s'", b->name, buf);
		seen[di] = true;
		if (apply_value(d, eq + 1, base))
			return err_set(err, errlen, "%s backend: bad %s '%s'", b->name, buf, eq + 1);
	}
	if (check_combination(&tmp, err, errlen))
		return -1;
	*cfg = tmp;
	return 0;
}

/* A locally administered unicast MAC: 02, the tag, then the four address bytes. */
static void host_mac(uint8_t tag, uint32_t ip, uint8_t mac[6])
{
	mac[0] = 0x02;
	mac[1] = tag;
	mac[2] = (uint8_t)(ip >> 24);
	mac[3] = (uint8_t)(ip >> 16);
	mac[4] = (uint8_t)(ip >> 8);
	mac[5] = (uint8_t)ip;
}

void s3_endpoint_mac(uint32_t ip, uint8_t mac[6])
{
	host_mac(0x53, ip, mac); /* 'S' */
}

void nvmeof_host_mac(uint32_t ip, uint8_t mac[6])
{
	host_mac(0x4e, ip, mac); /* 'N' */
}

int backend_host_mac(const struct backend_config *cfg, uint8_t mac[6])
{
	switch (cfg->kind) {
	case BACKEND_S3:
		s3_endpoint_mac(cfg->s3.ip, mac);
		return 0;
	case BACKEND_NVMEOF:
		nvmeof_host_mac(cfg->nvmeof.ip, mac);
		return 0;
	default:
		return -1;
	}
}
