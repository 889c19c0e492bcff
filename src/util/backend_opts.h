/*
 * The --backend grammar: NAME[:key=value,key=value,...].
 *
 * NAME is none, loopback, s3, nvmeof or roce. Every key, default, range and rule is
 * the one in the s3 and nvmeof backend specifications; docs/usage.md lists
 * them. A spec is accepted whole or refused with one message; nothing here
 * touches the file system or the network (file= images are checked when the
 * namespace is created, see nvmeof/nvmeof_ns.h).
 */
#ifndef ERNIC_UTIL_BACKEND_OPTS_H
#define ERNIC_UTIL_BACKEND_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum backend_kind {
	BACKEND_NONE,
	BACKEND_LOOPBACK,
	BACKEND_S3,
	BACKEND_NVMEOF,
	BACKEND_ROCE,
};

#define S3_BUCKET_MAX     63
#define S3_OBJECTS_MAX    65536u
#define S3_BUCKETS_MAX    100u    /* S3's own default limit per account */
#define S3_WINDOW_MIN     (64ull << 10)  /* window=: what a peer without window scaling gets anyway */
#define S3_WINDOW_MAX     (64ull << 20)
#define S3_WINDOW_DEFAULT (4ull << 20)
#define NVMEOF_NQN_MAX    223   /* NVMe base spec: NQNs are at most 223 bytes */
#define NVMEOF_MODEL_MAX  40    /* Identify Controller MN */
#define NVMEOF_SERIAL_MAX 20    /* Identify Controller SN */
#define NVMEOF_QUEUES_MAX 64    /* the host pre-allocates 128 regions per queue: 65 x 128 of the device's 16384 */
#define NVMEOF_PATH_MAX   4096
#define S3_DIR_MAX        3072  /* leaves room for the store's file names under it */

struct s3_config {
	char bucket[S3_BUCKET_MAX + 1];
	uint64_t size;     /* bytes of object capacity */
	uint32_t objects;  /* object slots */
	uint32_t ip;       /* host byte order */
	uint16_t port;
	uint64_t maxpart;  /* largest single transfer */
	uint64_t window;   /* TCP receive window (and buffer) per connection, for peers that scale */
	char dir[S3_DIR_MAX]; /* empty: objects in memory only; else kept under this directory too */
	uint32_t buckets;  /* how many buckets may exist (bucket= is the first); 1: the spec's one */
};

struct nvmeof_config {
	uint64_t size;     /* bytes; meaningful when size_set, or the default */
	bool size_set;     /* size= was given (an existing image keeps its size otherwise) */
	uint32_t bs;
	char file[NVMEOF_PATH_MAX]; /* empty: RAM namespace */
	char nqn[NVMEOF_NQN_MAX + 1];
	uint32_t ip;       /* host byte order */
	uint16_t port;
	uint32_t queues;
	uint32_t nsid;
	char model[NVMEOF_MODEL_MAX + 1];
	char serial[NVMEOF_SERIAL_MAX + 1];
};

/*
 * The roce backend: the guest's RC QPs whose header template names another
 * host speak RoCEv2 on the segment (docs/roce.md). Each option adjusts what
 * a QP's MODIFY_QP asks for.
 */
#define ROCE_MTU_DEFAULT     4096u  /* mtu=: the largest path MTU a QP gets (its own is used when smaller) */
#define ROCE_TIMEOUT_DEFAULT 14u    /* timeout=: the smallest local ACK timeout code (4.096 us * 2^14 = 67 ms) */
#define ROCE_TIMEOUT_MAX     31u
#define ROCE_RETRY_DEFAULT   7u     /* retry=: the retry count of a QP that asks for 0 */
#define ROCE_RETRY_MAX       7u

struct roce_config {
	uint32_t mtu;      /* 256, 512, 1024, 2048 or 4096 */
	uint32_t timeout;  /* 0..31: a QP's timeout code below it (0, none, included) is raised to it */
	uint32_t retry;    /* 0..7 */
	uint32_t ip;       /* the only source address the guest may use on the wire (host order); 0: any */
};

struct backend_config {
	enum backend_kind kind;
	union {
		struct s3_config s3;
		struct nvmeof_config nvmeof;
		struct roce_config roce;
	};
};

/* "none", "loopback", "s3", "nvmeof", "roce". */
const char *backend_kind_name(enum backend_kind kind);

/*
 * Parse a --backend value into *cfg (defaults filled in). Returns 0, or -1
 * with a one-line reason in err (without the "Error: " prefix), for example
 * "s3 backend: bad size 'bogus'".
 */
int backend_config_parse(const char *spec, struct backend_config *cfg, char *err, size_t errlen);

/* The MAC the s3 endpoint answers ARP with: 02:53 followed by the four address bytes. */
void s3_endpoint_mac(uint32_t ip, uint8_t mac[6]);
/* The MAC the NVMe-oF controller's address answers ARP with: 02:4e followed by the four address bytes. */
void nvmeof_host_mac(uint32_t ip, uint8_t mac[6]);
/* The MAC of the backend's host on the segment, when it has one: 0, or -1 (none, loopback). */
int backend_host_mac(const struct backend_config *cfg, uint8_t mac[6]);

#endif
