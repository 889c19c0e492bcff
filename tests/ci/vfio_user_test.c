/*
 * vfio-user-ci: our own vfio-user client against the real server binary.
 * Every command, its error paths, malformed messages, stray descriptors,
 * a client that vanishes mid-message, a second client; after each abuse the
 * server must still serve. Also checks the PCI function it presents and the
 * dev_cmd path of the ionic device.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../lib/ionic_guest.h"
#include "../lib/vfu_client.h"

static const char *binary;
static struct vfc_server srv;
static struct vfc cl;

/* Offsets of the device we expect (see src/ionic/ionic_if.h, src/pci/pci_dev.c). */
#define CFG VFU_PCI_CONFIG_REGION
#define BAR0 0
#define BAR2 2
#define MSIX_PBA 0x9000
#define DEVCMD 0x800

static int spawn(const char *const args[])
{
	return vfc_server_start(&srv, "vfio-user-ci", binary, args);
}

static int start_server(void **state)
{
	(void)state;
	return spawn((const char *const[]){ "-b", "none", "--no-mmap-doorbells", NULL });
}

static int start_mmap_server(void **state)
{
	(void)state;
	return spawn((const char *const[]){ "-b", "none", "--mmap-doorbells", NULL });
}

static int stop_server(void **state)
{
	(void)state;
	/* The server must have survived everything and stopped cleanly. */
	return vfc_server_stop(&srv);
}

static uint32_t call_err(uint16_t cmd, const void *req, size_t len, const int *fds, unsigned nfds)
{
	uint8_t rep[4096];
	size_t rlen;
	uint32_t err = 0;

	assert_int_equal(vfc_call(&cl, cmd, req, len, fds, nfds, rep, sizeof(rep), &rlen, &err), 0);
	return err;
}

/* The server still answers a fresh client. */
static void assert_serving(void)
{
	assert_int_equal(vfc_server_id(&srv), 0x10021dd8);
}

/* ---- VERSION ---- */

static void test_version(void **state)
{
	static const char caps[] = "{\"capabilities\":{\"max_msg_fds\":8,\"max_data_xfer_size\":1048576}}";
	uint8_t req[4 + sizeof(caps)], rep[1024];
	struct vfu_version v = { 0, 0 };
	size_t rlen = 0;
	uint32_t err;

	(void)state;
	assert_int_equal(vfc_connect(&cl, srv.sock, 20000), 0);
	/* Nothing but VERSION before VERSION. */
	assert_int_equal(call_err(VFU_CMD_DEVICE_GET_INFO, &(struct vfu_device_info){ .argsz = 16 }, 16, NULL, 0), EINVAL);
	/* A capabilities string without its NUL. */
	memcpy(req, &v, 4);
	memcpy(req + 4, "{}", 2);
	assert_int_equal(call_err(VFU_CMD_VERSION, req, 6, NULL, 0), EINVAL);
	/* Not JSON, not an object, a bad transfer size. */
	memcpy(req + 4, "{{{", 4);
	assert_int_equal(call_err(VFU_CMD_VERSION, req, 8, NULL, 0), EINVAL);
	memcpy(req + 4, "[1]", 4);
	assert_int_equal(call_err(VFU_CMD_VERSION, req, 8, NULL, 0), EINVAL);
	const char bad_xfer[] = "{\"capabilities\":{\"max_data_xfer_size\":\"big\"}}";
	memcpy(req + 4, bad_xfer, sizeof(bad_xfer));
	assert_int_equal(call_err(VFU_CMD_VERSION, req, 4 + sizeof(bad_xfer), NULL, 0), EINVAL);
	/* A major version we do not speak. */
	v.major = 1;
	memcpy(req, &v, 4);
	memcpy(req + 4, caps, sizeof(caps));
	assert_int_equal(call_err(VFU_CMD_VERSION, req, sizeof(req), NULL, 0), ENOTSUP);
	/* Too short to be a VERSION at all. */
	assert_int_equal(call_err(VFU_CMD_VERSION, req, 2, NULL, 0), EINVAL);

	v.major = 0;
	memcpy(req, &v, 4);
	assert_int_equal(vfc_call(&cl, VFU_CMD_VERSION, req, sizeof(req), NULL, 0, rep, sizeof(rep), &rlen, &err), 0);
	assert_int_equal(err, 0);
	assert_true(rlen > 4);
	memcpy(&v, rep, 4);
	assert_int_equal(v.major, 0);
	assert_int_equal(v.minor, 0);
	assert_int_equal(rep[rlen - 1], '\0'); /* QEMU calls a reply without it corrupt */
	assert_non_null(strstr((char *)rep + 4, "\"max_msg_fds\":16"));
	assert_non_null(strstr((char *)rep + 4, "\"max_data_xfer_size\":1048576"));
	assert_non_null(strstr((char *)rep + 4, "\"pgsizes\":4096"));
	assert_non_null(strstr((char *)rep + 4, "\"max_dma_maps\":"));
	assert_non_null(strstr((char *)rep + 4, "\"write_multiple\":true"));
	/* Once only. */
	assert_int_equal(call_err(VFU_CMD_VERSION, req, sizeof(req), NULL, 0), EINVAL);
	vfc_close(&cl);
}

/* ---- device, regions, IRQ info ---- */

static void test_device_info(void **state)
{
	struct vfu_device_info in = { .argsz = sizeof(in) }, out;
	size_t rlen;
	uint32_t err;

	(void)state;
	assert_int_equal(vfc_call(&cl, VFU_CMD_DEVICE_GET_INFO, &in, sizeof(in), NULL, 0, &out, sizeof(out), &rlen, &err), 0);
	assert_int_equal(err, 0);
	assert_int_equal(rlen, sizeof(out));
	assert_int_equal(out.flags, VFU_DEVICE_FLAGS_RESET | VFU_DEVICE_FLAGS_PCI);
	assert_int_equal(out.num_regions, 9);
	assert_int_equal(out.num_irqs, 5);
	in.argsz = 8;
	assert_int_equal(call_err(VFU_CMD_DEVICE_GET_INFO, &in, sizeof(in), NULL, 0), EINVAL);
	assert_int_equal(call_err(VFU_CMD_DEVICE_GET_INFO, &in, 8, NULL, 0), EINVAL); /* short payload */
}

static void test_region_info(void **state)
{
	static const uint64_t sizes[9] = { 0x10000, 0, 64 * 4096, 0, 0, 0, 0, 4096, 0 };

	(void)state;
	for (uint32_t i = 0; i < 9; i++) {
		struct vfu_region_info in = { .argsz = sizeof(in), .index = i }, out;
		size_t rlen;
		uint32_t err;

		assert_int_equal(vfc_call(&cl, VFU_CMD_DEVICE_GET_REGION_INFO, &in, sizeof(in), NULL, 0, &out,
					  sizeof(out), &rlen, &err), 0);
		assert_int_equal(err, 0);
		assert_int_equal(out.index, i);
		assert_true(out.size == sizes[i]);
		assert_int_equal(out.flags, sizes[i] ? VFU_REGION_FLAG_READ | VFU_REGION_FLAG_WRITE : 0);
		assert_int_equal(out.flags & VFU_REGION_FLAG_MMAP, 0);
	}
	struct vfu_region_info bad = { .argsz = sizeof(bad), .index = 9 };
	assert_int_equal(call_err(VFU_CMD_DEVICE_GET_REGION_INFO, &bad, sizeof(bad), NULL, 0), EINVAL);
	bad.index = 0xffffffff;
	assert_int_equal(call_err(VFU_CMD_DEVICE_GET_REGION_INFO, &bad, sizeof(bad), NULL, 0), EINVAL);
	bad = (struct vfu_region_info){ .argsz = 4, .index = 0 };
	assert_int_equal(call_err(VFU_CMD_DEVICE_GET_REGION_INFO, &bad, sizeof(bad), NULL, 0), EINVAL);
}

static void test_irq_info(void **state)
{
	static const uint32_t counts[5] = { 0, 0, 32, 1, 1 };

	(void)state;
	for (uint32_t i = 0; i < 5; i++) {
		struct vfu_irq_info in = { .argsz = sizeof(in), .index = i }, out;
		size_t rlen;
		uint32_t err;

		assert_int_equal(vfc_call(&cl, VFU_CMD_DEVICE_GET_IRQ_INFO, &in, sizeof(in), NULL, 0, &out,
					  sizeof(out), &rlen, &err), 0);
		assert_int_equal(err, 0);
		assert_int_equal(out.count, counts[i]);
		assert_true(out.flags & VFU_IRQ_INFO_EVENTFD);
	}
	struct vfu_irq_info bad = { .argsz = sizeof(bad), .index = 5 };
	assert_int_equal(call_err(VFU_CMD_DEVICE_GET_IRQ_INFO, &bad, sizeof(bad), NULL, 0), EINVAL);
}

/* ---- PCI configuration space ---- */

static void test_config_space(void **state)
{
	uint8_t cfg[256];
	uint8_t pos;
	int found = 0, hops = 0;

	(void)state;
	assert_int_equal(vfc_read(&cl, CFG, 0, cfg, sizeof(cfg)), 0);
	assert_int_equal(cfg[0] | cfg[1] << 8, 0x1dd8);
	assert_int_equal(cfg[2] | cfg[3] << 8, 0x1002);
	assert_int_equal(cfg[0x09] | cfg[0x0a] << 8 | cfg[0x0b] << 16, 0x020000); /* Ethernet */
	assert_int_equal(cfg[0x2c] | cfg[0x2d] << 8, 0x1dd8);
	assert_int_equal(cfg[0x2e] | cfg[0x2f] << 8, 0x5400);
	assert_true(cfg[0x06] & 0x10); /* capability list */
	assert_int_equal(cfg[0x10] & 0x7, 0x4); /* BAR0: 64-bit memory */
	assert_int_equal(cfg[0x18] & 0x7, 0x4); /* BAR2: 64-bit memory */
	assert_int_equal(cfg[0x3d], 0);        /* no INTx */
	/* Walk the capabilities: PM, PCI Express, MSI-X, and nothing else. */
	for (pos = cfg[0x34]; pos; pos = cfg[pos + 1]) {
		assert_true(pos >= 0x40 && pos < 0xff);
		if (cfg[pos] == 0x01)
			found |= 1;
		else if (cfg[pos] == 0x10)
			found |= 2;
		else if (cfg[pos] == 0x11) {
			uint16_t ctrl = (uint16_t)(cfg[pos + 2] | cfg[pos + 3] << 8);
			uint32_t table, pba;

			memcpy(&table, cfg + pos + 4, 4);
			memcpy(&pba, cfg + pos + 8, 4);
			assert_int_equal(ctrl & 0x7ff, 31); /* 32 vectors */
			assert_int_equal(table, 0x8000 | 0);
			assert_int_equal(pba, 0x9000 | 0);
			found |= 4;
		} else
			fail_msg("unexpected capability %#x at %#x", cfg[pos], pos);
		assert_true(++hops < 48); /* the list ends */
	}
	assert_int_equal(found & 7, 7);
	/* Extended space: 4 KiB, empty list. */
	assert_int_equal(vfc_read32(&cl, CFG, 0x100), 0);
	assert_int_equal(vfc_read32(&cl, CFG, 0xffc), 0);
}

