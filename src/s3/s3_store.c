/*
 * The store: its sorted object table, the uploads in progress and the
 * capacity both count against (size=, objects=).
 */
#include "s3/s3_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/log.h"

/* ---------------------------------------------------------------- objects */

/* Index of key, or -(insertion point) - 1. */
long store_find(const struct s3_store *st, const char *key)
{
	long lo = 0, hi = (long)st->nobjs - 1;

	while (lo <= hi) {
		long mid = lo + (hi - lo) / 2;
		int c = strcmp(st->objs[mid].key, key);

		if (c == 0)
			return mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -lo - 1;
}

/* First index whose key is greater than (or equal to, if inclusive) key. */
uint32_t store_lower_bound(const struct s3_store *st, const char *key, bool inclusive)
{
	long i = store_find(st, key);

	if (i >= 0)
		return (uint32_t)(inclusive ? i : i + 1);
	return (uint32_t)(-i - 1);
}

bool store_reserve(struct s3_store *st, uint64_t n)
{
	struct s3_store_stats *t = &st->root->stats;

	if (n > st->cfg.size || t->used_bytes > st->cfg.size - n)
		return false;
	t->used_bytes += n;
	return true;
}

void store_unreserve(struct s3_store *st, uint64_t n)
{
	struct s3_store_stats *t = &st->root->stats;

	t->used_bytes -= n < t->used_bytes ? n : t->used_bytes;
}

/* Whether a PUT of key may take a slot (replacing an existing key needs none). */
bool store_slot_available(const struct s3_store *st, const char *key)
{
	return store_find(st, key) >= 0 || st->root->stats.objects < st->cfg.objects;
}

/* What an object holds besides its key (its bytes' reservation goes too). */
static void object_release(struct s3_store *st, struct s3_object *o)
{
	store_unreserve(st, o->blob->len);
	s3_blob_put(o->blob);
	s3_meta_free(o->meta);
	free(o->part_ends);
	o->blob = NULL;
	o->meta = NULL;
	o->part_ends = NULL;
	o->nparts = 0;
	o->upload_id[0] = '\0';
}

/*
 * Store blob under key (its bytes already reserved) with *meta. Replaces an
 * existing object, whose bytes are released. Returns the object (its upload
 * and part fields cleared, for the caller to fill), or NULL (nothing changed)
 * if there is no slot.
 */
struct s3_object *store_commit(struct s3_store *st, const char *key, struct s3_blob *blob, const char *etag,
			       struct s3_meta **meta)
{
	long i = store_find(st, key);
	struct s3_object *o;

	if (i >= 0) {
		o = &st->objs[i];
		object_release(st, o);
	} else {
		char *k = strdup(key);
		uint32_t at = (uint32_t)(-i - 1);

		if (k == NULL || st->root->stats.objects >= st->cfg.objects) {
			free(k);
			return NULL;
		}
		memmove(&st->objs[at + 1], &st->objs[at], (st->nobjs - at) * sizeof(*o));
		o = &st->objs[at];
		memset(o, 0, sizeof(*o));
		o->key = k;
		st->nobjs++;
		st->root->stats.objects++;
	}
	o->blob = blob;
	snprintf(o->etag, sizeof(o->etag), "%s", etag);
	o->meta = *meta;
	*meta = NULL;
	o->mtime = (int64_t)time(NULL);
	return o;
}

void store_delete(struct s3_store *st, const char *key)
{
	long i = store_find(st, key);

	if (i < 0)
		return;
	persist_object_remove(st, key);
	object_release(st, &st->objs[i]);
	free(st->objs[i].key);
	memmove(&st->objs[i], &st->objs[i + 1], (st->nobjs - (uint32_t)i - 1) * sizeof(st->objs[0]));
	st->nobjs--;
	st->root->stats.objects--;
}

/* ---------------------------------------------------------------- uploads */

struct s3_upload *upload_find(struct s3_store *st, const char *id, const char *key)
{
	for (struct s3_upload *u = st->uploads; u; u = u->next)
		if (strcmp(u->id, id) == 0 && (key == NULL || strcmp(u->key, key) == 0))
			return u;
	return NULL;
}

void upload_free(struct s3_store *st, struct s3_upload *u)
{
	struct s3_upload **pp;

	for (pp = &st->uploads; *pp; pp = &(*pp)->next) {
		if (*pp == u) {
			*pp = u->next;
			break;
		}
	}
	for (uint32_t i = 0; i < u->nparts_alloc; i++) {
		if (u->parts[i].blob) {
			store_unreserve(st, u->parts[i].blob->len);
			s3_blob_put(u->parts[i].blob);
		}
	}
	free(u->parts);
	s3_meta_free(u->meta);
	free(u->key);
	free(u);
	st->nuploads--;
	st->root->stats.uploads--;
}

/* ---------------------------------------------------------------- store */

/* A bucket's store: cfg with its name (and its directory under dir=); NULL when out of memory. */
struct s3_store *store_alloc(const struct s3_config *cfg, struct s3_store *root)
{
	struct s3_store *st = calloc(1, sizeof(*st));

	if (st == NULL)
		return NULL;
	st->cfg = *cfg;
	st->persist_fd = -1;
	st->root = root ? root : st;
	st->objs = calloc(cfg->objects ? cfg->objects : 1, sizeof(*st->objs));
	if (st->objs == NULL) {
		free(st);
		return NULL;
	}
	st->created = (int64_t)time(NULL);
	return st;
}

/* What a bucket holds, and the bucket (not the root's shared parts). */
void store_release(struct s3_store *st)
{
	while (st->uploads)
		upload_free(st, st->uploads);
	for (uint32_t i = 0; i < st->nobjs; i++) {
		object_release(st, &st->objs[i]);
		free(st->objs[i].key);
		st->root->stats.objects--;
	}
	free(st->objs);
	persist_close(st);
	free(st);
}

struct s3_store *s3_store_new(const struct s3_config *cfg, const struct s3_token *server_token)
{
	struct s3_store *st = store_alloc(cfg, NULL);

	if (st == NULL)
		return NULL;
	st->nbuckets = 1;
	if (server_token)
		st->server_token = *server_token;
	else
		st->server_token.transport = S3_TRANSPORT_RC;
	st->md5w = s3_md5w_new(); /* without it, bodies are hashed inline */
	st->md5 = EVP_MD_fetch(NULL, "MD5", NULL); /* NULL: each PUT names EVP_md5() */
	if (persist_open(st)) {
		s3_store_free(st);
		return NULL;
	}
	return st;
}

void s3_store_free(struct s3_store *st)
{
	if (st == NULL)
		return;
	while (st->next) {
		struct s3_store *b = st->next;

		st->next = b->next;
		store_release(b);
	}
	s3_md5w_free(st->md5w);
	free(st->spare_op);
	EVP_MD_CTX_free(st->spare_md5);
	EVP_MD_free(st->md5);
	store_release(st);
	map_cache_drain();
}

void s3_store_set_dma(struct s3_store *st, const struct dma_ops *ops)
{
	st = st->root;
	st->has_dma = ops != NULL;
	if (ops)
		st->dma = *ops;
}

int s3_store_md5_fd(const struct s3_store *st)
{
	return s3_md5w_fd(st->root->md5w);
}

const struct s3_store_stats *s3_store_stats(const struct s3_store *st)
{
	return &st->root->stats;
}


void s3_store_set_server_ll(struct s3_store *st, const uint8_t gid[16])
{
	memcpy(st->root->server_ll, gid, sizeof(st->root->server_ll));
}

void s3_store_log_stats(const struct s3_store *st)
{
	const struct s3_store_stats *t = &st->root->stats;

	LOG_INFO("s3: %" PRIu64 " requests; %" PRIu64 " with an RDMA token (%" PRIu64 " hipObject, %" PRIu64
		 " cuObject): %" PRIu64 " declined, %" PRIu64 " answered in the body instead, %" PRIu64
		 " failed; %" PRIu64 " bytes moved by RDMA",
		 t->requests, t->rdma_hipobj + t->rdma_cuobj, t->rdma_hipobj, t->rdma_cuobj, t->rdma_declined,
		 t->rdma_fallback, t->rdma_failed, t->rdma_bytes);
}
