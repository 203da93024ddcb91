/* Evict a buffer from every core's caches: clflush each 64-byte line, then a fence so the
 * next load misses. What TVM's cache_flush_cpu_non_first_arg does, for any one buffer.
 *
 *   cc -O2 -shared -fPIC flush_lines.c -o libflush_lines.so
 */
#include <emmintrin.h>
#include <stddef.h>

void flush_lines(const char *p, size_t n) {
    for (size_t i = 0; i < n; i += 64)
        _mm_clflush(p + i);
    _mm_mfence();
}