static void test_config_writes(void **state)
{
	(void)state;
	/* Identity is read-only. */
	vfc_write32(&cl, CFG, 0, 0x12345678, false);
	assert_int_equal(vfc_read32(&cl, CFG, 0), 0x10021dd8);
	/* BAR sizing: all ones reads back the size mask with the type bits. */
	vfc_write32(&cl, CFG, 0x10, 0xffffffff, false);
	vfc_write32(&cl, CFG, 0x14, 0xffffffff, false);
	assert_int_equal(vfc_read32(&cl, CFG, 0x10), 0xffff0004);
	assert_int_equal(vfc_read32(&cl, CFG, 0x14), 0xffffffff);
	vfc_write32(&cl, CFG, 0x18, 0xffffffff, false);
	assert_int_equal(vfc_read32(&cl, CFG, 0x18), 0xfffc0004); /* 256 KiB of doorbells */
	vfc_write32(&cl, CFG, 0x10, 0xfe000000, false);
	assert_int_equal(vfc_read32(&cl, CFG, 0x10), 0xfe000004);
	/* Command register: memory + bus master stick, reserved bits do not. */
	vfc_write32(&cl, CFG, 0x04, 0x0000ffff, false);
	assert_int_equal(vfc_read32(&cl, CFG, 0x04) & 0xffff, 0x0547);
	/* Status error bits are write-one-to-clear and start clear; the capability bit stays. */
	vfc_write32(&cl, CFG, 0x04, 0xffff0000, false);
	assert_int_equal(vfc_read32(&cl, CFG, 0x04) >> 16, 0x0010);
	/* Unaligned and odd-sized accesses work anywhere. */
	uint8_t three[3];
	assert_int_equal(vfc_read(&cl, CFG, 1, three, 3), 0);
	assert_int_equal(three[0], 0x1d);
	assert_int_equal(three[1], 0x02);
	assert_int_equal(three[2], 0x10);
	/* DEVICE_RESET restores the power-on image. */
	assert_int_equal(call_err(VFU_CMD_DEVICE_RESET, NULL, 0, NULL, 0), 0);
	assert_int_equal(vfc_read32(&cl, CFG, 0x04) & 0xffff, 0);
	assert_int_equal(vfc_read32(&cl, CFG, 0x10), 0x00000004);
}

/* ---- region access bounds ---- */

static void test_region_bounds(void **state)
{
	struct vfu_region_rw rw;
	uint8_t buf[64] = { 0 };

	(void)state;
	assert_int_equal(vfc_read(&cl, CFG, 4096, buf, 1), EINVAL);
	assert_int_equal(vfc_read(&cl, CFG, 4095, buf, 2), EINVAL);
	assert_int_equal(vfc_read(&cl, CFG, UINT64_MAX, buf, 2), EINVAL);
	assert_int_equal(vfc_read(&cl, CFG, UINT64_MAX - 1, buf, 4), EINVAL);
	assert_int_equal(vfc_read(&cl, BAR0, 0x10000, buf, 4), EINVAL);
	assert_int_equal(vfc_read(&cl, 4, 0, buf, 4), EINVAL);  /* BAR4 does not exist */
	assert_int_equal(vfc_read(&cl, 9, 0, buf, 4), EINVAL);
	assert_int_equal(vfc_read(&cl, 0xffffffffu, 0, buf, 4), EINVAL);
	assert_int_equal(vfc_write(&cl, BAR2, 64 * 4096 - 4, buf, 8, false), EINVAL);
	/* count 0, and a count larger than the transfer limit. */
	rw = (struct vfu_region_rw){ .offset = 0, .region = CFG, .count = 0 };
	assert_int_equal(call_err(VFU_CMD_REGION_READ, &rw, sizeof(rw), NULL, 0), EINVAL);
	rw.count = (1u << 20) + 1;
	assert_int_equal(call_err(VFU_CMD_REGION_READ, &rw, sizeof(rw), NULL, 0), EINVAL);
	/* A write whose data does not match its count, either way. */
	uint8_t msg[sizeof(rw) + 8];
	rw = (struct vfu_region_rw){ .offset = 0x40, .region = CFG, .count = 4 };
	memcpy(msg, &rw, sizeof(rw));
	assert_int_equal(call_err(VFU_CMD_REGION_WRITE, msg, sizeof(msg), NULL, 0), EINVAL);
	rw.count = 16;
	memcpy(msg, &rw, sizeof(rw));
	assert_int_equal(call_err(VFU_CMD_REGION_WRITE, msg, sizeof(msg), NULL, 0), EINVAL);
	/* A read carrying data it should not. */
	rw.count = 4;
	memcpy(msg, &rw, sizeof(rw));
	assert_int_equal(call_err(VFU_CMD_REGION_READ, msg, sizeof(msg), NULL, 0), EINVAL);
	/* Short payload. */
	assert_int_equal(call_err(VFU_CMD_REGION_READ, msg, 8, NULL, 0), EINVAL);
	/* Still fine. */
	assert_int_equal(vfc_read32(&cl, CFG, 0), 0x10021dd8);
}

/* ---- the ionic device behind BAR0 ---- */

static void dev_cmd(uint8_t opcode, uint8_t arg1, uint8_t comp[16])
{
	uint8_t cmd[64] = { opcode, arg1 };

	assert_int_equal(vfc_write(&cl, BAR0, DEVCMD + 8, cmd, sizeof(cmd), true), 0);
	vfc_write32(&cl, BAR0, DEVCMD + 4, 0, true);
	vfc_write32(&cl, BAR0, DEVCMD, 1, true); /* posted doorbell, as QEMU sends it */
	assert_int_equal(vfc_read32(&cl, BAR0, DEVCMD + 4) & 1, 1);
	assert_int_equal(vfc_read(&cl, BAR0, DEVCMD + 0x48, comp, 16), 0);
	vfc_write32(&cl, BAR0, DEVCMD, 0, true);
}

static void test_ionic_dev_info_and_cmd(void **state)
{
	char fw[33] = { 0 };
	uint8_t comp[16], data[64];
	uint32_t hb1, hb2;

	(void)state;
	assert_int_equal(vfc_read32(&cl, BAR0, 0), 0x44455649); /* signature */
	assert_int_equal(vfc_read32(&cl, BAR0, 4) & 0xff, 1);    /* version */
	assert_true((vfc_read32(&cl, BAR0, 4) >> 24) & 1);       /* fw running */
	assert_int_equal(vfc_read(&cl, BAR0, 0x0c, fw, 32), 0);
	assert_string_equal(fw, "1.0.0-ernic");
	hb1 = vfc_read32(&cl, BAR0, 8);
	usleep(20000);
	hb2 = vfc_read32(&cl, BAR0, 8);
	assert_true(hb1 != 0 && hb2 != hb1); /* a live heartbeat */
	/* dev_info is read-only. */
	vfc_write32(&cl, BAR0, 0, 0, false);
	assert_int_equal(vfc_read32(&cl, BAR0, 0), 0x44455649);

	dev_cmd(3, 0, comp); /* RESET */
	assert_int_equal(comp[0], 0);
	dev_cmd(1, 2, comp); /* IDENTIFY v2 */
	assert_int_equal(comp[0], 0);
	assert_int_equal(comp[1], 2);
	assert_int_equal(vfc_read(&cl, BAR0, DEVCMD + 0x88, data, sizeof(data)), 0);
	assert_int_equal(data[0], 2);                 /* identity version */
	assert_int_equal(data[12] | data[13] << 8, 32); /* nintrs */
	assert_int_equal(data[16] | data[17] << 8, 64); /* ndbpgs_per_lif */
	dev_cmd(1, 1, comp); /* an older driver gets an older identity */
	assert_int_equal(comp[1], 1);
	dev_cmd(0xee, 0, comp); /* unknown opcode */
	assert_int_equal(comp[0], 2);  /* IONIC_RC_EOPCODE */
	/* Garbage everywhere in the register window is harmless. */
	uint8_t junk[512];
	memset(junk, 0xa5, sizeof(junk));
	for (uint64_t off = 0; off < 0x10000; off += 0x1000)
		assert_int_equal(vfc_write(&cl, BAR0, off, junk, sizeof(junk), true), 0);
	for (uint64_t off = 0; off < 64 * 4096; off += 4096)
		assert_int_equal(vfc_write(&cl, BAR2, off, junk, 8, true), 0);
	assert_int_equal(vfc_read32(&cl, BAR0, 0), 0x44455649);
}


/* ---- the admin queue, as the driver uses it after LIF_INIT ---- */

static void aq_cmd(uint8_t *cmd, uint8_t opcode, uint8_t b1)
{
	memset(cmd, 0, 64);
	cmd[0] = opcode;
	cmd[1] = b1;
}

/* NOPs through two passes of the admin ring: each completes once, naming its descriptor, as indexes wrap and the color flips. */
static void aq_nops_wrapping(struct ionic_guest *g)
{
	uint8_t cmd[64], comp[16];

	for (int i = 0; i < 2 * GUEST_AQ_DEPTH; i++) {
		uint32_t idx;

		aq_cmd(cmd, 0, 0);
		idx = ionic_guest_aq_post(g, cmd);
		for (int t = 0; t < 500 && !ionic_guest_aq_comp(g, comp); t++)
			usleep(1000);
		assert_int_equal(comp[0], 0);
		assert_int_equal(comp[2] | comp[3] << 8, idx);
	}
}

