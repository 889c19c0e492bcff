/*
 * The NVMe-oF controller on the ionic data path: the CM answers MADs the
 * guest sends on its GSI queue pair to the controller's address, and every
 * connection it accepts becomes a target queue pair whose capsules arrive
 * as the guest's SENDs and whose responses go into the guest's receives;
 * data moves by RDMA READ/WRITE against the guest's keys.
 */
#ifndef ERNIC_FABRIC_FABRIC_NVMEOF_H
#define ERNIC_FABRIC_FABRIC_NVMEOF_H

#include "nvmeof/nvmeof_ns.h"
#include "util/backend_opts.h"

struct ionic_dev;
struct evloop;
struct fabric_nvmeof;

/* Returns NULL on allocation failure. cfg and ns must outlive it. */
struct fabric_nvmeof *fabric_nvmeof_new(const struct nvmeof_config *cfg, struct nvmeof_ns *ns, struct evloop *loop);
/* Attach to the device (registers as its RDMA peer); NULL detaches. */
void fabric_nvmeof_attach(struct fabric_nvmeof *g, struct ionic_dev *dev);
/* Detach from the device and free everything. NULL is fine. */
void fabric_nvmeof_free(struct fabric_nvmeof *g);

#endif
