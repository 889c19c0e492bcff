/*
 * dir=PATH: the store's objects and uploads in progress kept as files, and
 * read back when the server starts.
 *
 *   PATH/objects/<SHA-256 of the key, hex>   an object: its record, then its bytes
 *   PATH/uploads/<upload id>/info            an upload: key, metadata, checksum algorithm
 *   PATH/uploads/<upload id>/<part number>   a part: its record, then its bytes
 *   PATH/tmp/                                files being written
 *   PATH/buckets/<name>/                     another bucket (buckets=), laid out as PATH
 *
 * A file is written whole under tmp/ and renamed into place before the store
 * answers, so after the process dies at any moment (kill -9) an object is
 * there whole with its metadata, or not at all; a replaced one is the old or
 * the new. Nothing is fsync'ed: a crash of the host's kernel may lose what
 * was written last. Files are read back at start, each checked (magic, every
 * length within the file, the key's hash matching its name); one that is not
 * right is logged and left alone, and tmp/ is emptied.
 *
 * Records are little-endian: an 8-byte magic, then fixed fields, then the
 * variable ones in the order their lengths are given.
 */
#include "s3/s3_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/log.h"

#define MAGIC_OBJECT "ERS3OBJ1"
#define MAGIC_UPLOAD "ERS3UPL1"
#define MAGIC_PART   "ERS3PRT1"

/* ---- a record being built ---- */

struct rec {
	uint8_t *p;
	size_t len, cap;
	bool oom;
};

static void put(struct rec *r, const void *d, size_t n)
{
	if (r->oom)
		return;
	if (r->len + n > r->cap) {
		size_t cap = r->cap ? r->cap : 512;
		uint8_t *np;

		while (cap < r->len + n)
			cap *= 2;
		np = realloc(r->p, cap);
		if (np == NULL) {
			r->oom = true;
			return;
		}
		r->p = np;
		r->cap = cap;
	}
	if (n)
		memcpy(r->p + r->len, d, n);
	r->len += n;
}

static void put_u64(struct rec *r, uint64_t v)
{
	uint8_t b[8];

	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	put(r, b, 8);
}

/* ---- a record being read ---- */

struct cur {
	const uint8_t *p;
	size_t len, off;
	bool bad;
};

static const uint8_t *get(struct cur *c, size_t n)
{
	const uint8_t *p;

	if (c->bad || n > c->len - c->off) {
		c->bad = true;
		return NULL;
	}
	p = c->p + c->off;
	c->off += n;
	return p;
}

static uint64_t get_u64(struct cur *c)
{
	const uint8_t *b = get(c, 8);
	uint64_t v = 0;

	for (int i = 0; b && i < 8; i++)
		v |= (uint64_t)b[i] << (8 * i);
	return v;
}

/* A NUL-terminated copy of n bytes (which must hold no NUL) into out[cap]. */
static void get_str(struct cur *c, size_t n, char *out, size_t cap)
{
	const uint8_t *p;

	if (n >= cap) {
		c->bad = true;
		return;
	}
	p = get(c, n);
	if (p == NULL || memchr(p, '\0', n)) {
		c->bad = true;
		return;
	}
	memcpy(out, p, n);
	out[n] = '\0';
}

/* Metadata of n bytes: pairs of NUL-terminated strings, as s3_meta keeps them. */
static struct s3_meta *get_meta(struct cur *c, size_t n)
{
	const uint8_t *p = n <= S3_MAX_META_BYTES ? get(c, n) : NULL;
	struct s3_meta *m;
	unsigned strings = 0;