static void test_adminq(void **state)
{
	struct ionic_guest g;
	uint8_t cmd[64], comp[16];
	const uint8_t *lif_info;

	(void)state;
	assert_int_equal(ionic_guest_setup(&g, &cl), 0);
	/* LIF_INIT wrote the link status into the driver's lif_info. */
	lif_info = guest_ptr(&g, GUEST_LIF_INFO);
	assert_int_equal(lif_info[266] | lif_info[267] << 8, 1);          /* link up */
	assert_int_equal(lif_info[268] | lif_info[269] << 8 | lif_info[270] << 16, 100000); /* Mbps */

	/* A NOP: one completion naming descriptor 0, color 1, and the vector fires. */
	aq_cmd(cmd, 0, 0);
	assert_int_equal(ionic_guest_aq_post(&g, cmd), 0);
	assert_true(ionic_guest_wait_irq(&g, 5000));
	assert_true(ionic_guest_aq_comp(&g, comp));
	assert_int_equal(comp[0], 0);
	assert_int_equal(comp[2] | comp[3] << 8, 0);
	assert_int_equal(comp[15] & 0x80, 0x80);
	assert_false(ionic_guest_aq_comp(&g, comp)); /* nothing more */
	ionic_guest_irq_rearm(&g, 1);

	/* LIF_GETATTR MAC answers the --mac address. */
	aq_cmd(cmd, 23, 3);
	ionic_guest_aq_post(&g, cmd);
	assert_true(ionic_guest_wait_irq(&g, 5000));
	assert_true(ionic_guest_aq_comp(&g, comp));
	assert_int_equal(comp[0], 0);
	static const uint8_t mac[6] = { 0x02, 0x45, 0x52, 0x4e, 0x49, 0x43 };
	assert_memory_equal(comp + 4, mac, 6);
	/* dev_cmd-only commands and unknown opcodes are EOPCODE on the admin queue. */
	aq_cmd(cmd, 1, 2);
	ionic_guest_aq_post(&g, cmd);
	assert_true(ionic_guest_wait_irq(&g, 5000));
	assert_true(ionic_guest_aq_comp(&g, comp));
	assert_int_equal(comp[0], 2);
	aq_cmd(cmd, 0xfe, 0);
	ionic_guest_aq_post(&g, cmd);
	assert_true(ionic_guest_wait_irq(&g, 5000));
	assert_true(ionic_guest_aq_comp(&g, comp));
	assert_int_equal(comp[0], 2);
	/* A bad MTU is refused, a good one taken. */
	aq_cmd(cmd, 24, 2);
	uint32_t mtu = 65000;
	memcpy(cmd + 4, &mtu, 4);
	ionic_guest_aq_post(&g, cmd);
	assert_true(ionic_guest_wait_irq(&g, 5000));
	assert_true(ionic_guest_aq_comp(&g, comp));
	assert_int_equal(comp[0], 14); /* EINVAL */

	/* Many commands: indexes wrap, and the color flips on every pass of the ring. */
	aq_nops_wrapping(&g);
	while (ionic_guest_wait_irq(&g, 0))
		;

	/* Masked: the event waits; unmasking delivers it. */
	vfc_write32(&cl, BAR0, 0x2000 + 4, 1, false);
	aq_cmd(cmd, 0, 0);
	ionic_guest_aq_post(&g, cmd);
	for (int t = 0; t < 500 && !ionic_guest_aq_comp(&g, comp); t++)
		usleep(1000);
	assert_false(ionic_guest_wait_irq(&g, 200));
	assert_true(vfc_read32(&cl, BAR0, 0x2000 + 8) > 0); /* outstanding credits */
	vfc_write32(&cl, BAR0, 0x2000 + 4, 0, false);
	assert_true(ionic_guest_wait_irq(&g, 5000));
	/* Returning all credits zeroes the count. */
	uint32_t cred = vfc_read32(&cl, BAR0, 0x2000 + 8) & 0xffff;
	ionic_guest_irq_rearm(&g, cred);
	assert_int_equal(vfc_read32(&cl, BAR0, 0x2000 + 8), 0);
	/*
	 * Raised while masked, but the driver's poll saw the completion and returns
	 * its credit with the unmask (NAPI's end): nothing is left to tell, so no
	 * interrupt. With two events and one credit returned, the other fires.
	 */
	vfc_write32(&cl, BAR0, 0x2000 + 4, 1, false);
	aq_cmd(cmd, 0, 0);
	ionic_guest_aq_post(&g, cmd);
	for (int t = 0; t < 500 && !ionic_guest_aq_comp(&g, comp); t++)
		usleep(1000);
	assert_false(ionic_guest_wait_irq(&g, 100));
	ionic_guest_irq_rearm(&g, 1);
	assert_false(ionic_guest_wait_irq(&g, 200));
	assert_int_equal(vfc_read32(&cl, BAR0, 0x2000 + 8), 0);
	vfc_write32(&cl, BAR0, 0x2000 + 4, 1, false);
	for (int i = 0; i < 2; i++) {
		aq_cmd(cmd, 0, 0);
		ionic_guest_aq_post(&g, cmd);
		for (int t = 0; t < 500 && !ionic_guest_aq_comp(&g, comp); t++)
			usleep(1000);
	}
	assert_int_equal(vfc_read32(&cl, BAR0, 0x2000 + 8), 2);
	ionic_guest_irq_rearm(&g, 1);
	assert_true(ionic_guest_wait_irq(&g, 5000));
	ionic_guest_irq_rearm(&g, 1);
	assert_int_equal(vfc_read32(&cl, BAR0, 0x2000 + 8), 0);

	/* Doorbells that name no queue, or an index past the ring, move nothing. */
	uint64_t db = GUEST_AQ_DEPTH + 3;
	assert_int_equal(vfc_write(&cl, BAR2, 0, &db, 8, false), 0);
	db = (uint64_t)5 << 24 | 1;
	assert_int_equal(vfc_write(&cl, BAR2, 0, &db, 8, false), 0);
	assert_int_equal(vfc_write(&cl, BAR2, 7 * 8, &db, 8, false), 0);
	assert_int_equal(vfc_write(&cl, BAR2, 3, &db, 4, false), 0);
	assert_false(ionic_guest_wait_irq(&g, 200));
	assert_false(ionic_guest_aq_comp(&g, comp));

	/* The client shrinks the file behind guest memory: the device's next access faults
	 * (SIGBUS), which must end as a failed access, not as a dead server. */
	assert_int_equal(ftruncate(g.memfd, 0), 0);
	db = (g.aq_head + 1) % GUEST_AQ_DEPTH; /* no touching the ring: it is gone for us too */
	assert_int_equal(vfc_write(&cl, BAR2, 0, &db, 8, false), 0);
	assert_int_equal(vfc_read32(&cl, CFG, 0), 0x10021dd8);
	assert_int_equal(ftruncate(g.memfd, GUEST_SIZE), 0);
	assert_false(ionic_guest_wait_irq(&g, 100));

	/* The guest pulls its memory away: a doorbell then reaches nothing, and nothing breaks. */
	struct vfu_dma_unmap u = { .argsz = sizeof(u), .flags = 2 };
	assert_int_equal(call_err(VFU_CMD_DMA_UNMAP, &u, sizeof(u), NULL, 0), 0);
	aq_cmd(cmd, 0, 0);
	ionic_guest_aq_post(&g, cmd);
	assert_false(ionic_guest_wait_irq(&g, 200));
	assert_int_equal(vfc_read32(&cl, CFG, 0), 0x10021dd8);
	ionic_guest_teardown(&g);
}

/* ---- interrupts ---- */

static int set_irqs(uint32_t flags, uint32_t index, uint32_t start, uint32_t count, const void *data,
		    size_t dlen, const int *fds, unsigned nfds)
{
	uint8_t msg[sizeof(struct vfu_irq_set) + 64];
	struct vfu_irq_set s = { .argsz = (uint32_t)(sizeof(s) + dlen), .flags = flags, .index = index,
				 .start = start, .count = count };

	memcpy(msg, &s, sizeof(s));
	if (dlen)
		memcpy(msg + sizeof(s), data, dlen);
	return (int)call_err(VFU_CMD_DEVICE_SET_IRQS, msg, sizeof(s) + dlen, fds, nfds);
}

static uint64_t efd_count(int fd)
{
	uint64_t v = 0;

	if (read(fd, &v, sizeof(v)) != sizeof(v))
		return 0;
	return v;
}

static bool pba_bit(uint32_t vec)
{
	return (vfc_read32(&cl, BAR0, MSIX_PBA + vec / 32 * 4) >> (vec % 32)) & 1;
}

/*
 * Guest memory as QEMU's memory-backend-memfd gives it: sealed against
 * shrinking, so the server copies through it without its SIGBUS guard. The
 * kernel refuses the shrink that test_adminq survives, and the device still
 * reads every command and writes every completion where it belongs, across
 * two wraps of the ring.
 */
static void test_sealed_memory(void **state)
{
	struct ionic_guest g;

	(void)state;
	ionic_guest_seal_memory(true);
	assert_int_equal(ionic_guest_setup(&g, &cl), 0);
	ionic_guest_seal_memory(false);
	assert_int_equal(fcntl(g.memfd, F_GET_SEALS) & F_SEAL_SHRINK, F_SEAL_SHRINK);
	assert_int_not_equal(ftruncate(g.memfd, 0), 0);
	aq_nops_wrapping(&g);
	/* A doorbell past the ring still moves nothing; the device keeps serving. */
	uint64_t db = GUEST_AQ_DEPTH + 3;
	assert_int_equal(vfc_write(&cl, BAR2, 0, &db, 8, false), 0);
	assert_int_equal(vfc_read32(&cl, CFG, 0), 0x10021dd8);
	ionic_guest_teardown(&g);
}

