/* vfio-user listening socket; see vfu_server.h. */
#include "vfio_user/vfu_server.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "util/evloop.h"
#include "util/log.h"

struct vfu_server {
	struct evloop *loop;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int listen_fd;
	struct ev_watch *listen_watch;
};

static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

/*
 * Make the path free for bind(): nothing there, or a socket nobody answers on
 * (left by a server that died), which is removed.
 */
static int claim_path(const struct sockaddr_un *sa, char *err, size_t errlen)
{
	struct stat st;
	int fd, rc;

	if (lstat(sa->sun_path, &st) < 0) {
		if (errno == ENOENT)
			return 0;
		return fail(err, errlen, "cannot use socket path %s: %s", sa->sun_path, strerror(errno));
	}
	if (!S_ISSOCK(st.st_mode))
		return fail(err, errlen, "%s exists and is not a socket", sa->sun_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return fail(err, errlen, "socket: %s", strerror(errno));
	rc = connect(fd, (const struct sockaddr *)sa, sizeof(*sa));
	close(fd);
	if (rc == 0)
		return fail(err, errlen, "another server is listening on %s", sa->sun_path);
	if (unlink(sa->sun_path) < 0 && errno != ENOENT)
		return fail(err, errlen, "cannot remove stale socket %s: %s", sa->sun_path, strerror(errno));
	LOG_INFO("vfio-user: replaced stale socket %s", sa->sun_path);
	return 0;
}

static void on_listen(void *arg, uint32_t events)
{
	struct vfu_server *srv = arg;
	int fd;

	(void)events;
	fd = accept4(srv->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0) {
		if (errno != EAGAIN && errno != EINTR)
			LOG_WARN("vfio-user: accept: %m");
		return;
	}
	LOG_WARN("vfio-user: client connected, but this build does not speak the protocol yet; disconnecting");
	close(fd);
}

struct vfu_server *vfu_server_start(struct evloop *loop, const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct vfu_server *srv;

	if (path[0] == '\0' || strlen(path) >= sizeof(sa.sun_path)) {
		fail(err, errlen, "socket path '%s' is empty or longer than %zu bytes", path,
		     sizeof(sa.sun_path) - 1);
		return NULL;
	}
	strcpy(sa.sun_path, path);
	if (claim_path(&sa, err, errlen))
		return NULL;

	srv = calloc(1, sizeof(*srv));
	if (srv == NULL) {
		fail(err, errlen, "out of memory");
		return NULL;
	}
	srv->loop = loop;
	strcpy(srv->path, path);
	srv->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (srv->listen_fd < 0) {
		fail(err, errlen, "socket: %s", strerror(errno));
		goto out_free;
	}
	if (bind(srv->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fail(err, errlen, "cannot bind %s: %s", path, strerror(errno));
		goto out_close;
	}
	if (listen(srv->listen_fd, 1) < 0) {
		fail(err, errlen, "listen on %s: %s", path, strerror(errno));
		goto out_unlink;
	}
	srv->listen_watch = evloop_add_fd(loop, srv->listen_fd, EPOLLIN, on_listen, srv);
	if (srv->listen_watch == NULL) {
		fail(err, errlen, "cannot watch %s", path);
		goto out_unlink;
	}
	LOG_INFO("vfio-user: listening on %s", path);
	return srv;

out_unlink:
	unlink(path);
out_close:
	close(srv->listen_fd);
out_free:
	free(srv);
	return NULL;
}

void vfu_server_stop(struct vfu_server *srv)
{
	if (srv == NULL)
		return;
	evloop_del_fd(srv->loop, srv->listen_watch);
	close(srv->listen_fd);
	if (unlink(srv->path) < 0 && errno != ENOENT)
		LOG_WARN("vfio-user: cannot remove %s: %m", srv->path);
	free(srv);
}
