/*
 * rocm-ernic: a vfio-user server that presents an emulated AMD Pensando
 * (ionic) RDMA NIC, with in-process S3 and NVMe-oF peers.
 *
 * This file holds the command line, the signals and the event loop. Exit
 * status: 0 after SIGINT/SIGTERM, 2 for a malformed command line (nothing is
 * created), 1 for a failure to start. SIGUSR1 simulates a firmware reset of
 * the device; SIGUSR2 logs its counters.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "fabric/fabric.h"
#include "ionic/ionic_pci.h"
#include "net/net_switch.h"
#include "net/net_pcap.h"
#include "net/tap.h"
#include "util/backend_opts.h"
#include "util/evloop.h"
#include "util/log.h"
#include "util/parse_int.h"
#include "vfio_user/vfu_server.h"

#define DEFAULT_SOCKET "/tmp/vfio-user-rocm-ernic.sock"
#define IFNAME_MAX 15 /* IFNAMSIZ - 1 */
/*
 * The busy window after activity. Mapped doorbell pages are only seen by looking, so they get
 * one; trapped doorbells wake the loop themselves, and spinning for them starves the vCPU and
 * QEMU threads that bring them when the host has no core to spare (a TCG guest on two cores:
 * ib_send_lat from 36 us to 2 ms with any window).
 */
#define DEFAULT_POLL_US_MAPPED 50
#define MAX_POLL_US 100000

/* Locally administered, unicast, and the same on every start: 02:45:52:4e:49:43 ("ERNIC"). */
static const uint8_t default_mac[6] = { 0x02, 0x45, 0x52, 0x4e, 0x49, 0x43 };

struct options {
	const char *socket_path;
	const char *tap;
	uint8_t mac[6];
	struct backend_config backend;
	bool mmap_doorbells;
	unsigned poll_us;
	const char *pcap;       /* --pcap FILE, or NULL */
	uint64_t pcap_max;      /* --pcap-max, 0: the default */
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: rocm-ernic [OPTION]...\n"
		"Serve an emulated AMD Pensando RDMA NIC to QEMU over vfio-user.\n"
		"\n"
		"  -s, --socket PATH       vfio-user socket (default " DEFAULT_SOCKET ")\n"
		"  -b, --backend SPEC      none | loopback | s3[:opts] | nvmeof[:opts] | roce[:opts]\n"
		"                          (default loopback)\n"
		"  -T, --tap IFNAME        join the emulated segment to this existing TAP device\n"
		"  -m, --mac MAC           the guest NIC's MAC (default 02:45:52:4e:49:43)\n"
		"      --mmap-doorbells    let the client map the doorbell pages (BAR2): doorbell stores\n"
		"                          stop trapping; RDMA doorbells can then be lost (docs/ionic.md)\n"
		"      --no-mmap-doorbells every doorbell traps (the default)\n"
		"      --poll-us N         after any activity, poll without sleeping for N microseconds\n"
		"                          (0..100000; default 0, with --mmap-doorbells 50)\n"
		"      --pcap FILE         capture every frame of the emulated segment into FILE (pcap)\n"
		"      --pcap-max SIZE     stop capturing once FILE would pass SIZE (default 1G)\n"
		"  -L, --log-level LEVEL   error | warn | info | debug (default info)\n"
		"  -v                      same as --log-level debug\n"
		"      --version           print the version and exit\n"
		"  -h, --help              print this help and exit\n"
		"\n"
		"s3 options:     bucket=NAME size=SIZE objects=N ip=A.B.C.D port=N maxpart=SIZE\n"
		"                window=SIZE (TCP receive window, 64K..64M, default 4M)\n"
		"                dir=PATH (keep the objects under PATH and serve them again after a restart)\n"
		"                buckets=1..100 (how many buckets clients may have, bucket= first; default 1)\n"
		"nvmeof options: size=SIZE bs=512|1024|2048|4096 file=PATH nqn=NQN ip=A.B.C.D port=N\n"
		"                queues=1..64 nsid=N model=TEXT serial=TEXT\n"
		"SIZE is a number of bytes with an optional K, M, G or T (or KiB..TiB) suffix.\n"
		"Options are separated by commas: --backend s3:size=1G,bucket=bench\n"
		"\n"
		"SIGINT or SIGTERM stops the server; SIGUSR1 simulates a firmware reset of the device;\n"
		"SIGUSR2 logs the device's counters.\n");
}