static void test_irqs(void **state)
{
	const uint32_t EFD = VFU_IRQ_SET_DATA_EVENTFD | VFU_IRQ_SET_ACTION_TRIGGER;
	const uint32_t TRIG = VFU_IRQ_SET_DATA_NONE | VFU_IRQ_SET_ACTION_TRIGGER;
	int fds[3];
	uint8_t bools[3] = { 1, 0, 1 };

	(void)state;
	for (int i = 0; i < 3; i++)
		fds[i] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	/* Bad requests. */
	assert_int_equal(set_irqs(EFD, 2, 0, 3, NULL, 0, fds, 2), EINVAL);                /* fd count */
	assert_int_equal(set_irqs(EFD, 2, 31, 2, NULL, 0, fds, 2), EINVAL);               /* past the end */
	assert_int_equal(set_irqs(EFD, 2, 0xffffffff, 2, NULL, 0, fds, 2), EINVAL);       /* wraps */
	assert_int_equal(set_irqs(EFD | VFU_IRQ_SET_DATA_BOOL, 2, 0, 1, NULL, 0, fds, 1), EINVAL);
	assert_int_equal(set_irqs(VFU_IRQ_SET_DATA_NONE, 2, 0, 1, NULL, 0, NULL, 0), EINVAL); /* no action */
	assert_int_equal(set_irqs(EFD, 5, 0, 1, NULL, 0, fds, 1), EINVAL);                /* index */
	assert_int_equal(set_irqs(EFD, 0, 0, 1, NULL, 0, fds, 1), EINVAL);                /* INTx: none */
	assert_int_equal(set_irqs(VFU_IRQ_SET_DATA_NONE | VFU_IRQ_SET_ACTION_MASK, 3, 0, 1, NULL, 0, NULL, 0), EINVAL);
	assert_int_equal(set_irqs(VFU_IRQ_SET_DATA_BOOL | VFU_IRQ_SET_ACTION_TRIGGER, 2, 0, 3, bools, 1, NULL, 0), EINVAL);
	assert_int_equal(set_irqs(TRIG, 2, 0, 1, NULL, 0, fds, 1), EINVAL);               /* fds without EVENTFD */

	/*
	 * Assign vectors 0..2. An MSI-X message is a memory write: while Bus
	 * Master Enable is clear (as after reset) a raised vector waits in the
	 * PBA; setting the bit, as pci_set_master() does, sends it.
	 */
	assert_int_equal(set_irqs(EFD, 2, 0, 3, NULL, 0, fds, 3), 0);
	assert_int_equal(vfc_read32(&cl, CFG, 0x04) & 0x4, 0);
	assert_int_equal(set_irqs(TRIG, 2, 1, 1, NULL, 0, NULL, 0), 0);
	assert_int_equal(efd_count(fds[1]), 0);
	assert_true(pba_bit(1));
	vfc_write32(&cl, CFG, 0x04, 0x0006, false);
	assert_int_equal(efd_count(fds[1]), 1);
	assert_false(pba_bit(1));
	/* And it goes out at once while the bit is set. */
	assert_int_equal(set_irqs(TRIG, 2, 1, 1, NULL, 0, NULL, 0), 0);
	assert_int_equal(efd_count(fds[1]), 1);
	assert_int_equal(efd_count(fds[0]), 0);
	assert_int_equal(set_irqs(VFU_IRQ_SET_DATA_BOOL | VFU_IRQ_SET_ACTION_TRIGGER, 2, 0, 3, bools, 3, NULL, 0), 0);
	assert_int_equal(efd_count(fds[0]), 1);
	assert_int_equal(efd_count(fds[1]), 0);
	assert_int_equal(efd_count(fds[2]), 1);

	/* Raised while masked: pending in the PBA, delivered on unmask. */
	assert_int_equal(set_irqs(VFU_IRQ_SET_DATA_NONE | VFU_IRQ_SET_ACTION_MASK, 2, 1, 1, NULL, 0, NULL, 0), 0);
	assert_int_equal(set_irqs(TRIG, 2, 1, 1, NULL, 0, NULL, 0), 0);
	assert_int_equal(efd_count(fds[1]), 0);
	assert_true(pba_bit(1));
	assert_int_equal(set_irqs(VFU_IRQ_SET_DATA_NONE | VFU_IRQ_SET_ACTION_UNMASK, 2, 1, 1, NULL, 0, NULL, 0), 0);
	assert_int_equal(efd_count(fds[1]), 1);
	assert_false(pba_bit(1));

	/* The function mask in the MSI-X control word does the same for every vector. */
	uint32_t msix = vfc_read32(&cl, CFG, 0x90);
	vfc_write32(&cl, CFG, 0x90, msix | 0xc0000000u, false); /* enable + function mask */
	assert_int_equal(set_irqs(TRIG, 2, 0, 1, NULL, 0, NULL, 0), 0);
	assert_int_equal(efd_count(fds[0]), 0);
	assert_true(pba_bit(0));
	vfc_write32(&cl, CFG, 0x90, (msix | 0x80000000u) & ~0x40000000u, false);
	assert_int_equal(efd_count(fds[0]), 1);
	assert_false(pba_bit(0));

	/* A vector without an eventfd stays pending until it gets one. */
	assert_int_equal(set_irqs(TRIG, 2, 7, 1, NULL, 0, NULL, 0), 0);
	assert_true(pba_bit(7));
	int fd7 = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	assert_int_equal(set_irqs(EFD, 2, 7, 1, NULL, 0, &fd7, 1), 0);
	assert_int_equal(efd_count(fd7), 1);
	assert_false(pba_bit(7));
	/*
	 * A vector raised twice in one batch of the server's loop (two posted triggers that arrive
	 * in one write) sends one message: at the batch's end, or, as here, before the next reply
	 * goes out (a completion does not pass an MSI raised before it). Without the gathering
	 * the eventfd would count two.
	 */
	{
		struct vfu_irq_set trig = { .argsz = sizeof(trig), .flags = TRIG, .index = 2, .start = 2, .count = 1 };
		uint8_t two[2 * (sizeof(struct vfu_hdr) + sizeof(trig))];
		struct pollfd pfd = { .fd = fds[2], .events = POLLIN };

		for (int i = 0; i < 2; i++) {
			struct vfu_hdr h = { .msg_id = (uint16_t)(0x7000 + i), .command = VFU_CMD_DEVICE_SET_IRQS,
					     .size = sizeof(h) + sizeof(trig), .flags = VFU_F_TYPE_COMMAND | VFU_F_NO_REPLY };

			memcpy(two + i * h.size, &h, sizeof(h));
			memcpy(two + i * h.size + sizeof(h), &trig, sizeof(trig));
		}
		assert_int_equal(vfc_send_raw(&cl, two, sizeof(two), NULL, 0), 0);
		assert_int_equal(vfc_read32(&cl, CFG, 0), 0x10021dd8);
		assert_int_equal(efd_count(fds[2]), 1);
		/* One posted trigger and no reply after it: the batch's end sends it. */
		assert_int_equal(vfc_send_raw(&cl, two, sizeof(two) / 2, NULL, 0), 0);
		assert_int_equal(poll(&pfd, 1, 10000), 1);
		assert_int_equal(efd_count(fds[2]), 1);
		/*
		 * A reset in the same batch takes back what was raised before it: no message, and no
		 * pending bit left for the reset device (bus mastering is off after it, so a raise
		 * kept past the reset would land in the PBA).
		 */
		struct vfu_hdr rst = { .msg_id = 0x7002, .command = VFU_CMD_DEVICE_RESET, .size = sizeof(rst),
				       .flags = VFU_F_TYPE_COMMAND | VFU_F_NO_REPLY };
		uint8_t trig_reset[sizeof(two) / 2 + sizeof(rst)];

		memcpy(trig_reset, two, sizeof(two) / 2);
		memcpy(trig_reset + sizeof(two) / 2, &rst, sizeof(rst));
		assert_int_equal(vfc_send_raw(&cl, trig_reset, sizeof(trig_reset), NULL, 0), 0);
		assert_false(pba_bit(2));
		assert_int_equal(efd_count(fds[2]), 0);
		vfc_write32(&cl, CFG, 0x04, 0x0006, false); /* bus mastering back on for the rest */
	}
	/* The PBA ignores writes. */
	vfc_write32(&cl, BAR0, MSIX_PBA, 0xffffffff, false);
	assert_int_equal(vfc_read32(&cl, BAR0, MSIX_PBA), 0);

	/* De-assign (no fds), then count 0 with DATA_NONE turns the index off. */
	assert_int_equal(set_irqs(EFD, 2, 0, 1, NULL, 0, NULL, 0), 0);
	assert_int_equal(set_irqs(TRIG, 2, 0, 1, NULL, 0, NULL, 0), 0);
	assert_int_equal(efd_count(fds[0]), 0);
	assert_int_equal(set_irqs(TRIG, 2, 0, 0, NULL, 0, NULL, 0), 0);
	assert_int_equal(set_irqs(TRIG, 2, 2, 1, NULL, 0, NULL, 0), 0);
	assert_int_equal(efd_count(fds[2]), 0);
	/* ERR and REQ take one eventfd each. */
	assert_int_equal(set_irqs(EFD, 3, 0, 1, NULL, 0, fds, 1), 0);
	assert_int_equal(set_irqs(EFD, 4, 0, 1, NULL, 0, fds + 1, 1), 0);
	assert_int_equal(set_irqs(TRIG, 4, 0, 1, NULL, 0, NULL, 0), 0);
	assert_int_equal(efd_count(fds[1]), 1);
	for (int i = 0; i < 3; i++)
		close(fds[i]);
	close(fd7);
	assert_int_equal(call_err(VFU_CMD_DEVICE_RESET, NULL, 0, NULL, 0), 0);
}

/* ---- DMA ---- */

static int dma_map(uint64_t iova, uint64_t size, uint64_t offset, uint32_t flags, const int *fd)
{
	struct vfu_dma_map m = { .argsz = sizeof(m), .flags = flags, .offset = offset, .iova = iova, .size = size };

	return (int)call_err(VFU_CMD_DMA_MAP, &m, sizeof(m), fd, fd ? 1 : 0);
}

static int dma_unmap(uint64_t iova, uint64_t size, uint32_t flags)
{
	struct vfu_dma_unmap u = { .argsz = sizeof(u), .flags = flags, .iova = iova, .size = size };

	return (int)call_err(VFU_CMD_DMA_UNMAP, &u, sizeof(u), NULL, 0);
}

static void test_dma_map(void **state)
{
	const uint32_t RW = VFU_DMA_READ | VFU_DMA_WRITE;
	int mem = memfd_create("guest", MFD_CLOEXEC);
	int pipefd[2];

	(void)state;
	assert_true(mem >= 0);
	assert_int_equal(ftruncate(mem, 4 << 20), 0);
	assert_int_equal(pipe(pipefd), 0);

	assert_int_equal(dma_map(0x100000, 1 << 20, 0, RW, &mem), 0);
	assert_int_equal(dma_map(0x200000, 1 << 20, 1 << 20, VFU_DMA_READ, &mem), 0);
	/* Overlaps, in every position. */
	assert_int_equal(dma_map(0x100000, 1 << 20, 0, RW, &mem), EEXIST);
	assert_int_equal(dma_map(0x0ff000, 0x2000, 0, RW, &mem), EEXIST);
	assert_int_equal(dma_map(0x1ff000, 0x2000, 0, RW, &mem), EEXIST);
	assert_int_equal(dma_map(0x000000, 0x400000, 0, RW, &mem), EEXIST);
	/* Unaligned, empty, wrapping, no direction, unknown flags, two fds, an fd that cannot be mapped. */
	assert_int_equal(dma_map(0x300800, 0x1000, 0, RW, &mem), EINVAL);
	assert_int_equal(dma_map(0x300000, 0x800, 0, RW, &mem), EINVAL);
	assert_int_equal(dma_map(0x300000, 0x1000, 0x10, RW, &mem), EINVAL);
	assert_int_equal(dma_map(0x300000, 0, 0, RW, &mem), EINVAL);
	assert_int_equal(dma_map(0xfffffffffffff000ull, 0x2000, 0, RW, &mem), EINVAL);
	assert_int_equal(dma_map(0x300000, 0x1000, 0, 0, &mem), EINVAL);
	assert_int_equal(dma_map(0x300000, 0x1000, 0, 0x80 | RW, &mem), EINVAL);
	int two[2] = { mem, mem };
	struct vfu_dma_map m = { .argsz = sizeof(m), .flags = RW, .iova = 0x300000, .size = 0x1000 };
	assert_int_equal(call_err(VFU_CMD_DMA_MAP, &m, sizeof(m), two, 2), EINVAL);
	assert_int_equal(dma_map(0x300000, 0x1000, 0, RW, &pipefd[0]), EINVAL);
	/* Memory the file does not have is refused: the device would fault on it. */
	assert_int_equal(dma_map(0x400000, 0x1000, 1ull << 40, RW, &mem), EINVAL);
	assert_int_equal(dma_map(0x400000, 8 << 20, 0, RW, &mem), EINVAL);          /* file is 4 MiB */
	assert_int_equal(dma_map(0x400000, 0x2000, (4 << 20) - 0x1000, RW, &mem), EINVAL);
	int devnull = open("/dev/null", O_RDWR);
	assert_int_equal(dma_map(0x400000, 0x1000, 0, RW, &devnull), EINVAL);       /* not a file */
	close(devnull);
	/* Without an fd: accepted (ROM and the like), unreachable for the device. */
	assert_int_equal(dma_map(0xc0000, 0x10000, 0, VFU_DMA_READ, NULL), 0);
	m.argsz = 8;
	assert_int_equal(call_err(VFU_CMD_DMA_MAP, &m, sizeof(m), NULL, 0), EINVAL);

	/* Unmap must match a mapping exactly. */
	assert_int_equal(dma_unmap(0x100000, 0x1000, 0), ENOENT);
	assert_int_equal(dma_unmap(0x180000, 1 << 20, 0), ENOENT);
	assert_int_equal(dma_unmap(0x100000, 1 << 20, 0), 0);
	assert_int_equal(dma_unmap(0x100000, 1 << 20, 0), ENOENT);
	assert_int_equal(dma_unmap(0, 0, 1), ENOTSUP);        /* dirty bitmaps */
	assert_int_equal(dma_unmap(0x1000, 0, 2), EINVAL);     /* ALL with a range */
	assert_int_equal(dma_unmap(0, 0, 2), 0);               /* ALL */
	assert_int_equal(dma_unmap(0x200000, 1 << 20, 0), ENOENT);
	/* And the space is free again. */
	assert_int_equal(dma_map(0x100000, 2 << 20, 0, RW, &mem), 0);
	close(mem);
	close(pipefd[0]);
	close(pipefd[1]);
}

