/*
 * fuzz-ionic-tx: Ethernet TX descriptors (and received frames) against the
 * device model in-process (fuzz_guest.h).
 *
 * Each input starts from a fresh device with the admin queue up and TX 0 /
 * RX 0 initialised with SG rings, every RX buffer but one posted, both
 * enabled and the LIF receiving everything (ionic_guest_queues_up). Then:
 *   0 desc[16] nsge:u8 sge[16]*nsge   a TX descriptor at the producer slot and its SG row, doorbell
 *   1 off:u16 len:u8 bytes            guest memory (frame buffers, descriptors, SG rows)
 *   2 word:u8 val:u64                 a doorbell on the kernel's page (word mod 48)
 *   3 cmd[64]                         an admin command (Q_INIT/Q_CONTROL/RX_MODE ... to reshape the queues)
 *   4 len:u16 bytes                   a frame from the segment for the guest (RX)
 */
#include <stdlib.h>

#include "fuzz.h"
#include "fuzz_guest.h"
#include "ionic/ionic_if.h"

#define SG_ROW_V1 256

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f = { data, size, 0 };
	struct ionic_guest g;
	struct vfc *c = fg_open();
	uint8_t cmd[64], comp[16];

	if (ionic_guest_setup(&g, c) || ionic_guest_queues_up(&g))
		abort();
	while (fz_more(&f)) {
		switch (fz_u8(&f) % 5) {
		case 0: {
			uint32_t idx = g.tx_head;
			unsigned nsge = fz_u8(&f) % (SG_ROW_V1 / 16 + 1);
			uint64_t db;

			fz_take(&f, guest_ptr(&g, GUEST_TX_RING + idx * 16ull), 16);
			fz_take(&f, guest_ptr(&g, GUEST_TX_SG + idx * (uint64_t)SG_ROW_V1), nsge * 16u);
			g.tx_head = (idx + 1) % GUEST_Q_DEPTH;
			db = g.tx_head;
			ionic_guest_db(&g, 0, g.tx_slot, db); /* TX 0's doorbell word (its Q_INIT hw_type) */
			break;
		}
		case 1:
			fg_mem_write(&g, &f);
			break;
		case 2: {
			uint32_t word = fz_u8(&f) % 48; /* the kernel page's queue words: Ethernet 0-1, 16-47; RDMA 4-8 */
			uint64_t v = fz_u64(&f);

			vfc_write(c, 2, 8ull * word, &v, 8, true);
			break;
		}
		case 3:
			fz_take(&f, cmd, sizeof(cmd));
			ionic_guest_aq_post(&g, cmd);
			while (ionic_guest_aq_comp(&g, comp))
				;
			break;
		case 4: {
			size_t n = fz_u16(&f) % 16384, got;
			const uint8_t *p = fz_ptr(&f, n, &got);

			ionic_dev_rx_frame(fg_dev(), p, got);
			break;
		}
		}
	}
	ionic_guest_teardown(&g);
	fg_close();
	return 0;
}
