/* CRC-32C (Castagnoli), the checksum of trace records: the SSE4.2 instruction where the CPU has
 * it, bit by bit where not. Pure: no allocation, no locks, safe on the runtime's fault path. */
#ifndef FLTRACE_CRC32C_H
#define FLTRACE_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Continues crc (0 to start) over n bytes at p: crc32c(crc32c(0, a, n), b, m) == crc32c(0, ab, n+m).
 * crc32c(0, "123456789", 9) == 0xe3069283. */
uint32_t crc32c(uint32_t crc, const void *p, size_t n);
/* The same, bit by bit whatever the CPU (for the unit test to compare with). */
uint32_t crc32c_portable(uint32_t crc, const void *p, size_t n);

#endif
