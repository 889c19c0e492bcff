/*
 * tap-get-floor: the kernel's floor under a large S3 GET over a TAP, beside the S3 endpoint and
 * nginx in bench/tap_bench.sh. It owns a TAP as the server does and answers curl's GET with a
 * head and the body from its own memory by reference, in TCPv4 super-frames with the checksum
 * left to the kernel (bench/http_floor.c): the server's TAP path with no store, no HTTP parser
 * and no TCP stack beyond the window. Its CPU per GET and its rate are what the TAP and the
 * client's kernel leave to any server on this path.
 * Usage: tap-get-floor TAP IPv4 PORT BYTES   (serves until SIGTERM or SIGINT)
 */
#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_floor.h"

static volatile sig_atomic_t quit;

static void on_signal(int sig)
{
	(void)sig;
	quit = 1;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct in_addr a;
	char *end;
	unsigned long port;
	unsigned long long bytes;

	if (argc != 5 || inet_pton(AF_INET, argv[2], &a) != 1) {
		fprintf(stderr, "usage: tap-get-floor TAP IPv4 PORT BYTES\n");
		return 2;
	}
	port = strtoul(argv[3], &end, 10);
	if (*end || port == 0 || port > 65535) {
		fprintf(stderr, "tap-get-floor: bad port %s\n", argv[3]);
		return 2;
	}
	bytes = strtoull(argv[4], &end, 10);
	if (*end || bytes == 0 || bytes > (1ull << 30)) {
		fprintf(stderr, "tap-get-floor: bad size %s (1 byte to 1 GiB)\n", argv[4]);
		return 2;
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	return http_floor_serve(argv[1], ntohl(a.s_addr), (uint16_t)port, (size_t)bytes, &quit) ? 1 : 0;
}
