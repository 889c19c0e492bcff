/*
 * What the device benchmarks that drive a server over vfio-user share: a monotonic clock, the
 * server's CPU time, and the denominator every one of them reports beside its cases, a
 * REGION_READ round trip (the least a vfio-user message costs the server).
 */
#ifndef ERNIC_BENCH_BENCH_CLOCK_H
#define ERNIC_BENCH_BENCH_CLOCK_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>

#include "vfu_client.h"

static inline double bench_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Process pid's time on a CPU so far (every thread), in ns; 0 when it cannot be read. */
static inline uint64_t bench_cpu_ns(pid_t pid)
{
	char path[64];
	unsigned long long ns = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)pid);
	f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%llu", &ns) != 1)
			ns = 0;
		fclose(f);
	}
	return ns;
}

/*
 * REGION_READs of one config-space register for about seconds: prints the round trips per
 * second and the server's CPU per round trip, and adds a CSV row when csv is set.
 */
static inline void bench_region_read(struct vfc *cl, pid_t server, double seconds, FILE *csv)
{
	uint64_t n = 0, ns0 = bench_cpu_ns(server);
	double t0 = bench_now_s(), t, us;
	volatile uint32_t sink = 0;

	do {
		sink += vfc_read32(cl, VFU_PCI_CONFIG_REGION, 0);
		n++;
		t = bench_now_s();
	} while (t - t0 < seconds);
	(void)sink;
	us = (double)(bench_cpu_ns(server) - ns0) / 1e3 / (double)n;
	printf("  region-read round trip: %9.0f /s, server %6.2f us each\n", (double)n / (t - t0), us);
	if (csv)
		fprintf(csv, "region-read,%.0f,%.3f,\n", (double)n / (t - t0), us);
}

#endif
