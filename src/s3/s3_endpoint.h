/*
 * The S3 endpoint as a host on the emulated segment: the store, the in-band
 * TCP/IP stack and one HTTP connection object per TCP connection, attached
 * to the segment switch as an endpoint (MAC 02:53 + the four address bytes).
 * It works with or without a guest: the TAP side reaches it too.
 */
#ifndef ERNIC_S3_S3_ENDPOINT_H
#define ERNIC_S3_S3_ENDPOINT_H

#include <stddef.h>

#include "util/backend_opts.h"

struct evloop;
struct net_switch;
struct s3_store;
struct s3_endpoint;

struct s3_endpoint *s3_endpoint_new(const struct s3_config *cfg, struct evloop *loop, struct net_switch *sw,
				    char *err, size_t errlen);
void s3_endpoint_free(struct s3_endpoint *ep);
/* The store's counters in one line (the closing statistics and SIGUSR2, through fabric_log_stats). */
void s3_endpoint_log_stats(const struct s3_endpoint *ep);

/* The store (the data path gives it its DMA ops). */
struct s3_store *s3_endpoint_store(struct s3_endpoint *ep);

#endif
