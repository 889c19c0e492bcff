/*
 * The MD5 of request bodies on a thread of its own.
 *
 * A PUT's ETag is the MD5 of its body, and hashing is most of the CPU a PUT
 * costs the endpoint (about 70% over the TAP). On the event-loop thread the
 * hash and everything else (TCP, copies, ACKs) add up; here the loop copies
 * the body into the object's memory and says how far it got, and one hashing
 * thread follows it through that memory, so the two overlap.
 *
 * A stream hashes bytes at a fixed base address, which must stay valid and
 * unmoved until the stream is done or dropped: the store uses one only for a
 * body whose length was announced (its memory is allocated whole at the
 * start). Everything but the hashing runs on the caller's thread; one
 * thread only may use a worker and its streams.
 */
#ifndef ERNIC_S3_S3_MD5_H
#define ERNIC_S3_S3_MD5_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct s3_md5w;
struct s3_md5s;

/* The hashing thread starts with the first stream. NULL when out of memory. */
struct s3_md5w *s3_md5w_new(void);
/* Every stream must be done or dropped. Stops the thread. */
void s3_md5w_free(struct s3_md5w *w);
/*
 * Readable (an eventfd) after a stream's digest is ready, so an event loop
 * need not poll for it; read it to clear it. -1 when there is none.
 */
int s3_md5w_fd(const struct s3_md5w *w);

/* A stream over the bytes at base; NULL when out of memory (hash on your own thread then). */
struct s3_md5s *s3_md5s_open(struct s3_md5w *w, const uint8_t *base);
/* base[0, n) hold their final values (n never goes down). */
void s3_md5s_avail(struct s3_md5s *s, size_t n);
/* No byte beyond the last s3_md5s_avail(). */
void s3_md5s_close(struct s3_md5s *s);
/* After close: whether the digest is ready; copies it to out (when not NULL) if so. Never blocks. */
bool s3_md5s_ready(struct s3_md5s *s, uint8_t out[16]);
/* After close: waits for the digest; false if hashing failed. */
bool s3_md5s_wait(struct s3_md5s *s, uint8_t out[16]);
/*
 * Ends the stream, done or not: returns once the thread no longer reads
 * base (at most one slice of hashing later), and frees it.
 */
void s3_md5s_drop(struct s3_md5s *s);

#endif
