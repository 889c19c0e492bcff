/*
 * Glue between the ionic device model and the PCI function: the identity
 * (1dd8:1002, subsystem 1dd8:5400, Ethernet), BAR0 (registers + MSI-X table
 * and PBA), BAR2 (doorbell pages) and interrupt delivery.
 *
 * With mapped doorbells, BAR2 is offered to the client as one sparse-mmap
 * area backed by a sealed memfd (the client cannot resize it under us); each
 * client gets a fresh one, so a client that has left cannot ring the next
 * client's device. ionic_pci_poll must then be called from the event loop.
 */
#ifndef ERNIC_IONIC_IONIC_PCI_H
#define ERNIC_IONIC_IONIC_PCI_H

#include "ionic/ionic_dev.h"
#include "pci/pci_dev.h"
#include "util/evloop.h"

struct ionic_pci;

/* mmap_doorbells: offer BAR2 for mapping (else every doorbell traps). NULL on failure. */
struct ionic_pci *ionic_pci_new(const struct ionic_dev_config *cfg, bool mmap_doorbells);
void ionic_pci_free(struct ionic_pci *ip);
/* One log line of the device's counters (two with RDMA in use): at exit, and on SIGUSR2. */
void ionic_pci_log_stats(const struct ionic_pci *ip);

const struct vfu_device *ionic_pci_vfu(struct ionic_pci *ip);
void ionic_pci_set_server(struct ionic_pci *ip, struct vfu_server *srv);
/* Interrupts raised in one batch of the loop's events go out at its end, once per vector (pci_dev_set_loop). */
void ionic_pci_set_loop(struct ionic_pci *ip, struct evloop *loop);

/* The device model behind the function (for the data path's RDMA peers). */
struct ionic_dev *ionic_pci_dev(struct ionic_pci *ip);

/* A poller for the event loop (ip as arg): take doorbells stored in the mapped pages. */
enum ev_poll_result ionic_pci_poll(void *ip);
/*
 * A poller for the event loop (ip as arg), always installed: one slice of
 * the device's long work per turn (ionic_dev_work); EV_POLL_MORE while work
 * is left, asleep once none does.
 */
enum ev_poll_result ionic_pci_work(void *ip);

/* A simulated firmware reset of the device (see ionic_dev_fw_reset). */
void ionic_pci_fw_reset(struct ionic_pci *ip);

struct net_switch;
/* Put the guest NIC on the segment: its TX goes to sw, frames for it come back. 0 or -1. */
int ionic_pci_attach_segment(struct ionic_pci *ip, struct net_switch *sw);

#endif
