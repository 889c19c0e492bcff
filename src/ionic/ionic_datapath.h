/*
 * The data path's peers: what answers the guest besides the guest itself.
 *
 * ionic_datapath_create() builds the backend the --backend config names
 * (the s3 store's endpoint, the NVMe-oF namespace, loopback or nothing) and
 * logs it at info in the form the backend specifications give. Failures that
 * only show when resources are claimed (a file= image that would be
 * truncated, memory) are reported here, before the device is presented.
 */
#ifndef ERNIC_IONIC_IONIC_DATAPATH_H
#define ERNIC_IONIC_IONIC_DATAPATH_H

#include <stddef.h>

#include "util/backend_opts.h"

struct ionic_datapath;

struct evloop;
struct net_switch;

/*
 * Returns the data path, or NULL with a one-line reason in err. cfg must
 * outlive it. In-process endpoints (the s3 store's host) join the segment sw.
 */
struct ionic_datapath *ionic_datapath_create(const struct backend_config *cfg, struct evloop *loop,
					     struct net_switch *sw, char *err, size_t errlen);

/*
 * Join the data path to the device's RDMA engine (the NVMe-oF controller
 * registers as its in-process peer), or leave it with dev NULL: before the
 * device is freed.
 */
struct ionic_dev;
void ionic_datapath_attach(struct ionic_datapath *dp, struct ionic_dev *dev);

/* Release the backend; a file-backed namespace is written back first. NULL is ignored. */
void ionic_datapath_destroy(struct ionic_datapath *dp);

#endif
