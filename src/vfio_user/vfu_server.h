/*
 * The vfio-user listening socket.
 *
 * vfu_server_start() claims the socket path (replacing a stale socket file
 * left by a server that is gone, refusing a path another live server listens
 * on or that is not a socket), listens, and serves one client at a time from
 * the event loop. vfu_server_stop() closes everything and removes the path.
 *
 * The protocol itself is not implemented yet: a client that connects is told
 * nothing and is disconnected, with a warning in the log.
 */
#ifndef ERNIC_VFIO_USER_VFU_SERVER_H
#define ERNIC_VFIO_USER_VFU_SERVER_H

#include <stddef.h>

struct evloop;
struct vfu_server;

/* Returns the server, or NULL with a one-line reason in err. */
struct vfu_server *vfu_server_start(struct evloop *loop, const char *path, char *err, size_t errlen);
void vfu_server_stop(struct vfu_server *srv);

#endif