/* Print "Error: ..." and exit 2: the command line was refused, nothing was created. */
static void __attribute__((noreturn, format(printf, 1, 2))) usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("Error: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

static bool ifname_ok(const char *s)
{
	size_t len = strlen(s);

	if (len == 0 || len > IFNAME_MAX || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c <= 0x20 || c >= 0x7f || c == '/' || c == ':')
			return false;
	}
	return true;
}

static const char *long_name(const struct option *longopts, int c)
{
	for (; longopts->name; longopts++)
		if (longopts->val == c)
			return longopts->name;
	return "?";
}

static void parse_args(int argc, char **argv, struct options *o)
{
	enum { OPT_VERSION = 256, OPT_MMAP_DB, OPT_NO_MMAP_DB, OPT_POLL_US, OPT_PCAP, OPT_PCAP_MAX };
	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "backend", required_argument, NULL, 'b' },
		{ "tap", required_argument, NULL, 'T' },
		{ "mac", required_argument, NULL, 'm' },
		{ "log-level", required_argument, NULL, 'L' },
		{ "mmap-doorbells", no_argument, NULL, OPT_MMAP_DB },
		{ "no-mmap-doorbells", no_argument, NULL, OPT_NO_MMAP_DB },
		{ "poll-us", required_argument, NULL, OPT_POLL_US },
		{ "pcap", required_argument, NULL, OPT_PCAP },
		{ "pcap-max", required_argument, NULL, OPT_PCAP_MAX },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *backend = "loopback";
	const char *mac = NULL;
	bool seen[128] = { false }, seen_db = false, seen_poll = false, seen_pcap_max = false;
	char err[512];
	uint64_t v;
	int c;

	o->socket_path = DEFAULT_SOCKET;
	memcpy(o->mac, default_mac, sizeof(o->mac));
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":s:b:T:m:L:vh", longopts, NULL)) != -1) {
		enum log_level level;

		if (c > 0 && c < 128 && strchr("sbTmL", c)) {
			if (seen[c])
				usage_error("option --%s given twice", long_name(longopts, c));
			seen[c] = true;
		}
		switch (c) {
		case 's':
			o->socket_path = optarg;
			break;
		case 'b':
			backend = optarg;
			break;
		case 'T':
			if (!ifname_ok(optarg))
				usage_error("bad interface name '%s'", optarg);
			o->tap = optarg;
			break;
		case 'm':
			mac = optarg;
			break;
		case 'L':
			if (log_level_parse(optarg, &level))
				usage_error("bad log level '%s'", optarg);
			log_set_level(level);
			break;
		case 'v':
			log_set_level(LOG_LEVEL_DEBUG);
			break;
		case OPT_MMAP_DB:
		case OPT_NO_MMAP_DB:
			if (seen_db)
				usage_error("--mmap-doorbells or --no-mmap-doorbells given twice");
			seen_db = true;
			o->mmap_doorbells = c == OPT_MMAP_DB;
			break;
		case OPT_POLL_US:
			if (seen_poll)
				usage_error("option --poll-us given twice");
			seen_poll = true;
			if (parse_u64_range(optarg, 0, MAX_POLL_US, &v))
				usage_error("bad --poll-us '%s' (0..%u microseconds)", optarg, MAX_POLL_US);
			o->poll_us = (unsigned)v;
			break;
		case OPT_PCAP:
			if (o->pcap)
				usage_error("option --pcap given twice");
			if (optarg[0] == '\0')
				usage_error("--pcap needs a file name");
			o->pcap = optarg;
			break;
		case OPT_PCAP_MAX:
			if (seen_pcap_max)
				usage_error("option --pcap-max given twice");
			seen_pcap_max = true;
			if (parse_size(optarg, &v) || v < 4096)
				usage_error("bad --pcap-max '%s' (a size of at least 4K)", optarg);
			o->pcap_max = v;
			break;
		case OPT_VERSION:
			printf("rocm-ernic %s\n", ERNIC_VERSION);
			exit(0);
		case 'h':
			usage(stdout);
			exit(0);
		case ':':
			usage_error("option '%s' needs a value", argv[optind - 1]);
		default:
			usage_error("unknown option '%s' (see --help)", argv[optind - 1]);
		}
	}
	if (optind < argc)
		usage_error("unexpected argument '%s' (see --help)", argv[optind]);
	if (!seen_poll)
		o->poll_us = o->mmap_doorbells ? DEFAULT_POLL_US_MAPPED : 0;
	if (seen_pcap_max && !o->pcap)
		usage_error("--pcap-max without --pcap");

	if (backend_config_parse(backend, &o->backend, err, sizeof(err)))
		usage_error("%s", err);
	if (mac) {
		uint8_t m[6];

		/* The guest NIC needs a unicast address; all zeroes is no address at all. */
		if (parse_mac(mac, m) || (m[0] & 1) || !(m[0] | m[1] | m[2] | m[3] | m[4] | m[5]))
			usage_error("bad MAC address '%s'", mac);
		memcpy(o->mac, m, sizeof(m));
	}
	{
		uint8_t ep[6];

		if (backend_host_mac(&o->backend, ep) == 0 && memcmp(ep, o->mac, sizeof(ep)) == 0)
			usage_error("--mac %02x:%02x:%02x:%02x:%02x:%02x is the %s own address",
				    ep[0], ep[1], ep[2], ep[3], ep[4], ep[5],
				    o->backend.kind == BACKEND_S3 ? "s3 endpoint's" : "nvmeof controller's");
	}
}

