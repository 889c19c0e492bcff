/*
 * fuzz-ionic-cmd: the ionic command set through dev_cmd and through the
 * Ethernet admin queue, against the device model in-process (fuzz_guest.h).
 *
 * Each input starts from a fresh device that the guest helpers bring to
 * where the stock driver has it after probe (RESET, LIF_INIT, the admin
 * queue with 16 descriptors; ionic_guest_setup). Then operations:
 *   0 cmd[64]                  dev_cmd: write, ring, poll done, read the completion
 *   1 cmd[64]                  admin queue: post at the producer slot, ring, take completions
 *   2 off:u16 len:u8 bytes     guest memory at GUEST_IOVA + 64 * off (lif_info, rings, buffers)
 *   3 off:u16 val:u32          a BAR0 register write (dev_cmd, interrupt control)
 *   4 off:u32 val:u64          a BAR2 doorbell write
 *   5 off:u16 len:u8           a BAR0 read
 * Commands name guest addresses; the seeds use the layout of ionic_guest.h.
 */
#include <stdlib.h>

#include "fuzz.h"
#include "fuzz_guest.h"
#include "ionic/ionic_if.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f = { data, size, 0 };
	struct ionic_guest g;
	struct vfc *c = fg_open();
	uint8_t cmd[64], comp[16], buf[256];

	if (ionic_guest_setup(&g, c))
		abort(); /* the fresh device refused the driver's probe */
	while (fz_more(&f)) {
		switch (fz_u8(&f) % 6) {
		case 0:
			fz_take(&f, cmd, sizeof(cmd));
			ionic_guest_dev_cmd(&g, cmd, comp);
			break;
		case 1:
			fz_take(&f, cmd, sizeof(cmd));
			ionic_guest_aq_post(&g, cmd);
			while (ionic_guest_aq_comp(&g, comp))
				;
			break;
		case 2:
			fg_mem_write(&g, &f);
			break;
		case 3: {
			uint32_t off = fz_u16(&f) % IONIC_BAR0_MSIX_TABLE_OFFSET & ~3u;

			vfc_write32(c, 0, off, fz_u32(&f), true);
			break;
		}
		case 4: {
			uint32_t off = fz_u32(&f) % IONIC_BAR2_SIZE & ~7u;
			uint64_t v = fz_u64(&f);

			vfc_write(c, 2, off, &v, 8, true);
			break;
		}
		case 5: {
			uint32_t off = fz_u16(&f) % IONIC_BAR0_MSIX_TABLE_OFFSET;
			uint32_t n = fz_u8(&f);

			if (n > IONIC_BAR0_MSIX_TABLE_OFFSET - off)
				n = IONIC_BAR0_MSIX_TABLE_OFFSET - off;
			if (n)
				vfc_read(c, 0, off, buf, n);
			break;
		}
		}
	}
	ionic_guest_teardown(&g);
	fg_close();
	return 0;
}
