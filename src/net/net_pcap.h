/*
 * A capture of the emulated segment (--pcap FILE): every frame that enters
 * the switch, from any port (the guest's NIC, the in-process endpoints, the
 * TAP), in the classic pcap format (Ethernet link type, microsecond
 * timestamps) that tcpdump, Wireshark and tshark read.
 *
 * The event loop never waits for the disk: a frame is copied into a bounded
 * ring (NET_PCAP_RING bytes) and a writer thread of the capture's own writes
 * the ring to the file. A frame that finds the ring full is not captured and
 * is counted (dropped); so is one that would take the file past its size
 * limit (cut), after which nothing more is written. Frames keep their
 * offloads as they came (a TCP super-frame from the TAP is one record, its
 * checksum possibly partial, as a capture on a host with offloads shows it).
 */
#ifndef ERNIC_NET_NET_PCAP_H
#define ERNIC_NET_NET_PCAP_H

#include <stddef.h>
#include <stdint.h>

#define NET_PCAP_RING     (8u << 20)   /* bytes of records waiting for the writer */
#define NET_PCAP_SNAPLEN  262144u      /* the largest frame a record holds whole */
#define NET_PCAP_DEFAULT_MAX (1ull << 30) /* the file's default size limit */

struct net_pcap;

struct net_pcap_stats {
	uint64_t frames;         /* offered */
	uint64_t written;        /* in the file */
	uint64_t bytes;          /* of the file, headers included */
	uint64_t dropped;        /* the ring was full */
	uint64_t cut;            /* past the size limit */
	uint64_t truncated;      /* longer than the snap length: the record holds its first NET_PCAP_SNAPLEN bytes */
	int write_errno;         /* the first write error (the writer then stops), or 0 */
};

/*
 * Create (or truncate) path and write the file header; at most max_bytes of
 * file (0: NET_PCAP_DEFAULT_MAX). NULL with a one-line reason in err.
 */
struct net_pcap *net_pcap_open(const char *path, uint64_t max_bytes, char *err, size_t errlen);

/* Capture frame[0..len) at time ts_us (microseconds since the epoch). Never blocks. */
void net_pcap_frame(struct net_pcap *p, const uint8_t *frame, size_t len, uint64_t ts_us);

/* What was captured so far (the writer's figures may trail by what the ring holds). */
struct net_pcap_stats net_pcap_stats(const struct net_pcap *p);

/* Write out what the ring holds, stop the writer, close the file, log the counts. */
void net_pcap_close(struct net_pcap *p);

#endif