/*
 * The server reads ahead (up to 64 KiB a recvmsg): messages sent back to back, without waiting
 * for replies, are all handled, in order, each with its own descriptors. Three DMA_MAPs in a row:
 * the first with a pipe (which cannot be mapped: EINVAL), the second with no descriptor (accepted
 * as unreachable memory), the third with the memfd; a descriptor given to the wrong message would
 * turn the answers around. Posted writes between them land. Then a message larger than the
 * read-ahead buffer (a 100 KiB REGION_WRITE past the BAR) is read whole and answered with its
 * error, and the connection goes on.
 */
static void test_read_ahead(void **state)
{
	const uint32_t RW = VFU_DMA_READ | VFU_DMA_WRITE;
	struct vfu_dma_map a = { .argsz = sizeof(a), .flags = RW, .iova = 0x600000, .size = 0x1000 };
	struct vfu_dma_map b = { .argsz = sizeof(b), .flags = VFU_DMA_READ, .iova = 0x700000, .size = 0x1000 };
	struct vfu_dma_map c = { .argsz = sizeof(c), .flags = RW, .iova = 0x800000, .size = 0x1000 };
	uint8_t w1[20] = { 0 }, w2[20] = { 0 }, back[8], reply[64];
	struct vfu_region_rw rw = { .offset = DEVCMD + 0x10, .region = BAR0, .count = 4 };
	int mem = memfd_create("guest", MFD_CLOEXEC), pipefd[2], ids[3];
	const uint32_t big_len = 100 * 1024;
	uint8_t *big = calloc(1, sizeof(rw) + big_len);
	struct vfu_hdr h;
	size_t len;

	(void)state;
	assert_true(mem >= 0 && big != NULL);
	assert_int_equal(ftruncate(mem, 1 << 20), 0);
	assert_int_equal(pipe(pipefd), 0);
	memcpy(w1, &rw, sizeof(rw));
	w1[16] = 0x11;
	rw.offset = DEVCMD + 0x14;
	memcpy(w2, &rw, sizeof(rw));
	w2[16] = 0x22;
	assert_true(vfc_send(&cl, VFU_CMD_REGION_WRITE, VFU_F_NO_REPLY, w1, sizeof(w1), NULL, 0) > 0);
	ids[0] = vfc_send(&cl, VFU_CMD_DMA_MAP, 0, &a, sizeof(a), &pipefd[0], 1);
	ids[1] = vfc_send(&cl, VFU_CMD_DMA_MAP, 0, &b, sizeof(b), NULL, 0);
	assert_true(vfc_send(&cl, VFU_CMD_REGION_WRITE, VFU_F_NO_REPLY, w2, sizeof(w2), NULL, 0) > 0);
	ids[2] = vfc_send(&cl, VFU_CMD_DMA_MAP, 0, &c, sizeof(c), &mem, 1);
	for (int i = 0; i < 3; i++) {
		assert_true(ids[i] > 0);
		assert_int_equal(vfc_recv(&cl, &h, reply, sizeof(reply), &len), 0);
		assert_int_equal(h.msg_id, (uint16_t)ids[i]);
		assert_int_equal(h.command, VFU_CMD_DMA_MAP);
		if (i == 0) {
			assert_true(h.flags & VFU_F_ERROR);
			assert_int_equal(h.error_no, EINVAL);
		} else {
			assert_false(h.flags & VFU_F_ERROR);
		}
	}
	assert_int_equal(vfc_read(&cl, BAR0, DEVCMD + 0x10, back, 8), 0);
	assert_int_equal(back[0], 0x11);
	assert_int_equal(back[4], 0x22);
	/* The memfd mapping is the one that took the descriptor: it unmaps; the pipe's was never made. */
	assert_int_equal(dma_unmap(0x800000, 0x1000, 0), 0);
	assert_int_equal(dma_unmap(0x700000, 0x1000, 0), 0);
	assert_int_equal(dma_unmap(0x600000, 0x1000, 0), ENOENT);

	/* Larger than the read-ahead buffer: read whole, refused in the protocol's terms. */
	rw.offset = 0x20000000;
	rw.count = big_len;
	memcpy(big, &rw, sizeof(rw));
	ids[0] = vfc_send(&cl, VFU_CMD_REGION_WRITE, 0, big, sizeof(rw) + big_len, NULL, 0);
	assert_true(ids[0] > 0);
	assert_int_equal(vfc_recv(&cl, &h, reply, sizeof(reply), &len), 0);
	assert_int_equal(h.msg_id, (uint16_t)ids[0]);
	assert_true(h.flags & VFU_F_ERROR);
	assert_int_equal(vfc_read32(&cl, VFU_PCI_CONFIG_REGION, 0), 0x10021dd8);
	free(big);
	close(mem);
	close(pipefd[0]);
	close(pipefd[1]);
}

/* ---- WRITE_MULTI, unknown commands, odd flags ---- */

static void test_write_multi(void **state)
{
	uint8_t msg[8 + 3 * sizeof(struct vfu_write_one)];
	struct vfu_write_multi wm = { .wr_cnt = 3 };
	struct vfu_write_one w[3] = {
		{ .offset = DEVCMD + 8, .region = BAR0, .count = 8, .data = { 1, 2 } }, /* IDENTIFY v2 */
		{ .offset = 0x20000000, .region = BAR0, .count = 4 },                 /* out of range */
		{ .offset = DEVCMD + 0x10, .region = BAR0, .count = 4, .data = { 0xaa } },
	};
	uint8_t back[16];

	(void)state;
	memcpy(msg, &wm, 8);
	memcpy(msg + 8, w, sizeof(w));
	assert_true(vfc_send(&cl, VFU_CMD_REGION_WRITE_MULTI, VFU_F_NO_REPLY, msg, sizeof(msg), NULL, 0) > 0);
	assert_int_equal(vfc_read(&cl, BAR0, DEVCMD + 8, back, 16), 0);
	assert_int_equal(back[0], 1);
	assert_int_equal(back[1], 2);
	assert_int_equal(back[8], 0xaa);
	/* Malformed batches get an error when a reply is wanted. */
	wm.wr_cnt = 201;
	memcpy(msg, &wm, 8);
	assert_int_equal(call_err(VFU_CMD_REGION_WRITE_MULTI, msg, sizeof(msg), NULL, 0), EINVAL);
	wm.wr_cnt = 2;
	memcpy(msg, &wm, 8);
	assert_int_equal(call_err(VFU_CMD_REGION_WRITE_MULTI, msg, sizeof(msg), NULL, 0), EINVAL);
	wm.wr_cnt = 1;
	w[0].count = 9;
	memcpy(msg, &wm, 8);
	memcpy(msg + 8, w, sizeof(w[0]));
	assert_int_equal(call_err(VFU_CMD_REGION_WRITE_MULTI, msg, 8 + sizeof(w[0]), NULL, 0), EINVAL);
}

static void test_unknown_commands(void **state)
{
	uint8_t junk[64] = { 0 };
	struct vfu_hdr h;
	size_t rlen;
	uint8_t rep[64];

	(void)state;
	assert_int_equal(call_err(VFU_CMD_DEVICE_GET_REGION_IO_FDS, junk, sizeof(junk), NULL, 0), ENOTSUP);
	assert_int_equal(call_err(VFU_CMD_DMA_READ, junk, sizeof(junk), NULL, 0), ENOTSUP);
	assert_int_equal(call_err(VFU_CMD_DEVICE_FEATURE, junk, sizeof(junk), NULL, 0), ENOTSUP);
	assert_int_equal(call_err(14, junk, sizeof(junk), NULL, 0), ENOTSUP);
	assert_int_equal(call_err(0xffff, junk, sizeof(junk), NULL, 0), ENOTSUP);
	/* A message that claims to be a reply. */
	int id = vfc_send(&cl, VFU_CMD_DEVICE_GET_INFO, VFU_F_TYPE_REPLY, junk, 16, NULL, 0);
	assert_true(id > 0);
	assert_int_equal(vfc_recv(&cl, &h, rep, sizeof(rep), &rlen), 0);
	assert_true(h.flags & VFU_F_ERROR);
	assert_int_equal(h.error_no, EINVAL);
	/* Descriptors sent with a command that takes none are closed, and the command still answers. */
	int efd = eventfd(0, EFD_CLOEXEC);
	struct vfu_device_info in = { .argsz = 16 };
	assert_int_equal(call_err(VFU_CMD_DEVICE_GET_INFO, &in, sizeof(in), &efd, 1), 0);
	close(efd);
	assert_int_equal(vfc_read32(&cl, CFG, 0), 0x10021dd8);
}

/* ---- framing abuse: each ends the connection, never the server ---- */

static void test_bad_sizes(void **state)
{
	struct vfu_hdr h = { .msg_id = 1, .command = VFU_CMD_DEVICE_GET_INFO };

	(void)state;
	/* Smaller than a header. */
	assert_int_equal(vfc_connect(&cl, srv.sock, 5000), 0);
	h.size = 8;
	assert_int_equal(vfc_send_raw(&cl, &h, sizeof(h), NULL, 0), 0);
	assert_true(vfc_closed_by_server(&cl, 5000));
	vfc_close(&cl);
	assert_serving();
	/* Far larger than any message. */
	assert_int_equal(vfc_connect(&cl, srv.sock, 5000), 0);
	h.size = 0xfffffff0u;
	assert_int_equal(vfc_send_raw(&cl, &h, sizeof(h), NULL, 0), 0);
	assert_true(vfc_closed_by_server(&cl, 5000));
	vfc_close(&cl);
	assert_serving();
}

static void test_vanish_mid_message(void **state)
{
	uint8_t part[40] = { 0 };
	struct vfu_hdr h = { .msg_id = 7, .command = VFU_CMD_REGION_WRITE, .size = 16 + 16 + 4096 };

	(void)state;
	/* Half a header. */
	assert_int_equal(vfc_connect(&cl, srv.sock, 5000), 0);
	assert_int_equal(vfc_negotiate(&cl), 0);
	assert_int_equal(vfc_send_raw(&cl, &h, 7, NULL, 0), 0);
	vfc_close(&cl);
	assert_serving();
	/* A header and part of its payload, with a descriptor attached. */
	assert_int_equal(vfc_connect(&cl, srv.sock, 5000), 0);
	assert_int_equal(vfc_negotiate(&cl), 0);
	memcpy(part, &h, sizeof(h));
	int efd = eventfd(0, EFD_CLOEXEC);
	assert_int_equal(vfc_send_raw(&cl, part, sizeof(part), &efd, 1), 0);
	close(efd);
	vfc_close(&cl);
	assert_serving();
	/* Gone right after mapping memory and assigning interrupts. */
	assert_int_equal(vfc_connect(&cl, srv.sock, 5000), 0);
	assert_int_equal(vfc_negotiate(&cl), 0);
	int mem = memfd_create("guest", MFD_CLOEXEC);
	assert_int_equal(ftruncate(mem, 1 << 20), 0);
	assert_int_equal(dma_map(0x100000, 1 << 20, 0, VFU_DMA_READ | VFU_DMA_WRITE, &mem), 0);
	close(mem);
	vfc_close(&cl);
	assert_serving();
}

