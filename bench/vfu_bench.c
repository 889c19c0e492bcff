/*
 * vfu-bench: the cost of the vfio-user socket itself, and of a doorbell,
 * against the real server, for three servers in one run:
 *
 *   trapped-nopoll  doorbells are posted REGION_WRITEs and the server sleeps
 *                   in epoll between messages (--poll-us 0: as before mapped
 *                   doorbells existed)
 *   trapped         the same with the server's busy window (--poll-us 50)
 *   mapped          --mmap-doorbells: BAR2 mapped, doorbells are stores
 *
 * and for each:
 *
 *   region-read   REGION_READ of one 4-byte register, round trips per second
 *   region-write  REGION_WRITE (with reply) of one register, round trips per second
 *   doorbell      an admin-queue doorbell (posted write, or a store to the
 *                 mapping) until the device has executed the command, written
 *                 its completion and signalled the MSI-X eventfd: latency per
 *                 operation (mean, median, 99th percentile)
 *   posted-burst  posted REGION_WRITEs in bursts of 1 and 16, each closed by a
 *                 REGION_READ: messages per second and the server's CPU per message
 *   idle          the server's CPU share while the client stays attached and
 *                 silent for 10 s
 *
 * Usage: vfu-bench path/to/rocm-ernic [iterations] [csv-file] [mode]
 * The CSV has one row per measurement: mode,name,unit,value.
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

#define IDLE_S 10

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

/* The server's run time so far, in seconds (/proc/PID/schedstat), or -1. */
static double cpu_s(pid_t pid)
{
	char path[64];
	unsigned long long ns;
	FILE *f;
	double v = -1;

	snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)pid);
	if ((f = fopen(path, "r")) != NULL) {
		if (fscanf(f, "%llu", &ns) == 1)
			v = (double)ns / 1e9;
		fclose(f);
	}
	return v;
}

static const struct bmode {
	const char *name;
	const char *const *args;
} modes[] = {
	{ "trapped-nopoll", (const char *const[]){ "-b", "none", "-L", "warn", "--poll-us", "0", NULL } },
	{ "trapped", (const char *const[]){ "-b", "none", "-L", "warn", "--poll-us", "50", NULL } },
	{ "mapped", (const char *const[]){ "-b", "none", "-L", "warn", "--mmap-doorbells", NULL } },
};

static int run_mode(const char *binary, const struct bmode *m, int iters, FILE *csv)
{
	char dir[] = "/tmp/vfu-bench.XXXXXX", sock[128];
	struct vfc c;
	struct ionic_guest g;
	double t0, t, c0, *lat, sum = 0;
	pid_t pid;
	int status;

	if (!mkdtemp(dir))
		return 1;
	pid = vfc_spawn_server(binary, dir, sock, sizeof(sock), m->args);
	if (pid <= 0 || vfc_connect(&c, sock, 20000) || vfc_negotiate(&c)) {
		fprintf(stderr, "cannot reach the server\n");
		return 1;
	}
	printf("== %s\n", m->name);
	t0 = now_s();
	for (int i = 0; i < iters; i++)
		if (vfc_read32(&c, 0, 0) != 0x44455649)
			return 1;
	t = now_s() - t0;
	printf("region-read   %10.0f round trips/s  (%.2f us each)\n", iters / t, t / iters * 1e6);
	if (csv)
		fprintf(csv, "%s,region-read,round_trips_per_s,%.0f\n", m->name, iters / t);

	t0 = now_s();
	for (int i = 0; i < iters; i++)
		vfc_write32(&c, 0, 0x2000 + 12 * 32, 0, false);
	t = now_s() - t0;
	printf("region-write  %10.0f round trips/s  (%.2f us each)\n", iters / t, t / iters * 1e6);
	if (csv)
		fprintf(csv, "%s,region-write,round_trips_per_s,%.0f\n", m->name, iters / t);

	/*
	 * Posted writes in bursts of 1 and 16, each burst closed by a REGION_READ (as QEMU posts a
	 * guest's MMIO writes and waits only on a read): the server's CPU per message, which is what
	 * reading several messages per recvmsg saves.
	 */
	for (int burst = 1; burst <= 16; burst += 15) {
		double cpu0 = cpu_s(pid);
		long msgs = 0;

		t0 = now_s();
		for (int i = 0; i < iters; i += burst + 1) {
			for (int k = 0; k < burst; k++)
				vfc_write32(&c, 0, 0x70, 0, true);
			vfc_read32(&c, 0, 0);
			msgs += burst + 1;
		}
		t = now_s() - t0;
		printf("posted-burst%-2d %9.0f messages/s, server %.2f us each\n", burst, msgs / t,
		       (cpu_s(pid) - cpu0) / msgs * 1e6);
		if (csv) {
			fprintf(csv, "%s,posted-burst%d,messages_per_s,%.0f\n", m->name, burst, msgs / t);
			fprintf(csv, "%s,posted-burst%d-server,us_per_msg,%.3f\n", m->name, burst,
				(cpu_s(pid) - cpu0) / msgs * 1e6);
		}
	}

	if (ionic_guest_setup(&g, &c)) {
		fprintf(stderr, "guest set-up failed\n");
		return 1;
	}
	g.db_wait = false; /* the admin queue's word is its own */
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
	for (int i = 0; i < iters; i++)
		sum += lat[i];
	printf("doorbell      mean %.2f us, median %.2f us, p99 %.2f us (%s -> completion + MSI-X)\n",
	       sum / iters * 1e6, lat[iters / 2] * 1e6, lat[(int)(iters * 0.99)] * 1e6,
	       g.bar2.base ? "store to the mapped page" : "posted write");
	if (csv) {
		fprintf(csv, "%s,doorbell-mean,us,%.2f\n", m->name, sum / iters * 1e6);
		fprintf(csv, "%s,doorbell-median,us,%.2f\n", m->name, lat[iters / 2] * 1e6);
		fprintf(csv, "%s,doorbell-p99,us,%.2f\n", m->name, lat[(int)(iters * 0.99)] * 1e6);
	}
	free(lat);

	/* Attached, set up, silent. */
	c0 = cpu_s(pid);
	t0 = now_s();
	sleep(IDLE_S);
	t = now_s() - t0;
	printf("idle          server CPU %.2f%% over %.0f s\n", (cpu_s(pid) - c0) / t * 100, t);
	if (csv)
		fprintf(csv, "%s,idle-cpu,pct,%.2f\n", m->name, (cpu_s(pid) - c0) / t * 100);

	ionic_guest_teardown(&g);
	vfc_close(&c);
	kill(pid, SIGTERM);
	waitpid(pid, &status, 0);
	rmdir(dir);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	int iters = argc > 2 ? atoi(argv[2]) : 20000, rc = 0;
	const char *mode = argc > 4 ? argv[4] : NULL;
	FILE *csv = NULL;

	if (argc < 2 || iters <= 0) {
		fprintf(stderr, "usage: %s path/to/rocm-ernic [iterations] [csv-file] [mode]\n"
			"modes: trapped-nopoll, trapped, mapped (default: all three)\n", argv[0]);
		return 2;
	}
	if (argc > 3 && argv[3][0] && (csv = fopen(argv[3], "w")) == NULL) {
		perror(argv[3]);
		return 1;
	}
	if (csv)
		fprintf(csv, "mode,name,unit,value\n");
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		if (!mode || !strcmp(mode, modes[i].name))
			rc |= run_mode(argv[1], &modes[i], iters, csv);
	if (csv)
		fclose(csv);
	return rc;
}
