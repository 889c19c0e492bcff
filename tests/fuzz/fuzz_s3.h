/*
 * The S3 store for the fuzz targets: a small store (s3:size=4M,objects=64,
 * maxpart=1M) with fake DMA ops standing in for one registration of the
 * guest (key FS_KEY over [FS_ADDR, FS_ADDR + FS_LEN), both directions), as
 * s3-target-unit has it, and a connection fed raw HTTP.
 */
#ifndef ERNIC_TESTS_FUZZ_S3_H
#define ERNIC_TESTS_FUZZ_S3_H

#include <stddef.h>
#include <stdint.h>

#include "s3/s3_conn.h"
#include "s3/s3_target.h"

#define FS_KEY  0x101u
#define FS_ADDR 0x10000ull
#define FS_LEN  0x10000u

struct s3_store *fs_store_new(void);

/*
 * Feed len bytes to the connection in pieces of at most piece bytes (0: all
 * at once), taking its output after each; the output (up to cap bytes) goes
 * to out, NUL-terminated. Stops early when the connection takes nothing
 * more. Returns the output's length.
 */
size_t fs_feed(struct s3_conn *c, const uint8_t *p, size_t len, size_t piece, char *out, size_t cap);

#endif
