/*
 * fuzz-rdma-admin: the RDMA admin queue's commands (CREATE/DESTROY/MODIFY/
 * QUERY of CQs, QPs, MRs and AHs, stats, DCQCN) and the queue-level
 * commands 50-53 of the Ethernet admin queue, against the device model
 * in-process (fuzz_guest.h).
 *
 * Each input starts from a fresh device as ionic_rdma's probe leaves it
 * (fg_rdma_up). Then operations:
 *   0 op:u8 len:u16 n:u8 payload[n]        an RDMA admin command (fg_rdma_admin)
 *   1 off:u16 len:u8 bytes                 guest memory: page lists, templates, query buffers
 *   2 page:u8 qtype:u8 qid:u32 ring:u8 index:u16   a doorbell (fg_doorbell)
 *   3 cmd[64]                              an Ethernet admin-queue command (RDMA_RESET_LIF, RDMA_CREATE_*)
 *   4                                      take the EQ's events and re-arm its vector
 */
#include <stdlib.h>

#include "fuzz.h"
#include "fuzz_guest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f = { data, size, 0 };
	struct fg_rdma r;
	uint8_t cmd[64], comp[16];
	uint32_t evt;

	if (fg_rdma_up(&r, fg_open()))
		abort();
	while (fz_more(&f)) {
		switch (fz_u8(&f) % 5) {
		case 0:
			fg_rdma_admin(&r, &f);
			break;
		case 1:
			fg_mem_write(&r.g, &f);
			break;
		case 2:
			fg_doorbell(&r.g, &f);
			break;
		case 3:
			fz_take(&f, cmd, sizeof(cmd));
			ionic_guest_aq_post(&r.g, cmd);
			while (ionic_guest_aq_comp(&r.g, comp))
				;
			break;
		case 4: {
			uint32_t n = 0;

			while (n < 4096 && rg_eq_poll(&r.g, &r.eq, &evt))
				n++;
			rg_eq_rearm(&r.g, &r.eq, n);
			break;
		}
		}
	}
	fg_rdma_down(&r);
	fg_close();
	return 0;
}
