/*
 * vfu-bench: the cost of the vfio-user socket itself, against the real server.
 *
 *   region-read   REGION_READ of one 4-byte register, round trips per second
 *   region-write  REGION_WRITE (with reply) of one register, round trips per second
 *   doorbell      a posted admin-queue doorbell until the device has executed the
 *                 command, written its completion and signalled the MSI-X eventfd:
 *                 latency per operation (mean, median, 99th percentile)
 *
 * Usage: vfu-bench path/to/rocm-ernic [iterations] [csv-file]
 * The CSV has one row per measurement: name,unit,value.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ionic_guest.h"
#include "vfu_client.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	int iters = argc > 2 ? atoi(argv[2]) : 20000;
	FILE *csv = NULL;
	char dir[] = "/tmp/vfu-bench.XXXXXX", sock[128];
	struct vfc c;
	struct ionic_guest g;
	double t0, t, *lat;
	pid_t pid;
	int status;

	if (argc < 2 || iters <= 0) {
		fprintf(stderr, "usage: %s path/to/rocm-ernic [iterations] [csv-file]\n", argv[0]);
		return 2;
	}
	if (argc > 3 && (csv = fopen(argv[3], "w")) == NULL) {
		perror(argv[3]);
		return 1;
	}
	if (!mkdtemp(dir))
		return 1;
	pid = vfc_spawn_server(argv[1], dir, sock, sizeof(sock),
			       (const char *const[]){ "-b", "none", "-L", "warn", NULL });
	if (pid <= 0 || vfc_connect(&c, sock, 20000) || vfc_negotiate(&c)) {
		fprintf(stderr, "cannot reach the server\n");
		return 1;
	}
	if (csv)
		fprintf(csv, "name,unit,value\n");

	t0 = now_s();
	for (int i = 0; i < iters; i++)
		if (vfc_read32(&c, 0, 0) != 0x44455649)
			return 1;
	t = now_s() - t0;
	printf("region-read   %10.0f round trips/s  (%.2f us each)\n", iters / t, t / iters * 1e6);
	if (csv)
		fprintf(csv, "region-read,round_trips_per_s,%.0f\n", iters / t);

	t0 = now_s();
	for (int i = 0; i < iters; i++)
		vfc_write32(&c, 0, 0x2000 + 12 * 32, 0, false);
	t = now_s() - t0;
	printf("region-write  %10.0f round trips/s  (%.2f us each)\n", iters / t, t / iters * 1e6);
	if (csv)
		fprintf(csv, "region-write,round_trips_per_s,%.0f\n", iters / t);

	if (ionic_guest_setup(&g, &c)) {
		fprintf(stderr, "guest set-up failed\n");
		return 1;
	}
	lat = calloc((size_t)iters, sizeof(*lat));
	for (int i = 0; i < iters; i++) {
		uint8_t cmd[64] = { 0 }, comp[16];

		t0 = now_s();
		ionic_guest_aq_post(&g, cmd);
		if (!ionic_guest_wait_irq(&g, 5000) || !ionic_guest_aq_comp(&g, comp)) {
			fprintf(stderr, "no completion for command %d\n", i);
			return 1;
		}
		lat[i] = now_s() - t0;
		ionic_guest_irq_rearm(&g, 1);
	}
	qsort(lat, (size_t)iters, sizeof(*lat), cmp_double);
	double sum = 0;
	for (int i = 0; i < iters; i++)
		sum += lat[i];
	printf("doorbell      mean %.2f us, median %.2f us, p99 %.2f us (posted write -> completion + MSI-X)\n",
	       sum / iters * 1e6, lat[iters / 2] * 1e6, lat[(int)(iters * 0.99)] * 1e6);
	if (csv) {
		fprintf(csv, "doorbell-mean,us,%.2f\n", sum / iters * 1e6);
		fprintf(csv, "doorbell-median,us,%.2f\n", lat[iters / 2] * 1e6);
		fprintf(csv, "doorbell-p99,us,%.2f\n", lat[(int)(iters * 0.99)] * 1e6);
		fclose(csv);
	}
	free(lat);
	ionic_guest_teardown(&g);
	vfc_close(&c);
	kill(pid, SIGTERM);
	waitpid(pid, &status, 0);
	rmdir(dir);
	return 0;
}
