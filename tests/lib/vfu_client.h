/*
 * A small vfio-user client for tests and benchmarks: it speaks the protocol
 * the way QEMU's vfio-user-pci does, and also lets a test send anything at
 * all (bad sizes, stray descriptors, half messages).
 */
#ifndef ERNIC_TESTS_VFU_CLIENT_H
#define ERNIC_TESTS_VFU_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "vfio_user/vfu_proto.h"

struct vfc {
	int fd;
	uint16_t next_id;
	int timeout_ms;
};

/* Connect (retrying for up to timeout_ms while the socket is not there yet). 0 or -errno. */
int vfc_connect(struct vfc *c, const char *path, int timeout_ms);
void vfc_close(struct vfc *c);

/* Send raw bytes (with fds on the first byte). 0 or -errno. */
int vfc_send_raw(struct vfc *c, const void *buf, size_t len, const int *fds, unsigned nfds);

/* Send one command; returns its message id, or -errno. */
int vfc_send(struct vfc *c, uint16_t cmd, uint32_t flags, const void *payload, size_t len,
	     const int *fds, unsigned nfds);

/*
 * Receive one message: header into *h, payload (up to cap bytes) into buf,
 * its length into *len. 0, -ETIMEDOUT, -EPIPE when the server closed, or -errno.
 */
int vfc_recv(struct vfc *c, struct vfu_hdr *h, void *buf, size_t cap, size_t *len);

/* vfc_recv that also keeps up to maxfds descriptors the message carried (*nrfds of them); the rest are closed. */
int vfc_recv_fds(struct vfc *c, struct vfu_hdr *h, void *buf, size_t cap, size_t *len, int *rfds, unsigned maxfds,
		 unsigned *nrfds);

/*
 * Send a command and wait for its reply. Returns 0 when a reply came (then
 * *err is 0 or the server's errno), or -errno when none did. Descriptors in
 * the reply are closed.
 */
int vfc_call(struct vfc *c, uint16_t cmd, const void *req, size_t len, const int *fds, unsigned nfds,
	     void *reply, size_t cap, size_t *rlen, uint32_t *err);
/* vfc_call keeping up to maxfds descriptors of the reply. */
int vfc_call_fds(struct vfc *c, uint16_t cmd, const void *req, size_t len, const int *fds, unsigned nfds,
		 void *reply, size_t cap, size_t *rlen, uint32_t *err, int *rfds, unsigned maxfds, unsigned *nrfds);

/*
 * A region mapped the way QEMU maps one: GET_REGION_INFO with argsz 32, again
 * with the argsz the server asks for, then each sparse-mmap area of the fd
 * the reply carried mapped at its offset inside a reservation the size of
 * the region (the rest of it stays inaccessible: those parts trap).
 */
struct vfc_map {
	uint8_t *base;          /* region offset 0 */
	uint64_t size;
	uint32_t flags;
	uint32_t nr_areas;
	struct vfu_region_sparse_mmap_area areas[8];
};
/* 0, -ENODEV when the region offers no mapping, or -errno. */
int vfc_map_region(struct vfc *c, uint32_t index, struct vfc_map *m);
void vfc_unmap_region(struct vfc_map *m);

/* VERSION with QEMU's capabilities. 0 or -errno/positive server errno. */
int vfc_negotiate(struct vfc *c);
/* vfc_connect and vfc_negotiate: 0 or -1 (the connection closed again). */
int vfc_open(struct vfc *c, const char *path, int timeout_ms);

/* Region access; posted writes carry NO_REPLY. 0, or the server's errno, or -errno. */
int vfc_read(struct vfc *c, uint32_t region, uint64_t off, void *buf, uint32_t len);
int vfc_write(struct vfc *c, uint32_t region, uint64_t off, const void *buf, uint32_t len, bool posted);

uint32_t vfc_read32(struct vfc *c, uint32_t region, uint64_t off);
void vfc_write32(struct vfc *c, uint32_t region, uint64_t off, uint32_t v, bool posted);

/* True if the server closed the connection (a read sees EOF within timeout_ms). */
bool vfc_closed_by_server(struct vfc *c, int timeout_ms);

/* Start the server binary with a socket in dir; returns its pid (and the path in sock). */
pid_t vfc_spawn_server(const char *binary, const char *dir, char *sock, size_t socklen,
		       const char *const extra_args[]);

/*
 * The server binary as a test program runs it: started with its socket in a
 * temporary directory of its own, stopped and checked, the directory removed.
 */
struct vfc_server {
	char dir[128];  /* $TMPDIR (or /tmp)/NAME.XXXXXX */
	char sock[160];
	pid_t pid;      /* -1: not running */
};

/* Make the directory: 0 or -1. */
int vfc_server_mkdir(struct vfc_server *s, const char *name);
/* Start binary with --socket in the directory and args after it: 0 or -1. */
int vfc_server_spawn(struct vfc_server *s, const char *binary, const char *const args[]);
/* Both. */
int vfc_server_start(struct vfc_server *s, const char *name, const char *binary, const char *const args[]);
/*
 * Send sig and reap the server: its wait status, or -1 when it was not
 * running or had already exited (a server that stopped by itself is caught).
 */
int vfc_server_kill(struct vfc_server *s, int sig);
/* Remove the directory and what it holds, the server first killed (SIGKILL) if it runs: 0 or -1. */
int vfc_server_remove(struct vfc_server *s);
/* SIGTERM and the directory removed: 0 when the server was running and exited with status 0, else -1. */
int vfc_server_stop(struct vfc_server *s);
/* Config dword 0 (vendor and device ID) as a fresh client reads it (connected within 5 s); 0 when not served. */
uint32_t vfc_server_id(const struct vfc_server *s);

/*
 * Fixtures with cmocka's signature (int (*)(void **state), state unused) for
 * a test program with one server and one client: vfc_fixture_open connects
 * the client vfc_fixture_use named to the server's socket (20 s for a server
 * still starting) and negotiates; vfc_fixture_close closes it.
 */
void vfc_fixture_use(struct vfc *c, const struct vfc_server *s);
int vfc_fixture_open(void **state);
int vfc_fixture_close(void **state);

/*
 * The server binary a CI test program was given as its one argument; NULL
 * after a usage line on stderr. SIGPIPE is ignored from then on: a write to
 * a server that went away fails instead of ending the program.
 */
const char *vfc_test_binary(int argc, char **argv);

#endif
