/* A capture of the emulated segment in pcap format; see net_pcap.h. */
#include "net/net_pcap.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/log.h"

#define PCAP_MAGIC_US 0xa1b2c3d4u
#define PCAP_LINKTYPE_ETHERNET 1u
#define PCAP_FILE_HDR 24u
#define PCAP_REC_HDR  16u

struct net_pcap {
	char path[256];
	int fd;
	pthread_t writer;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	/* the ring: records in [tail, head) (positions grow for ever; the byte is at pos % NET_PCAP_RING) */
	uint8_t *ring;
	uint64_t head, tail;
	bool stop;
	bool full;              /* the size limit was reached: nothing more goes in */
	uint64_t max_bytes;
	struct net_pcap_stats st;
};

/* Little-endian on the page whatever the host: readers take the byte order from the magic, but one order is simpler to check. */
static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n > 0) {
		ssize_t k = write(fd, p, n);

		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

static void *writer_main(void *arg)
{
	struct net_pcap *p = arg;

	pthread_mutex_lock(&p->mu);
	for (;;) {
		uint64_t n, off;
		int rc;

		while (p->head == p->tail && !p->stop)
			pthread_cond_wait(&p->cv, &p->mu);
		if (p->head == p->tail)
			break; /* stopped, and everything is out */
		off = p->tail % NET_PCAP_RING;
		n = p->head - p->tail;
		if (n > NET_PCAP_RING - off)
			n = NET_PCAP_RING - off; /* up to the ring's end; the rest on the next turn */
		pthread_mutex_unlock(&p->mu);
		/* The producer never writes into [tail, head): this part is the writer's alone. */
		rc = p->st.write_errno ? 0 : write_all(p->fd, p->ring + off, (size_t)n);
		pthread_mutex_lock(&p->mu);
		if (rc && !p->st.write_errno)
			p->st.write_errno = -rc;
		p->tail += n;
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

struct net_pcap *net_pcap_open(const char *path, uint64_t max_bytes, char *err, size_t errlen)
{
	struct net_pcap *p = calloc(1, sizeof(*p));
	uint8_t hdr[PCAP_FILE_HDR];
	int rc;

	if (p == NULL) {
		err_set(err, errlen, "out of memory");
		return NULL;
	}
	p->fd = -1;
	if (strlen(path) >= sizeof(p->path)) {
		err_set(err, errlen, "--pcap: the path is longer than %zu bytes", sizeof(p->path) - 1);
		goto fail;
	}
	snprintf(p->path, sizeof(p->path), "%s", path);
	p->max_bytes = max_bytes ? max_bytes : NET_PCAP_DEFAULT_MAX;
	if (p->max_bytes < PCAP_FILE_HDR) {
		err_set(err, errlen, "--pcap-max: %" PRIu64 " bytes cannot hold the file header", p->max_bytes);
		goto fail;
	}
	p->ring = malloc(NET_PCAP_RING);
	if (p->ring == NULL) {
		err_set(err, errlen, "out of memory for the capture's ring");
		goto fail;
	}
	p->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (p->fd < 0) {
		err_set(err, errlen, "--pcap %s: %s", path, strerror(errno));
		goto fail;
	}
	put32(hdr, PCAP_MAGIC_US);
	hdr[4] = 2, hdr[5] = 0;           /* version 2.4 */
	hdr[6] = 4, hdr[7] = 0;
	put32(hdr + 8, 0);                /* GMT offset */
	put32(hdr + 12, 0);               /* timestamp accuracy */
	put32(hdr + 16, NET_PCAP_SNAPLEN);
	put32(hdr + 20, PCAP_LINKTYPE_ETHERNET);
	rc = write_all(p->fd, hdr, sizeof(hdr));
	if (rc) {
		err_set(err, errlen, "--pcap %s: %s", path, strerror(-rc));
		goto fail;
	}
	p->st.bytes = PCAP_FILE_HDR;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	if ((rc = pthread_create(&p->writer, NULL, writer_main, p)) != 0) {
		err_set(err, errlen, "--pcap: cannot start its writer: %s", strerror(rc));
		pthread_cond_destroy(&p->cv);
		pthread_mutex_destroy(&p->mu);
		goto fail;
	}
	LOG_INFO("pcap: capturing the segment into %s (at most %" PRIu64 " bytes)", p->path, p->max_bytes);
	return p;
fail:
	if (p->fd >= 0)
		close(p->fd);
	free(p->ring);
	free(p);
	return NULL;
}

/* Copy n bytes into the ring at position pos, across its end if need be. */
static void ring_put(struct net_pcap *p, uint64_t pos, const uint8_t *src, size_t n)
{
	size_t off = (size_t)(pos % NET_PCAP_RING), first = n < NET_PCAP_RING - off ? n : NET_PCAP_RING - off;

	memcpy(p->ring + off, src, first);
	memcpy(p->ring, src + first, n - first);
}

void net_pcap_frame(struct net_pcap *p, const uint8_t *frame, size_t len, uint64_t ts_us)
{
	size_t cap = len < NET_PCAP_SNAPLEN ? len : NET_PCAP_SNAPLEN;
	uint64_t rec = PCAP_REC_HDR + cap;
	uint8_t hdr[PCAP_REC_HDR];
	bool wake;

	if (p == NULL || frame == NULL)
		return;
	put32(hdr, (uint32_t)(ts_us / 1000000u));
	put32(hdr + 4, (uint32_t)(ts_us % 1000000u));
	put32(hdr + 8, (uint32_t)cap);
	put32(hdr + 12, len > UINT32_MAX ? UINT32_MAX : (uint32_t)len);
	pthread_mutex_lock(&p->mu);
	p->st.frames++;
	if (p->full || p->st.bytes + rec > p->max_bytes) {
		p->full = true;
		p->st.cut++;
	} else if (rec > NET_PCAP_RING - (p->head - p->tail)) {
		p->st.dropped++;
	} else {
		wake = p->head == p->tail;
		ring_put(p, p->head, hdr, sizeof(hdr));
		ring_put(p, p->head + sizeof(hdr), frame, cap);
		p->head += rec;
		p->st.bytes += rec;
		p->st.written++;
		if (cap < len)
			p->st.truncated++;
		if (wake)
			pthread_cond_signal(&p->cv);
	}
	pthread_mutex_unlock(&p->mu);
}

struct net_pcap_stats net_pcap_stats(const struct net_pcap *p)
{
	struct net_pcap_stats s;

	pthread_mutex_lock((pthread_mutex_t *)&p->mu);
	s = p->st;
	pthread_mutex_unlock((pthread_mutex_t *)&p->mu);
	return s;
}

void net_pcap_close(struct net_pcap *p)
{
	if (p == NULL)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = true;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	pthread_join(p->writer, NULL);
	if (p->st.write_errno)
		LOG_WARN("pcap: writing %s failed (%s): the capture stops where that happened", p->path,
			 strerror(p->st.write_errno));
	LOG_INFO("pcap: %s: %" PRIu64 " frames written (%" PRIu64 " bytes), %" PRIu64
		 " dropped with the writer behind, %" PRIu64 " past the size limit, %" PRIu64 " truncated",
		 p->path, p->st.written, p->st.bytes, p->st.dropped, p->st.cut, p->st.truncated);
	close(p->fd);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p->ring);
	free(p);
}
