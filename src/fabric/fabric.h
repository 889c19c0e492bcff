/*
 * The fabric: what answers the guest's RDMA engine besides the guest itself.
 * It sits between the device model (src/ionic) and the backends, which
 * reach the device only through the ops interfaces of ionic/ionic_dev.h;
 * the device model includes none of the headers here.
 *
 * fabric_create() builds the backend the --backend config names
 * (the s3 store's endpoint, the NVMe-oF namespace, loopback or nothing) and
 * logs it at info in the form the backend specifications give (the lines
 * keep their "ionic_datapath:" prefix, which scripts and tests match).
 * Failures that only show when resources are claimed (a file= image that
 * would be truncated, memory) are reported here, before the device is
 * presented.
 */
#ifndef ERNIC_FABRIC_FABRIC_H
#define ERNIC_FABRIC_FABRIC_H

#include <stddef.h>

#include "util/backend_opts.h"

struct fabric;

struct evloop;
struct net_switch;

/*
 * Returns the data path, or NULL with a one-line reason in err. cfg must
 * outlive it. In-process endpoints (the s3 store's host) join the segment sw.
 */
struct fabric *fabric_create(const struct backend_config *cfg, struct evloop *loop,
			     struct net_switch *sw, char *err, size_t errlen);

/*
 * Join the data path to the device's RDMA engine (the NVMe-oF controller
 * registers as its in-process peer), or leave it with dev NULL: before the
 * device is freed.
 */
struct ionic_dev;
void fabric_attach(struct fabric *dp, struct ionic_dev *dev);

/* Release the backend; a file-backed namespace is written back first. NULL is ignored. */
/* Log the backend's own counters, if it keeps any (the roce backend's node and queue pairs). */
void fabric_log_stats(const struct fabric *dp);

void fabric_destroy(struct fabric *dp);

#endif