static void test_too_many_fds(void **state)
{
	int many[20];

	(void)state;
	/* More descriptors than max_msg_fds: they cannot all be received, so the connection ends. */
	assert_int_equal(vfc_connect(&cl, srv.sock, 5000), 0);
	assert_int_equal(vfc_negotiate(&cl), 0);
	for (int i = 0; i < 20; i++)
		many[i] = eventfd(0, EFD_CLOEXEC);
	struct vfu_irq_set irq = { .argsz = sizeof(irq), .index = 2, .start = 0, .count = 20,
				   .flags = VFU_IRQ_SET_DATA_EVENTFD | VFU_IRQ_SET_ACTION_TRIGGER };
	assert_true(vfc_send(&cl, VFU_CMD_DEVICE_SET_IRQS, 0, &irq, sizeof(irq), many, 20) > 0);
	for (int i = 0; i < 20; i++)
		close(many[i]);
	assert_true(vfc_closed_by_server(&cl, 5000));
	vfc_close(&cl);
	assert_serving();
}

static void test_second_client(void **state)
{
	struct vfc second;

	(void)state;
	assert_int_equal(vfc_connect(&cl, srv.sock, 5000), 0);
	assert_int_equal(vfc_negotiate(&cl), 0);
	/* One client at a time: the second is closed at once. */
	assert_int_equal(vfc_connect(&second, srv.sock, 5000), 0);
	assert_true(vfc_closed_by_server(&second, 5000));
	vfc_close(&second);
	assert_int_equal(vfc_read32(&cl, CFG, 0), 0x10021dd8);
	/* When the first goes, the next one is served (a QEMU restart). */
	vfc_close(&cl);
	assert_serving();
}

/* ---- the Ethernet data path, against a server with the s3 endpoint on its segment ---- */

static int start_s3_server(void **state)
{
	(void)state;
	return spawn((const char *const[]){ "-b", "s3", NULL }); /* doorbells as by default: trapped */
}

static const uint8_t guest_mac[6] = { 0x02, 0x45, 0x52, 0x4e, 0x49, 0x43 };
static const uint8_t ep_mac[6] = { 0x02, 0x53, 0xc0, 0xa8, 0xc8, 0x01 };

static size_t arp_request(uint8_t *f)
{
	static const uint8_t hdr[8] = { 0, 1, 8, 0, 6, 4, 0, 1 };
	static const uint8_t sip[4] = { 192, 168, 200, 2 }, tip[4] = { 192, 168, 200, 1 };

	memset(f, 0xff, 6);
	memcpy(f + 6, guest_mac, 6);
	f[12] = 0x08;
	f[13] = 0x06;
	memcpy(f + 14, hdr, 8);
	memcpy(f + 22, guest_mac, 6);
	memcpy(f + 28, sip, 4);
	memset(f + 32, 0, 6);
	memcpy(f + 38, tip, 4);
	memset(f + 42, 0, 18);
	return 60;
}