	if (p == NULL || (n && p[n - 1] != '\0')) {
		c->bad = true;
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		strings += p[i] == '\0';
	if (strings % 2 || strings / 2 > S3_MAX_META_PAIRS) {
		c->bad = true;
		return NULL;
	}
	m = malloc(sizeof(*m) + n);
	if (m == NULL) {
		c->bad = true;
		return NULL;
	}
	m->len = n;
	m->n = strings / 2;
	if (n)
		memcpy(m->data, p, n);
	return m;
}

/* ---- files ---- */

static int dir_fd(const struct s3_store *st)
{
	return st->persist_fd;
}

static void key_name(const char *key, char out[65])
{
	uint8_t d[32];
	unsigned int n = 32;

	EVP_Digest(key, strlen(key), d, &n, EVP_sha256(), NULL);
	hex_encode(d, 32, out);
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n > (1u << 30) ? 1u << 30 : n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Write head then data to tmp/, then rename it to `to` (relative to the store's directory). */
static int write_file(const struct s3_store *st, const char *to, const struct rec *head, const uint8_t *data,
		      size_t len)
{
	char tmp[64];
	static unsigned seq;
	int fd, rc;

	if (head->oom)
		return -ENOMEM;
	snprintf(tmp, sizeof(tmp), "tmp/%ld-%u", (long)getpid(), ++seq);
	fd = openat(dir_fd(st), tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	rc = write_all(fd, head->p, head->len);
	if (rc == 0 && len)
		rc = write_all(fd, data, len);
	if (close(fd) && rc == 0)
		rc = -errno;
	if (rc == 0 && renameat(dir_fd(st), tmp, dir_fd(st), to))
		rc = -errno;
	if (rc)
		unlinkat(dir_fd(st), tmp, 0);
	return rc;
}

static bool failed(struct s3_op *op, const char *what, int rc)
{
	LOG_WARN("s3: %s could not be kept under %s: %s", what, op->st->cfg.dir, strerror(-rc));
	op_error(op, rc == -ENOSPC || rc == -EDQUOT ? S3_ERR_INSUFFICIENT_STORAGE : S3_ERR_INTERNAL,
		 "The object could not be written to the store's directory.");
	return false;
}

/* ---- objects ---- */

bool persist_object(struct s3_op *op, const char *key, const struct s3_blob *blob, const struct s3_object *o)
{
	const struct s3_store *st = op->st;
	char name[8 + 65];
	struct rec r = { 0 };
	uint8_t fixed[4] = { (uint8_t)o->cks, o->cks_composite, 0, 0 };
	size_t meta_len = o->meta ? o->meta->len : 0;
	int rc;

	if (st->persist_fd < 0)
		return true;
	put(&r, MAGIC_OBJECT, 8);
	put_u64(&r, strlen(key));
	put_u64(&r, meta_len);
	put_u64(&r, o->nparts);
	put_u64(&r, (uint64_t)o->mtime);
	put_u64(&r, blob->len);
	put(&r, fixed, sizeof(fixed));
	put(&r, o->etag, sizeof(o->etag));
	put(&r, o->cks_b64, sizeof(o->cks_b64));
	put(&r, o->upload_id, sizeof(o->upload_id));
	put(&r, key, strlen(key));
	if (meta_len)
		put(&r, o->meta->data, meta_len);
	for (uint32_t i = 0; i < o->nparts; i++)
		put_u64(&r, o->part_ends[i]);
	memcpy(name, "objects/", 8);
	key_name(key, name + 8);
	rc = write_file(st, name, &r, blob->data, blob->len);
	free(r.p);
	return rc ? failed(op, "an object", rc) : true;
}

void persist_object_remove(const struct s3_store *st, const char *key)
{
	char name[8 + 65];

	if (st->persist_fd < 0)
		return;
	memcpy(name, "objects/", 8);
	key_name(key, name + 8);
	if (unlinkat(st->persist_fd, name, 0) && errno != ENOENT)
		LOG_WARN("s3: %s/%s could not be removed: %s", st->cfg.dir, name, strerror(errno));
}

/* The whole of file dir/name, or NULL (logged). */
static uint8_t *read_file(int dfd, const char *name, const char *dir, size_t *len)
{
	int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC);
	struct stat sb;
	uint8_t *p = NULL;
	size_t got = 0;

	if (fd < 0 || fstat(fd, &sb) || sb.st_size < 0 || (uint64_t)sb.st_size > SIZE_MAX - 1)
		goto fail;
	p = malloc((size_t)sb.st_size + 1);
	if (p == NULL)
		goto fail;
	while (got < (size_t)sb.st_size) {
		ssize_t n = read(fd, p + got, (size_t)sb.st_size - got);

		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			goto fail;
		}
		got += (size_t)n;
	}
	close(fd);
	*len = got;
	return p;
fail:
	LOG_WARN("s3: %s/%s could not be read: %s", dir, name, strerror(errno));
	if (fd >= 0)
		close(fd);
	free(p);
	return NULL;
}

/* One object file back into the store; false when it is not one of ours (logged by the caller). */
static bool load_object(struct s3_store *st, const char *fname, const uint8_t *p, size_t len)
{
	struct cur c = { .p = p, .len = len };
	uint64_t klen, mlen, nparts, mtime, dlen;
	const uint8_t *fixed, *data;
	char key[S3_MAX_KEY_LEN + 1], etag[48], cks_b64[S3_CKS_B64_MAX], upload_id[33], name[65];
	struct s3_meta *meta = NULL;
	uint64_t *ends = NULL;
	struct s3_blob *blob;
	struct s3_object *o;

	if (len < 8 || memcmp(get(&c, 8), MAGIC_OBJECT, 8) != 0)
		return false;
	klen = get_u64(&c);
	mlen = get_u64(&c);
	nparts = get_u64(&c);
	mtime = get_u64(&c);
	dlen = get_u64(&c);
	fixed = get(&c, 4);
	{
		const uint8_t *e = get(&c, sizeof(etag));

		if (e == NULL || !memchr(e, '\0', sizeof(etag)))
			return false;
		memcpy(etag, e, sizeof(etag));
	}
	if (c.bad || klen == 0 || klen > S3_MAX_KEY_LEN || nparts > S3_MAX_PARTS || fixed[0] >= S3_CKS_COUNT)
		return false;
	{
		const uint8_t *b = get(&c, sizeof(cks_b64)), *u = get(&c, sizeof(upload_id));

		if (b == NULL || u == NULL || !memchr(b, '\0', sizeof(cks_b64)) || !memchr(u, '\0', sizeof(upload_id)))
			return false;
		memcpy(cks_b64, b, sizeof(cks_b64));
		memcpy(upload_id, u, sizeof(upload_id));
	}
	get_str(&c, (size_t)klen, key, sizeof(key));
	if (c.bad)
		return false;
	key_name(key, name);
	if (strcmp(name, fname) != 0)
		return false;
	meta = get_meta(&c, (size_t)mlen);
	if (meta == NULL)
		return false;
	if (nparts) {
		ends = malloc((size_t)nparts * sizeof(*ends));
		for (uint64_t i = 0; ends && i < nparts; i++)
			ends[i] = get_u64(&c);
		if (ends == NULL || c.bad || ends[nparts - 1] != dlen) {
			free(ends);
			s3_meta_free(meta);
			return false;
		}
	}
	data = get(&c, (size_t)dlen);
	if (data == NULL || c.off != c.len || !store_slot_available(st, key) || !store_reserve(st, dlen)) {
		free(ends);
		s3_meta_free(meta);
		return false;
	}
	blob = blob_new((size_t)dlen);
	if (blob == NULL) {
		store_unreserve(st, dlen);
		free(ends);
		s3_meta_free(meta);
		return false;
	}
	if (dlen)
		memcpy(blob->data, data, (size_t)dlen);
	o = store_commit(st, key, blob, etag, &meta);
	if (o == NULL) {
		store_unreserve(st, dlen);
		s3_blob_put(blob);
		free(ends);
		s3_meta_free(meta);
		return false;
	}
	o->mtime = (int64_t)mtime;
	o->nparts = (uint32_t)nparts;
	o->part_ends = ends;
	o->cks = (enum s3_cks)fixed[0];
	o->cks_composite = fixed[1] != 0;
	snprintf(o->cks_b64, sizeof(o->cks_b64), "%s", cks_b64);
	snprintf(o->upload_id, sizeof(o->upload_id), "%s", upload_id);
	return true;
}

/* ---- uploads ---- */

bool persist_upload(struct s3_op *op, const struct s3_upload *u)
{
	const struct s3_store *st = op->st;
	char name[64];
	struct rec r = { 0 };
	uint8_t fixed[4] = { (uint8_t)u->cks, u->cks_full, 0, 0 };
	size_t meta_len = u->meta ? u->meta->len : 0;
	int rc;

	if (st->persist_fd < 0)
		return true;
	snprintf(name, sizeof(name), "uploads/%s", u->id);
	if (mkdirat(st->persist_fd, name, 0700) && errno != EEXIST)
		return failed(op, "an upload", -errno);
	put(&r, MAGIC_UPLOAD, 8);
	put_u64(&r, strlen(u->key));
	put_u64(&r, meta_len);
	put_u64(&r, (uint64_t)u->started);
	put(&r, fixed, sizeof(fixed));
	put(&r, u->key, strlen(u->key));
	if (meta_len)
		put(&r, u->meta->data, meta_len);
	snprintf(name, sizeof(name), "uploads/%s/info", u->id);
	rc = write_file(st, name, &r, NULL, 0);
	free(r.p);
	return rc ? failed(op, "an upload", rc) : true;
}

bool persist_part(struct s3_op *op, const struct s3_upload *u, uint32_t part, const struct s3_part *p)
{
	const struct s3_store *st = op->st;
	char name[80];
	struct rec r = { 0 };
	uint8_t fixed[4] = { (uint8_t)p->cks, 0, 0, 0 };
	int rc;

	if (st->persist_fd < 0)
		return true;
	put(&r, MAGIC_PART, 8);
	put_u64(&r, part);
	put_u64(&r, (uint64_t)p->mtime);
	put_u64(&r, p->blob->len);
	put(&r, fixed, sizeof(fixed));
	put(&r, p->etag, sizeof(p->etag));
	put(&r, p->md5, sizeof(p->md5));
	put(&r, p->cks_raw, sizeof(p->cks_raw));
	snprintf(name, sizeof(name), "uploads/%s/%u", u->id, part);
	rc = write_file(st, name, &r, p->blob->data, p->blob->len);
	free(r.p);
	return rc ? failed(op, "a part", rc) : true;
}

/* Everything under uploads/<id>, and the directory. */
void persist_upload_remove(const struct s3_store *st, const char *id)
{
	char name[64];
	int fd;
	DIR *d;
	struct dirent *e;

	if (st->persist_fd < 0)
		return;
	snprintf(name, sizeof(name), "uploads/%s", id);
	fd = openat(st->persist_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	d = fdopendir(fd);
	if (d == NULL) {
		close(fd);
		return;
	}
	/* info first: a directory without it is no upload, whatever is left */
	unlinkat(fd, "info", 0);
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			unlinkat(fd, e->d_name, 0);
	closedir(d);
	unlinkat(st->persist_fd, name, AT_REMOVEDIR);
}

static bool load_part(struct s3_store *st, struct s3_upload *u, const uint8_t *p, size_t len)
{
	struct cur c = { .p = p, .len = len };
	uint64_t num, mtime, dlen;
	const uint8_t *fixed, *etag, *md5, *cks, *data;
	struct s3_blob *blob;
	struct s3_part *part;

	if (len < 8 || memcmp(get(&c, 8), MAGIC_PART, 8) != 0)
		return false;
	num = get_u64(&c);
	mtime = get_u64(&c);
	dlen = get_u64(&c);
	fixed = get(&c, 4);
	etag = get(&c, 48);
	md5 = get(&c, 16);
	cks = get(&c, S3_CKS_MAX_LEN);
	data = get(&c, (size_t)dlen);
	if (c.bad || c.off != c.len || num < 1 || num > S3_MAX_PARTS || fixed[0] >= S3_CKS_COUNT ||
	    !memchr(etag, '\0', 48) || dlen > st->cfg.maxpart || !store_reserve(st, dlen))
		return false;
	blob = blob_new((size_t)dlen);
	if (blob == NULL) {
		store_unreserve(st, dlen);
		return false;
	}
	if (dlen)
		memcpy(blob->data, data, (size_t)dlen);
	part = upload_set_part(st, u, (uint32_t)num, blob, md5);
	if (part == NULL) {
		store_unreserve(st, dlen);
		s3_blob_put(blob);
		return false;
	}
	part->mtime = (int64_t)mtime;
	part->cks = (enum s3_cks)fixed[0];
	memcpy(part->cks_raw, cks, S3_CKS_MAX_LEN);
	snprintf(part->etag, sizeof(part->etag), "%s", (const char *)etag);
	return true;
}

static void load_upload(struct s3_store *st, const char *id, unsigned *nparts)
{
	char name[64];
	uint8_t *p;
	size_t len;
	struct cur c;
	uint64_t klen, mlen, started;
	const uint8_t *fixed;
	struct s3_upload *u;
	int fd;
	DIR *d;
	struct dirent *e;

	if (strlen(id) != 32 || strspn(id, "0123456789abcdef") != 32 || st->root->stats.uploads >= S3_MAX_UPLOADS)
		return;
	snprintf(name, sizeof(name), "uploads/%s/info", id);
	p = read_file(st->persist_fd, name, st->cfg.dir, &len);
	if (p == NULL)
		return;
	c = (struct cur){ .p = p, .len = len };
	u = calloc(1, sizeof(*u));
	if (u == NULL || len < 8 || memcmp(get(&c, 8), MAGIC_UPLOAD, 8) != 0)
		goto bad;
	klen = get_u64(&c);
	mlen = get_u64(&c);
	started = get_u64(&c);
	fixed = get(&c, 4);
	if (c.bad || klen == 0 || klen > S3_MAX_KEY_LEN || fixed[0] >= S3_CKS_COUNT)
		goto bad;
	u->key = malloc((size_t)klen + 1);
	if (u->key == NULL)
		goto bad;
	get_str(&c, (size_t)klen, u->key, (size_t)klen + 1);
	u->meta = c.bad ? NULL : get_meta(&c, (size_t)mlen);
	if (u->meta == NULL || c.off != c.len)
		goto bad;
	memcpy(u->id, id, 33);
	u->started = (int64_t)started;
	u->cks = (enum s3_cks)fixed[0];
	u->cks_full = fixed[1] != 0;
	u->next = st->uploads;
	st->uploads = u;
	st->nuploads++;
	st->root->stats.uploads++;
	free(p);
	snprintf(name, sizeof(name), "uploads/%s", id);
	fd = openat(st->persist_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	d = fd >= 0 ? fdopendir(fd) : NULL;
	if (d == NULL) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((e = readdir(d)) != NULL) {
		uint8_t *pp;
		size_t plen;

		if (e->d_name[0] == '.' || strcmp(e->d_name, "info") == 0)
			continue;
		pp = read_file(fd, e->d_name, st->cfg.dir, &plen);
		if (pp && load_part(st, u, pp, plen))
			(*nparts)++;
		else if (pp)
			LOG_WARN("s3: %s/uploads/%s/%s is not a part of ours; left alone", st->cfg.dir, id, e->d_name);
		free(pp);
	}
	closedir(d);
	return;
bad:
	LOG_WARN("s3: %s/%s is not an upload of ours; left alone", st->cfg.dir, name);
	if (u) {
		free(u->key);
		s3_meta_free(u->meta);
	}
	free(u);
	free(p);
}

/* ---- buckets ---- */

/* The other buckets kept under dir/buckets, as many as buckets= allows. */
static int load_buckets(struct s3_store *root)
{
	int fd = openat(root->persist_fd, "buckets", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;

	if (d == NULL) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		if (strlen(e->d_name) > S3_BUCKET_MAX || bucket_find(root, e->d_name) ||
		    root->nbuckets >= root->cfg.buckets || bucket_new(root, e->d_name) == NULL)
			LOG_WARN("s3: %s/buckets/%s is not a bucket this store can serve (buckets=%u); left alone",
				 root->cfg.dir, e->d_name, root->cfg.buckets);
	}
	closedir(d);
	return 0;
}

void persist_bucket_remove(const struct s3_store *b)
{
	static const char *const sub[] = { "objects", "uploads", "tmp", "buckets" };

	if (b->persist_fd < 0)
		return;
	for (size_t i = 0; i < sizeof(sub) / sizeof(sub[0]); i++)
		unlinkat(b->persist_fd, sub[i], AT_REMOVEDIR);
	if (rmdir(b->cfg.dir))
		LOG_WARN("s3: %s could not be removed: %s", b->cfg.dir, strerror(errno));
}

/* ---- start ---- */

int persist_open(struct s3_store *st)
{
	static const char *const sub[] = { "objects", "uploads", "tmp", "buckets" };
	unsigned nobj = 0, nup = 0, nparts = 0;
	int fd;
	DIR *d;
	struct dirent *e;

	st->persist_fd = -1;
	if (st->cfg.dir[0] == '\0')
		return 0;
	if (mkdir(st->cfg.dir, 0700) && errno != EEXIST)
		goto fail;
	st->persist_fd = open(st->cfg.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (st->persist_fd < 0)
		goto fail;
	for (size_t i = 0; i < sizeof(sub) / sizeof(sub[0]); i++)
		if (mkdirat(st->persist_fd, sub[i], 0700) && errno != EEXIST)
			goto fail;
	/* What was being written when the last server stopped is not an object. */
	fd = openat(st->persist_fd, "tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0 && (d = fdopendir(fd)) != NULL) {
		while ((e = readdir(d)) != NULL)
			if (e->d_name[0] != '.')
				unlinkat(fd, e->d_name, 0);
		closedir(d);
	} else if (fd >= 0) {
		close(fd);
	}
	fd = openat(st->persist_fd, "objects", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0 && (d = fdopendir(fd)) != NULL) {
		while ((e = readdir(d)) != NULL) {
			uint8_t *p;
			size_t len;

			if (e->d_name[0] == '.')
				continue;
			p = read_file(fd, e->d_name, st->cfg.dir, &len);
			if (p && load_object(st, e->d_name, p, len))
				nobj++;
			else if (p)
				LOG_WARN("s3: %s/objects/%s is not an object of ours, or the store has no room for it; left alone",
					 st->cfg.dir, e->d_name);
			free(p);
		}
		closedir(d);
	} else if (fd >= 0) {
		close(fd);
	}
	fd = openat(st->persist_fd, "uploads", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0 && (d = fdopendir(fd)) != NULL) {
		while ((e = readdir(d)) != NULL) {
			unsigned before = st->nuploads;

			if (e->d_name[0] == '.')
				continue;
			load_upload(st, e->d_name, &nparts);
			nup += st->nuploads != before;
		}
		closedir(d);
	} else if (fd >= 0) {
		close(fd);
	}
	LOG_INFO("s3: %u objects and %u uploads in progress (%u parts) read from %s", nobj, nup, nparts, st->cfg.dir);
	if (st->root == st && load_buckets(st))
		goto fail;
	return 0;
fail:
	{
		int err = errno;

		LOG_ERR("s3: the store's directory %s cannot be used: %s", st->cfg.dir, strerror(err));
		if (st->persist_fd >= 0)
			close(st->persist_fd);
		st->persist_fd = -1;
		return -err;
	}
}

void persist_close(struct s3_store *st)
{
	if (st->persist_fd >= 0)
		close(st->persist_fd);
	st->persist_fd = -1;
}
