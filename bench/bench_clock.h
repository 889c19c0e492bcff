/*
 * What the device benchmarks that drive a server over vfio-user share: a monotonic clock, the
 * server's CPU time, and the denominator every one of them reports beside its cases, a
 * REGION_READ round trip (the least a vfio-user message costs the server); and one posted
 * message answered by an interrupt, what a doorbell and its completion's signal cost at least.
 */
#ifndef ERNIC_BENCH_BENCH_CLOCK_H
#define ERNIC_BENCH_BENCH_CLOCK_H

#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "vfu_client.h"

static inline double bench_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * CPU time so far, in ns, of the process or thread whose /proc directory is dir ("/proc/PID" for
 * every thread of a process, "/proc/self/task/TID" for one thread): all of it (schedstat), and the
 * user-space part (stat's utime, in clock ticks). 0 when it cannot be read.
 */
static inline uint64_t bench_schedstat_ns(const char *dir)
{
	char path[96];
	unsigned long long ns = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/schedstat", dir);
	f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%llu", &ns) != 1)
			ns = 0;
		fclose(f);
	}
	return ns;
}

static inline uint64_t bench_utime_ns(const char *dir)
{
	char path[96], buf[1024], *p;
	unsigned long long ut = 0;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/stat", dir);
	f = fopen(path, "r");
	if (f == NULL)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');     /* after the command's name, which may hold spaces */
	if (p == NULL || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu", &ut) != 1)
		return 0;
	return (uint64_t)ut * (1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK));
}

/* Process pid's time on a CPU so far (every thread), in ns; 0 when it cannot be read. */
static inline uint64_t bench_cpu_ns(pid_t pid)
{
	char dir[32];

	snprintf(dir, sizeof(dir), "/proc/%d", (int)pid);
	return bench_schedstat_ns(dir);
}

/* memcpy of size bytes between two buffers of its own, again and again for about seconds: us per copy. */
static inline double bench_memcpy_us(size_t size, double seconds)
{
	uint8_t *a = malloc(size), *b = malloc(size);
	uint64_t n = 0;
	double t0, t;

	if (a == NULL || b == NULL) {
		free(a);
		free(b);
		return 0;
	}
	memset(a, 1, size);
	t0 = bench_now_s();
	do {
		for (int i = 0; i < 16; i++, n++) {
			a[n % size]++;
			memcpy(b, a, size);
			__asm__ __volatile__("" : : "r"(b) : "memory");
		}
		t = bench_now_s();
	} while (t - t0 < seconds);
	free(a);
	free(b);
	return (t - t0) / (double)n * 1e6;
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

/*
 * A posted DEVICE_SET_IRQS that triggers MSI-X vector `vector`, then a wait for its eventfd, again
 * and again for about seconds: one message in and one eventfd signal out, the least a doorbell and
 * the interrupt of its completion cost the server. The vector must have eventfd efd and be unmasked,
 * and nothing else may use the connection meanwhile. Prints and adds a CSV row like
 * bench_region_read(); 0, or -1 when a signal did not come.
 */
static inline int bench_posted_irq(struct vfc *cl, pid_t server, int efd, uint32_t vector, double seconds, FILE *csv)
{
	struct vfu_irq_set trig = { .argsz = sizeof(trig), .flags = VFU_IRQ_SET_DATA_NONE | VFU_IRQ_SET_ACTION_TRIGGER,
				    .index = VFU_PCI_MSIX_IRQ, .start = vector, .count = 1 };
	uint64_t n = 0, ns0 = bench_cpu_ns(server), v;
	double t0 = bench_now_s(), t, us;

	while (read(efd, &v, sizeof(v)) == sizeof(v))
		; /* what an earlier signal left */
	do {
		struct pollfd p = { .fd = efd, .events = POLLIN };

		if (vfc_send(cl, VFU_CMD_DEVICE_SET_IRQS, VFU_F_NO_REPLY, &trig, sizeof(trig), NULL, 0) < 0 ||
		    poll(&p, 1, 5000) != 1 || read(efd, &v, sizeof(v)) != sizeof(v))
			return -1;
		n++;
		t = bench_now_s();
	} while (t - t0 < seconds);
	us = (double)(bench_cpu_ns(server) - ns0) / 1e3 / (double)n;
	printf("  posted message and interrupt round trip: %9.0f /s, server %6.2f us each\n", (double)n / (t - t0), us);
	if (csv)
		fprintf(csv, "posted-irq,%.0f,%.3f,\n", (double)n / (t - t0), us);
	return 0;
}

#endif
