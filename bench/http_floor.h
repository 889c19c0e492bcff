/*
 * The kernel's floor under an S3 request over a TAP: what carrying one HTTP request in and one
 * answer out costs the side that owns the TAP when that side does nothing else (bench/http_floor.c).
 */
#ifndef ERNIC_BENCH_HTTP_FLOOR_H
#define ERNIC_BENCH_HTTP_FLOOR_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

struct http_floor_result {
	double ops_per_s;
	double us_per_op;       /* the responder thread's CPU per request and answer, kernel included */
	double user_us_per_op;  /* of which in user space */
};

/*
 * Opens the TAP as the server does (IFF_VNET_HDR, TCP receive offloads) and answers, from a
 * thread, a connection that this process makes to ip:port through the kernel: every request_len
 * bytes that arrive get answer_len bytes back, all the answers of one arrival in one write (a
 * TCPv4 super-frame when longer than 1460 bytes), after the server's MAC for ip (ARP answered).
 * The client keeps qd requests in flight for about seconds. Returns 0, or -1 with a message on
 * stderr. The TAP must not be open elsewhere.
 */
int http_floor_run(const char *tap, uint32_t ip, uint16_t port, size_t request_len, size_t answer_len,
		   unsigned qd, double seconds, struct http_floor_result *out);

/*
 * The floor under a large GET (bench/tap_get_floor.c): on the calling thread, answers every
 * request (an arrival whose data ends in a blank line) on ip:port with a 200 head and body_len
 * bytes of its own memory, sent by reference in TCPv4 super-frames of up to 64 KiB within the
 * client's window, until *quit. Returns 0, or -1 with a message on stderr.
 */
int http_floor_serve(const char *tap, uint32_t ip, uint16_t port, size_t body_len, const volatile sig_atomic_t *quit);

#endif