/* The switch's monitor: every frame of the segment into the capture, stamped with the wall clock. */
static void capture(void *ctx, const uint8_t *frame, size_t len)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	net_pcap_frame(ctx, frame, len, (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u);
}

struct signal_ctx {
	struct evloop *loop;
	int fd;
	struct ionic_pci *nic;
	const struct fabric *dp;
};

static void on_signal(void *arg, uint32_t events)
{
	struct signal_ctx *s = arg;
	struct signalfd_siginfo si;

	(void)events;
	while (read(s->fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGUSR1) {
			/* An operator's (or a test's) way to exercise the driver's firmware-reset recovery. */
			if (s->nic)
				ionic_pci_fw_reset(s->nic);
			continue;
		}
		if (si.ssi_signo == SIGUSR2) {
			if (s->nic)
				ionic_pci_log_stats(s->nic);
			fabric_log_stats(s->dp);
			continue;
		}
		LOG_INFO("received %s, shutting down", strsignal((int)si.ssi_signo));
		evloop_stop(s->loop);
	}
}

int main(int argc, char **argv)
{
	struct options opts = { 0 };
	struct signal_ctx sig = { .fd = -1 };
	struct fabric *dp = NULL;
	struct vfu_server *srv = NULL;
	struct ionic_pci *nic = NULL;
	struct net_switch *sw = NULL;
	struct tap *tap = NULL;
	struct net_pcap *pcap = NULL;
	struct ionic_dev_config nic_cfg;
	struct ev_watch *sig_watch = NULL;
	struct ev_poller *db_poller = NULL, *work_poller = NULL;
	sigset_t mask;
	char err[512];
	int status = 1;

	parse_args(argc, argv, &opts);

	/* SIGINT/SIGTERM arrive through the loop, so shutdown runs in one place. */
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGUSR1);
	sigaddset(&mask, SIGUSR2);
	if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0 ||
	    (sig.fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC)) < 0) {
		LOG_ERR("signals: %m");
		return 1;
	}
	sig.loop = evloop_new();
	if (sig.loop == NULL) {
		LOG_ERR("cannot create the event loop");
		goto out;
	}
	sig_watch = evloop_add_fd(sig.loop, sig.fd, EPOLLIN, on_signal, &sig);
	if (sig_watch == NULL)
		goto out;
	evloop_set_busy_poll(sig.loop, opts.poll_us);

	sw = net_switch_new();
	if (sw == NULL)
		goto out;
	if (opts.pcap) {
		pcap = net_pcap_open(opts.pcap, opts.pcap_max, err, sizeof(err));
		if (pcap == NULL) {
			LOG_ERR("%s", err);
			goto out;
		}
		net_switch_set_monitor(sw, capture, pcap);
	}
	dp = fabric_create(&opts.backend, sig.loop, sw, err, sizeof(err));
	if (dp == NULL) {
		fprintf(stderr, "%s\n", err);
		goto out;
	}
	LOG_INFO("ionic: guest NIC mac %02x:%02x:%02x:%02x:%02x:%02x", opts.mac[0], opts.mac[1],
		 opts.mac[2], opts.mac[3], opts.mac[4], opts.mac[5]);
	if (opts.tap) {
		tap = tap_open(opts.tap, sig.loop, sw, err, sizeof(err));
		if (tap == NULL) {
			LOG_ERR("%s", err);
			goto out;
		}
	}

	memcpy(nic_cfg.mac, opts.mac, sizeof(nic_cfg.mac));
	nic = ionic_pci_new(&nic_cfg, opts.mmap_doorbells);
	sig.nic = nic;
	sig.dp = dp;
	if (nic == NULL || ionic_pci_attach_segment(nic, sw)) {
		LOG_ERR("cannot create the device");
		goto out;
	}
	/*
	 * Long device work (a large RDMA transfer) goes a slice per turn of the
	 * loop. Added first, so it runs after the doorbell poller in a turn.
	 */
	work_poller = evloop_add_poller(sig.loop, ionic_pci_work, nic);
	if (work_poller == NULL) {
		LOG_ERR("cannot schedule the device's work");
		goto out;
	}
	if (opts.mmap_doorbells) {
		/* Stores to the mapped doorbell pages tell nobody: the loop looks for them. */
		db_poller = evloop_add_poller(sig.loop, ionic_pci_poll, nic);
		if (db_poller == NULL) {
			LOG_ERR("cannot poll the doorbell pages");
			goto out;
		}
		LOG_INFO("ionic: doorbell pages mapped by the client, polled (busy for %u us after activity)",
			 opts.poll_us);
	}
	fabric_attach(dp, ionic_pci_dev(nic));
	srv = vfu_server_start(sig.loop, opts.socket_path, ionic_pci_vfu(nic), err, sizeof(err));
	if (srv == NULL) {
		LOG_ERR("%s", err);
		goto out;
	}
	ionic_pci_set_server(nic, srv);
	ionic_pci_set_loop(nic, sig.loop);
	if (evloop_run(sig.loop) < 0) {
		LOG_ERR("event loop: %m");
		goto out;
	}
	status = 0;
	{
		struct rusage ru;
		uint64_t longest_us;
		unsigned long_turns;

		evloop_turn_stats(sig.loop, &longest_us, &long_turns);
		if (getrusage(RUSAGE_SELF, &ru) == 0)
			LOG_INFO("rocm-ernic: %.3f s user and %.3f s system CPU time; longest event-loop turn "
				 "%.1f ms, %u of %u ms or more",
				 (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
				 (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6, longest_us / 1e3, long_turns,
				 EVLOOP_LONG_TURN_MS);
	}
	fabric_log_stats(dp);
out:
	vfu_server_stop(srv);
	if (sig.loop) {
		evloop_del_poller(sig.loop, db_poller);
		evloop_del_poller(sig.loop, work_poller);
	}
	fabric_attach(dp, NULL);
	ionic_pci_free(nic);
	tap_close(tap);
	fabric_destroy(dp);
	if (sw)
		net_switch_set_monitor(sw, NULL, NULL);
	net_pcap_close(pcap);
	net_switch_free(sw);
	if (sig.loop) {
		evloop_del_fd(sig.loop, sig_watch);
		evloop_free(sig.loop);
	}
	if (sig.fd >= 0)
		close(sig.fd);
	return status;
}
