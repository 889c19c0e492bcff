/*
 * The MD5 of request bodies on a thread of its own; see s3_md5.h.
 *
 * One mutex guards every stream's counters and flags; the hashing itself
 * runs outside it, a slice at a time, on memory the caller promised not to
 * touch again (base[0, avail)). A stream being hashed is marked busy, and
 * dropping one waits until it is not, so the caller may free its memory
 * right after s3_md5s_drop().
 */
#include "s3/s3_md5.h"

#include <openssl/evp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "util/log.h"

/* Bytes hashed per turn: a dropped stream waits at most this long (about 2 ms). */
#define SLICE (1u << 20)

struct s3_md5s {
	struct s3_md5w *w;
	struct s3_md5s *next;   /* on w->streams until dropped */
	EVP_MD_CTX *ctx;        /* the thread's alone until done */
	const uint8_t *base;
	size_t avail, hashed;
	bool closed, busy, done, failed;
	uint8_t digest[16];
};

struct s3_md5w {
	pthread_mutex_t mu;
	pthread_cond_t work;    /* the thread waits here for bytes */
	pthread_cond_t moved;   /* callers wait here for a slice or a digest */
	pthread_t thread;
	bool started, stop, sleeping;
	struct s3_md5s *streams;
	int efd;
};

/* A stream with something to do: bytes to hash, or a digest to make. */
static struct s3_md5s *pick(struct s3_md5w *w)
{
	for (struct s3_md5s *s = w->streams; s; s = s->next)
		if (!s->done && (s->hashed < s->avail || s->closed))
			return s;
	return NULL;
}

/* Moves s to the end of the list: the streams take turns by slices. */
static void to_tail(struct s3_md5w *w, struct s3_md5s *s)
{
	struct s3_md5s **pp = &w->streams;

	if (s->next == NULL)
		return;
	while (*pp != s)
		pp = &(*pp)->next;
	*pp = s->next;
	s->next = NULL;
	while (*pp)
		pp = &(*pp)->next;
	*pp = s;
}

static void *run(void *arg)
{
	struct s3_md5w *w = arg;
	uint64_t one = 1;

	pthread_mutex_lock(&w->mu);
	for (;;) {
		struct s3_md5s *s = pick(w);
		bool ok;

		if (s == NULL) {
			if (w->stop)
				break;
			w->sleeping = true;
			pthread_cond_wait(&w->work, &w->mu);
			w->sleeping = false;
			continue;
		}
		s->busy = true;
		if (s->hashed < s->avail) {
			const uint8_t *p = s->base + s->hashed;
			size_t n = s->avail - s->hashed < SLICE ? s->avail - s->hashed : SLICE;

			pthread_mutex_unlock(&w->mu);
			ok = EVP_DigestUpdate(s->ctx, p, n) == 1;
			pthread_mutex_lock(&w->mu);
			s->hashed += n;
		} else {
			unsigned int len = 0;

			pthread_mutex_unlock(&w->mu);
			ok = EVP_DigestFinal_ex(s->ctx, s->digest, &len) == 1 && len == 16;
			pthread_mutex_lock(&w->mu);
			s->done = true;
			/* Fails only when the counter is full, which still reads as readable. */
			ssize_t r = write(w->efd, &one, sizeof(one));
			(void)r;
		}
		if (!ok) {
			s->failed = true;
			s->done = true;
		}
		s->busy = false;
		to_tail(w, s);
		pthread_cond_broadcast(&w->moved);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

struct s3_md5w *s3_md5w_new(void)
{
	struct s3_md5w *w = calloc(1, sizeof(*w));

	if (w == NULL)
		return NULL;
	w->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (w->efd < 0) {
		free(w);
		return NULL;
	}
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->work, NULL);
	pthread_cond_init(&w->moved, NULL);
	return w;
}

void s3_md5w_free(struct s3_md5w *w)
{
	if (w == NULL)
		return;
	if (w->started) {
		pthread_mutex_lock(&w->mu);
		w->stop = true;
		pthread_cond_signal(&w->work);
		pthread_mutex_unlock(&w->mu);
		pthread_join(w->thread, NULL);
	}
	while (w->streams)
		s3_md5s_drop(w->streams); /* a caller's bug; the thread is gone, so nothing is busy */
	pthread_cond_destroy(&w->moved);
	pthread_cond_destroy(&w->work);
	pthread_mutex_destroy(&w->mu);
	close(w->efd);
	free(w);
}

int s3_md5w_fd(const struct s3_md5w *w)
{
	return w ? w->efd : -1;
}

struct s3_md5s *s3_md5s_open(struct s3_md5w *w, const uint8_t *base)
{
	struct s3_md5s *s;

	if (w == NULL)
		return NULL;
	if (!w->started) {
		if (pthread_create(&w->thread, NULL, run, w) != 0) {
			LOG_WARN("s3: cannot start the MD5 thread; bodies are hashed on the event loop");
			return NULL;
		}
		w->started = true;
	}
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return NULL;
	s->ctx = EVP_MD_CTX_new();
	if (s->ctx == NULL || EVP_DigestInit_ex(s->ctx, EVP_md5(), NULL) != 1) {
		EVP_MD_CTX_free(s->ctx);
		free(s);
		return NULL;
	}
	s->w = w;
	s->base = base;
	pthread_mutex_lock(&w->mu);
	s->next = w->streams;
	w->streams = s;
	pthread_mutex_unlock(&w->mu);
	return s;
}

void s3_md5s_avail(struct s3_md5s *s, size_t n)
{
	struct s3_md5w *w = s->w;

	pthread_mutex_lock(&w->mu);
	if (n > s->avail && !s->closed) {
		s->avail = n;
		if (w->sleeping)
			pthread_cond_signal(&w->work);
	}
	pthread_mutex_unlock(&w->mu);
}

void s3_md5s_close(struct s3_md5s *s)
{
	struct s3_md5w *w = s->w;

	pthread_mutex_lock(&w->mu);
	s->closed = true;
	if (w->sleeping)
		pthread_cond_signal(&w->work);
	pthread_mutex_unlock(&w->mu);
}

bool s3_md5s_ready(struct s3_md5s *s, uint8_t out[16])
{
	struct s3_md5w *w = s->w;
	bool done;

	pthread_mutex_lock(&w->mu);
	done = s->done;
	if (done && out && !s->failed)
		memcpy(out, s->digest, 16);
	pthread_mutex_unlock(&w->mu);
	return done;
}

bool s3_md5s_wait(struct s3_md5s *s, uint8_t out[16])
{
	struct s3_md5w *w = s->w;
	bool ok;

	pthread_mutex_lock(&w->mu);
	while (!s->done)
		pthread_cond_wait(&w->moved, &w->mu);
	ok = !s->failed;
	if (ok)
		memcpy(out, s->digest, 16);
	pthread_mutex_unlock(&w->mu);
	return ok;
}

void s3_md5s_drop(struct s3_md5s *s)
{
	struct s3_md5w *w;
	struct s3_md5s **pp;

	if (s == NULL)
		return;
	w = s->w;
	pthread_mutex_lock(&w->mu);
	while (s->busy)
		pthread_cond_wait(&w->moved, &w->mu);
	for (pp = &w->streams; *pp && *pp != s; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = s->next;
	pthread_mutex_unlock(&w->mu);
	EVP_MD_CTX_free(s->ctx);
	free(s);
}