static uint16_t csum(const uint8_t *p, size_t n)
{
	uint32_t s = 0;

	for (size_t i = 0; i + 1 < n; i += 2)
		s += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (n & 1)
		s += (uint32_t)(p[n - 1] << 8);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

/* Ethernet from the guest to the endpoint, IPv4 192.168.200.2 -> .1 for l4_len bytes of proto; the L4 header. */
static uint8_t *eth_ipv4(uint8_t *f, uint8_t proto, size_t l4_len)
{
	uint8_t *ip = f + 14;
	uint16_t c;

	memcpy(f, ep_mac, 6);
	memcpy(f + 6, guest_mac, 6);
	f[12] = 0x08;
	f[13] = 0x00;
	memset(ip, 0, 20);
	ip[0] = 0x45;
	ip[2] = (uint8_t)((20 + l4_len) >> 8);
	ip[3] = (uint8_t)(20 + l4_len);
	ip[8] = 64;
	ip[9] = proto;
	ip[12] = 192; ip[13] = 168; ip[14] = 200; ip[15] = 2;
	ip[16] = 192; ip[17] = 168; ip[18] = 200; ip[19] = 1;
	c = csum(ip, 20);
	ip[10] = (uint8_t)(c >> 8);
	ip[11] = (uint8_t)c;
	return ip + 20;
}

static size_t icmp_echo(uint8_t *f, uint16_t seq, size_t payload)
{
	uint8_t *icmp = eth_ipv4(f, 1, 8 + payload);
	uint16_t c;

	memset(icmp, 0, 8);
	icmp[0] = 8;
	icmp[6] = (uint8_t)(seq >> 8);
	icmp[7] = (uint8_t)seq;
	for (size_t i = 0; i < payload; i++)
		icmp[8 + i] = (uint8_t)(i * 3 + seq);
	c = csum(icmp, 8 + payload);
	icmp[2] = (uint8_t)(c >> 8);
	icmp[3] = (uint8_t)c;
	return 14 + 20 + 8 + payload;
}

/* A TCP segment without options from 192.168.200.2:40000 to the endpoint's S3 port (9000). */
static size_t tcp_segment(uint8_t *f, uint8_t flags, uint32_t seq, uint32_t ack)
{
	uint8_t pseudo[12 + 20], *tcp = eth_ipv4(f, 6, 20);
	uint16_t c;

	memset(tcp, 0, 20);
	tcp[0] = 40000 >> 8; tcp[1] = 40000 & 0xff;
	tcp[2] = 9000 >> 8; tcp[3] = 9000 & 0xff;
	for (int i = 0; i < 4; i++) {
		tcp[4 + i] = (uint8_t)(seq >> (24 - 8 * i));
		tcp[8 + i] = (uint8_t)(ack >> (24 - 8 * i));
	}
	tcp[12] = 5 << 4;
	tcp[13] = flags;
	tcp[14] = 0xff;
	tcp[15] = 0xff;
	memcpy(pseudo, f + 14 + 12, 8);
	pseudo[8] = 0;
	pseudo[9] = 6;
	pseudo[10] = 0;
	pseudo[11] = 20;
	memcpy(pseudo + 12, tcp, 20);
	c = csum(pseudo, sizeof(pseudo));
	tcp[16] = (uint8_t)(c >> 8);
	tcp[17] = (uint8_t)c;
	return 14 + 40;
}

static void test_eth_to_s3_endpoint(void **state)
{
	struct ionic_guest g;
	uint8_t f[2048], r[2048];
	int n;

	(void)state;
	assert_int_equal(ionic_guest_setup(&g, &cl), 0);
	assert_null(g.bar2.base); /* by default BAR2 is not offered for mapping: every doorbell traps */
	assert_int_equal(ionic_guest_queues_up(&g), 0);
	assert_int_equal(g.tx_slot, 32); /* each queue its own doorbell word (Q_INIT hw_type) */
	assert_int_equal(g.rx_slot, 16);
	/* ARP: the endpoint answers for 192.168.200.1 with 02:53:c0:a8:c8:01. */
	ionic_guest_tx(&g, f, arp_request(f));
	n = ionic_guest_rx(&g, r, sizeof(r), 5000);
	assert_true(n >= 42);
	assert_memory_equal(r, guest_mac, 6);
	assert_int_equal(r[12] << 8 | r[13], 0x0806);
	assert_int_equal(r[21], 2); /* reply */
	assert_memory_equal(r + 22, ep_mac, 6);
	/* ICMP echo, a few sizes, payload echoed. */
	for (uint16_t seq = 1; seq <= 3; seq++) {
		size_t len = icmp_echo(f, seq, seq * 400u);

		ionic_guest_tx(&g, f, len);
		n = ionic_guest_rx(&g, r, sizeof(r), 5000);
		if (n != (int)len)
			fail_msg("seq %u: got %d bytes, ethertype %02x%02x, want %zu", seq, n, r[12], r[13], len);
		assert_int_equal(r[34], 0); /* echo reply */
		assert_memory_equal(r + 42, f + 42, len - 42);
	}
	/* Garbage descriptors: an offload opcode, too many SG elements, memory that is not mapped. */
	uint8_t *d;
	uint64_t bad[3] = { (GUEST_TX_BUF << 12) | (3u << 4), (GUEST_TX_BUF << 12) | (15u << 8), 0x7fff0000ull << 12 };
	for (int i = 0; i < 3; i++) {
		uint64_t db;

		d = guest_ptr(&g, GUEST_TX_RING + g.tx_head * 16ull);
		memset(d, 0, 16);
		for (int e = 0; e < 16; e++) { /* SG elements that point nowhere */
			uint8_t *sg = guest_ptr(&g, GUEST_TX_SG + g.tx_head * 256ull + e * 16ull);
			uint64_t nowhere = 0x7fff00000000ull;

			memcpy(sg, &nowhere, 8);
			sg[8] = 100;
		}
		memcpy(d, &bad[i], 8);
		d[8] = 64;
		g.tx_head = (g.tx_head + 1) % GUEST_Q_DEPTH;
		db = g.tx_head;
		ionic_guest_db(&g, 0, g.tx_slot, db);
	}
	/* Each bad descriptor got a completion of its own with an error status, naming it. */
	uint32_t errors = 0;
	vfc_read32(&cl, CFG, 0); /* a round trip: the posted doorbells before it have been handled */
	for (uint32_t i = 0; i < GUEST_Q_DEPTH; i++) {
		const volatile uint8_t *c = guest_ptr(&g, GUEST_TX_CQ + i * 16ull);

		if ((c[15] & 0x80) && c[0] == 14) /* IONIC_RC_EINVAL */
			errors++;
	}
	assert_int_equal(errors, 3);
	/* ... and the path still works afterwards. */
	ionic_guest_tx(&g, f, icmp_echo(f, 9, 100));
	n = ionic_guest_rx(&g, r, sizeof(r), 5000);
	assert_int_equal(n, 14 + 20 + 8 + 100);
	ionic_guest_teardown(&g);
}

/* ---- mapped doorbell pages (a server with --mmap-doorbells) ---- */

#define BAR2_SIZE (64 * 4096)

/* GET_REGION_INFO with argsz; reply bytes into rep, the fd it carried (or -1) into *fd. The payload length. */
static size_t region_info_raw(uint32_t index, uint32_t argsz, uint8_t *rep, size_t cap, int *fd)
{
	struct vfu_region_info in = { .argsz = argsz, .index = index };
	unsigned n = 0;
	size_t rlen = 0;
	uint32_t err = 0;

	*fd = -1;
	assert_int_equal(vfc_call_fds(&cl, VFU_CMD_DEVICE_GET_REGION_INFO, &in, sizeof(in), NULL, 0, rep, cap, &rlen,
				      &err, fd, 1, &n), 0);
	assert_int_equal(err, 0);
	return rlen;
}

static void test_mmap_region_info(void **state)
{
	/* The full reply for BAR2, byte for byte (little-endian): the info, then the sparse-mmap capability. */
	static const uint8_t want[64] = {
		64, 0, 0, 0,                      /* argsz: info 32 + capability 16 + one area 16 */
		0x0f, 0, 0, 0,                    /* READ | WRITE | MMAP | CAPS */
		2, 0, 0, 0,                       /* index: BAR2 */
		32, 0, 0, 0,                      /* cap_offset: right after the info */
		0, 0, 4, 0, 0, 0, 0, 0,           /* size 256 KiB */
		0, 0, 0, 0, 0, 0, 0, 0,           /* offset of the region in the fd */
		1, 0, 1, 0, 0, 0, 0, 0,           /* VFIO_REGION_INFO_CAP_SPARSE_MMAP, version 1, last */
		1, 0, 0, 0, 0, 0, 0, 0,           /* one area, reserved */
		0, 0, 0, 0, 0, 0, 0, 0,           /* area offset 0 */
		0, 0, 4, 0, 0, 0, 0, 0,           /* area size: all 64 doorbell pages */
	};
	uint8_t rep[4096];
	struct vfu_region_info info;
	struct stat st;
	uint64_t *w;
	size_t len;
	int fd;

	(void)state;
	/* Every other region: no mapping, no fd. */
	for (uint32_t i = 0; i < 9; i++) {
		if (i == 2)
			continue;
		len = region_info_raw(i, 4096, rep, sizeof(rep), &fd);
		assert_int_equal(len, sizeof(info));
		memcpy(&info, rep, sizeof(info));
		assert_int_equal(info.flags & (VFU_REGION_FLAG_MMAP | VFU_REGION_FLAG_CAPS), 0);
		assert_int_equal(fd, -1);
	}
	/* argsz with room for the capability (exactly, and more): the whole reply and the fd. */
	for (uint32_t argsz = 64; argsz <= 4096; argsz += 4032) {
		len = region_info_raw(2, argsz, rep, sizeof(rep), &fd);
		assert_int_equal(len, sizeof(want));
		assert_memory_equal(rep, want, sizeof(want));
		assert_true(fd >= 0);
		close(fd);
	}
	/*
	 * Too small (QEMU's first ask is 32): the info alone with the argsz it needs, and neither
	 * the CAPS flag nor an fd (QEMU's vfio-user client refuses CAPS whose cap_offset lies
	 * outside the reply: the device would not attach).
	 */
	for (uint32_t argsz = 32; argsz <= 63; argsz += 31) {
		len = region_info_raw(2, argsz, rep, sizeof(rep), &fd);
		assert_int_equal(len, sizeof(info));
		memcpy(&info, rep, sizeof(info));
		assert_int_equal(info.argsz, 64);
		assert_int_equal(info.flags, 0x07);
		assert_int_equal(info.cap_offset, 0);
		assert_true(info.size == BAR2_SIZE);
		assert_int_equal(fd, -1);
	}
	/* The fd: 256 KiB, sealed against resizing (a client cannot pull pages from under the server), all words empty. */
	region_info_raw(2, 64, rep, sizeof(rep), &fd);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_true(st.st_size == BAR2_SIZE);
	assert_int_equal(fcntl(fd, F_GET_SEALS) & (F_SEAL_SHRINK | F_SEAL_GROW), F_SEAL_SHRINK | F_SEAL_GROW);
	assert_int_not_equal(ftruncate(fd, 4096), 0);
	w = mmap(NULL, BAR2_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(w != MAP_FAILED);
	for (size_t i = 0; i < BAR2_SIZE / 8; i++)
		if (w[i] != UINT64_MAX)
			fail_msg("doorbell word %zu is %#llx, not empty", i, (unsigned long long)w[i]);
	munmap(w, BAR2_SIZE);
	close(fd);
}

static void nop(struct ionic_guest *g, uint8_t comp[16])
{
	uint8_t cmd[64] = { 0 };

	ionic_guest_aq_post(g, cmd);
	assert_true(ionic_guest_wait_irq(g, 5000));
	assert_true(ionic_guest_aq_comp(g, comp));
	assert_int_equal(comp[0], 0);
	ionic_guest_irq_rearm(g, 1);
}

static void test_mmap_doorbells(void **state)
{
	struct ionic_guest g;
	volatile uint64_t *aq_word;
	uint8_t cmd[64] = { 0 }, comp[16];

	(void)state;
	assert_int_equal(ionic_guest_setup(&g, &cl), 0);
	assert_non_null(g.bar2.base);
	aq_word = (volatile uint64_t *)g.bar2.base; /* page 0, word 0: the admin queue */
	/* A doorbell stored only to the mapping: the device finds it, completes the command, fires the vector. */
	g.db_wait = false;
	for (int i = 0; i < 2 * GUEST_AQ_DEPTH; i++) {
		uint32_t idx = g.aq_head;

		nop(&g, comp);
		assert_int_equal(comp[2] | comp[3] << 8, idx);
	}
	assert_true(*aq_word == UINT64_MAX); /* taken: the word is empty again */
	/* A write through REGION_WRITE still rings (a client need not use the mapping). */
	memcpy(guest_ptr(&g, GUEST_AQ_RING + g.aq_head * 64ull), cmd, 64);
	g.aq_head = (g.aq_head + 1) % GUEST_AQ_DEPTH;
	uint64_t db = g.aq_head;
	assert_int_equal(vfc_write(&cl, BAR2, 0, &db, 8, false), 0);
	assert_true(ionic_guest_wait_irq(&g, 5000));
	assert_true(ionic_guest_aq_comp(&g, comp));
	ionic_guest_irq_rearm(&g, 1);
	/* Garbage in every word the device looks at, and beyond: guest errors, never a crash. */
	for (size_t i = 0; i < BAR2_SIZE / 8; i += 3)
		__atomic_store_n((uint64_t *)g.bar2.base + i, 0x00ffffff0007ffffull ^ i, __ATOMIC_RELEASE);
	assert_int_equal(vfc_read32(&cl, CFG, 0), 0x10021dd8); /* a round trip: the server took what it looks at */
	/* Page 0's queue words; no RDMA queue exists, so the user pages are not looked at. */
	for (uint32_t word = 0; word < 48; word++)
		if (word == 0 || (word >= 4 && word <= 7) || word >= 16)
			assert_true(((uint64_t *)g.bar2.base)[word] == UINT64_MAX);
	while (ionic_guest_wait_irq(&g, 100))
		;
	assert_false(ionic_guest_aq_comp(&g, comp));

	/*
	 * DEVICE_RESET (a guest reboot): QEMU keeps its mapping, so the same pages
	 * go on working once the driver has set the device up again.
	 */
	assert_int_equal(call_err(VFU_CMD_DEVICE_RESET, NULL, 0, NULL, 0), 0);
	assert_int_equal(ionic_guest_init_device(&g), 0);
	g.db_wait = true;
	nop(&g, comp);
	assert_int_equal(comp[2] | comp[3] << 8, 0);
	ionic_guest_teardown(&g);
}

static void test_mmap_reconnect(void **state)
{
	struct ionic_guest a, b;
	struct vfc cb;
	uint8_t cmd[64] = { 0 }, comp[16];
	volatile uint64_t *old;

	(void)state;
	/* Client A maps the pages, works, and goes (its mapping of them stays, as a dead QEMU's might). */
	assert_int_equal(ionic_guest_setup(&a, &cl), 0);
	assert_non_null(a.bar2.base);
	nop(&a, comp);
	vfc_close(&cl);
	old = (volatile uint64_t *)a.bar2.base;

	/* Client B gets fresh pages: every word empty. */
	assert_int_equal(vfc_connect(&cb, srv.sock, 5000), 0);
	assert_int_equal(vfc_negotiate(&cb), 0);
	assert_int_equal(ionic_guest_setup(&b, &cb), 0);
	assert_non_null(b.bar2.base);
	for (size_t i = 0; i < BAR2_SIZE / 8; i++)
		assert_true(((uint64_t *)b.bar2.base)[i] == UINT64_MAX);
	/* A command waits in B's ring, not rung. A's old pages ring its doorbell: nothing happens to B. */
	memcpy(guest_ptr(&b, GUEST_AQ_RING), cmd, 64);
	__atomic_store_n(old, 1, __ATOMIC_RELEASE);
	usleep(50000);
	assert_int_equal(vfc_read32(&cb, CFG, 0), 0x10021dd8);
	assert_false(ionic_guest_wait_irq(&b, 100));
	assert_false(ionic_guest_aq_comp(&b, comp));
	assert_true(*old == 1); /* nobody looks at those pages any more */
	/* B's own doorbell runs it. */
	b.aq_head = 0;
	nop(&b, comp);
	ionic_guest_teardown(&b);
	vfc_close(&cb);
	ionic_guest_teardown(&a);
	/* The setup/teardown pair of this test closes cl once more: give it something to close. */
	assert_int_equal(vfc_connect(&cl, srv.sock, 5000), 0);
}

/* ---- bus mastering: the command register's Bus Master Enable ---- */

static void set_bus_master(bool on)
{
	vfc_write32(&cl, CFG, 0x04, on ? 0x0006 : 0x0002, false); /* memory space stays on */
}

/* Every posted doorbell sent before this has reached the device; then a moment for anything it would do. */
static void settle(void)
{
	assert_int_equal(vfc_read32(&cl, CFG, 0), 0x10021dd8);
	usleep(50000);
}

static void test_bus_master(void **state)
{
	struct ionic_guest g;
	uint8_t cmd[64] = { 0 }, comp[16], cq[GUEST_AQ_DEPTH * 16];
	uint8_t port_info[0x1000], junk[0x1000];
	uint32_t i0, i1;

	(void)state;
	assert_int_equal(ionic_guest_setup(&g, &cl), 0); /* sets Bus Master Enable, as pci_set_master() */
	assert_int_equal(vfc_read32(&cl, CFG, 0x04) & 0x4, 0x4);
	nop(&g, comp);

	/*
	 * Off: the doorbells are taken but nothing is fetched or written. Two
	 * commands, two doorbells of the same ring: the device keeps the later
	 * index, which covers both.
	 */
	set_bus_master(false);
	memcpy(cq, guest_ptr(&g, GUEST_AQ_CQ), sizeof(cq));
	i0 = ionic_guest_aq_post(&g, cmd);
	i1 = ionic_guest_aq_post(&g, cmd);
	settle();
	assert_memory_equal(guest_ptr(&g, GUEST_AQ_CQ), cq, sizeof(cq));
	assert_false(ionic_guest_wait_irq(&g, 100));
	/* Registers keep working: dev_cmd answers, but PORT_INIT's port_info stays as the guest left it. */
	memset(junk, 0xee, sizeof(junk));
	memcpy(guest_ptr(&g, GUEST_PORT_INFO), junk, sizeof(junk));
	memset(cmd, 0, sizeof(cmd));
	cmd[0] = 11; /* PORT_INIT, index 0 */
	uint64_t pa = GUEST_PORT_INFO;
	memcpy(cmd + 8, &pa, 8);
	assert_int_equal(ionic_guest_dev_cmd(&g, cmd, comp), 0);
	assert_int_equal(comp[0], 0);
	assert_memory_equal(guest_ptr(&g, GUEST_PORT_INFO), junk, sizeof(junk));
	memset(cmd, 0, sizeof(cmd));

	/* On again: both commands run, in order, and the vector fires. */
	set_bus_master(true);
	assert_true(ionic_guest_wait_irq(&g, 5000));
	assert_true(ionic_guest_aq_comp(&g, comp));
	assert_int_equal(comp[0], 0);
	assert_int_equal(comp[2] | comp[3] << 8, i0);
	assert_true(ionic_guest_aq_comp(&g, comp));
	assert_int_equal(comp[0], 0);
	assert_int_equal(comp[2] | comp[3] << 8, i1);
	assert_false(ionic_guest_aq_comp(&g, comp));
	ionic_guest_irq_rearm(&g, 2);
	/* Nothing was written for the dev_cmd afterwards either. */
	memcpy(port_info, guest_ptr(&g, GUEST_PORT_INFO), sizeof(port_info));
	assert_memory_equal(port_info, junk, sizeof(junk));

	/*
	 * An interrupt the device raises while the bit is clear waits in the
	 * PBA: masked at the device, a NOP completes (credit outstanding); with
	 * bus mastering off the unmask raises it, and it goes out only when the
	 * bit is set again.
	 */
	vfc_write32(&cl, BAR0, 0x2000 + 4, 1, false);
	ionic_guest_aq_post(&g, cmd);
	for (int t = 0; t < 500 && !ionic_guest_aq_comp(&g, comp); t++)
		usleep(1000);
	assert_int_equal(comp[0], 0);
	assert_false(ionic_guest_wait_irq(&g, 100));
	set_bus_master(false);
	vfc_write32(&cl, BAR0, 0x2000 + 4, 0, false);
	assert_false(ionic_guest_wait_irq(&g, 100));
	assert_true(pba_bit(0));
	set_bus_master(true);
	assert_true(ionic_guest_wait_irq(&g, 5000));
	assert_false(pba_bit(0));
	ionic_guest_irq_rearm(&g, 1);

	/* A reset while doorbells wait drops them with the queues they were for. */
	set_bus_master(false);
	memcpy(cq, guest_ptr(&g, GUEST_AQ_CQ), sizeof(cq));
	ionic_guest_aq_post(&g, cmd);
	cmd[0] = 3; /* RESET, by dev_cmd: it needs no bus mastering */
	assert_int_equal(ionic_guest_dev_cmd(&g, cmd, comp), 0);
	assert_int_equal(comp[0], 0);
	memset(cmd, 0, sizeof(cmd));
	set_bus_master(true);
	settle();
	assert_memory_equal(guest_ptr(&g, GUEST_AQ_CQ), cq, sizeof(cq));
	assert_false(ionic_guest_wait_irq(&g, 100));
	/* The driver sets the device up again and it works. */
	assert_int_equal(ionic_guest_init_device(&g), 0);
	nop(&g, comp);
	assert_int_equal(comp[2] | comp[3] << 8, 0);

	/* DEVICE_RESET clears the bit: a doorbell rung before the driver sets it again waits. */
	assert_int_equal(call_err(VFU_CMD_DEVICE_RESET, NULL, 0, NULL, 0), 0);
	assert_int_equal(vfc_read32(&cl, CFG, 0x04) & 0x4, 0);
	ionic_guest_teardown(&g);
}

static void test_eth_bus_master(void **state)
{
	struct ionic_guest g;
	uint8_t f[2048], r[2048], txcq[GUEST_Q_DEPTH * 16], rxcq[GUEST_Q_DEPTH * 16];
	static uint8_t rxbuf[GUEST_Q_DEPTH * GUEST_BUF_SIZE];
	int n;

	(void)state;
	assert_int_equal(ionic_guest_setup(&g, &cl), 0);
	assert_int_equal(ionic_guest_queues_up(&g), 0);
	ionic_guest_tx(&g, f, arp_request(f)); /* the endpoint learns us */
	assert_true(ionic_guest_rx(&g, r, sizeof(r), 5000) >= 42);

	/* TX while off: the frame stays in guest memory, no completion, so nothing comes back either. */
	set_bus_master(false);
	memcpy(txcq, guest_ptr(&g, GUEST_TX_CQ), sizeof(txcq));
	memcpy(rxcq, guest_ptr(&g, GUEST_RX_CQ), sizeof(rxcq));
	size_t len = icmp_echo(f, 7, 200);
	ionic_guest_tx(&g, f, len);
	settle();
	assert_memory_equal(guest_ptr(&g, GUEST_TX_CQ), txcq, sizeof(txcq));
	assert_memory_equal(guest_ptr(&g, GUEST_RX_CQ), rxcq, sizeof(rxcq));
	/* On: the frame goes, its completion is written, and the reply arrives. */
	set_bus_master(true);
	n = ionic_guest_rx(&g, r, sizeof(r), 5000);
	assert_int_equal(n, (int)len);
	assert_int_equal(r[34], 0); /* echo reply */
	assert_memory_equal(r + 42, f + 42, len - 42);
	assert_memory_not_equal(guest_ptr(&g, GUEST_TX_CQ), txcq, sizeof(txcq));

	/*
	 * RX while off: a SYN to the S3 port is answered; the endpoint then
	 * retransmits its SYN-ACK (after 200 ms, then 400 ms more) while the bit
	 * is clear: those frames are lost, no buffer is taken, nothing is written.
	 */
	ionic_guest_tx(&g, f, tcp_segment(f, 0x02, 1000, 0));
	n = ionic_guest_rx(&g, r, sizeof(r), 5000);
	assert_true(n >= 54);
	assert_int_equal(r[47], 0x12); /* SYN-ACK */
	uint32_t isn = (uint32_t)r[38] << 24 | (uint32_t)r[39] << 16 | (uint32_t)r[40] << 8 | r[41];
	set_bus_master(false);
	memcpy(rxcq, guest_ptr(&g, GUEST_RX_CQ), sizeof(rxcq));
	memcpy(rxbuf, guest_ptr(&g, GUEST_RX_BUF), sizeof(rxbuf));
	usleep(1000000);
	assert_memory_equal(guest_ptr(&g, GUEST_RX_CQ), rxcq, sizeof(rxcq));
	assert_memory_equal(guest_ptr(&g, GUEST_RX_BUF), rxbuf, sizeof(rxbuf));
	/* On: the next retransmission lands in the next buffer, as the first would have. */
	set_bus_master(true);
	n = ionic_guest_rx(&g, r, sizeof(r), 5000);
	assert_true(n >= 54);
	assert_int_equal(r[47], 0x12);
	assert_int_equal((uint32_t)r[38] << 24 | (uint32_t)r[39] << 16 | (uint32_t)r[40] << 8 | r[41], isn);
	ionic_guest_tx(&g, f, tcp_segment(f, 0x04, 1001, 0)); /* RST: leave nothing half-open */
	settle();
	ionic_guest_teardown(&g);
}

static void test_mmap_bus_master(void **state)
{
	struct ionic_guest g;
	volatile uint64_t *aq_word;
	uint8_t cmd[64] = { 0 }, comp[16], cq[GUEST_AQ_DEPTH * 16];
	uint32_t idx;

	(void)state;
	assert_int_equal(ionic_guest_setup(&g, &cl), 0);
	assert_non_null(g.bar2.base);
	aq_word = (volatile uint64_t *)g.bar2.base;
	g.db_wait = false;
	nop(&g, comp);
	/* Off: the store stays in its word, untaken; the completion ring is untouched. */
	set_bus_master(false);
	memcpy(cq, guest_ptr(&g, GUEST_AQ_CQ), sizeof(cq));
	idx = ionic_guest_aq_post(&g, cmd);
	settle();
	assert_true(*aq_word == g.aq_head);
	assert_memory_equal(guest_ptr(&g, GUEST_AQ_CQ), cq, sizeof(cq));
	assert_false(ionic_guest_wait_irq(&g, 100));
	/* On: the device takes the word and runs the command. */
	set_bus_master(true);
	assert_true(ionic_guest_wait_irq(&g, 5000));
	assert_true(*aq_word == UINT64_MAX);
	assert_true(ionic_guest_aq_comp(&g, comp));
	assert_int_equal(comp[0], 0);
	assert_int_equal(comp[2] | comp[3] << 8, idx);
	ionic_guest_irq_rearm(&g, 1);
	ionic_guest_teardown(&g);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_version),
		cmocka_unit_test_setup_teardown(test_device_info, vfc_fixture_open, vfc_fixture_close),
		cmocka_unit_test_setup_teardown(test_region_info, vfc_fixture_open, vfc_fixture_close),
		cmocka_unit_test_setup_teardown(test_irq_info, vfc_fixture_open, vfc_fixture_close),
		cmocka_unit_test_setup_teardown(test_config_space, vfc_fixture_open, vfc_fixture_close),
		cmocka_unit_test_setup_teardown(test_config_writes, vfc_fixture_open, vfc_fixture_close),
		cmocka_unit_test_setup_teardown(test_region_bounds, vfc_fixture_open, vfc_fixture_close),
		cmocka_unit_test_setup_teardown(test_ionic_dev_info_and_cmd, vfc_fixture_open, vfc_fixture_close),
		cmocka_unit_test_setup_teardown(test_adminq, vfc_fixture_open, vfc_fixture_close),
		cmocka_unit_test_setup_teardown(test_sealed_memory, vfc_fixture_open, vfc_fixture_close),
		cmocka_unit_test_setup_teardown(test_irqs, vfc_fixture_open, vfc_fixture_close),
		cmocka_unit_test_setup_teardown(test_dma_map, vfc_fixture_open, vfc_fixture_close),
		cmocka_unit_test_setup_teardown(test_read_ahead, vfc_fixture_open, vfc_fixture_close),
		cmocka_unit_test_setup_teardown(test_write_multi, vfc_fixture_open, vfc_fixture_close),
		cmocka_unit_test_setup_teardown(test_unknown_commands, vfc_fixture_open, vfc_fixture_close),
		cmocka_unit_test(test_bad_sizes),
		cmocka_unit_test(test_vanish_mid_message),
		cmocka_unit_test(test_too_many_fds),
		cmocka_unit_test(test_second_client),
		cmocka_unit_test_setup_teardown(test_bus_master, vfc_fixture_open, vfc_fixture_close),
	};

	binary = vfc_test_binary(argc, argv);
	if (!binary)
		return 2;
	vfc_fixture_use(&cl, &srv);
	const struct CMUnitTest eth_tests[] = {
		cmocka_unit_test_setup_teardown(test_eth_to_s3_endpoint, vfc_fixture_open, vfc_fixture_close),
		cmocka_unit_test_setup_teardown(test_eth_bus_master, vfc_fixture_open, vfc_fixture_close),
	};
	const struct CMUnitTest mmap_tests[] = {
		cmocka_unit_test_setup_teardown(test_mmap_region_info, vfc_fixture_open, vfc_fixture_close),
		cmocka_unit_test_setup_teardown(test_mmap_doorbells, vfc_fixture_open, vfc_fixture_close),
		cmocka_unit_test_setup_teardown(test_mmap_reconnect, vfc_fixture_open, vfc_fixture_close),
		cmocka_unit_test_setup_teardown(test_mmap_bus_master, vfc_fixture_open, vfc_fixture_close),
	};
	int failed;

	failed = cmocka_run_group_tests_name("vfio-user-ci", tests, start_server, stop_server);
	failed += cmocka_run_group_tests_name("vfio-user-ci-eth", eth_tests, start_s3_server, stop_server);
	failed += cmocka_run_group_tests_name("vfio-user-ci-mmap", mmap_tests, start_mmap_server, stop_server);
	return failed;
}
